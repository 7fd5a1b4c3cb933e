#!/usr/bin/env bash
# Installs every Debian package rill's build and tests need, then builds Release into build/.
# The CLI lands at build/bin/rill. Idempotent. Works on a minimal Debian 12 (bookworm) or 13 (trixie)
# (every name below exists on both, unversioned; Ubuntu 24.04 uses the same names, untested here).
# Packages are installed with --no-install-recommends, so each one the build or a test uses is named below.
#   bash scripts/setup.sh              as root: installs what is missing; as a user: uses sudo if it
#                                      can, otherwise prints the exact command to run as root
#   bash scripts/setup.sh --no-build   packages only (CI's sanitizer and fuzz stages build their own)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=1
case ${1:-} in
  "") ;;
  --no-build) build=0 ;;
  *) echo "usage: bash scripts/setup.sh [--no-build]" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-openmp-dev  # OpenBLAS built on OpenMP, so it shares rill's thread team instead of oversubscribing
  libdnnl-dev             # oneDNN
  ocl-icd-opencl-dev      # only a Recommends of libdnnl-dev, but oneDNN's CMake config calls find_package(OpenCL)
  libxsimd-dev            # portable SIMD
  libcli11-dev            # command-line parsing
  libpcre2-dev            # Unicode regular expressions for the BPE pre-tokenizers
  libicu-dev              # Unicode normalisation for WordPiece
  libedit-dev             # line editing and history in rill chat (BSD-licensed readline interface)
  catch2                  # tests (v2 on Debian 12, v3 on 13; tests/catch.h takes either)
  libbenchmark-dev        # bench/ (Google Benchmark)
  nlohmann-json3-dev      # JSON: rill serve's requests and responses, the golden references in tests
  libcpp-httplib-dev      # rill serve's HTTP server (threaded, chunked responses for server-sent events)
  clang libclang-rt-dev libomp-dev  # the libFuzzer harnesses (scripts/fuzz.sh): clang, its sanitizer runtimes and its OpenMP
                                    # (the unversioned names: each release points them at its own clang, 14 or 19)
  ca-certificates         # npm fetches the tests' Node packages over HTTPS
  python3-jinja2          # the reference renderer for chat templates with tools (tests/tool_templates_test.sh)
  nginx                   # the scale-out recipe (scripts/serve_cluster.sh) and ctest load_test; the smallest of Debian 12's
                          # nginx packages (nginx-light is nginx plus a module). Where systemd runs, installing it also
                          # enables the stock site on port 80; the recipe never uses it (systemctl disable --now nginx)
)
# The server tests drive rill serve with OpenAI's Node package; Debian's Node.js unless one is installed.
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}")
  if [[ $(id -u) == 0 ]]; then
    apt-get update -qq
    "${install[@]}"
  elif command -v sudo >/dev/null; then
    echo "setup.sh: installing with sudo: ${missing[*]}" >&2
    sudo apt-get update -qq
    sudo "${install[@]}"
  else
    echo "setup.sh: these Debian packages are missing: ${missing[*]}" >&2
    echo "setup.sh: as root, run:  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    echo "setup.sh: then run bash scripts/setup.sh again" >&2
    exit 1
  fi
fi

((build)) || { echo "setup.sh: packages installed"; exit 0; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
echo "setup.sh: built build/bin/rill"
