// Checks `rill plan` against `rill bench`: for each model, the plan's predicted tg128 and pp512, then
// what rill bench measures right after, and the error of each prediction.
//   node bench/plan_vs_bench.mjs --rill build/bin/rill -t 2 -r 3 MODEL.gguf...
// Prints a markdown table; exits 1 when any prediction is off by more than --tolerance percent.
// --fresh measures the machine again before each model's plan, so plan and bench see the host in the
// same state: on a shared host the read bandwidth alone moved 39-64 GB/s within minutes (Zen 5, 2 cores).
// The decode prediction is also given again for the bandwidth the bench's own probes read, which
// separates the host's drift from the planner's error; the exit status still judges the first.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const args = process.argv.slice(2);
let rill = "build/bin/rill", threads = "2", reps = "3", tolerance = 20, fresh = false;
const models = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--rill") rill = args[++i];
  else if (args[i] === "-t") threads = args[++i];
  else if (args[i] === "-r") reps = args[++i];
  else if (args[i] === "--tolerance") tolerance = Number(args[++i]);
  else if (args[i] === "--fresh") fresh = true;
  else models.push(args[i]);
}
if (models.length === 0) {
  console.error("usage: node bench/plan_vs_bench.mjs [--rill PATH] [-t N] [-r N] [--tolerance PCT] [--fresh] MODEL.gguf...");
  process.exit(2);
}

const run = (argv) => JSON.parse(execFileSync(rill, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 26 }));
const pct = (predicted, measured) => (100 * (predicted - measured)) / measured;
const rows = [];
let worst = 0, worstSame = 0;
for (const model of models) {
  const plan = run(["plan", "-m", model, "-t", threads, "-p", "512", "--json", ...(fresh ? ["--remeasure"] : [])]);
  const bench = run(["bench", "-m", model, "--no-mmap", "-t", threads, "-r", reps, "-p", "512", "-n", "128", "-o", "json"]);
  const measured = (name) => bench.find((r) => (name === "pp" ? r.n_prompt === 512 : r.n_gen === 128)).avg_ts;
  const tg = [plan.decode.tokens_per_second, measured("tg")];
  const pp = [plan.prefill.tokens_per_second, measured("pp")];
  // The same plan for the bandwidth the bench's own probes read (the median of one before each tg
  // repetition): on a shared host the bandwidth can move by a third between the profile and the bench,
  // and this column separates that drift from the planner's own error. Only the read bandwidth is
  // replaced; kernel rates above it are capped by the planner as always.
  const tgRow = bench.find((r) => r.n_gen === 128);
  const profile = JSON.parse(fs.readFileSync(plan.machine.profile, "utf8"));
  const scale = tgRow.bandwidth_gbps / plan.decode.bandwidth_gbps;
  profile.read_gbps = profile.read_gbps.map((g) => g * scale);
  const scaled = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "plan-vs-bench-")), "machine.json");
  fs.writeFileSync(scaled, JSON.stringify(profile));
  const replanned = run(["plan", "-m", model, "-t", threads, "-p", "512", "--json", "--machine", scaled]);
  fs.rmSync(path.dirname(scaled), { recursive: true, force: true });
  const tgSame = replanned.decode.tokens_per_second;
  worst = Math.max(worst, Math.abs(pct(...tg)), Math.abs(pct(...pp)));
  worstSame = Math.max(worstSame, Math.abs(pct(tgSame, tg[1])), Math.abs(pct(...pp)));
  rows.push(`| ${model.split("/").pop()} | ${tg[0].toFixed(1)} | ${tg[1].toFixed(1)} | ${pct(...tg).toFixed(1)}% | ` +
            `${plan.decode.bandwidth_gbps.toFixed(1)} / ${tgRow.bandwidth_gbps.toFixed(1)} | ${tgSame.toFixed(1)} | ${pct(tgSame, tg[1]).toFixed(1)}% | ` +
            `${pp[0].toFixed(1)} | ${pp[1].toFixed(1)} | ${pct(...pp).toFixed(1)}% |`);
  console.error(rows[rows.length - 1]);
}
console.log(`threads ${threads}, ${reps} repetitions per bench row\n`);
console.log("| model | tg128 predicted | tg128 measured | error | GB/s profile / bench | tg128 predicted at the bench's GB/s | error | pp512 predicted | pp512 measured | error |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) console.log(r);
console.log(`\nworst error ${worst.toFixed(1)}%, ${worstSame.toFixed(1)}% at the bench's bandwidth (tolerance ${tolerance}%)`);
process.exit(worst <= tolerance ? 0 : 1);
