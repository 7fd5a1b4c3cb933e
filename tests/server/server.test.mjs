// rill serve as a client sees it: OpenAI's official Node package (and plain fetch for what the
// package will not send) against a server on a loopback port. The model is stories260K, a real
// trained model small enough that every request takes milliseconds, also under the sanitizers.
//   RILL_BIN=build/bin/rill RILL_SHARED=../shared node --test tests/server
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { clientFetch, startRill, stopRill } from './rill_server.mjs';

const RILL = process.env.RILL_BIN;
const MODEL = `${process.env.RILL_SHARED}/models/stories260K/stories260K.gguf`;
const MODEL_ID = 'stories260K';
const N_EMBD = 64;

const startServer = (extra = []) => startRill(RILL, ['-m', MODEL, '--port', '0', '-t', '1', '--no-mmap', ...extra]);
const stopServer = stopRill;

const client = (server, apiKey = 'none') =>
  new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0, timeout: 120000, ...clientFetch });

const greedy = { model: MODEL_ID, temperature: 0 };
const ask = (content) => [{ role: 'user', content }];

async function streamedText(openai, messages, max_tokens, onChunk) {
  const stream = await openai.chat.completions.create({ ...greedy, messages, max_tokens, stream: true });
  let text = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    if (onChunk) onChunk(chunk);
    for (const choice of chunk.choices) {
      text += choice.delta?.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, finish, usage };
}

async function health(server) {
  const res = await fetch(`${server.url}/health`);
  return res.json();
}

async function expectServing(server, headers = {}) {
  const res = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL_ID, prompt: 'Once upon a time', max_tokens: 4, temperature: 0 }),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.usage.completion_tokens, 4);
}

function assertOpenAIError(body, code) {
  assert.equal(typeof body.error, 'object');
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, 'string');
  assert.ok('param' in body.error && 'code' in body.error);
  if (code !== undefined) assert.equal(body.error.code, code);
}

let server;
before(async () => {
  server = await startServer(['--parallel', '4', '--ctx', '256', '--max-body', '4096']);
});
after(async () => {
  assert.equal(await stopServer(server), 0, 'SIGTERM stops the server cleanly');
});

test('a chat completion without streaming returns the reply and its token counts', async () => {
  const r = await client(server).chat.completions.create({ ...greedy, messages: ask('Tell me a story.'), max_tokens: 24 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, MODEL_ID);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('a streamed greedy chat joins to exactly the non-streamed text', async () => {
  const openai = client(server);
  const messages = ask('Once there was a cat. What did the cat do?');
  const whole = await openai.chat.completions.create({ ...greedy, messages, max_tokens: 60 });
  let chunks = 0;
  const streamed = await streamedText(openai, messages, 60, () => chunks++);
  assert.ok(chunks > 2, 'the reply arrives in several chunks');
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  const counts = ({ prompt_tokens, completion_tokens, total_tokens }) => ({ prompt_tokens, completion_tokens, total_tokens });
  assert.deepEqual(counts(streamed.usage), counts(whole.usage));
  // The same conversation again reuses all of its prompt but the last token from the slot's cache.
  assert.equal(streamed.usage.prompt_tokens_details.cached_tokens, whole.usage.prompt_tokens - 1);
});

// Two requests written on one connection, read back as raw bytes: each response is a chunked event
// stream that ends with its [DONE] event and the zero-length last chunk, and the connection stays open
// for the next request, as HTTP/1.1 keep-alive promises.
function rawExchange(url, body, requests) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const request = `POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    let received = '';
    const responses = [];
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no complete response; got ${JSON.stringify(received)}`)); }, 60000);
    socket.on('connect', () => socket.write(request));
    socket.on('data', (data) => {
      received += data.toString('latin1');
      const end = received.indexOf('\r\n0\r\n\r\n');
      if (end < 0) return;
      responses.push(received.slice(0, end + 7));
      received = received.slice(end + 7);
      if (responses.length === requests) {
        clearTimeout(timer);
        socket.end();
        resolve({ responses, closedEarly: false });
      } else {
        socket.write(request);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ responses, closedEarly: responses.length < requests });
    });
    socket.on('error', reject);
  });
}

function unchunk(raw) {  // the body of a chunked response, checking each chunk's size line
  let rest = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  let body = '';
  for (;;) {
    const line = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, line), 16);
    assert.ok(Number.isInteger(size), `a chunk size line, got ${JSON.stringify(rest.slice(0, 20))}`);
    if (size === 0) return body;
    body += rest.slice(line + 2, line + 2 + size);
    assert.equal(rest.slice(line + 2 + size, line + 4 + size), '\r\n', 'each chunk ends with CRLF');
    rest = rest.slice(line + 4 + size);
  }
}

test('a streamed response is a well-formed chunked event stream and its connection serves the next request', async () => {
  const body = JSON.stringify({ ...greedy, messages: ask('Hello'), max_tokens: 8, stream: true });
  const { responses, closedEarly } = await rawExchange(server.url, body, 2);
  assert.equal(closedEarly, false, 'the server kept the connection open between the two requests');
  for (const raw of responses) {
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
    assert.match(head, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(head, /\r\nContent-Type: text\/event-stream\r\n/i);
    assert.match(head, /\r\nTransfer-Encoding: chunked(\r\n|$)/i);
    assert.doesNotMatch(head, /\r\nConnection: close/i);
    const events = unchunk(raw).split('\n\n').filter((e) => e !== '');
    assert.ok(events.every((e) => e.startsWith('data: ')), 'every event is one data line');
    assert.equal(events.at(-1), 'data: [DONE]');
    assert.equal(JSON.parse(events.at(-2).slice(6)).choices[0].finish_reason, 'length');
  }
});

test('a text completion continues the prompt, streamed or not', async () => {
  const openai = client(server);
  const r = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 16 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 16);
  const stream = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 16, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, r.choices[0].text);
  assert.ok(text.startsWith(','), `stories260K continues "Once upon a time" with a comma, got ${JSON.stringify(text)}`);
});

test('stop strings end the text before them', async () => {
  const openai = client(server);
  const full = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 30 });
  const text = full.choices[0].text;
  const stop = text.slice(12, 16);
  const cut = await openai.completions.create({ ...greedy, prompt: 'Once upon a time', max_tokens: 30, stop: [stop] });
  assert.equal(cut.choices[0].text, text.slice(0, text.indexOf(stop)));
  assert.equal(cut.choices[0].finish_reason, 'stop');
});

test('embeddings have n_embd values of unit norm, and the same input gives the same vector', async () => {
  const openai = client(server);
  const r = await openai.embeddings.create({ model: MODEL_ID, input: ['The cat sat.', 'A dog ran far away.', 'The cat sat.'] });
  assert.equal(r.data.length, 3);
  for (const d of r.data) {
    assert.equal(d.embedding.length, N_EMBD);
    const norm = Math.sqrt(d.embedding.reduce((s, v) => s + v * v, 0));
    assert.ok(Math.abs(norm - 1) < 1e-5, `norm ${norm} (float32 rounding of 64 values stays far inside 1e-5)`);
  }
  assert.deepEqual(r.data[0].embedding, r.data[2].embedding);
  assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
  assert.ok(r.usage.prompt_tokens > 0);
  // The plain float encoding gives the same numbers as the client's default base64.
  const floats = await openai.embeddings.create({ model: MODEL_ID, input: 'The cat sat.', encoding_format: 'float' });
  assert.deepEqual(floats.data[0].embedding.map(Math.fround), r.data[0].embedding);
});

test('the model list names the served model, and health reports the slots', async () => {
  const models = await client(server).models.list();
  assert.deepEqual(models.data.map((m) => m.id), [MODEL_ID]);
  const h = await health(server);
  assert.equal(h.status, 'ok');
  assert.equal(h.slots_idle + h.slots_processing, 4);
});

test('malformed JSON is a 400 with an OpenAI error body, and the server goes on', async () => {
  const res = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"model": "stories260K", "messages": [' });
  assert.equal(res.status, 400);
  assertOpenAIError(await res.json());
  await expectServing(server);
});

test('a number too large for a double is a 400 saying the body is not valid JSON', async () => {
  // Found by the request fuzz harness: the JSON parser reports this as out_of_range, not parse_error.
  const res = await fetch(`${server.url}/v1/embeddings`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"model": "stories260K", "input": "a", "dimensions": 1e999}' });
  assert.equal(res.status, 400);
  const body = await res.json();
  assertOpenAIError(body);
  assert.match(body.error.message, /^the request body is not valid JSON: .*number overflow/);
});

test('a body over the limit is a 413 with an OpenAI error body, and the server goes on', async () => {
  const res = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: MODEL_ID, prompt: 'x'.repeat(10000) }),
  });
  assert.equal(res.status, 413);
  assertOpenAIError(await res.json());
  await expectServing(server);
});

test('an unknown model name is a 404 model_not_found, and the server goes on', async () => {
  await assert.rejects(client(server).chat.completions.create({ model: 'gpt-4o', messages: ask('hi') }), (e) => {
    assert.equal(e.status, 404);
    assert.equal(e.code, 'model_not_found');
    return true;
  });
  await expectServing(server);
});

test('a prompt longer than the context is a 400 context_length_exceeded, and the server goes on', async () => {
  const long = 'The cat sat on the mat and looked at the dog. '.repeat(40);
  await assert.rejects(client(server).chat.completions.create({ ...greedy, messages: ask(long) }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.code, 'context_length_exceeded');
    assert.match(e.message, /maximum context length is 256 tokens/);
    return true;
  });
  await expectServing(server);
});

test('bad field values are 400s naming the field', async () => {
  const openai = client(server);
  for (const [body, param] of [
    [{ temperature: 'hot' }, 'temperature'],
    [{ max_tokens: -1 }, 'max_tokens'],
    [{ n: 2 }, 'n'],
    [{ messages: [] }, 'messages'],
    [{ messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role'],
    // Found by the request fuzz harness: a field of another type than the one read must not escape
    // as the JSON library's own type error.
    [{ messages: [{ role: 'user', content: [{ type: ['text'], text: 'hi' }] }] }, 'messages[0].content'],
  ]) {
    await assert.rejects(openai.chat.completions.create({ ...greedy, messages: ask('hi'), ...body }), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, param);
      return true;
    });
  }
  await assert.rejects(openai.completions.create({ ...greedy, prompt: 'a', echo: 'yes' }), (e) => e.status === 400 && e.param === 'echo');
  await assert.rejects(openai.embeddings.create({ model: MODEL_ID, input: 'a', encoding_format: 7 }),
    (e) => e.status === 400 && e.param === 'encoding_format');
});

test('eight concurrent streams each get the text they get alone', async () => {
  const openai = client(server);
  const prompts = Array.from({ length: 8 }, (_, i) => ask(`Story number ${i + 1}: the ${['cat', 'dog', 'bird', 'girl', 'boy', 'sun', 'tree', 'ball'][i]}`));
  const alone = [];
  for (const p of prompts) alone.push((await openai.chat.completions.create({ ...greedy, messages: p, max_tokens: 80 })).choices[0].message.content);
  const together = await Promise.all(prompts.map((p) => streamedText(openai, p, 80)));
  together.forEach((r, i) => assert.equal(r.text, alone[i], `stream ${i}`));
  assert.match(server.log, /POST \/v1\/chat\/completions 200 prompt=\d+ cached=\d+ generated=\d+ ttft=\d+ms [\d.]+ t\/s/);
});

test('a client that disconnects mid-stream has its generation cancelled and its slot freed', async () => {
  const one = await startServer(['--parallel', '1']);
  try {
    const controller = new AbortController();
    const stream = await client(one).chat.completions.create(
      { ...greedy, messages: ask('Tell me a very long story.'), max_tokens: 2000, stream: true },
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const chunk of stream) {
        if (++chunks === 3) controller.abort();  // the package ends the iteration quietly or throws AbortError
      }
    } catch (e) {
      assert.equal(e.name, 'AbortError');
    }
    assert.ok(chunks >= 3);
    // The scheduler checks each slot's cancel flag before every decode step.
    let h;
    for (let i = 0; i < 200; i++) {
      h = await health(one);
      if (h.slots_processing === 0) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(h.slots_processing, 0);
    await expectServing(one);
    const m = /POST \/v1\/chat\/completions 200 prompt=\d+ cached=\d+ generated=(\d+) .*client disconnected/.exec(one.log);
    assert.ok(m, `the log records the disconnect:\n${one.log}`);
    assert.ok(Number(m[1]) < 2000, 'generation stopped early');
  } finally {
    await stopServer(one);
  }
});

test('with --api-key, a missing or wrong key is a 401 and the right key is served', async () => {
  const keyed = await startServer(['--api-key', 'sesame']);
  try {
    for (const key of [undefined, 'wrong']) {
      const headers = key ? { Authorization: `Bearer ${key}` } : {};
      const res = await fetch(`${keyed.url}/v1/models`, { headers });
      assert.equal(res.status, 401);
      assertOpenAIError(await res.json(), 'invalid_api_key');
    }
    await assert.rejects(client(keyed, 'wrong').models.list(), (e) => e.status === 401);
    const models = await client(keyed, 'sesame').models.list();
    assert.equal(models.data[0].id, MODEL_ID);
    assert.equal((await health(keyed)).status, 'ok', '/health needs no key');
    await expectServing(keyed, { Authorization: 'Bearer sesame' });
  } finally {
    await stopServer(keyed);
  }
});
