// Checks that `rill synth` presets load in llama.cpp and that the two agree on them: for each preset,
// a Q8_0 file, a 32-token prompt, llama.cpp's 16 greedy tokens and log-probs after the prompt, then
// rill on the same tokens (one eval of prompt + greedy, teacher-forced, with the exact reference
// kernels and again with the default ones).
//   node bench/presets_vs_llamacpp.mjs [--rill PATH] [--peer PATH] [--dir DIR] [--type Q8_0] [-t N] PRESET...
//   node bench/presets_vs_llamacpp.mjs --file MODEL.gguf   (a file already written, e.g. a preset too
//   large for Q8_0 on this machine; it is kept)
// Prints a markdown table; exits 1 when a preset disagrees (greedy tokens before the first step whose
// margin is below 0.25, or max |Δ log-prob| of the exact path above 0.5). Files are removed after use.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = process.argv.slice(2);
let rill = "build/bin/rill", peer = "../shared/peers/llamacpp", dir = os.tmpdir(), type = "Q8_0", threads = "2";
const presets = [];
const files = new Map();  // preset label -> a file given with --file
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--rill") rill = args[++i];
  else if (args[i] === "--peer") peer = args[++i];
  else if (args[i] === "--dir") dir = args[++i];
  else if (args[i] === "--type") type = args[++i];
  else if (args[i] === "-t") threads = args[++i];
  else if (args[i] === "--file") {
    const file = args[++i];
    presets.push(path.basename(file, ".gguf"));
    files.set(presets[presets.length - 1], file);
  }
  else presets.push(args[i]);
}
if (presets.length === 0) {
  console.error("usage: node bench/presets_vs_llamacpp.mjs [--rill PATH] [--peer PATH] [--dir DIR] [--type T] [-t N] PRESET...");
  process.exit(2);
}

const exec = (cmd, argv, env = {}) =>
  execFileSync(cmd, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 28, env: { ...process.env, ...env } });

// A fixed prompt: BOS, then 31 ids from a seeded generator over the placeholder vocabulary's fillers.
function prompt(n_vocab) {
  let s = 12345;
  const ids = [1];
  while (ids.length < 32) {
    s = (s * 1103515245 + 12345) % 2147483648;
    ids.push(259 + (s % Math.min(n_vocab - 259, 30000)));
  }
  return ids;
}

function logSoftmax(row) {
  let max = -Infinity;
  for (const x of row) max = Math.max(max, x);
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  return row.map((x) => x - lse);
}

function rillRows(model, tokens, n_vocab, kernels) {
  const out = path.join(dir, "rill-logits.f32");
  exec(rill, ["eval", "-m", model, "--tokens", tokens.join(","), "--kv-type", "f32", "-t", threads, "--out", out],
       kernels ? { RILL_KERNELS: kernels } : {});
  const buf = fs.readFileSync(out);
  fs.unlinkSync(out);
  const rows = [];
  for (let t = 0; t < tokens.length; ++t) {
    const row = new Array(n_vocab);
    for (let i = 0; i < n_vocab; ++i) row[i] = buf.readFloatLE(4 * (t * n_vocab + i));
    rows.push(logSoftmax(row));
  }
  return rows;
}

const argmax = (row) => row.reduce((best, x, i) => (x > row[best] ? i : best), 0);
const margin = (row) => {
  const sorted = [...row].sort((a, b) => b - a);
  return sorted[0] - sorted[1];
};

const lines = [];
let failed = false;
for (const preset of presets) {
  const model = files.get(preset) ?? path.join(dir, `${preset}.${type}.gguf`);
  const started = Date.now();
  if (!files.has(preset)) exec(rill, ["synth", "--preset", preset, "--type", type, "-o", model, "-t", threads]);
  const info = JSON.parse(exec(rill, ["info", "-m", model, "--json"]));
  const n_vocab = info.n_vocab;
  const tokens = prompt(n_vocab);
  const theirs = JSON.parse(exec(peer, ["logits", model, "--tokens", tokens.join(","), "--all-logprobs", "--kv-type", "F32",
                                        "--threads", threads, "--n-predict", "16"]));
  const greedy = theirs.greedy_tokens;
  const forced = tokens.concat(greedy.slice(0, 15));
  const result = { preset, file_gb: (fs.statSync(model).size / 1e9).toFixed(2) };
  for (const [label, kernels] of [["exact", "reference"], ["default", null]]) {
    const rows = rillRows(model, forced, n_vocab, kernels);
    const last = rows[tokens.length - 1];
    let worst = 0, compared = 0;
    theirs.next_token_logprobs.forEach((ref, i) => {
      if (ref === null) return;
      worst = Math.max(worst, Math.abs(last[i] - ref));
      ++compared;
    });
    let leading = 0;
    while (leading < greedy.length && argmax(rows[tokens.length - 1 + leading]) === greedy[leading]) ++leading;
    let agreed = 0, mustAgree = 0;
    for (let step = 0; step < greedy.length; ++step) {
      const row = rows[tokens.length - 1 + step];
      if (margin(row) < 0.25) break;
      ++mustAgree;
      if (argmax(row) !== greedy[step]) break;
      ++agreed;
    }
    result[label] = { worst, compared, agreed, mustAgree, leading };
    if (label === "exact" && (worst > 0.5 || agreed < mustAgree)) failed = true;
    if (label === "default" && agreed < mustAgree) failed = true;
  }
  if (!files.has(preset)) fs.unlinkSync(model);
  const e = result.exact, d = result.default;
  lines.push(`| ${preset} | ${result.file_gb} | ${e.agreed}/${e.mustAgree} | ${e.leading}/16 | ${e.worst.toFixed(3)} | ` +
             `${d.agreed}/${d.mustAgree} | ${d.leading}/16 | ${d.worst.toFixed(3)} | ${((Date.now() - started) / 1000).toFixed(0)} s |`);
  console.error(lines[lines.length - 1]);
}
console.log(`${type}, 32-token prompt, 16 greedy tokens from llama.cpp, threads ${threads}\n`);
console.log("| preset | file GB | exact: greedy agreed where margin ≥ 0.25 | exact: leading greedy agreed | exact: max abs Δ log-prob | " +
            "default kernels: agreed where margin ≥ 0.25 | default: leading agreed | default: max abs Δ log-prob | time |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const l of lines) console.log(l);
process.exit(failed ? 1 : 0);
