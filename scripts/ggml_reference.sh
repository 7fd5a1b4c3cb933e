#!/usr/bin/env bash
# Builds tests/tools/ggml_reference.cpp against the llama.cpp peer's libraries and headers and runs it:
#   scripts/ggml_reference.sh grids            rewrites quant/iq_grids.inc
#   scripts/ggml_reference.sh dequant          rewrites tests/data/iq/<type>.{blocks,f32}
#   scripts/ggml_reference.sh quantize         rewrites tests/data/iq/quantize.f32 and <type>.quantized
#   scripts/ggml_reference.sh quantize-model IN OUT FTYPE [IMATRIX]   llama.cpp's quantizer on a model
#   scripts/ggml_reference.sh imatrix-read FILE                       an imatrix as llama.cpp's loader reads it
#   scripts/ggml_reference.sh imatrix-collect MODEL TEXT N_CTX            llama.cpp collecting an imatrix
#   scripts/ggml_reference.sh tensor-hashes FILE                      FNV-1a 64 of each tensor's bytes, as JSON
#   scripts/ggml_reference.sh ternary-golden   rewrites tests/data/iq/synth-llama-A.ternary.json
#   scripts/ggml_reference.sh imatrix-golden   rewrites tests/data/iq/synth-llama-A.imatrix.json
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
  imatrix-collect) GGML_BACKEND_DIR=$bins "$tool" "$@" ;;
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
  imatrix-golden)  # tests/data/iq/synth-llama-A.imatrix.json: llama.cpp's mixes of the golden F32 model with an imatrix
    golden=$shared/golden/synth-llama-A.F32.gguf imatrix=tests/data/iq/synth-llama-A.imatrix.gguf tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
    tokens=$(node -e 'console.log(require(process.argv[1]).prompt_tokens.join(","))' "${golden%.gguf}.golden.json")
    # llama_ftype numbers; the i-quant mixes also get llama.cpp's log-probs.
    mixes="IQ1_S:24 IQ1_M:31 IQ2_XXS:19 IQ2_XS:20 IQ2_S:28 IQ2_M:29 IQ3_XXS:23 IQ3_XS:22 IQ3_S:26 IQ3_M:27 IQ4_XS:30 IQ4_NL:25 Q4_K_M:15 Q2_K_S:21 Q3_K_M:12 Q4_0:2 Q5_0:8 Q6_K:18"
    for pair in $mixes; do
      type=${pair%:*} ftype=${pair#*:}
      "$tool" quantize-model "$golden" "$tmp/$type.gguf" "$ftype" "$imatrix" >/dev/null 2>&1
      "$tool" tensor-hashes "$tmp/$type.gguf" >"$tmp/$type.hashes"
      if [[ $type == IQ[123]* ]]; then
        "$shared/peers/llamacpp" logits "$tmp/$type.gguf" --tokens "$tokens" --all-logprobs --kv-type F32 --threads 2 \
          --n-predict 16 >"$tmp/$type.logits.json"
      fi
    done
    node -e '
      const fs = require("fs"), dir = process.argv[1], out = {
        made_by: "scripts/ggml_reference.sh imatrix-golden: llama_model_quantize of ../shared/golden/synth-llama-A.F32.gguf " +
          "with tests/data/iq/synth-llama-A.imatrix.gguf (rill imatrix over stories260K/expected/greedy_n256.txt, -c 64), " +
          "tensor bytes hashed with FNV-1a 64 as ggml reads them, and llama.cpp log-probs of the i-quant files " +
          "(peers/llamacpp logits --all-logprobs --kv-type F32)", mixes: {} };
      for (const t of process.argv[2].split(" ").map(p => p.split(":")[0])) {
        const m = out.mixes[t] = { hashes: JSON.parse(fs.readFileSync(`${dir}/${t}.hashes`, "utf8")) };
        if (fs.existsSync(`${dir}/${t}.logits.json`)) {
          const l = JSON.parse(fs.readFileSync(`${dir}/${t}.logits.json`, "utf8"));
          out.prompt_tokens = l.prompt_tokens;
          m.llamacpp_logprobs_last = l.next_token_logprobs;
        }
      }
      fs.writeFileSync("tests/data/iq/synth-llama-A.imatrix.json", JSON.stringify(out) + "\n");' "$tmp" "$mixes"
    ;;
  *) echo "usage: scripts/ggml_reference.sh grids|dequant|quantize|quantize-model IN OUT FTYPE [IMATRIX] [--pure]|imatrix-read FILE|tensor-hashes FILE" >&2; exit 2 ;;
esac
