// The perplexity test data: llama.cpp's log-probs at every position llama-perplexity scores, for a model
// and a text, so that tests can hold `rill perplexity` to the perplexity llama.cpp's own log-probs give.
//   node bench/perplexity_vs_llamacpp.mjs [--peer PATH] [--model M] [--text T] [--ctx N]
//        [--write tests/data/stories260K.perplexity.json]
// Chunking is llama-perplexity's: the text's tokens (llama.cpp's tokenizer, with BOS in front) cut into
// chunks of N, each chunk's first token replaced by BOS, positions N/2 .. N-2 scoring the next token.
// The peer returns the distribution after its last token, so each scored position is one call.
import { execFileSync } from "node:child_process";
import fs from "node:fs";

const args = process.argv.slice(2);
let peer = "../shared/peers/llamacpp", model = "../shared/models/stories260K/stories260K.gguf";
let text = "../shared/models/stories260K/expected/greedy_n256.txt", ctx = 64, write = "";
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--peer") peer = args[++i];
  else if (args[i] === "--model") model = args[++i];
  else if (args[i] === "--text") text = args[++i];
  else if (args[i] === "--ctx") ctx = Number(args[++i]);
  else if (args[i] === "--write") write = args[++i];
}
const run = (argv) => execFileSync(peer, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 28 });

let body = fs.readFileSync(text, "utf8");
if (body.endsWith("\n")) body = body.slice(0, -1);  // as llama-perplexity reads its file
const BOS = 1;  // stories260K's (SentencePiece) BOS, which its vocabulary adds
const tokens = [BOS, ...run(["tokenize", model, body]).trim().split(/\s+/).map(Number)];
const nChunk = Math.floor(tokens.length / ctx), first = ctx / 2;
const positions = [];
for (let c = 0; c < nChunk; ++c) {
  const chunk = tokens.slice(c * ctx, (c + 1) * ctx);
  const target = chunk.slice();
  chunk[0] = BOS;
  for (let p = first; p < ctx - 1; ++p) {
    const out = JSON.parse(run(["logits", model, "--tokens", chunk.slice(0, p + 1).join(","), "--all-logprobs", "--kv-type", "F32", "--threads", "2"]));
    positions.push({ chunk: c, pos: p, target: target[p + 1], logprob: out.next_token_logprobs[target[p + 1]] });
  }
  process.stderr.write(`chunk ${c + 1}/${nChunk}\n`);
}
const nll = positions.map((q) => -q.logprob);
const mean = nll.reduce((a, b) => a + b, 0) / nll.length;
const result = {
  made_by: "node bench/perplexity_vs_llamacpp.mjs: llama.cpp's log-probs (peers/llamacpp logits --all-logprobs --kv-type F32), " +
    "one call per position llama-perplexity scores",
  model: model.split("/").slice(-2).join("/"), text: text.split("/").slice(-3).join("/"), n_ctx: ctx, n_chunk: nChunk,
  n_tokens: tokens.length, ppl: Math.exp(mean), positions,
};
console.log(`llama.cpp's log-probs give PPL ${result.ppl.toFixed(6)} over ${nll.length} tokens`);
if (write) fs.writeFileSync(write, JSON.stringify(result) + "\n");
