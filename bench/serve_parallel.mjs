// Continuous batching, measured: one `rill serve --parallel N` server, then alternately one stream
// alone and N streams at once, each generating a fixed number of tokens. Aggregate tokens/s is all
// streams' generated tokens over the wall time from the first request to the last reply; the ratio
// of each pair (N streams ÷ 1 stream) is quoted as a median, since the host is shared and noisy.
//   node bench/serve_parallel.mjs --rill build/bin/rill -m MODEL.gguf [--parallel 4] [-t 2]
//        [--tokens 128] [--pairs 5] [--json]
// Extra flags after -- go to rill serve (default: --no-mmap --mlock).
import { spawn } from 'node:child_process';

function parseArgs(argv) {
  const a = { rill: 'build/bin/rill', model: null, parallel: 4, threads: 2, tokens: 128, pairs: 5, json: false, serveFlags: ['--no-mmap', '--mlock'] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => argv[++i];
    if (k === '--rill') a.rill = next();
    else if (k === '-m' || k === '--model') a.model = next();
    else if (k === '--parallel') a.parallel = Number(next());
    else if (k === '-t' || k === '--threads') a.threads = Number(next());
    else if (k === '--tokens') a.tokens = Number(next());
    else if (k === '--pairs') a.pairs = Number(next());
    else if (k === '--json') a.json = true;
    else if (k === '--') { a.serveFlags = argv.slice(i + 1); break; }
    else throw new Error(`unknown flag ${k}`);
  }
  if (!a.model) throw new Error('usage: serve_parallel.mjs --rill RILL -m MODEL [--parallel N] [-t T] [--tokens N] [--pairs P] [--json]');
  return a;
}

function startServer(a) {
  return new Promise((resolve, reject) => {
    const child = spawn(a.rill, ['serve', '-m', a.model, '--port', '0', '--parallel', String(a.parallel), '-t', String(a.threads), '--ctx', '512', '--alias', 'bench', ...a.serveFlags], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (c) => {
      log += c;
      const m = /on (http:\/\/[\d.]+:\d+)/.exec(log);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`rill serve exited with ${code}:\n${log}`)));
  });
}

async function complete(url, prompt, tokens) {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: tokens, temperature: 0, ignore_eos: true }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  return (await res.json()).usage.completion_tokens;
}

// n streams at once; returns aggregate generated tokens per second.
async function run(url, n, tokens) {
  const start = performance.now();
  const counts = await Promise.all(Array.from({ length: n }, (_, i) => complete(url, `Stream ${i}: once upon a time`, tokens)));
  const seconds = (performance.now() - start) / 1000;
  return counts.reduce((s, c) => s + c, 0) / seconds;
}

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const a = parseArgs(process.argv.slice(2));
const server = await startServer(a);
try {
  await run(server.url, a.parallel, 8);  // warm-up: pages the weights in, fills every slot once
  const pairs = [];
  for (let i = 0; i < a.pairs; i++) {
    const one = await run(server.url, 1, a.tokens);
    const many = await run(server.url, a.parallel, a.tokens);
    pairs.push({ one, many, ratio: many / one });
    if (!a.json) console.error(`pair ${i + 1}: 1 stream ${one.toFixed(1)} t/s, ${a.parallel} streams ${many.toFixed(1)} t/s, ratio ${(many / one).toFixed(2)}`);
  }
  const summary = {
    model: a.model, parallel: a.parallel, threads: a.threads, tokens_per_stream: a.tokens, pairs,
    median_single_tps: median(pairs.map((p) => p.one)),
    median_aggregate_tps: median(pairs.map((p) => p.many)),
    median_ratio: median(pairs.map((p) => p.ratio)),
  };
  if (a.json) console.log(JSON.stringify(summary, null, 2));
  else console.log(`| streams | tokens/s (median) |\n|---|---|\n| 1 | ${summary.median_single_tps.toFixed(1)} |\n| ${a.parallel} (aggregate) | ${summary.median_aggregate_tps.toFixed(1)} |\n\nmedian ratio of ${a.pairs} alternating pairs: ${summary.median_ratio.toFixed(2)}×`);
} finally {
  server.child.kill('SIGTERM');
}
