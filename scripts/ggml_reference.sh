#!/usr/bin/env bash
# Builds tests/tools/ggml_reference.cpp against the llama.cpp peer's libraries and headers and runs it:
#   scripts/ggml_reference.sh grids            rewrites quant/iq_grids.inc
#   scripts/ggml_reference.sh dequant          rewrites tests/data/iq/<type>.{blocks,f32}
#   scripts/ggml_reference.sh quantize         rewrites tests/data/iq/quantize.f32 and <type>.quantized
#   scripts/ggml_reference.sh quantize-model IN OUT FTYPE [IMATRIX]   llama.cpp's quantizer on a model
#   scripts/ggml_reference.sh imatrix-read FILE                       an imatrix as llama.cpp's loader reads it
#   scripts/ggml_reference.sh tensor-hashes FILE                      FNV-1a 64 of each tensor's bytes, as JSON
#   scripts/ggml_reference.sh ternary-golden   rewrites tests/data/iq/synth-llama-A.ternary.json
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
  quantize-model | imatrix-read | tensor-hashes) "$tool" "$@" ;;
  ternary-golden)  # tests/data/iq/synth-llama-A.ternary.json: llama.cpp's TQ files of the golden F32 model
    golden=$shared/golden/synth-llama-A.F32.gguf tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
    tokens=$(node -e 'console.log(require(process.argv[1]).prompt_tokens.join(","))' "${golden%.gguf}.golden.json")
    for pair in TQ1_0:36 TQ2_0:37; do
      type=${pair%:*} ftype=${pair#*:}
      "$tool" quantize-model "$golden" "$tmp/$type.pure.gguf" "$ftype" --pure >/dev/null 2>&1
      "$tool" quantize-model "$golden" "$tmp/$type.mix.gguf" "$ftype" >/dev/null 2>&1
      "$tool" tensor-hashes "$tmp/$type.pure.gguf" >"$tmp/$type.pure.hashes"
      "$tool" tensor-hashes "$tmp/$type.mix.gguf" >"$tmp/$type.mix.hashes"
      "$shared/peers/llamacpp" logits "$tmp/$type.pure.gguf" --tokens "$tokens" --all-logprobs --kv-type F32 --threads 2 \
        --n-predict 16 >"$tmp/$type.logits.json"
    done
    node -e '
      const fs = require("fs"), dir = process.argv[1], out = {
        made_by: "scripts/ggml_reference.sh ternary-golden: llama_model_quantize of ../shared/golden/synth-llama-A.F32.gguf " +
          "(--pure, and the TQ mix), tensor bytes hashed with FNV-1a 64 as ggml reads them, llama.cpp log-probs of the pure file " +
          "(peers/llamacpp logits --all-logprobs --kv-type F32)" };
      for (const t of ["TQ1_0", "TQ2_0"]) {
        const l = JSON.parse(fs.readFileSync(`${dir}/${t}.logits.json`, "utf8"));
        out.prompt_tokens = l.prompt_tokens;
        out[t] = { pure_hashes: JSON.parse(fs.readFileSync(`${dir}/${t}.pure.hashes`, "utf8")),
                   mix_hashes: JSON.parse(fs.readFileSync(`${dir}/${t}.mix.hashes`, "utf8")),
                   llamacpp_logprobs_last: l.next_token_logprobs, llamacpp_greedy: l.greedy_tokens };
      }
      fs.writeFileSync("tests/data/iq/synth-llama-A.ternary.json", JSON.stringify(out) + "\n");' "$tmp"
    ;;
  *) echo "usage: scripts/ggml_reference.sh grids|dequant|quantize|quantize-model IN OUT FTYPE [IMATRIX] [--pure]|imatrix-read FILE|tensor-hashes FILE" >&2; exit 2 ;;
esac
