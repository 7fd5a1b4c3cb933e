// Checks `rill plan` against `rill bench`: for each model, the plan's predicted tg128 and pp512, then
// what rill bench measures right after, and the error of each prediction.
//   node bench/plan_vs_bench.mjs --rill build/bin/rill -t 2 -r 3 MODEL.gguf...
// Prints a markdown table; exits 1 when any prediction is off by more than --tolerance percent.
// --fresh measures the machine again before each model's plan, so plan and bench see the host in the
// same state: on a shared host the read bandwidth alone moved 39-64 GB/s within minutes (Zen 5, 2 cores).
import { execFileSync } from "node:child_process";

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
let worst = 0;
for (const model of models) {
  const plan = run(["plan", "-m", model, "-t", threads, "-p", "512", "--json", ...(fresh ? ["--remeasure"] : [])]);
  const bench = run(["bench", "-m", model, "--no-mmap", "-t", threads, "-r", reps, "-p", "512", "-n", "128", "-o", "json"]);
  const measured = (name) => bench.find((r) => (name === "pp" ? r.n_prompt === 512 : r.n_gen === 128)).avg_ts;
  const tg = [plan.decode.tokens_per_second, measured("tg")];
  const pp = [plan.prefill.tokens_per_second, measured("pp")];
  worst = Math.max(worst, Math.abs(pct(...tg)), Math.abs(pct(...pp)));
  rows.push(`| ${model.split("/").pop()} | ${tg[0].toFixed(1)} | ${tg[1].toFixed(1)} | ${pct(...tg).toFixed(1)}% | ` +
            `${pp[0].toFixed(1)} | ${pp[1].toFixed(1)} | ${pct(...pp).toFixed(1)}% |`);
  console.error(rows[rows.length - 1]);
}
console.log(`threads ${threads}, ${reps} repetitions per bench row\n`);
console.log("| model | tg128 predicted | tg128 measured | error | pp512 predicted | pp512 measured | error |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows) console.log(r);
console.log(`\nworst error ${worst.toFixed(1)}% (tolerance ${tolerance}%)`);
process.exit(worst <= tolerance ? 0 : 1);
