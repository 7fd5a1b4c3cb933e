#!/usr/bin/env bash
# Builds tests/tools/ggml_reference.cpp against the llama.cpp peer's libraries and headers and runs it:
#   scripts/ggml_reference.sh grids            rewrites quant/iq_grids.inc
#   scripts/ggml_reference.sh dequant          rewrites tests/data/iq/<type>.{blocks,f32}
#   scripts/ggml_reference.sh quantize         rewrites tests/data/iq/quantize.f32 and <type>.quantized
#   scripts/ggml_reference.sh quantize-model IN OUT FTYPE [IMATRIX]   llama.cpp's quantizer on a model
#   scripts/ggml_reference.sh imatrix-read FILE                       an imatrix as llama.cpp's loader reads it
# It needs the peer (../shared/peers/llamacpp, installed on first use); rill itself never links ggml.
# A developer's tool: CI and the tests read what it wrote.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shared=${RILL_SHARED:-$(cd .. && pwd)/shared}
cache=${RILL_PEER_CACHE:-$HOME/.cache/rill-peer}
bins=$cache/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
src=$cache/llama.cpp-src
[[ -f $bins/libggml-base.so && -d $src ]] || "$shared/peers/llamacpp" source >/dev/null  # installs the peer
[[ -f $bins/libggml-base.so ]] || { echo "ggml_reference.sh: no peer libraries in $bins" >&2; exit 1; }

tool=$cache/ggml_reference
if [[ ! -x $tool || tests/tools/ggml_reference.cpp -nt $tool ]]; then
  g++ -std=c++20 -O1 -Wall -Wextra -I"$src/include" -I"$src/ggml/include" -I"$src/common" -o "$tool" \
    tests/tools/ggml_reference.cpp "$bins"/libllama-common.so "$bins"/libllama.v*.so "$bins"/libggml.v*.so \
    "$bins"/libggml-base.so -Wl,-rpath,"$bins"
fi
case ${1:-} in
  grids) "$tool" grids >quant/iq_grids.inc ;;
  dequant | quantize) mkdir -p tests/data/iq && "$tool" "$1" tests/data/iq ;;
  quantize-model | imatrix-read) "$tool" "$@" ;;
  *) echo "usage: scripts/ggml_reference.sh grids|dequant|quantize|quantize-model IN OUT FTYPE [IMATRIX]|imatrix-read FILE" >&2; exit 2 ;;
esac
