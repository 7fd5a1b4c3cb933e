// The README's worked comparison of quantization types: for each mix, bits per weight, how far its
// predictions drift from the full-precision model's (KL divergence, top-token agreement,
// as `rill perplexity --kl-divergence` reports them), and decode / prompt speed. No perplexity ratio:
// the base file keeps log-probs within 16 nats of the top one (llama.cpp's format), and the golden
// model's random weights put the text's tokens further down, so PPL(base) from the file means nothing.
//   node bench/quant_comparison.mjs [--speed MODEL-F16.gguf] [--vs-llamacpp] [--out DIR]
// Quality is measured on ../shared/golden/synth-llama-A.F32.gguf (256-wide rows, so every i-quant applies;
// its weights are random but chosen for peaked predictions) quantized with its committed imatrix, over a
// text stories260K writes (its tokenizer is the golden model's). Speed is measured on --speed's model
// (default /work/models/tinyllama-F16.gguf, from `rill synth --preset tinyllama-1.1b --type F16`),
// quantized with an imatrix rill collects on it, `rill bench -p 512 -n 64 -t 2 -r 3 --no-mmap`.
// Writes DIR/quant_comparison.json, DIR/quant_comparison.md and DIR/quant_comparison.svg (default
// bench/plots) and prints the table.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const shared = process.env.RILL_SHARED || path.resolve(root, "../shared");
const rill = path.join(root, "build/bin/rill");
const args = process.argv.slice(2);
const flag = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const speedModel = flag("--speed", "/work/models/tinyllama-F16.gguf");
const outDir = flag("--out", path.join(root, "bench/plots"));
const vsLlama = args.includes("--vs-llamacpp");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rill-quant-"));

const run = (...a) => execFileSync(rill, a, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 1 << 28 });
const log = (s) => process.stderr.write(s + "\n");

// Mixes from most to fewest bits; those marked speed are also benchmarked on the speed model.
const mixes = [
  ["Q8_0", true], ["Q6_K", false], ["Q5_K_M", false], ["Q4_K_M", true], ["IQ4_XS", true], ["Q3_K_M", false],
  ["IQ3_M", true], ["IQ3_XXS", true], ["Q2_K", false], ["IQ2_M", true], ["IQ2_XS", false], ["IQ2_XXS", true],
  ["IQ1_M", true], ["IQ1_S", false],
];

// The evaluation text: four seeded stories from stories260K.
const textPath = path.join(tmp, "stories.txt");
const stories = path.join(shared, "models/stories260K/stories260K.gguf");
fs.writeFileSync(textPath, [1, 2, 3, 4].map((seed) =>
  "Once upon a time" + run("run", "-m", stories, "-p", "Once upon a time", "-n", "1000", "--temp", "0.8", "--seed", String(seed))).join("\n"));

// Quality on the golden model.
const golden = path.join(shared, "golden/synth-llama-A.F32.gguf");
const goldenImatrix = path.join(root, "tests/data/iq/synth-llama-A.imatrix.gguf");
const base = path.join(tmp, "base.kld");
const baseRun = JSON.parse(run("perplexity", "-m", golden, "-f", textPath, "-c", "128", "--kl-divergence-base", base, "--json"));
const goldenParams = JSON.parse(run("info", "-m", golden, "--json")).weight_bytes / 4;  // every tensor F32
log(`quality: ${baseRun.chunks} chunks of 128 tokens, ${baseRun.tokens} scored`);
const rows = [];
for (const [mix, speed] of mixes) {
  const q = path.join(tmp, `golden-${mix}.gguf`);
  run("quantize", golden, q, mix, "--imatrix", goldenImatrix);
  const info = JSON.parse(run("info", "-m", q, "--json"));
  const kl = JSON.parse(run("perplexity", "-m", q, "--kl-divergence-base", base, "--kl-divergence", "--json"));
  fs.rmSync(q);
  rows.push({ mix, speed, bpw: (8 * info.weight_bytes) / goldenParams, kld_mean: kl.kld_mean, kld_99: kl.kld_99,
              same_top: kl.same_top });
  log(`${mix}: ${rows.at(-1).bpw.toFixed(2)} bpw, KLD ${kl.kld_mean.toFixed(5)}`);
}

// Speed on the speed model.
if (fs.existsSync(speedModel)) {
  const imatrix = path.join(tmp, "speed.imatrix.gguf");
  run("imatrix", "-m", speedModel, "-f", textPath, "-c", "256", "--chunks", "2", "--no-ppl", "-o", imatrix, "--no-mmap");
  for (const row of rows.filter((r) => r.speed)) {
    const q = path.join(tmp, `speed-${row.mix}.gguf`);
    run("quantize", speedModel, q, row.mix, "--imatrix", imatrix);
    const benchArgs = ["bench", "-m", q, "-p", "512", "-n", "64", "-t", "2", "-r", "3", "--no-mmap", "-o", "json"];
    const results = JSON.parse(run(...benchArgs, ...(vsLlama ? ["--vs-llamacpp"] : [])));  // alternating pairs
    const pp = results.find((r) => r.n_prompt === 512), tg = results.find((r) => r.n_gen === 64);
    Object.assign(row, { speed_bpw: (8 * pp.model_size) / pp.model_n_params, pp512: pp.avg_ts, tg64: tg.avg_ts,
                         tg_pct_bw: tg.pct_of_bandwidth, pp512_vs_llamacpp: pp.ratio, tg64_vs_llamacpp: tg.ratio });
    fs.rmSync(q);
    log(`${row.mix}: pp512 ${row.pp512.toFixed(1)} t/s, tg64 ${row.tg64.toFixed(1)} t/s`);
  }
}
fs.rmSync(tmp, { recursive: true });

// The table.
const fmt = (v, d) => (v === undefined ? "" : v.toFixed(d));
const lines = [
  "| mix | bits/weight (golden) | mean KLD | 99% KLD | same top token | tinyllama bits/weight | tg64 t/s | pp512 t/s |" +
    (vsLlama ? " tg64 vs llama.cpp | pp512 vs llama.cpp |" : ""),
  "|---|---:|---:|---:|---:|---:|---:|---:|" + (vsLlama ? "---:|---:|" : ""),
  ...rows.map((r) => `| ${r.mix} | ${fmt(r.bpw, 2)} | ${fmt(r.kld_mean, 5)} | ${fmt(r.kld_99, 4)} | ${fmt(100 * r.same_top, 1)}% | ` +
    `${fmt(r.speed_bpw, 2)} | ${fmt(r.tg64, 1)} | ${fmt(r.pp512, 1)} |` +
    (vsLlama ? ` ${r.tg64_vs_llamacpp ? r.tg64_vs_llamacpp.toFixed(2) + "x" : ""} | ${r.pp512_vs_llamacpp ? r.pp512_vs_llamacpp.toFixed(2) + "x" : ""} |` : "")),
];
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "quant_comparison.json"), JSON.stringify(rows, null, 1) + "\n");
fs.writeFileSync(path.join(outDir, "quant_comparison.md"), lines.join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "quant_comparison.svg"), plot(rows));
console.log(lines.join("\n"));

// Mean KLD (log scale) against bits per weight, one labelled dot per mix, k-quants and i-quants apart.
function plot(rows) {
  const W = 720, H = 440, L = 70, R = 20, T = 50, B = 50;
  const xs = rows.map((r) => r.bpw), ys = rows.map((r) => Math.log10(Math.max(r.kld_mean, 1e-6)));
  const x0 = Math.floor(Math.min(...xs)), x1 = Math.ceil(Math.max(...xs));
  const y0 = Math.floor(Math.min(...ys)), y1 = Math.ceil(Math.max(...ys));
  const px = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R), py = (y) => T + ((y1 - y) / (y1 - y0)) * (H - T - B);
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">KL divergence from F32 against size, golden model with its imatrix</text>`,
    `<text x="${W / 2}" y="${H - 12}" text-anchor="middle">bits per weight</text>`,
    `<text transform="translate(16 ${H / 2}) rotate(-90)" text-anchor="middle">mean KLD (log scale)</text>`];
  for (let x = x0; x <= x1; ++x)
    out.push(`<line x1="${px(x)}" y1="${T}" x2="${px(x)}" y2="${H - B}" stroke="#ddd"/><text x="${px(x)}" y="${H - B + 16}" text-anchor="middle">${x}</text>`);
  for (let y = y0; y <= y1; ++y)
    out.push(`<line x1="${L}" y1="${py(y)}" x2="${W - R}" y2="${py(y)}" stroke="#ddd"/><text x="${L - 6}" y="${py(y) + 4}" text-anchor="end">1e${y}</text>`);
  rows.forEach((r, i) => {
    const color = r.mix.startsWith("IQ") ? "#c0392b" : "#2471a3";
    out.push(`<circle cx="${px(xs[i])}" cy="${py(ys[i])}" r="4" fill="${color}"/>`,
             `<text x="${px(xs[i]) + 6}" y="${py(ys[i]) - 6}" fill="${color}">${r.mix}</text>`);
  });
  out.push(`<text x="${W - R}" y="${T - 8}" text-anchor="end"><tspan fill="#2471a3">● k-quants and Q8_0</tspan>  <tspan fill="#c0392b">● i-quants</tspan></text>`, "</svg>\n");
  return out.join("\n");
}
