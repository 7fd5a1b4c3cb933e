#!/usr/bin/env bash
# Installs rill's build dependencies from Debian 12 packages (idempotent, needs root) and builds
# Release into build/. The CLI lands at build/bin/rill.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-openmp-dev  # OpenBLAS built on OpenMP, so it shares rill's thread team instead of oversubscribing
  libdnnl-dev             # oneDNN
  libxsimd-dev            # portable SIMD
  libcli11-dev            # command-line parsing
  libpcre2-dev            # Unicode regular expressions for the BPE pre-tokenizers
  libicu-dev              # Unicode normalisation for WordPiece
  libedit-dev             # line editing and history in rill chat (BSD-licensed readline interface)
  catch2                  # tests (v2)
  libbenchmark-dev        # bench/ (Google Benchmark)
  nlohmann-json3-dev      # JSON: rill serve's requests and responses, the golden references in tests
  libcpp-httplib-dev      # rill serve's HTTP server (threaded, chunked responses for server-sent events)
  clang libclang-rt-14-dev  # the libFuzzer harness (scripts/fuzz.sh)
)
# The server tests drive rill serve with OpenAI's Node package; Debian's Node.js unless one is installed.
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "setup.sh: missing packages: ${missing[*]}; run as root or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
echo "setup.sh: built build/bin/rill"
