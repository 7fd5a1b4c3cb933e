#!/usr/bin/env bash
# Compiles the kernels for 64-bit ARM (NEON) with Debian's cross compiler, to check that the portable
# paths build there: the generic GEMV kernels and xsimd's float dot products. Not part of CI (it needs
# g++-aarch64-linux-gnu, about 100 MB); run it after touching simd/ or quant/.
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${CXX_AARCH64:-aarch64-linux-gnu-g++}
command -v "$cxx" >/dev/null || { echo "needs $cxx: apt-get install g++-aarch64-linux-gnu" >&2; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# -idirafter: the cross compiler's own headers first, then the host's for xsimd only.
for f in simd/gemv.cpp simd/gemv_generic.cpp simd/dot.cpp quant/interleave.cpp quant/dequantize.cpp quant/quantize.cpp; do
  "$cxx" -std=c++20 -O2 -Wall -Wextra -Werror -I. -idirafter /usr/include -c "$f" -o "$out/$(basename "$f" .cpp).o"
  echo "ok: $f"
done
