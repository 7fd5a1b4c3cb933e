#!/usr/bin/env bash
# rill bench against llama.cpp's llama-bench for a model too large for both copies of its weights to be
# in memory at once (rill bench --vs-llamacpp keeps its copy loaded while llama.cpp loads another). Here
# each side is its own process, one after the other, REPS times: each pair is run moments apart, and the
# medians of the per-pair ratios are printed as rill bench --vs-llamacpp prints them.
#   bench/alternate_vs_llamacpp.sh MODEL.gguf [REPS=5] [THREADS=2] [N_GEN=128]
# Both read the weights into memory (--no-mmap / -mmp 0), prompt 512 and N_GEN decoded tokens; each process
# does its own warm-up. Needs node (for the JSON) and the peer in $RILL_SHARED or ../shared.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model=${1:?usage: bench/alternate_vs_llamacpp.sh MODEL.gguf [REPS] [THREADS]}
reps=${2:-5}
threads=${3:-2}
n_gen=${4:-128}
peer=${RILL_SHARED:-$here/../shared}/peers/llamacpp
rill=$here/build/bin/rill
out=$(mktemp -d)
trap 'rm -rf --one-file-system "$out"' EXIT

for ((i = 1; i <= reps; ++i)); do
  echo "pair $i/$reps: rill" >&2
  "$rill" bench -m "$model" -p 512 -n "$n_gen" -r 1 -t "$threads" --no-mmap -o json >"$out/rill.$i.json"
  echo "pair $i/$reps: llama.cpp" >&2
  "$peer" bench -m "$model" -p 512 -n "$n_gen" -r 1 -t "$threads" -mmp 0 -o json >"$out/llama.$i.json"
done

node - "$out" "$reps" <<'EOF'
const fs = require('fs');
const [dir, reps] = [process.argv[2], Number(process.argv[3])];
const median = (v) => { const s = [...v].sort((a, b) => a - b), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
// llama-bench may print log lines around its JSON array.
const parse = (f) => { const t = fs.readFileSync(f, 'utf8'); return JSON.parse(t.slice(t.indexOf('['), t.lastIndexOf(']') + 1)); };
const rows = {};
for (let i = 1; i <= reps; ++i) {
  const rill = parse(`${dir}/rill.${i}.json`), llama = parse(`${dir}/llama.${i}.json`);
  for (const r of rill) {
    const test = r.n_prompt > 0 ? `pp${r.n_prompt}` : `tg${r.n_gen}`;
    const l = llama.find((x) => x.n_prompt === r.n_prompt && x.n_gen === r.n_gen);
    (rows[test] ??= []).push({ rill: r.avg_ts, llama: l.avg_ts, pct: r.pct_of_bandwidth, gbps: r.achieved_gbps, bw: r.bandwidth_gbps });
  }
}
for (const [test, pairs] of Object.entries(rows)) {
  const line = [`${test}: rill ${median(pairs.map((p) => p.rill)).toFixed(2)} t/s, llama.cpp ${median(pairs.map((p) => p.llama)).toFixed(2)} t/s`,
                `median ratio ${median(pairs.map((p) => p.rill / p.llama)).toFixed(2)}x`];
  if (pairs[0].pct != null)
    line.push(`${median(pairs.map((p) => p.gbps)).toFixed(1)} GB/s read = ${median(pairs.map((p) => p.pct)).toFixed(0)}% of ${median(pairs.map((p) => p.bw)).toFixed(1)} GB/s`);
  console.log(line.join(', '));
  console.log('  pairs (rill / llama.cpp): ' + pairs.map((p) => `${p.rill.toFixed(2)}/${p.llama.toFixed(2)}`).join('  '));
}
EOF
