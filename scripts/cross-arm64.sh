#!/usr/bin/env bash
# Builds rill for ARM64 with Debian's cross toolchain and runs its kernel, golden and architecture
# tests under qemu-aarch64 (user mode) on a CPU model with the dot-product and int8-matrix extensions
# (qemu's "max": the neon, dotprod and i8mm paths all run), then its kernel tests on one with dotprod
# alone (Neoverse N1) and one with neither (Cortex-A57). Each run first checks that the CPU offers exactly the kernel paths expected
# of that model, so a silent fallback to the generic path fails.
#   scripts/cross-arm64.sh              installs what is missing (as root), builds build-arm64/, tests
#   scripts/cross-arm64.sh --no-test    installs and builds only
# RILL_SHARED: the reference data (default ../shared).
# Debian 12 or 13 host, x86-64. oneDNN's arm64 headers cannot be installed beside the host's (both
# packages own /usr/include/oneapi/dnnl/dnnl_config.h, which differs per architecture), so its
# packages are unpacked into build-arm64/sysroot for the build; every other arm64 package is installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
run_tests=1
case ${1:-} in
  "") ;;
  --no-test) run_tests=0 ;;
  *) echo "usage: scripts/cross-arm64.sh [--no-test]" >&2; exit 2 ;;
esac
out=build-arm64
shared=${RILL_SHARED:-$PWD/../shared}

packages=(g++-aarch64-linux-gnu qemu-user libdnnl2:arm64 libopenblas-openmp-dev:arm64 libpcre2-dev:arm64 libicu-dev:arm64
          libedit-dev:arm64 libbenchmark-dev:arm64 libxsimd-dev:arm64 libcpp-httplib-dev:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] || { echo "cross-arm64.sh: as root, install: ${missing[*]} (after dpkg --add-architecture arm64)" >&2; exit 1; }
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
sysroot=$PWD/$out/sysroot
if [[ ! -f $sysroot/usr/include/oneapi/dnnl/dnnl_config.h ]]; then
  # The development package and the library its CMake config names beside it (the same library is
  # installed for running).
  mkdir -p "$sysroot"
  for p in libdnnl-dev libdnnl2; do
    (cd "$out" && apt-get download -qq "$p:arm64" 2>/dev/null && dpkg-deb -x "${p}"_*_arm64.deb sysroot && rm -f "${p}"_*_arm64.deb)
  done
fi

[[ -f $out/build.ninja ]] || cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/scripts/aarch64-linux-gnu.cmake" -Ddnnl_DIR="$sysroot/usr/lib/aarch64-linux-gnu/cmake/dnnl" \
  -DRILL_SHARED_DIR="$shared" >/dev/null
cmake --build "$out" --target rill_tests
((run_tests)) || { echo "cross-arm64.sh: built $out/bin/rill_tests"; exit 0; }

# Under emulation an instruction costs about a hundred native ones, so the run is cut to what depends
# on the kernel path: the kernel unit tests, the golden files of every type, the architecture files
# and the recurrent families, on the NEON paths only (RILL_TEST_KERNELS; the generic and reference
# paths are the same C++ as on x86, where the native suite runs them), without the KV-cache precision
# and quantizer cases (no kernel path in them), with the planner's and machine profile's cases (no x86
# cpuid there; the GEMM calibration, which times real runs, is left to native CPUs). On a Neoverse N1 (dotprod, no i8mm) and a Cortex-A57
# (neither) the kernel tests alone: they show each CPU gets its own fastest path, and that the paths
# it may run use no instruction it lacks (one would stop the run with SIGILL).
status=0
run() {  # CPU_MODEL EXPECTED_BEST PATHS FILTER
  local start=$SECONDS
  echo "== qemu-aarch64 -cpu $1: expecting $2 as the fastest path; testing on $3"
  RILL_SHARED=$shared RILL_EXPECT_KERNELS=$2 RILL_TEST_KERNELS=$3 qemu-aarch64 -cpu "$1" "$out/bin/rill_tests" "$4" || status=$?
  echo "== -cpu $1: exit $status after $((SECONDS - start)) s"
}
run max i8mm neon,dotprod,i8mm '[kernels],[golden]~[quantize]~[kv],[arch]~[kv],[forward]~[kv],[hybrid]~[kv],[lfm2],[mamba2],[gemma4],[plan],[budget]'
run neoverse-n1 dotprod neon,dotprod '[kernels]'
run cortex-a57 neon neon '[kernels]'
((status == 0)) && echo "cross-arm64.sh: every qemu-aarch64 run passed" || echo "cross-arm64.sh: a qemu-aarch64 run failed" >&2
exit "$status"
