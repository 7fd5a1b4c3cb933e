// Load test for rill serve: many users at once, through OpenAI's official Node client, on loopback.
//
// Sweep (the default): K concurrent clients for D seconds each, for every K in the list. Each client
// holds short conversations (1 to 4 turns, a key per conversation in the X-Conversation-Id header),
// streaming chat completions. Every prompt starts with one common system prompt; a quarter of the user
// turns paste one of three long documents, so many prompts share long prefixes; the rest are short
// questions. Measured per K: requests/s and generated tokens/s, time to first token (p50, p99),
// inter-token latency (gaps between a stream's chunks, p50, p99), 503 rejections (deliberate: the queue
// is full) apart from every other error, the server's RSS each second (peak, and growth after warm-up:
// the largest value in the second half against the largest in the first quarter), /health's answers
// each second (as a load balancer's check sees the server), and the server's own counters from
// /metrics, scraped several times and parsed with a Prometheus text-format parser.
//
//   node bench/load_test.mjs --rill build/bin/rill -m MODEL.gguf [--clients 1,4,16,64] [--duration 60]
//        [--max-tokens 64] [--api chat|completions] [--json] [-- rill serve flags]
//   node bench/load_test.mjs --url http://127.0.0.1:8080 [--pid PID,PID] [--metrics URL,URL] ...
//
// With --url (nginx in front of several servers, scripts/serve_cluster.sh) --pid names the processes
// whose RSS is summed and --metrics the servers whose /metrics are scraped and summed.
//
// Scenario long-prompt: three streams decode without pause (replies of --reply-tokens, 256, one after
// another); their inter-token latency is measured alone for --baseline seconds, then while one prompt of --long-tokens (4,000) tokens is evaluated in
// a fourth slot. Reported: p99 during the long prompt over the median alone (acceptance: under 3×,
// --prefill-slowdown and --prefill-chunk are the levers). Needs --parallel 4 and a context of 4,096+ (default --ctx 8192).
//
// Scenario chat-replay: a 20-turn chat, the user's messages fixed and the assistant's the server's own
// greedy replies (temperature 0, 32 tokens), played against a server that reuses prompts and then against
// one started with --no-cache-prompt. Checked: from turn 2 on, cached_tokens is at least 90% of the turn
// before's prompt and reply; the median time to first token is at least 5× lower with reuse; the
// replies of both runs are byte-identical. Needs --rill (it starts both servers).
//
// Everything is bounded: each phase stops starting requests at its deadline and aborts what is left
// a grace period later; the total number of requests is capped by --max-requests.
import { readFileSync } from 'node:fs';
import { setMaxListeners } from 'node:events';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { clientFetch, startRill, stopRill } from '../tests/server/rill_server.mjs';

// The packages live with the server tests (tests/server/package.json pins them): npm ci there.
const require = createRequire(new URL('../tests/server/package.json', import.meta.url));
let OpenAI, parsePrometheus;
try {
  OpenAI = require('openai');
  parsePrometheus = require('parse-prometheus-text-format');
} catch {
  console.error('load_test: run `npm ci` in tests/server first (it installs openai and parse-prometheus-text-format)');
  process.exit(2);
}

const USAGE = `usage: load_test.mjs (--rill BIN -m MODEL | --url URL [--pid PID,...] [--metrics URL,...])
        [--scenario sweep|long-prompt|chat-replay] [--clients 1,4,16,64] [--duration S] [--max-tokens N]
        [--api chat|completions] [--max-requests N] [--baseline S] [--long-tokens N] [--reply-tokens N] [--turns N]
        [--seed N] [--check] [--json] [-- rill serve flags]`;

function parseArgs(argv) {
  const a = {
    rill: null, model: null, url: null, pids: [], metricsUrls: [], scenario: 'sweep', clients: [1, 4, 16, 64],
    duration: 60, maxTokens: 64, api: 'chat', maxRequests: 50000, baseline: 10, longTokens: 4000, replyTokens: 256, turns: 20,
    seed: 1, check: false, json: false, serveFlags: [],
  };
  const list = (s) => s.split(',').filter(Boolean);
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value\n${USAGE}`);
      return argv[++i];
    };
    if (k === '--rill') a.rill = next();
    else if (k === '-m' || k === '--model') a.model = next();
    else if (k === '--url') a.url = next().replace(/\/+$/, '');
    else if (k === '--pid') a.pids = list(next()).map(Number);
    else if (k === '--metrics') a.metricsUrls = list(next()).map((u) => u.replace(/\/+$/, ''));
    else if (k === '--scenario') a.scenario = next();
    else if (k === '--clients') a.clients = list(next()).map(Number);
    else if (k === '--duration') a.duration = Number(next());
    else if (k === '--max-tokens') a.maxTokens = Number(next());
    else if (k === '--api') a.api = next();
    else if (k === '--max-requests') a.maxRequests = Number(next());
    else if (k === '--baseline') a.baseline = Number(next());
    else if (k === '--long-tokens') a.longTokens = Number(next());
    else if (k === '--reply-tokens') a.replyTokens = Number(next());
    else if (k === '--turns') a.turns = Number(next());
    else if (k === '--seed') a.seed = Number(next());
    else if (k === '--check') a.check = true;
    else if (k === '--json') a.json = true;
    else if (k === '--') { a.serveFlags = argv.slice(i + 1); break; }
    else throw new Error(`unknown flag ${k}\n${USAGE}`);
  }
  if (!['sweep', 'long-prompt', 'chat-replay'].includes(a.scenario)) throw new Error(`unknown scenario ${a.scenario}\n${USAGE}`);
  if (!['chat', 'completions'].includes(a.api)) throw new Error(`--api is chat or completions\n${USAGE}`);
  if (!a.url && !(a.rill && a.model)) throw new Error(USAGE);
  if (a.scenario === 'chat-replay' && !a.rill) throw new Error('chat-replay starts its two servers itself: give --rill and -m');
  if (a.clients.some((k) => !(k >= 1 && k <= 1024)) || !(a.duration > 0 && a.duration <= 3600)) throw new Error('bad --clients or --duration');
  return a;
}

// ---------------------------------------------------------------- small helpers

const now = () => performance.now();  // milliseconds, monotonic

function percentile(values, p) {
  if (values.length === 0) return null;
  const s = Float64Array.from(values).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];  // nearest rank
}
const median = (values) => percentile(values, 50);

// Deterministic pseudo-random numbers (mulberry32), so two runs send the same requests.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ('the of and to in is that for it as was with be by on not he this are or his from at which but have an they ' +
  'you were her all she there would their we him been has when who will more no if out so said what up its about into than ' +
  'them can only other new some could time these two may then do first any my now such like our over man me even most made ' +
  'after also did many before must through back years where much your way well down should because each just those people ' +
  'how too little state good very make world still own see men work long get here between both life being under never day ' +
  'same another know while last might us great old year off come since against go came right used take three river stone ' +
  'garden engine letter window market winter bridge signal harbor number village kernel memory cache thread socket').split(' ');

function words(random, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(random() * WORDS.length)]);
  return out.join(' ');
}

function cpuName() {
  try {
    return /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

// Resident set size in KiB from /proc/PID/status, or null once the process is gone.
function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

async function getJson(url, init) {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30000) });
  return { status: res.status, body: await res.json().catch(() => null) };
}

// The serving context (tokens per slot) and model id, as /v1/models reports them.
async function servedModel(url) {
  const { status, body } = await getJson(`${url}/v1/models`);
  if (status !== 200) throw new Error(`GET ${url}/v1/models answered ${status}`);
  const m = body.data[0];
  return { id: m.id, nCtx: m.meta?.n_ctx ?? 2048 };
}

// Tokens of `text` by the server's own tokenizer (llama-server's POST /tokenize); null if it has none.
async function countTokens(url, text) {
  try {
    const { status, body } = await getJson(`${url}/tokenize`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ content: text }),
    });
    return status === 200 && Array.isArray(body?.tokens) ? body.tokens.length : null;
  } catch {
    return null;
  }
}

// Text of about `tokens` tokens: words scaled by the measured tokens per word, corrected once.
async function textOfTokens(url, random, tokens, tokensPerWord) {
  let n = Math.max(1, Math.round(tokens / tokensPerWord));
  let text = words(random, n);
  const got = await countTokens(url, text);
  if (got) {
    n = Math.max(1, Math.round(n * (tokens / got)));
    text = words(random, n);
  }
  return text;
}

// ---------------------------------------------------------------- the server: start, RSS, /metrics

async function startServer(a, extra = []) {
  // Defaults per scenario where the caller's flags do not set them; loopback and a free port always.
  const defaults = { sweep: ['--parallel', '4', '--ctx', '2048'], 'long-prompt': ['--parallel', '4', '--ctx', '8192'],
    'chat-replay': ['--parallel', '2', '--ctx', '4096'] }[a.scenario];
  const flags = [...a.serveFlags, ...extra];
  for (let i = 0; i < defaults.length; i += 2) if (!flags.includes(defaults[i])) flags.push(defaults[i], defaults[i + 1]);
  const server = await startRill(a.rill, ['-m', a.model, '--host', '127.0.0.1', '--port', '0', ...flags]);
  server.flags = flags;
  return server;
}

// One sample a second of every watched process's RSS, kept with its time.
function startRssSampler(pids) {
  const samples = [];
  const take = () => {
    const each = pids.map(rssKiB);
    if (each.some((v) => v !== null)) samples.push({ t: now(), kib: each.reduce((s, v) => s + (v ?? 0), 0), each });
  };
  take();
  const timer = setInterval(take, 1000);
  return { samples, stop: () => clearInterval(timer) };
}

// Peak RSS over [from, to], and whether it stayed flat once warm: the largest sample in the second
// half against the largest in the first quarter (allocator caches and the KV cache settle early; a
// leak keeps climbing). Tolerance: 2% or 8 MiB, whichever is larger.
function rssSummary(samples, from, to) {
  const inside = samples.filter((s) => s.t >= from && s.t <= to);
  if (inside.length < 4) return { samples: inside.length };
  const span = to - from;
  const maxOf = (xs) => xs.reduce((m, s) => Math.max(m, s.kib), 0);
  const warm = maxOf(inside.filter((s) => s.t <= from + span / 4));
  const late = maxOf(inside.filter((s) => s.t >= from + span / 2));
  const growth = late - warm;
  return {
    samples: inside.length, peak_mib: maxOf(inside) / 1024, first_quarter_max_mib: warm / 1024, second_half_max_mib: late / 1024,
    growth_mib: growth / 1024, flat: growth <= Math.max(8 * 1024, 0.02 * warm),
  };
}

// /metrics as {name: {type, value} | {type, sum, count, buckets}}, label sets summed. Throws if the
// text does not parse.
function parseMetrics(text) {
  const out = {};
  for (const family of parsePrometheus(text)) {
    const type = family.type.toLowerCase();
    if (type === 'histogram') {
      const h = { type, sum: 0, count: 0, buckets: {} };
      for (const m of family.metrics) {
        h.sum += Number(m.sum);
        h.count += Number(m.count);
        for (const [le, c] of Object.entries(m.buckets)) h.buckets[le] = (h.buckets[le] ?? 0) + Number(c);
      }
      if (!Number.isFinite(h.sum) || !Number.isFinite(h.count)) throw new Error(`histogram ${family.name} has no numeric sum or count`);
      out[family.name] = h;
    } else {
      const value = family.metrics.reduce((s, m) => s + Number(m.value), 0);
      if (!Number.isFinite(value)) throw new Error(`${family.name} has no numeric value`);
      out[family.name] = { type, value };
    }
  }
  return out;
}

const EXPECTED_METRICS = ['rill_requests_total', 'rill_requests_rejected_total', 'rill_prompt_tokens_total', 'rill_prompt_tokens_cached_total',
  'rill_prompt_tokens_evaluated_total', 'rill_generated_tokens_total', 'rill_queue_depth', 'rill_slots_total', 'rill_slots_busy',
  'rill_slot_cached_tokens', 'rill_time_to_first_token_seconds', 'rill_inter_token_latency_seconds'];

// Scrapes every server and sums them; records parse failures instead of throwing, so a bad scrape
// shows in the report rather than ending the run.
async function scrape(urls, log) {
  const total = {};
  for (const url of urls) {
    let text;
    try {
      const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10000) });
      text = await res.text();
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      const m = parseMetrics(text);
      for (const [name, v] of Object.entries(m)) {
        const t = total[name] ?? (total[name] = v.type === 'histogram' ? { type: v.type, sum: 0, count: 0 } : { type: v.type, value: 0 });
        if (v.type === 'histogram') { t.sum += v.sum; t.count += v.count; } else t.value += v.value;
      }
    } catch (e) {
      log.errors.push(`${url}/metrics: ${e.message}${text ? ` (${JSON.stringify(text.slice(0, 120))}…)` : ''}`);
      return null;
    }
  }
  log.scrapes++;
  log.missing = EXPECTED_METRICS.filter((n) => !(n in total));
  return total;
}

// One GET /health: its time if it answers 200 within 5 s, otherwise a failure.
async function probeHealth(url, health) {
  const start = now();
  health.probes++;
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) });
    await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
    health.ms.push(now() - start);
  } catch {
    health.failed++;
  }
}

// What the servers counted between two scrapes.
function metricsDelta(first, last, gauges) {
  if (!first || !last) return null;
  const d = (n) => (last[n]?.value ?? 0) - (first[n]?.value ?? 0);
  const mean = (n) => {
    const c = (last[n]?.count ?? 0) - (first[n]?.count ?? 0);
    return c > 0 ? ((last[n].sum - first[n].sum) / c) * 1000 : null;
  };
  const prompt = d('rill_prompt_tokens_total');
  return {
    requests: d('rill_requests_total'), rejected: d('rill_requests_rejected_total'), prompt_tokens: prompt,
    cached_tokens: d('rill_prompt_tokens_cached_total'), evaluated_tokens: d('rill_prompt_tokens_evaluated_total'),
    generated_tokens: d('rill_generated_tokens_total'), cached_share: prompt > 0 ? d('rill_prompt_tokens_cached_total') / prompt : null,
    ttft_mean_ms: mean('rill_time_to_first_token_seconds'), itl_mean_ms: mean('rill_inter_token_latency_seconds'),
    max_queue_depth: gauges.maxQueue, max_slots_busy: gauges.maxBusy,
  };
}

// ---------------------------------------------------------------- one streamed request

function openaiClient(url) {
  // Retries are off: a 503 is counted and waited out here, not hidden by the client.
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: process.env.OPENAI_API_KEY ?? 'none', maxRetries: 0, timeout: 600000, ...clientFetch });
}

// Flattens a conversation for /v1/completions, the way rill renders one for a model without a template.
function transcript(messages) {
  return messages.map((m) => (m.role === 'system' ? `${m.content}\n` : `${m.role === 'user' ? 'User' : 'Assistant'}: ${m.content}\n`)).join('') + 'Assistant:';
}

// Streams one request. Returns {ok, text, ttft, gaps, events, usage} or {rejected, retryAfter} or
// {error}. Times are milliseconds; `events` are the arrival times of chunks that carry text.
async function streamOnce(openai, { api, model, messages, maxTokens, headers, signal, extra = {}, onEvent }) {
  const start = now();
  let first = null;
  let last = null;
  const gaps = [];
  const events = [];
  let text = '';
  let usage = null;
  // The client adds a listener to the signal it is given and never removes it, so each request gets
  // a signal of its own, tied to the caller's only while the request runs.
  const own = new AbortController();
  const forward = () => own.abort();
  signal?.addEventListener('abort', forward, { once: true });
  try {
    const body = api === 'chat'
      ? { model, messages, max_tokens: maxTokens, stream: true, ...extra }
      : { model, prompt: transcript(messages), max_tokens: maxTokens, stream: true, ...extra };
    const create = api === 'chat' ? openai.chat.completions : openai.completions;
    const stream = await create.create(body, { headers, signal: own.signal });
    for await (const chunk of stream) {
      const choice = chunk.choices?.[0];
      const piece = (api === 'chat' ? choice?.delta?.content : choice?.text) ?? '';
      if (piece.length > 0) {
        const t = now();
        if (first === null) first = t;
        else gaps.push(t - last);
        last = t;
        events.push(t);
        onEvent?.(t);
        text += piece;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    // The client ends a stream quietly when it is aborted, without an error.
    if (own.signal.aborted) return { aborted: true, text, events, start };
    return { ok: true, text, ttft: first === null ? null : first - start, gaps, events, usage, start };
  } catch (e) {
    if (e instanceof OpenAI.APIError && e.status === 503) {
      const after = Number(e.headers?.['retry-after']);
      return { rejected: true, retryAfter: Number.isFinite(after) && after > 0 ? after : 1 };
    }
    if (signal?.aborted) return { aborted: true, text, events, start };
    return { error: e.status ? `HTTP ${e.status}: ${e.message}` : `${e.constructor.name}: ${e.message}` };
  } finally {
    signal?.removeEventListener('abort', forward);
  }
}

// ---------------------------------------------------------------- sweep

// The requests' text, sized to the served context: one system prompt for everyone, three long
// documents that users paste (shared prefixes), and short questions.
async function buildPool(url, nCtx, a, random) {
  const sample = words(rng(99), 200);
  const measured = await countTokens(url, sample);
  const tokensPerWord = measured ? measured / 200 : 1.4;
  const maxTokens = Math.max(8, Math.min(a.maxTokens, Math.floor(nCtx / 8)));
  const sizeOf = (share, lo, hi) => Math.round(Math.min(hi, Math.max(lo, nCtx * share)));
  const system = `You are a helpful assistant for a busy team. ${await textOfTokens(url, random, sizeOf(0.08, 12, 200), tokensPerWord)}`;
  const documents = [];
  for (let i = 0; i < 3; i++) documents.push(`Summarize this:\n${await textOfTokens(url, random, sizeOf(0.3, 32, 1200), tokensPerWord)}`);
  const questions = [];
  for (let i = 0; i < 32; i++) questions.push(`${words(random, 3 + Math.floor(random() * sizeOf(0.04, 3, 24) / tokensPerWord))}?`);
  // Token counts of every message, to keep a growing conversation inside the context.
  const tokens = new Map();
  for (const t of [system, ...documents, ...questions]) tokens.set(t, (await countTokens(url, t)) ?? Math.ceil(t.split(' ').length * tokensPerWord));
  return { system, documents, questions, tokens, maxTokens, nCtx, tokensPerWord };
}

async function sweepClient(c, phase) {
  const { a, pool, openai, model, stats, deadline, signal, K } = phase;
  const random = rng(a.seed * 1000003 + K * 1009 + c);
  const margin = 24;  // template tokens around each message
  for (let conversation = 0; now() < deadline; conversation++) {
    const messages = [{ role: 'system', content: pool.system }];
    let context = pool.tokens.get(pool.system) + margin;  // tokens the next prompt will have, about
    const turns = 1 + Math.floor(random() * 4);
    const headers = { 'X-Conversation-Id': `k${K}-c${c}-${conversation}` };
    for (let turn = 0; turn < turns && now() < deadline; turn++) {
      const long = random() < 0.25;
      const user = long ? pool.documents[Math.floor(random() * pool.documents.length)] : pool.questions[Math.floor(random() * pool.questions.length)];
      const maxTokens = Math.max(4, Math.round(pool.maxTokens * (0.25 + 0.75 * random())));
      if (context + pool.tokens.get(user) + margin + maxTokens > pool.nCtx) break;  // a new conversation instead
      messages.push({ role: 'user', content: user });
      for (;;) {  // until served, or the phase ends
        if (stats.sent >= a.maxRequests || now() >= deadline) return;
        stats.sent++;
        const r = await streamOnce(openai, { api: a.api, model, messages, maxTokens, headers, signal, extra: { temperature: 0.8, seed: c } });
        if (r.rejected) {
          stats.rejected++;
          // As a polite client does: come back after Retry-After, or not at all if the phase is over.
          await sleep(Math.min(r.retryAfter * 1000, Math.max(0, deadline - now())));
          continue;
        }
        if (r.aborted) { stats.aborted++; return; }
        if (r.error) {
          stats.errors++;
          stats.errorKinds[r.error] = (stats.errorKinds[r.error] ?? 0) + 1;
          await sleep(100);  // a failing server must not be spun on
          break;
        }
        stats.completed++;
        stats.generated += r.usage?.completion_tokens ?? r.events.length;
        stats.promptTokens += r.usage?.prompt_tokens ?? 0;
        stats.cachedTokens += r.usage?.prompt_tokens_details?.cached_tokens ?? 0;
        if (r.ttft !== null) stats.ttft.push(r.ttft);
        for (const g of r.gaps) stats.itl.push(g);
        messages.push({ role: 'assistant', content: r.text });
        context = (r.usage?.prompt_tokens ?? context + pool.tokens.get(user)) + (r.usage?.completion_tokens ?? maxTokens) + margin;
        break;
      }
      if (messages.at(-1).role !== 'assistant') break;  // the turn failed: start over
    }
  }
}

async function runPhase(a, K, target, pool, rss) {
  const stats = { sent: 0, completed: 0, rejected: 0, errors: 0, aborted: 0, errorKinds: {}, generated: 0, promptTokens: 0, cachedTokens: 0, ttft: [], itl: [] };
  const metricsLog = { scrapes: 0, errors: [], missing: [] };
  const gauges = { maxQueue: 0, maxBusy: 0 };
  const record = (m) => {
    if (!m) return;
    gauges.maxQueue = Math.max(gauges.maxQueue, m.rill_queue_depth?.value ?? 0);
    gauges.maxBusy = Math.max(gauges.maxBusy, m.rill_slots_busy?.value ?? 0);
  };
  const firstMetrics = await scrape(target.metricsUrls, metricsLog);
  const start = now();
  const deadline = start + a.duration * 1000;
  // Requests still running or queued at the deadline get a grace period to finish (a full queue on a
  // slow model takes a while), then are aborted.
  const controller = new AbortController();
  setMaxListeners(K + 8, controller.signal);  // one listener per request in flight (streamOnce removes it after)
  const hardStop = setTimeout(() => controller.abort(), a.duration * 1000 + 30000 + 2 * a.duration * 1000);
  // /health each second on every server, as a load balancer's check would see it.
  const health = { probes: 0, failed: 0, ms: [] };
  const probes = [];
  const prober = setInterval(() => {
    for (const url of target.metricsUrls) probes.push(probeHealth(url, health));
  }, 1000);
  // Scrapes at each quarter of the phase, while the clients run.
  const scrapes = [];
  const scraper = setInterval(() => scrapes.push(scrape(target.metricsUrls, metricsLog).then(record)), (a.duration * 1000) / 4);
  const phase = { a, pool, openai: openaiClient(target.url), model: target.model, stats, deadline, signal: controller.signal, K };
  await Promise.all(Array.from({ length: K }, (_, c) => sweepClient(c, phase)));
  const end = now();
  clearTimeout(hardStop);
  clearInterval(scraper);
  clearInterval(prober);
  await Promise.all([...scrapes, ...probes]);
  const lastMetrics = await scrape(target.metricsUrls, metricsLog);
  // Throughput is over the phase's wall time: from its start to the last reply, the queue's tail included.
  const seconds = (end - start) / 1000;
  return {
    clients: K, seconds, sent: stats.sent, completed: stats.completed, rejected_503: stats.rejected, errors: stats.errors,
    aborted: stats.aborted, error_kinds: stats.errorKinds,
    requests_per_s: stats.completed / seconds, generated_tokens_per_s: stats.generated / seconds, generated_tokens: stats.generated,
    prompt_tokens: stats.promptTokens, cached_tokens: stats.cachedTokens,
    ttft_ms: { p50: median(stats.ttft), p99: percentile(stats.ttft, 99), n: stats.ttft.length },
    itl_ms: { p50: median(stats.itl), p99: percentile(stats.itl, 99), n: stats.itl.length },
    rss: rss ? rssSummary(rss.samples, start, end) : null,
    health: { probes: health.probes, failed: health.failed, p50_ms: median(health.ms), max_ms: health.ms.length ? Math.max(...health.ms) : null },
    server: metricsDelta(firstMetrics, lastMetrics, gauges),
    metrics: metricsLog,
  };
}

async function sweep(a, target) {
  const pool = await buildPool(target.url, target.nCtx, a, rng(a.seed));
  const rss = target.pids.length ? startRssSampler(target.pids) : null;
  const runStart = now();
  const phases = [];
  try {
    for (const K of a.clients) {
      if (!a.json) process.stderr.write(`load_test: ${K} client${K === 1 ? '' : 's'} for ${a.duration} s…\n`);
      phases.push(await runPhase(a, K, target, pool, rss));
      await sleep(1000);  // let the last streams' slots free before the next phase
    }
  } finally {
    rss?.stop();
  }
  return {
    phases,
    pool: { system_tokens: pool.tokens.get(pool.system), document_tokens: pool.documents.map((d) => pool.tokens.get(d)), max_tokens: pool.maxTokens, n_ctx: pool.nCtx },
    rss_whole_run: rss ? rssSummary(rss.samples, runStart, now()) : null,
    rss_series_mib: rss ? rss.samples.map((s) => Math.round((s.kib / 1024) * 10) / 10) : null,
  };
}

// ---------------------------------------------------------------- scenario: a long prompt while others decode

async function longPrompt(a, target) {
  const openai = openaiClient(target.url);
  if (target.nCtx < a.longTokens + 64) throw new Error(`long-prompt needs a context of at least ${a.longTokens + 64} tokens per slot; the server has ${target.nCtx} (--ctx)`);
  const random = rng(a.seed);
  const measured = await countTokens(target.url, words(rng(99), 200));
  const longText = await textOfTokens(target.url, random, a.longTokens, measured ? measured / 200 : 1.4);
  const controller = new AbortController();
  const guard = setTimeout(() => controller.abort(), (a.baseline + 600) * 1000);  // bounds the scenario whatever happens
  // Three users who ask for a reply of --reply-tokens tokens, then at once for another, until the
  // measurement is done. Bounded replies, as chat users get, keep their contexts short: one stream
  // decoding for the minutes the long prompt takes would grow its own context by thousands of tokens
  // and slow its steps whatever the prompt did. Gaps count only within a reply.
  const decoders = [0, 1, 2].map((i) => {
    const d = { replies: [], result: null };
    const prompt = [{ role: 'user', content: `Stream ${i}: ${words(random, 8)}` }];
    d.done = (async () => {
      while (!controller.signal.aborted) {
        const events = [];
        d.replies.push(events);
        const r = await streamOnce(openai, {
          api: 'completions', model: target.model, messages: prompt, maxTokens: a.replyTokens, signal: controller.signal,
          extra: { temperature: 0, ignore_eos: true }, headers: {}, onEvent: (t) => events.push(t),
        });
        if (!r.ok) { d.result = r; return; }
      }
      d.result = { aborted: true };
    })();
    d.count = () => d.replies.reduce((n, ev) => n + ev.length, 0);
    return d;
  });
  // Warm-up: every stream must be generating before the baseline starts.
  const warmDeadline = now() + 120000;
  while (now() < warmDeadline && decoders.some((d) => d.count() < 8 && !d.result)) await sleep(50);
  const baselineStart = now();
  await sleep(a.baseline * 1000);
  const sent = now();
  const long = await streamOnce(openai, { api: 'completions', model: target.model, messages: [{ role: 'user', content: longText }],
    maxTokens: 4, signal: controller.signal, extra: { temperature: 0 }, headers: {} });
  const firstToken = long.ok && long.ttft !== null ? sent + long.ttft : now();
  await sleep(500);  // a few gaps after the prompt's last piece
  controller.abort();
  clearTimeout(guard);
  await Promise.all(decoders.map((d) => d.done));
  // Gaps between consecutive chunks of each decoding stream: alone = inside the baseline; with = any
  // gap overlapping the long prompt's evaluation (from its sending to its first token).
  const alone = [];
  const withLong = [];
  const ended = [];
  for (const d of decoders) {
    if (!d.result?.aborted) ended.push(d.result?.error ?? 'stream ended before the measurement did');
    for (const ev of d.replies) {
      for (let i = 1; i < ev.length; i++) {
        const [t0, t1] = [ev[i - 1], ev[i]];
        if (t0 >= baselineStart && t1 <= sent) alone.push(t1 - t0);
        else if (t0 < firstToken && t1 > sent) withLong.push(t1 - t0);
      }
    }
  }
  const medianAlone = median(alone);
  const p99With = percentile(withLong, 99);
  const ratio = medianAlone && p99With !== null ? p99With / medianAlone : null;
  return {
    reply_tokens: a.replyTokens, long_prompt_tokens: long.usage?.prompt_tokens ?? null, long_prompt_ttft_ms: long.ok ? long.ttft : null,
    long_prompt_error: long.ok ? null : long.error ?? 'aborted', decoders_ended_early: ended,
    itl_alone_ms: { p50: medianAlone, p99: percentile(alone, 99), n: alone.length },
    itl_during_long_ms: { p50: median(withLong), p99: p99With, max: withLong.length ? Math.max(...withLong) : null, n: withLong.length },
    ratio_p99_during_over_median_alone: ratio, pass: ratio !== null && ratio < 3 && ended.length === 0,
  };
}

// ---------------------------------------------------------------- scenario: a long chat replayed, with and without prompt reuse

// A system prompt of a few hundred tokens, as chat products send with every turn. It also keeps the
// check honest with random-weight models: their replies, sent back as text, need not tokenize to the
// tokens they were generated as, so the last reply is the part of a prompt that may not be reused.
const REPLAY_SYSTEM = `You are a patient tutor. Answer in one or two sentences. House rules: ${words(rng(7), 260)}.`;
function replayMessages(turns) {
  const random = rng(4242);
  return Array.from({ length: turns }, (_, i) => `Question ${i + 1}: ${words(random, 12 + (i % 5) * 4)}?`);
}

async function replayOnce(a, extra) {
  const server = await startServer(a, extra);
  try {
    const { id } = await servedModel(server.url);
    const openai = openaiClient(server.url);
    const messages = [{ role: 'system', content: REPLAY_SYSTEM }];
    const turns = [];
    for (const user of replayMessages(a.turns)) {
      messages.push({ role: 'user', content: user });
      const r = await streamOnce(openai, { api: 'chat', model: id, messages, maxTokens: 32, signal: AbortSignal.timeout(600000),
        extra: { temperature: 0 }, headers: { 'X-Conversation-Id': 'replay' } });
      if (!r.ok) throw new Error(`turn ${turns.length + 1}: ${r.error ?? (r.rejected ? '503' : 'aborted')}`);
      turns.push({ prompt_tokens: r.usage.prompt_tokens, completion_tokens: r.usage.completion_tokens,
        cached_tokens: r.usage.prompt_tokens_details?.cached_tokens ?? null, ttft_ms: r.ttft, reply: r.text });
      messages.push({ role: 'assistant', content: r.text });
    }
    return { flags: server.flags, turns };
  } finally {
    await stopRill(server);
  }
}

async function chatReplay(a) {
  const on = await replayOnce(a, []);
  const off = await replayOnce(a, ['--no-cache-prompt']);
  const rows = on.turns.map((t, i) => {
    const prev = on.turns[i - 1];
    const reusable = prev ? prev.prompt_tokens + prev.completion_tokens : null;
    return {
      turn: i + 1, prompt_tokens: t.prompt_tokens, cached_on: t.cached_tokens, cached_off: off.turns[i]?.cached_tokens ?? null,
      reusable_from_previous: reusable, cached_share_of_reusable: reusable ? t.cached_tokens / reusable : null,
      ttft_on_ms: t.ttft_ms, ttft_off_ms: off.turns[i]?.ttft_ms ?? null, same_reply: t.reply === off.turns[i]?.reply,
    };
  });
  const later = rows.slice(1);
  const ttftRatio = median(later.map((r) => r.ttft_off_ms)) / median(later.map((r) => r.ttft_on_ms));
  const cacheOk = later.every((r) => r.cached_on !== null && r.cached_on >= 0.9 * r.reusable_from_previous);
  // At least the previous prompt whole, whatever the reply's tokenization did.
  const promptReused = later.every((r, i) => r.cached_on >= rows[i].prompt_tokens);
  const identical = rows.every((r) => r.same_reply);
  return {
    turns: rows, median_ttft_on_ms: median(later.map((r) => r.ttft_on_ms)), median_ttft_off_ms: median(later.map((r) => r.ttft_off_ms)),
    ttft_ratio_off_over_on: ttftRatio, cached_at_least_90pct: cacheOk, previous_prompt_reused: promptReused, replies_identical: identical,
    pass: cacheOk && identical && ttftRatio >= 5, serve_flags_on: on.flags, serve_flags_off: off.flags,
    replies: on.turns.map((t) => t.reply),
  };
}

// ---------------------------------------------------------------- report

const fmt = (v, digits = 1) => (v === null || v === undefined || Number.isNaN(v) ? '-' : Number(v).toFixed(digits));

function printSweep(r) {
  const head = ['clients', 'done', 'req/s', 'gen tok/s', 'TTFT p50', 'TTFT p99', 'ITL p50', 'ITL p99', '503s', 'errors', 'RSS peak', 'RSS growth', 'cached', '/health failed'];
  const rows = r.phases.map((p) => [p.clients, p.completed, fmt(p.requests_per_s, 2), fmt(p.generated_tokens_per_s), `${fmt(p.ttft_ms.p50, 0)} ms`,
    `${fmt(p.ttft_ms.p99, 0)} ms`, `${fmt(p.itl_ms.p50, 0)} ms`, `${fmt(p.itl_ms.p99, 0)} ms`, p.rejected_503, p.errors,
    p.rss?.peak_mib ? `${fmt(p.rss.peak_mib, 0)} MiB` : '-', p.rss?.growth_mib !== undefined ? `${fmt(p.rss.growth_mib, 1)} MiB${p.rss.flat ? '' : ' (!)'}` : '-',
    p.prompt_tokens ? `${fmt((100 * p.cached_tokens) / p.prompt_tokens, 0)}%` : '-', `${p.health.failed}/${p.health.probes}`]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padStart(widths[i])).join(' | ')} |`;
  console.log(line(head));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  for (const p of r.phases) {
    const s = p.server;
    if (s) console.log(`K=${p.clients} server: ${s.requests} requests, ${s.rejected} rejected, prompt ${s.prompt_tokens} tokens (${s.cached_tokens} cached, ${s.evaluated_tokens} evaluated), ${s.generated_tokens} generated, mean TTFT ${fmt(s.ttft_mean_ms, 0)} ms, mean ITL ${fmt(s.itl_mean_ms, 1)} ms, queue up to ${s.max_queue_depth}`);
    if (p.metrics.errors.length || p.metrics.missing.length) console.log(`K=${p.clients} /metrics problems: ${[...p.metrics.errors, ...p.metrics.missing.map((n) => `missing ${n}`)].join('; ')}`);
    for (const [kind, n] of Object.entries(p.error_kinds)) console.log(`K=${p.clients} error ×${n}: ${kind}`);
  }
  if (r.rss_whole_run?.peak_mib) console.log(`RSS over the whole run: peak ${fmt(r.rss_whole_run.peak_mib, 0)} MiB, growth after warm-up ${fmt(r.rss_whole_run.growth_mib, 1)} MiB (${r.rss_whole_run.flat ? 'flat' : 'NOT flat'})`);
}

function printLongPrompt(r) {
  console.log(`long prompt: ${r.long_prompt_tokens ?? '?'} tokens, first token after ${fmt(r.long_prompt_ttft_ms, 0)} ms${r.long_prompt_error ? ` (error: ${r.long_prompt_error})` : ''}`);
  console.log(`3 decoding streams, gaps between chunks: alone p50 ${fmt(r.itl_alone_ms.p50)} ms, p99 ${fmt(r.itl_alone_ms.p99)} ms (${r.itl_alone_ms.n} gaps)`);
  console.log(`  during the long prompt: p50 ${fmt(r.itl_during_long_ms.p50)} ms, p99 ${fmt(r.itl_during_long_ms.p99)} ms, max ${fmt(r.itl_during_long_ms.max)} ms (${r.itl_during_long_ms.n} gaps)`);
  console.log(`p99 during / median alone = ${fmt(r.ratio_p99_during_over_median_alone, 2)}× (acceptance: < 3×) ${r.pass ? 'PASS' : 'FAIL'}`);
  for (const e of r.decoders_ended_early) console.log(`a decoding stream ended early: ${e}`);
}

function printChatReplay(r) {
  console.log('| turn | prompt | cached (reuse) | of reusable | cached (off) | TTFT reuse | TTFT off | same reply |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const t of r.turns) console.log(`| ${t.turn} | ${t.prompt_tokens} | ${t.cached_on ?? '-'} | ${t.cached_share_of_reusable === null ? '-' : `${fmt(100 * t.cached_share_of_reusable, 0)}%`} | ${t.cached_off ?? '-'} | ${fmt(t.ttft_on_ms, 0)} ms | ${fmt(t.ttft_off_ms, 0)} ms | ${t.same_reply ? 'yes' : 'NO'} |`);
  console.log(`median TTFT from turn 2: ${fmt(r.median_ttft_on_ms, 0)} ms with reuse, ${fmt(r.median_ttft_off_ms, 0)} ms without: ${fmt(r.ttft_ratio_off_over_on, 1)}× (target ≥ 5×)`);
  console.log(`cached ≥ 90% of the previous turn's prompt and reply: ${r.cached_at_least_90pct ? 'yes' : 'NO'}; the previous prompt reused whole: ${r.previous_prompt_reused ? 'yes' : 'NO'}; replies byte-identical: ${r.replies_identical ? 'yes' : 'NO'}; ${r.pass ? 'PASS' : 'FAIL'}`);
}

// ---------------------------------------------------------------- main

const a = parseArgs(process.argv.slice(2));
let server = null;
let exitCode = 0;
const stopOnSignal = async () => {
  await stopRill(server);
  process.exit(130);
};
process.on('SIGINT', stopOnSignal);
process.on('SIGTERM', stopOnSignal);
try {
  const report = { scenario: a.scenario, cpu: cpuName(), node: process.versions.node, model: a.model, started: new Date().toISOString() };
  if (a.scenario === 'chat-replay') {
    Object.assign(report, await chatReplay(a));
    if (!a.json) printChatReplay(report);
    if (a.check && !report.pass) exitCode = 1;
  } else {
    let target;
    if (a.url) {
      target = { url: a.url, pids: a.pids, metricsUrls: a.metricsUrls.length ? a.metricsUrls : [a.url] };
    } else {
      server = await startServer(a);
      target = { url: server.url, pids: [server.child.pid], metricsUrls: [server.url] };
      report.serve_flags = server.flags;
    }
    Object.assign(target, await servedModel(target.url));
    report.target = target.url;
    report.model_id = target.model = target.id;
    report.n_ctx = target.nCtx;
    if (a.scenario === 'sweep') {
      report.duration_s = a.duration;
      report.api = a.api;
      Object.assign(report, await sweep(a, target));
      if (!a.json) printSweep(report);
      if (a.check && report.phases.some((p) => p.errors > 0 || p.aborted > 0 || p.metrics.errors.length > 0)) exitCode = 1;
    } else {
      Object.assign(report, await longPrompt(a, target));
      if (!a.json) printLongPrompt(report);
      if (a.check && !report.pass) exitCode = 1;
    }
    // Still serving after the load?
    const health = await getJson(`${target.url}/health`).catch((e) => ({ status: null, body: String(e) }));
    report.health_after = health;
    if (!a.json) console.log(`/health after the run: ${health.status} ${JSON.stringify(health.body)}`);
    if (server) {  // SIGTERM drains; 0 is a clean exit (under the sanitizers, also: no leak reported)
      report.server_exit_code = await stopRill(server);
      server = null;
      if (!a.json) console.log(`rill serve exited with ${report.server_exit_code} on SIGTERM`);
    }
  }
  if (a.json) console.log(JSON.stringify(report, null, 2));
} catch (e) {
  console.error(`load_test: ${e.stack ?? e.message}`);
  if (server) console.error(`rill serve's log (last 2,000 characters):\n${server.log.slice(-2000)}`);
  exitCode = 1;
} finally {
  if (server) {
    const code = await stopRill(server);
    if (code !== 0 && !a.json) console.error(`rill serve exited with ${code}`);
  }
}
process.exit(exitCode);
