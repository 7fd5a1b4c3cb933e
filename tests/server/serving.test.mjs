// rill serve under many users: prompt reuse across requests, chunked prompts beside generating
// streams, the bounded queue, draining on SIGTERM, /metrics, and llama-server's extra endpoints
// (/tokenize, /detokenize, /apply-template, /props, /slots). stories260K keeps every request in
// milliseconds, also under the sanitizers; nothing here times anything.
//   RILL_BIN=build/bin/rill RILL_SHARED=../shared node --test tests/server/serving.test.mjs
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { clientFetch, startRill, stopRill } from './rill_server.mjs';

const RILL = process.env.RILL_BIN;
const MODEL = `${process.env.RILL_SHARED}/models/stories260K/stories260K.gguf`;
const MODEL_ID = 'stories260K';

const startServer = (extra = []) => startRill(RILL, ['-m', MODEL, '--port', '0', '-t', '1', '--no-mmap', ...extra]);
const client = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000, ...clientFetch });
const greedy = { model: MODEL_ID, temperature: 0 };

const servers = [];
async function serverWith(extra) {
  const s = await startServer(extra);
  servers.push(s);
  return s;
}
after(async () => {
  for (const s of servers) await stopRill(s);
});

async function post(server, route, body) {
  const res = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, body: await res.json() };
}
const getJson = async (server, route) => (await fetch(`${server.url}${route}`)).json();

async function metrics(server) {
  const res = await fetch(`${server.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const families = parsePrometheusTextFormat(await res.text());
  return Object.fromEntries(families.map((f) => [f.name, f]));
}
const counter = (m, name) => Number(m[name].metrics[0].value);

const USER_TURNS = ['Tell me a story about a cat.', 'What did the cat eat?', 'Where did the cat sleep?', 'Who was its friend?', 'How did it end?'];

// A conversation of greedy turns, each resending the whole history as chat apps do.
async function converse(server, turns, max_tokens = 24, model = MODEL_ID) {
  const openai = client(server);
  const messages = [{ role: 'system', content: 'You tell short stories for children.' }];
  const replies = [];
  for (const content of turns) {
    messages.push({ role: 'user', content });
    const r = await openai.chat.completions.create({ ...greedy, model, messages, max_tokens });
    replies.push({ text: r.choices[0].message.content, usage: r.usage });
    messages.push({ role: 'assistant', content: r.choices[0].message.content });
  }
  return replies;
}

test('a returning conversation evaluates only what is new, and says how much came from the cache', async () => {
  const server = await serverWith(['--parallel', '2']);
  const replies = await converse(server, USER_TURNS);
  assert.equal(replies[0].usage.prompt_tokens_details.cached_tokens, 0);
  for (let i = 1; i < replies.length; i++) {
    const before = replies[i - 1].usage;
    const cached = replies[i].usage.prompt_tokens_details.cached_tokens;
    assert.ok(cached >= 0.9 * (before.prompt_tokens + before.completion_tokens),
      `turn ${i + 1}: ${cached} cached of the previous turn's ${before.prompt_tokens} + ${before.completion_tokens}`);
    assert.ok(cached < replies[i].usage.prompt_tokens);
  }
});

test('greedy replies are byte-identical with prompt reuse on and off', async () => {
  const on = await serverWith(['--parallel', '2']);
  const off = await serverWith(['--parallel', '2', '--no-cache-prompt']);
  const withReuse = await converse(on, USER_TURNS);
  const without = await converse(off, USER_TURNS);
  assert.deepEqual(without.map((r) => r.text), withReuse.map((r) => r.text));
  for (const r of without) assert.equal(r.usage.prompt_tokens_details.cached_tokens, 0);
});

test('with --cache-ram a conversation whose slot was taken finds its history in RAM when it returns', async () => {
  const withRam = await serverWith(['--parallel', '1', '--cache-ram', '16']);
  const without = await serverWith(['--parallel', '1']);
  for (const server of [withRam, without]) {
    const a = { ...greedy, prompt: 'Once upon a time there was a little bird who lived in a tree', max_tokens: 8 };
    const first = await post(server, '/v1/completions', a);
    await post(server, '/v1/completions', { ...greedy, prompt: 'The sun was hot and the dog was sleeping under a big', max_tokens: 8 });
    const back = await post(server, '/v1/completions', { ...a, prompt: a.prompt + first.body.choices[0].text + ' Then' });
    const cached = back.body.usage.prompt_tokens_details.cached_tokens;
    if (server === withRam) {
      assert.ok(cached >= first.body.usage.prompt_tokens, `${cached} tokens reused`);
      assert.ok(counter(await metrics(server), 'rill_cache_ram_conversations') >= 1);
    } else {
      assert.ok(cached < first.body.usage.prompt_tokens / 2, `${cached} tokens reused without --cache-ram`);
    }
  }
});

// Recurrent layers cannot cut their state back to a shorter prefix: the slot returns to the checkpoint
// it took at the previous message boundary instead of reading the history again. The same for each
// recurrent block kind: Qwen3.5's Gated DeltaNet, LFM2's short convolution, Nemotron-H's Mamba-2 (a
// tiny file synthesized here, F32, in milliseconds).
const HYBRID = `${process.env.RILL_SHARED}/arch/qwen35-A.gguf`;
const synthDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rill-serving-'));
after(() => fs.rmSync(synthDir, { recursive: true, force: true }));
function synthesized(preset) {
  const file = path.join(synthDir, `${preset}.gguf`);
  execFileSync(RILL, ['synth', '--preset', preset, '--type', 'F32', '-o', file, '-t', '1'], { stdio: 'ignore' });
  return file;
}
for (const [label, file] of [['qwen35-A', () => HYBRID], ['lfm2-A', () => `${process.env.RILL_SHARED}/arch/lfm2-A.gguf`],
                             ['tiny-nemotron-h', () => synthesized('tiny-nemotron-h')]]) {
  test(`a hybrid model with recurrent layers (${label}) evaluates only the new turn of a returning conversation`, async () => {
    const model = file();
    const id = path.basename(model, '.gguf');
    const hybrid = async (extra) => {
      const s = await startRill(RILL, ['-m', model, '--port', '0', '-t', '1', '--no-mmap', '--parallel', '2', ...extra]);
      servers.push(s);
      return s;
    };
    const on = await hybrid([]);
    const off = await hybrid(['--no-cache-prompt']);
    const turns = USER_TURNS.slice(0, 3);
    const replies = await converse(on, turns, 12, id);
    for (let i = 1; i < replies.length; i++) {
      const before = replies[i - 1].usage;
      const cached = replies[i].usage.prompt_tokens_details.cached_tokens;
      // At least up to the checkpoint before the previous prompt's last token (this random model's
      // replies do not re-tokenize as generated, so the one at the reply's end is not reached here).
      assert.ok(cached >= before.prompt_tokens - 1, `turn ${i + 1}: ${cached} cached of the previous turn's ${before.prompt_tokens} + ${before.completion_tokens}`);
    }
    const m = await metrics(on);
    assert.ok(Number(m.rill_recurrent_checkpoints.metrics[0].value) >= 1);
    assert.ok(Number(m.rill_recurrent_checkpoint_bytes.metrics[0].value) > 0);
    assert.deepEqual((await converse(off, turns, 12, id)).map((r) => r.text), replies.map((r) => r.text));
  });
}

test('a request with cache_prompt false evaluates its whole prompt', async () => {
  const server = await serverWith(['--parallel', '1']);
  const body = { ...greedy, prompt: 'Once upon a time there was a dog', max_tokens: 4 };
  await post(server, '/v1/completions', body);
  const reused = await post(server, '/v1/completions', body);
  assert.ok(reused.body.usage.prompt_tokens_details.cached_tokens > 0);
  const whole = await post(server, '/v1/completions', { ...body, cache_prompt: false });
  assert.equal(whole.body.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(whole.body.choices[0].text, reused.body.choices[0].text);
});

test('a long prompt is read in chunks between the steps of a stream that is generating', async () => {
  const server = await serverWith(['--parallel', '2', '--ctx', '2048', '--prefill-chunk', '4']);
  const openai = client(server);
  const stream = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 1900, ignore_eos: true, stream: true });
  let generated = 0;
  let atLongStart = -1;
  let atLongFirst = -1;
  const reading = (async () => {
    for await (const chunk of stream) {
      generated += 1;
      if (generated === 20) {
        atLongStart = generated;
        // About 900 tokens, read at 1 to 4 a step (the pacer may take fewer than --prefill-chunk when a
        // prompt token costs as much as a decode step, as it does on this tiny model): 225 to 900 steps,
        // each of which also gives the stream a token, and the 1,900-token stream cannot end first.
        // (1,800 tokens had needed up to 1,880 steps, and the stream sometimes ended before the read did.)
        const long = await openai.completions.create({ ...greedy, prompt: 'The dog ran. '.repeat(150), max_tokens: 1, stream: true });
        (async () => {
          for await (const c of long) if (atLongFirst < 0 && c.choices[0]?.text !== undefined) atLongFirst = generated;
        })();
      }
      if (atLongFirst >= 0) break;
    }
  })();
  await reading;
  assert.ok(atLongFirst - atLongStart >= 100, `the stream got ${atLongFirst - atLongStart} tokens while the long prompt was read`);
});

test('a short prompt that arrives while a long one is read is answered first', async () => {
  const server = await serverWith(['--parallel', '3', '--ctx', '2048', '--prefill-chunk', '4', '--prefill-slowdown', '0']);
  const openai = client(server);
  const order = [];
  const firstChunk = async (prompt, name) => {
    const stream = await openai.completions.create({ ...greedy, prompt, max_tokens: 2, stream: true });
    for await (const chunk of stream) if (!order.includes(name) && chunk.choices[0]?.text !== undefined) order.push(name);
  };
  // A stream generating, so prompts go 4 tokens a step; then a paste of some 1,200 tokens; then a question.
  const generating = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 1500, ignore_eos: true, stream: true });
  const iterator = generating[Symbol.asyncIterator]();
  await iterator.next();
  const long = firstChunk('The dog ran. '.repeat(300), 'long');
  // The paste is being read (its slot holds part of it) before the question is sent.
  for (const deadline = Date.now() + 60000; ;) {
    assert.ok(Date.now() < deadline, 'the paste never started being read');
    const slots = await getJson(server, '/slots');
    if (slots.some((slot) => slot.n_prompt_tokens > 1000 && slot.n_prompt_tokens_processed > 0)) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const short = firstChunk('Lily saw a bird.', 'short');
  await Promise.all([long, short]);
  generating.controller.abort();
  assert.deepEqual(order, ['short', 'long']);
});

test('past --max-queue a request is a 503 with Retry-After, and the server goes on', async () => {
  const server = await serverWith(['--parallel', '1', '--max-queue', '1']);
  const body = { ...greedy, prompt: 'Once upon a time', max_tokens: 300, ignore_eos: true };
  const results = await Promise.all(Array.from({ length: 6 }, () => post(server, '/v1/completions', body)));
  const refused = results.filter((r) => r.status === 503);
  assert.ok(refused.length >= 1, 'some requests are refused');
  assert.equal(results.filter((r) => r.status === 200).length + refused.length, 6);
  for (const r of refused) {
    assert.match(r.headers.get('retry-after'), /^\d+$/);
    assert.equal(r.body.error.type, 'server_error');
    assert.match(r.body.error.message, /--max-queue/);
  }
  assert.equal(counter(await metrics(server), 'rill_requests_rejected_total'), refused.length);
  assert.equal((await post(server, '/v1/completions', { ...body, max_tokens: 2 })).status, 200);
});

test('SIGTERM lets streams in flight finish, refuses new requests with 503, and exits 0', async () => {
  const server = await startServer(['--parallel', '2']);
  const openai = client(server);
  const stream = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 800, ignore_eos: true, stream: true });
  let chunks = 0;
  let finish = null;
  const exited = new Promise((resolve) => server.child.on('exit', resolve));
  for await (const chunk of stream) {
    if (++chunks === 5) {
      server.child.kill('SIGTERM');
      for (let i = 0; i < 100 && !/draining/.test(server.log); i++) await new Promise((r) => setTimeout(r, 10));
      const late = await post(server, '/v1/completions', { ...greedy, prompt: 'Hi', max_tokens: 2 });
      assert.equal(late.status, 503);
      assert.equal((await fetch(`${server.url}/health`)).status, 503);
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, 'length', 'the stream in flight ran to its end');
  assert.equal(await exited, 0);
});

test('/metrics parses as Prometheus text and counts requests, tokens and the prompt tokens reused', async () => {
  const server = await serverWith(['--parallel', '2']);
  await converse(server, USER_TURNS.slice(0, 3), 8);
  const m = await metrics(server);
  assert.equal(counter(m, 'rill_requests_total'), 3);
  assert.equal(counter(m, 'rill_generated_tokens_total'), 24);
  const prompt = counter(m, 'rill_prompt_tokens_total');
  const cached = counter(m, 'rill_prompt_tokens_cached_total');
  assert.ok(cached > 0);
  assert.equal(counter(m, 'rill_prompt_tokens_evaluated_total'), prompt - cached);
  assert.equal(counter(m, 'rill_slots_total'), 2);
  assert.equal(counter(m, 'rill_queue_depth'), 0);
  for (const name of ['rill_time_to_first_token_seconds', 'rill_inter_token_latency_seconds']) {
    assert.equal(m[name].type, 'HISTOGRAM');
    assert.ok(Number(m[name].metrics[0].count) > 0, name);
  }
});

test('/tokenize and /detokenize round-trip text, with pieces on request', async () => {
  const server = await serverWith([]);
  const text = 'Once upon a time';
  const ids = (await post(server, '/tokenize', { content: text })).body.tokens;
  assert.ok(ids.length > 0 && ids.every(Number.isInteger));
  assert.equal((await post(server, '/tokenize', { content: text, add_special: true })).body.tokens[0], 1, 'BOS when asked');
  const pieces = (await post(server, '/tokenize', { content: text, with_pieces: true })).body.tokens;
  assert.deepEqual(pieces.map((p) => p.id), ids);
  assert.equal(pieces.map((p) => p.piece).join('').trim(), text);
  assert.equal((await post(server, '/detokenize', { tokens: ids })).body.content.trim(), text);
  const bad = await post(server, '/detokenize', { tokens: [1, 99999] });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, 'tokens');
  assert.equal((await post(server, '/tokenize', { content: 7 })).status, 400);
});

test('/apply-template gives the prompt text a chat request evaluates', async () => {
  const server = await serverWith([]);
  const messages = [{ role: 'user', content: 'Hello there' }];
  const { body } = await post(server, '/apply-template', { messages });
  assert.match(body.prompt, /Hello there/);
  const ids = (await post(server, '/tokenize', { content: body.prompt, add_special: true })).body.tokens;
  const r = await client(server).chat.completions.create({ ...greedy, messages, max_tokens: 1 });
  assert.equal(r.usage.prompt_tokens, ids.length);
  assert.equal((await post(server, '/apply-template', { messages: [] })).status, 400);
});

test('/props and /slots describe the server and its slots', async () => {
  const server = await serverWith(['--parallel', '3', '--ctx', '256']);
  const props = await getJson(server, '/props');
  assert.equal(props.total_slots, 3);
  assert.equal(props.default_generation_settings.n_ctx, 256);
  const slots = await getJson(server, '/slots');
  assert.deepEqual(slots.map((s) => s.id), [0, 1, 2]);
  assert.ok(slots.every((s) => s.is_processing === false && s.n_ctx === 256));
});

test('a slot saved, erased and restored serves its conversation from the cache again', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rill-slots-'));
  try {
    const server = await serverWith(['--parallel', '1', '--slot-save-path', dir]);
    const body = { ...greedy, prompt: 'Once upon a time there was a little bird', max_tokens: 6 };
    const first = await post(server, '/v1/completions', body);
    const saved = await post(server, '/slots/0?action=save', { filename: 'bird.slot' });
    assert.equal(saved.status, 200);
    assert.ok(saved.body.n_saved > 0 && saved.body.n_written > 0);
    assert.ok(fs.existsSync(path.join(dir, 'bird.slot')));
    assert.equal((await post(server, '/slots/0?action=erase', {})).body.n_erased, saved.body.n_saved);
    assert.equal((await getJson(server, '/slots'))[0].n_cached_tokens, 0);
    const restored = await post(server, '/slots/0?action=restore', { filename: 'bird.slot' });
    assert.equal(restored.body.n_restored, saved.body.n_saved);
    const again = await post(server, '/v1/completions', body);
    assert.ok(again.body.usage.prompt_tokens_details.cached_tokens > 0);
    assert.equal(again.body.choices[0].text, first.body.choices[0].text);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a hybrid slot saved by one server and restored by another answers as the first did, reading only the last prompt token', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rill-slots-'));
  const start = () => startRill(RILL, ['-m', HYBRID, '--port', '0', '-t', '1', '--no-mmap', '--parallel', '1', '--slot-save-path', dir]);
  try {
    const body = { ...greedy, model: 'qwen35-A', prompt: 'Once upon a time there was a little bird', max_tokens: 6 };
    const a = await start();
    let first;
    try {
      first = await post(a, '/v1/completions', body);
      assert.equal((await post(a, '/slots/0?action=save', { filename: 'bird.slot' })).status, 200);
    } finally {
      await stopRill(a);
    }
    const b = await start();
    try {
      assert.equal((await post(b, '/slots/0?action=restore', { filename: 'bird.slot' })).status, 200);
      const again = await post(b, '/v1/completions', body);
      assert.equal(again.body.choices[0].text, first.body.choices[0].text);
      assert.equal(again.body.usage.prompt_tokens_details.cached_tokens, first.body.usage.prompt_tokens - 1);
    } finally {
      await stopRill(b);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('slot actions refuse paths, unknown slots, unknown actions, and saving without --slot-save-path', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rill-slots-'));
  try {
    const server = await serverWith(['--slot-save-path', dir]);
    for (const filename of ['../escape', '/etc/passwd', '.hidden', '', 'a/b']) {
      const r = await post(server, '/slots/0?action=save', { filename });
      assert.equal(r.status, 400, filename);
      assert.equal(r.body.error.param, 'filename');
    }
    assert.equal((await post(server, '/slots/9?action=erase', {})).status, 404);
    assert.equal((await post(server, '/slots/0?action=explode', {})).status, 400);
    const missing = await post(server, '/slots/0?action=restore', { filename: 'nothing.slot' });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error.message, /no slot file/);
    fs.writeFileSync(path.join(dir, 'junk.slot'), 'not a slot file at all');
    assert.match((await post(server, '/slots/0?action=restore', { filename: 'junk.slot' })).body.error.message, /not a rill slot file/);
    const plain = await serverWith([]);
    assert.equal((await post(plain, '/slots/0?action=save', { filename: 'x.slot' })).status, 501);
    assert.equal((await post(plain, '/v1/completions', { ...greedy, prompt: 'Hi', max_tokens: 2 })).status, 200);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
