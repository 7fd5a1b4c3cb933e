// The Mamba-2 test data: llama.cpp's log-probs on rill's tiny-nemotron-h or tiny-nemotron-h-moe (F32,
// seed 1), and how far each Mamba-2 (and expert) feature moves them when the file breaks it, which is
// what the tolerance of tests/test_mamba2.cpp stands on (as ../shared/arch/README.md measures its files).
//   node bench/mamba2_vs_llamacpp.mjs [--rill PATH] [--peer PATH] [--preset tiny-nemotron-h-moe]
//        [--write tests/data/tiny-nemotron-h.llamacpp.json]
// Each variant is the same file with one tensor's bytes (or one metadata value) rewritten; llama.cpp
// reads every variant, so the differences are llama.cpp's own.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = process.argv.slice(2);
let rill = "build/bin/rill", peer = "../shared/peers/llamacpp", write = "", preset = "tiny-nemotron-h";
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--rill") rill = args[++i];
  else if (args[i] === "--peer") peer = args[++i];
  else if (args[i] === "--write") write = args[++i];
  else if (args[i] === "--preset") preset = args[++i];
}
const run = (cmd, argv) => execFileSync(cmd, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 28 });

// Where each tensor's bytes are, and each scalar metadata value: a GGUF v3 header walk.
function tensorOffsets(buf) {
  let at = 8;
  const u32 = () => { const v = buf.readUInt32LE(at); at += 4; return v; };
  const u64 = () => { const v = Number(buf.readBigUInt64LE(at)); at += 8; return v; };
  const str = () => { const n = u64(); const s = buf.toString("utf8", at, at + n); at += n; return s; };
  const size = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  const skip = (type) => {
    if (type === 8) str();
    else if (type === 9) { const t = u32(), n = u64(); for (let i = 0; i < n; ++i) skip(t); }
    else at += size[type];
  };
  const n_tensors = u64(), n_kv = u64();  // after the magic and the version
  let alignment = 32;
  const values = new Map();  // key -> byte offset of its value
  for (let i = 0; i < n_kv; ++i) {
    const key = str(), type = u32();
    if (key === "general.alignment") { alignment = buf.readUInt32LE(at); }
    values.set(key, at);
    skip(type);
  }
  const tensors = new Map();
  for (let i = 0; i < n_tensors; ++i) {
    const name = str(), dims = u32();
    let n = 1;
    for (let d = 0; d < dims; ++d) n *= u64();
    const type = u32(), offset = u64();
    tensors.set(name, { n, type, offset });
  }
  const data = Math.ceil(at / alignment) * alignment;
  for (const t of tensors.values()) t.at = data + t.offset;
  return { tensors, values };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rill-mamba2-"));
const base = path.join(dir, `${preset}.F32.gguf`);
run(rill, ["synth", "--preset", preset, "--type", "F32", "--seed", "1", "-o", base, "-t", "2"]);
const bytes = fs.readFileSync(base);
const { tensors, values } = tensorOffsets(bytes);
const layersWith = (name) => [...tensors.keys()].filter((t) => t.endsWith(`.${name}`)).map((t) => Number(t.split(".")[1]));
// A fixed prompt over the placeholder vocabulary, as bench/presets_vs_llamacpp.mjs draws it.
const prompt = [1];
for (let s = 12345; prompt.length < 32;) { s = (s * 1103515245 + 12345) % 2147483648; prompt.push(259 + (s % 253)); }

const logits = (file) => JSON.parse(run(peer, ["logits", file, "--tokens", prompt.join(","), "--all-logprobs", "--kv-type", "F32",
                                             "--threads", "1", "--n-predict", "16"]));
const reference = logits(base);

// Each variant: the tensor it rewrites in every layer that has it, and the new value of an element
// (null: the convolution's taps reversed); or a metadata value rewritten in place.
const variants = [
  ["D skip removed (ssm_d = 0)", "ssm_d", () => 0],
  ["no convolution bias (ssm_conv1d.bias = 0)", "ssm_conv1d.bias", () => 0],
  ["grouped norm gains all 1 (ssm_norm = 1)", "ssm_norm.weight", () => 1],
  ["decay halved (ssm_a × 0.5)", "ssm_a", (v) => v * 0.5],
  ["dt bias + 1", "ssm_dt.bias", (v) => v + 1],
  ["conv taps reversed", "ssm_conv1d.weight", null],
];
const arch = "nemotron_h_moe.";
if (tensors.has("blk.1.exp_probs_b.bias")) {
  variants.push(["no selection bias (exp_probs_b = 0)", "exp_probs_b.bias", () => 0],
                ["no shared expert (ffn_down_shexp = 0)", "ffn_down_shexp.weight", () => 0],
                ["routed weights unscaled (expert_weights_scale = 1)", { key: arch + "expert_weights_scale", f32: 1 }],
                ["routed weights not renormalised (expert_weights_norm = false)", { key: arch + "expert_weights_norm", u8: 0 }]);
}
const rows = [];
for (const [label, name, change] of variants) {
  const copy = Buffer.from(bytes);
  if (typeof name === "object") {
    if ("f32" in name) copy.writeFloatLE(name.f32, values.get(name.key));
    else copy.writeUInt8(name.u8, values.get(name.key));
  }
  for (const layer of typeof name === "string" ? layersWith(name) : []) {
    const t = tensors.get(`blk.${layer}.${name}`);
    if (change) {
      for (let i = 0; i < t.n; ++i) copy.writeFloatLE(change(copy.readFloatLE(t.at + 4 * i)), t.at + 4 * i);
    } else {  // [kernel, channels]: reverse each channel's taps
      const k = 4, channels = t.n / k;
      for (let c = 0; c < channels; ++c) {
        const taps = []; for (let i = 0; i < k; ++i) taps.push(bytes.readFloatLE(t.at + 4 * (c * k + i)));
        taps.reverse().forEach((v, i) => copy.writeFloatLE(v, t.at + 4 * (c * k + i)));
      }
    }
  }
  const file = path.join(dir, "variant.gguf");
  fs.writeFileSync(file, copy);
  const moved = logits(file).next_token_logprobs;
  let worst = 0;
  moved.forEach((v, i) => { worst = Math.max(worst, Math.abs(v - reference.next_token_logprobs[i])); });
  rows.push({ change: label, max_abs_delta_logprob: worst });
}
console.log("| change (every layer that has it, llama.cpp on the changed file) | max abs Δ log-prob at the last prompt position |");
console.log("| --- | ---: |");
for (const r of rows) console.log(`| ${r.change} | ${r.max_abs_delta_logprob.toFixed(4)} |`);
if (write) {
  fs.writeFileSync(write, JSON.stringify({
    preset, type: "F32", seed: 1, prompt_tokens: prompt,
    llamacpp_logprobs_last: reference.next_token_logprobs, llamacpp_greedy: reference.greedy_tokens,
    sensitivity: rows,
  }) + "\n");
  console.log(`wrote ${write}`);
}
fs.rmSync(dir, { recursive: true, force: true });
