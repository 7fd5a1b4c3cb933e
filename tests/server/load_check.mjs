// Checks for tests/server/load_test.sh, on bench/load_test.mjs's --json report and on the backends.
//   node load_check.mjs single REPORT.json         one server: no errors but 503s, some 503s, metrics consistent
//   node load_check.mjs cluster REPORT.json URL,…  through nginx: no errors but 503s, every backend served
//   node load_check.mjs sticky NGINX_URL URL,…     requests with one conversation key all reach one backend
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format');
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
}

// rill_requests_total of one backend, through the real parser.
async function requestsTotal(url) {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10000) })).text();
  const family = parsePrometheus(text).find((f) => f.name === 'rill_requests_total');
  return Number(family.metrics[0].value);
}

function checkReport(r, label) {
  const p = r.phases[0];
  check(p.completed > 0, `${label}: ${p.completed} requests completed`);
  check(p.errors === 0 && p.aborted === 0, `${label}: no errors other than 503 (errors ${p.errors}, aborted ${p.aborted}${Object.keys(p.error_kinds).length ? `: ${JSON.stringify(p.error_kinds)}` : ''})`);
  check(p.metrics.scrapes >= 3 && p.metrics.errors.length === 0, `${label}: /metrics scraped ${p.metrics.scrapes} times and parsed (${p.metrics.errors.join('; ') || 'no errors'})`);
  check(p.metrics.missing.length === 0, `${label}: /metrics has every family (missing: ${p.metrics.missing.join(', ') || 'none'})`);
  check(r.health_after?.status === 200 && r.health_after.body?.status === 'ok', `${label}: /health answers ok after the load (${JSON.stringify(r.health_after)})`);
  check(p.health.probes > 0 && p.health.failed === 0, `${label}: /health answered within 5 s every second during the load (${p.health.failed} of ${p.health.probes} failed)`);
  check(p.ttft_ms.n > 0 && p.itl_ms.n > 0, `${label}: time to first token and inter-token gaps measured`);
  return p;
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'single') {
  const r = JSON.parse(readFileSync(args[0], 'utf8'));
  const p = checkReport(r, 'one server');
  check(p.rejected_503 >= 1, `one server: the small queue turned some requests away with 503 (${p.rejected_503})`);
  // The server's counters agree with what the clients saw.
  check(p.server?.requests === p.completed, `one server: rill_requests_total grew by the requests completed (${p.server?.requests} vs ${p.completed})`);
  check(p.server?.rejected === p.rejected_503, `one server: rill_requests_rejected_total grew by the 503s seen (${p.server?.rejected} vs ${p.rejected_503})`);
  check(r.server_exit_code === 0, `one server: exits with 0 on SIGTERM (${r.server_exit_code})`);
  check(p.server?.generated_tokens === p.generated_tokens, `one server: rill_generated_tokens_total grew by the tokens received (${p.server?.generated_tokens} vs ${p.generated_tokens})`);
} else if (mode === 'cluster') {
  const r = JSON.parse(readFileSync(args[0], 'utf8'));
  const p = checkReport(r, 'nginx, 2 backends');
  check(p.server?.requests === p.completed, `nginx: the backends' requests add up to those completed (${p.server?.requests} vs ${p.completed})`);
  const per = await Promise.all(args[1].split(',').map(requestsTotal));
  check(per.every((n) => n > 0), `nginx: every backend served requests (${per.join(', ')})`);
} else if (mode === 'sticky') {
  const backends = args[1].split(',');
  const before = await Promise.all(backends.map(requestsTotal));
  for (let i = 0; i < 6; i++) {
    const res = await fetch(`${args[0]}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Conversation-Id': 'sticky-check' },
      body: JSON.stringify({ model: 'stories260K', prompt: `Once upon a time ${i}`, max_tokens: 4 }), signal: AbortSignal.timeout(60000),
    });
    check(res.status === 200, `nginx: keyed request ${i + 1} answered ${res.status}`);
    await res.text();
  }
  const gained = (await Promise.all(backends.map(requestsTotal))).map((n, i) => n - before[i]);
  check(gained.filter((g) => g === 6).length === 1 && gained.filter((g) => g === 0).length === backends.length - 1,
    `nginx: six requests with one X-Conversation-Id all reached one backend (gained ${gained.join(', ')})`);
} else {
  throw new Error('usage: load_check.mjs single|cluster|sticky …');
}
process.exit(failures ? 1 : 0);
