// Structured output through OpenAI's official Node package: JSON schemas, grammars, tool calls,
// reasoning and log-probabilities. The model has random weights, so any token is as likely as any
// other and only the grammar can make the output valid; every output is checked with a real JSON
// Schema validator (Ajv). Templated copies of it are made with add_chat_template, so each chat
// template family's tool-call syntax and reasoning markers go through the real template.
//   RILL_BIN=build/bin/rill RILL_SHARED=../shared RILL_ADD_TEMPLATE=build/bin/add_chat_template node --test tests/server
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { clientFetch, startRill, stopRill } from './rill_server.mjs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const RILL = process.env.RILL_BIN;
const SHARED = process.env.RILL_SHARED;
const ADD_TEMPLATE = process.env.RILL_ADD_TEMPLATE;
const RANDOM_MODEL = `${SHARED}/models/tiny-random-llama2/llama-2-tiny-random.gguf`;
const CASES = {
  ...JSON.parse(fs.readFileSync(`${SHARED}/chat-templates/cases.json`, 'utf8')),
  ...JSON.parse(fs.readFileSync(`${SHARED}/chat-templates/cases-2026.json`, 'utf8')),
};
// The template families whose tool syntax the server parses, by their model in cases.json (or cases-2026.json).
const FAMILIES = {
  hermes: 'Qwen-Qwen2.5-7B-Instruct',
  qwen3: 'Qwen-Qwen3-0.6B',
  llama3: 'meta-llama-Llama-3.1-8B-Instruct',
  mistral: 'mistralai-Mistral-Nemo-Instruct-2407',
  granite: 'ibm-granite-granite-3.3-2B-Instruct',
  deepseek: 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B',
  gemma4: 'google-gemma-4-31B-it',
  lfm2: 'LFM2-8B-A1B',
  lfm25: 'LFM2.5-Instruct',
  nemotron2: 'NVIDIA-Nemotron-Nano-v2',
  nemotron3: 'NVIDIA-Nemotron-3-Nano-30B-A3B-BF16',
  granite4: 'ibm-granite-granite-4.0',
};

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

const startServer = (model, extra = []) => startRill(RILL, ['-m', model, '--port', '0', '-t', '1', '--no-mmap', '-c', '2048', ...extra]);
const stopServer = stopRill;

// On Node.js 18 the client gets Node's built-in fetch (see rill_server.mjs).
const client = (server) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000, ...clientFetch });

// A seeded generator, so the 200 schemas are the same on every run.
function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Random schemas over what the engine supports. Strings and arrays are bounded, so that output
// from random weights ends well inside max_tokens.
function randomSchema(rand, depth = 0) {
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const kinds = depth >= 2 ? ['string', 'integer', 'number', 'boolean', 'null', 'enum', 'const', 'format', 'pattern']
                           : ['string', 'integer', 'number', 'boolean', 'enum', 'object', 'object', 'array', 'anyOf', 'pattern', 'format'];
  switch (pick(kinds)) {
    case 'string': {
      const min = int(0, 3);
      return { type: 'string', minLength: min, maxLength: min + int(0, 8) };
    }
    case 'integer': {
      const s = { type: 'integer' };
      if (rand() < 0.7) s.minimum = int(-1000, 50);
      if (rand() < 0.7) s.maximum = (s.minimum ?? -100) + int(0, 100000);
      if (rand() < 0.2) s.exclusiveMinimum = s.minimum ?? 0, delete s.minimum;
      return s;
    }
    case 'number': return rand() < 0.5 ? { type: 'number' } : { type: 'number', minimum: 0 };
    case 'boolean': return { type: 'boolean' };
    case 'null': return { type: 'null' };
    case 'enum': return { enum: pick([['red', 'green', 'blue'], [1, 2, 3], ['a', 2, null, true], [{ k: [1] }, 'x']]) };
    case 'const': return { const: pick(['fixed', 42, false, { a: 'b' }]) };
    case 'format': return { type: 'string', format: pick(['date', 'time', 'date-time', 'uuid']) };
    case 'pattern': return { type: 'string', pattern: pick(['^[a-z]{1,6}$', '^\\d{3}-\\d{4}$', '^(yes|no)$', '^[A-Z][a-z]{0,5}( [A-Z][a-z]{0,5})?$', '^#[0-9a-f]{6}$']) };
    case 'array': {
      const minItems = int(0, 2);
      return { type: 'array', items: randomSchema(rand, depth + 1), minItems, maxItems: minItems + int(0, 2) };
    }
    case 'anyOf': return { anyOf: [randomSchema(rand, depth + 1), randomSchema(rand, depth + 1)] };
    default: {
      const n = int(1, 4);
      const properties = {};
      const names = ['name', 'age', 'tags', 'id', 'ok', 'when', 'score', 'kind', 'note'];
      for (let i = 0; i < n; i++) properties[`${pick(names)}${i}`] = randomSchema(rand, depth + 1);
      const required = Object.keys(properties).filter(() => rand() < 0.6);
      return { type: 'object', properties, required, additionalProperties: false };
    }
  }
}

let plain;  // the random model without a template: the generic call syntax
const templated = {};  // family -> server
let tmp;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rill-structured-'));
  plain = await startServer(RANDOM_MODEL, ['--parallel', '2']);
  for (const [family, name] of Object.entries(FAMILIES)) {
    const template = path.join(tmp, `${family}.jinja`);
    fs.writeFileSync(template, CASES[name].template);
    const model = path.join(tmp, `${family}.gguf`);
    execFileSync(ADD_TEMPLATE, [RANDOM_MODEL, template, model]);
    templated[family] = await startServer(model);
  }
});

after(async () => {
  await stopServer(plain);
  for (const server of Object.values(templated)) await stopServer(server);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

const ask = (content) => [{ role: 'user', content }];

test('200 requests with different JSON schemas all return content that validates against its schema', async () => {
  const openai = client(plain);
  const rand = mulberry32(20261203);
  const schemas = Array.from({ length: 200 }, () => randomSchema(rand));
  const failures = [];
  let next = 0;
  async function worker() {
    while (next < schemas.length) {
      const i = next++;
      const schema = schemas[i];
      const r = await openai.chat.completions.create({
        model: 'llama-2-tiny-random', messages: ask('Answer in JSON.'), max_tokens: 600, temperature: 1, seed: i,
        response_format: { type: 'json_schema', json_schema: { name: `schema${i}`, schema, strict: true } },
      });
      const content = r.choices[0].message.content;
      let value;
      try {
        value = JSON.parse(content);
      } catch (e) {
        failures.push(`#${i} ${JSON.stringify(schema)}: not JSON (${r.choices[0].finish_reason}): ${content}`);
        continue;
      }
      if (!ajv.validate(schema, value)) failures.push(`#${i} ${JSON.stringify(schema)}: ${content}: ${ajv.errorsText()}`);
      else if (r.choices[0].finish_reason !== 'stop') failures.push(`#${i}: finish_reason ${r.choices[0].finish_reason}`);
    }
  }
  await Promise.all([worker(), worker()]);
  assert.deepEqual(failures, []);
});

test('json_object returns one JSON object', async () => {
  const openai = client(plain);
  // A free object from random weights can run long; a seed whose object ends is enough to show the shape.
  let stopped = 0;
  for (let seed = 0; seed < 8; seed++) {
    const r = await openai.chat.completions.create({
      model: 'llama-2-tiny-random', messages: ask('JSON please'), max_tokens: 300, temperature: 1, seed,
      response_format: { type: 'json_object' },
    });
    const content = r.choices[0].message.content;
    assert.match(content, /^\{/);
    if (r.choices[0].finish_reason === 'stop') {
      stopped++;
      const value = JSON.parse(content);
      assert.equal(typeof value, 'object');
      assert.ok(!Array.isArray(value) && value !== null);
    }
  }
  assert.ok(stopped > 0, 'no object ended within 300 tokens in 8 seeds');
});

test("llama-server's grammar and json_schema fields hold completions and chats to them", async () => {
  const body = { model: 'llama-2-tiny-random', prompt: 'The answer is', max_tokens: 50, temperature: 1, seed: 3, grammar: 'root ::= ("yes" | "no") "!"' };
  let r = await (await fetch(`${plain.url}/v1/completions`, { method: 'POST', body: JSON.stringify(body) })).json();
  assert.match(r.choices[0].text, /^(yes|no)!$/);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['n'] };
  r = await (await fetch(`${plain.url}/v1/chat/completions`, {
    method: 'POST', body: JSON.stringify({ model: 'llama-2-tiny-random', messages: ask('n?'), temperature: 1, seed: 5, json_schema: schema }),
  })).json();
  assert.ok(ajv.validate(schema, JSON.parse(r.choices[0].message.content)), r.choices[0].message.content);
});

test('a streamed schema reply joins to exactly the non-streamed one', async () => {
  const openai = client(plain);
  const schema = { type: 'object', properties: { a: { type: 'string', maxLength: 6 }, b: { type: 'array', items: { type: 'integer' }, maxItems: 3 } }, required: ['a', 'b'] };
  const request = { model: 'llama-2-tiny-random', messages: ask('go'), temperature: 0.9, seed: 11, max_tokens: 200,
    response_format: { type: 'json_schema', json_schema: { name: 's', schema } } };
  const whole = await openai.chat.completions.create(request);
  let text = '';
  for await (const chunk of await openai.chat.completions.create({ ...request, stream: true })) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, whole.choices[0].message.content);
});

test('schema features the engine refuses are 400s naming the field and the keyword', async () => {
  const openai = client(plain);
  const cases = [
    [{ type: 'array', items: { type: 'string' }, uniqueItems: true }, /'uniqueItems' is not supported/],
    [{ type: 'integer', multipleOf: 3 }, /'multipleOf' is not supported/],
    [{ type: 'string', pattern: '(?=x)' }, /lookahead/],
    [{ $ref: 'https://example.com/s.json' }, /'\$ref'/],
  ];
  for (const [schema, message] of cases) {
    await assert.rejects(
      openai.chat.completions.create({ model: 'llama-2-tiny-random', messages: ask('x'), response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }),
      (e) => e.status === 400 && message.test(e.message) && e.param === 'response_format.json_schema.schema',
      JSON.stringify(schema));
  }
  const bad = [
    [{ grammar: 'root ::= missing' }, 'grammar', /never defined/],
    [{ grammar: 'root ::= root "a"' }, 'grammar', /left-recursive/],
    [{ response_format: { type: 'yaml' } }, 'response_format.type', /yaml/],
    [{ response_format: { type: 'json_object' }, grammar: 'root ::= "a"' }, 'grammar', /cannot be combined/],
    [{ top_logprobs: 3 }, 'top_logprobs', /logprobs/],
    [{ logprobs: true, top_logprobs: 21 }, 'top_logprobs', /between 0 and 20/],
    [{ tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } }, 'tool_choice', /'g'/],
    [{ tool_choice: 'required' }, 'tool_choice', /'tools' is empty/],
  ];
  for (const [extra, param, message] of bad) {
    const res = await fetch(`${plain.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'llama-2-tiny-random', messages: ask('x'), ...extra }) });
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(extra));
    assert.equal(body.error.param, param, JSON.stringify(body));
    assert.match(body.error.message, message);
  }
  // An adversarial grammar is refused or followed, and the server goes on.
  const deep = `root ::= ${'('.repeat(5000)}"a"${')'.repeat(5000)}`;
  const res = await fetch(`${plain.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'llama-2-tiny-random', messages: ask('x'), grammar: deep }) });
  assert.equal(res.status, 400);
  assert.equal((await fetch(`${plain.url}/health`)).status, 200);
});

const weather = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'], additionalProperties: false },
  },
};
const clock = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['zone'] } },
};
const toolsByName = { get_weather: weather, get_time: clock };

function checkCalls(message, allowed) {
  assert.ok(Array.isArray(message.tool_calls) && message.tool_calls.length > 0, JSON.stringify(message));
  for (const call of message.tool_calls) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^(call_[A-Za-z0-9]{24}|[A-Za-z0-9]{9})$/);
    assert.ok(allowed.includes(call.function.name), call.function.name);
    const args = JSON.parse(call.function.arguments);
    assert.ok(ajv.validate(toolsByName[call.function.name].function.parameters, args), `${call.function.arguments}: ${ajv.errorsText()}`);
  }
}

test('tool_choice "required" always returns calls whose arguments validate, in every template family', async () => {
  const servers = { generic: plain, ...templated };
  for (const [family, server] of Object.entries(servers)) {
    const openai = client(server);
    for (let seed = 0; seed < 10; seed++) {
      const r = await openai.chat.completions.create({
        model: (await openai.models.list()).data[0].id, messages: ask('What is the weather in Paris?'), tools: [weather, clock],
        tool_choice: 'required', temperature: 1, seed, max_tokens: 1500, parallel_tool_calls: seed % 2 === 0,
      });
      assert.equal(r.choices[0].finish_reason, 'tool_calls', `${family} seed ${seed}: ${JSON.stringify(r.choices[0])}`);
      checkCalls(r.choices[0].message, ['get_weather', 'get_time']);
      if (seed % 2 === 1) assert.equal(r.choices[0].message.tool_calls.length, 1, 'parallel_tool_calls false: one call');
    }
  }
});

test('a named tool_choice always calls that function', async () => {
  for (const server of [plain, templated.hermes, templated.llama3, templated.lfm2, templated.nemotron3]) {
    const openai = client(server);
    for (let seed = 0; seed < 5; seed++) {
      const r = await openai.chat.completions.create({
        model: (await openai.models.list()).data[0].id, messages: ask('time?'), tools: [weather, clock],
        tool_choice: { type: 'function', function: { name: 'get_time' } }, temperature: 1, seed, max_tokens: 300,
      });
      checkCalls(r.choices[0].message, ['get_time']);
      assert.equal(r.choices[0].message.tool_calls.length, 1);
    }
  }
});

test('streamed tool-call deltas join to exactly the non-streamed calls', async () => {
  for (const server of [plain, templated.hermes, templated.mistral, templated.gemma4, templated.lfm25, templated.nemotron2]) {
    const openai = client(server);
    const request = {
      model: (await openai.models.list()).data[0].id, messages: ask('weather?'), tools: [weather, clock], tool_choice: 'required',
      temperature: 0.8, seed: 7, max_tokens: 400,
    };
    const whole = (await openai.chat.completions.create(request)).choices[0].message.tool_calls;
    const joined = [];
    let finish = null;
    for await (const chunk of await openai.chat.completions.create({ ...request, stream: true })) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.finish_reason) finish = choice.finish_reason;
      for (const d of choice.delta?.tool_calls ?? []) {
        joined[d.index] ??= { name: '', arguments: '' };
        if (d.function?.name) joined[d.index].name += d.function.name;
        joined[d.index].arguments += d.function?.arguments ?? '';
      }
    }
    assert.equal(finish, 'tool_calls');
    assert.deepEqual(joined, whole.map((c) => ({ name: c.function.name, arguments: c.function.arguments })));
  }
});

// The grammar field forces an exact text, so a canned reply in a family's syntax goes through the
// real parser, as the trained model would write it.
const gbnfString = (text) => `root ::= ${JSON.stringify(text)}`;

async function cannedReply(server, text, tools = [weather, clock], stream = false, extra = {}) {
  const body = { model: 'm', messages: ask('go'), tools, grammar: gbnfString(text), max_tokens: 500, stream, ...extra };
  const models = await (await fetch(`${server.url}/v1/models`)).json();
  body.model = models.data[0].id;
  if (!stream) return (await (await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body) })).json()).choices[0];
  const openai = client(server);
  const out = { message: { content: '', reasoning_content: '', tool_calls: [] }, finish_reason: null };
  for await (const chunk of await openai.chat.completions.create(body)) {
    const c = chunk.choices[0];
    if (!c) continue;
    out.message.content += c.delta?.content ?? '';
    out.message.reasoning_content += c.delta?.reasoning_content ?? '';
    for (const d of c.delta?.tool_calls ?? []) {
      out.message.tool_calls[d.index] ??= { function: { name: '', arguments: '' } };
      out.message.tool_calls[d.index].function.name += d.function?.name ?? '';
      out.message.tool_calls[d.index].function.arguments += d.function?.arguments ?? '';
    }
    if (c.finish_reason) out.finish_reason = c.finish_reason;
  }
  return out;
}

const callsOf = (choice) => (choice.message.tool_calls ?? []).map((c) => [c.function.name, JSON.parse(c.function.arguments)]);

test('canned replies in each family\'s call syntax parse to the right calls, streamed or not', async () => {
  const cases = [
    ['hermes', 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call>',
      'Let me look.\n', [['get_weather', { city: 'Paris', unit: 'c' }], ['get_time', { zone: 'CET' }]]],
    ['qwen3', '<tool_call>\n{"name": "get_time", "arguments": {"zone": "UTC"}}\n</tool_call>', null, [['get_time', { zone: 'UTC' }]]],
    ['llama3', '{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "f"}}', null, [['get_weather', { city: 'Oslo', unit: 'f' }]]],
    ['llama3', '<|python_tag|>{"name": "get_time", "parameters": {"zone": "PST"}}', null, [['get_time', { zone: 'PST' }]]],
    ['mistral', '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Rome", "unit": "c"}, "id": "a1b2c3d4e"}, {"name": "get_time", "arguments": {"zone": "CET"}, "id": "f5g6h7i8j"}]',
      null, [['get_weather', { city: 'Rome', unit: 'c' }], ['get_time', { zone: 'CET' }]]],
    ['granite', '<|tool_call|>[{"name": "get_time", "arguments": {"zone": "EST"}}]', null, [['get_time', { zone: 'EST' }]]],
    ['gemma4', '<|channel>thought\nplan<channel|>Let me look.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,unit:<|"|>c<|"|>}<tool_call|>'
      + '<|tool_call>call:get_time{zone:<|"|>CET<|"|>}<tool_call|>', 'Let me look.', [['get_weather', { city: 'Paris', unit: 'c' }], ['get_time', { zone: 'CET' }]]],
    ['lfm2', 'Let me look.<|tool_call_start|>[get_weather(city="Paris", unit=\'c\'), get_time(zone="CET")]<|tool_call_end|>', 'Let me look.',
      [['get_weather', { city: 'Paris', unit: 'c' }], ['get_time', { zone: 'CET' }]]],
    ['lfm25', '<|tool_call_start|>[get_time(zone="UTC")]<|tool_call_end|>Checking the time.', 'Checking the time.', [['get_time', { zone: 'UTC' }]]],
    ['nemotron2', 'plan</think>Let me look.\n<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "f"}}, {"name": "get_time", "arguments": {"zone": "CET"}}]</TOOLCALL>',
      'Let me look.\n', [['get_weather', { city: 'Oslo', unit: 'f' }], ['get_time', { zone: 'CET' }]]],
    ['nemotron3', 'plan\n<tool_call>\n<function=get_time>\n<parameter=zone>\nCET\n</parameter>\n</function>\n</tool_call>\n', null, [['get_time', { zone: 'CET' }]]],
    ['granite4', '<tool_call>\n{"name": "get_time", "arguments": {"zone": "EST"}}\n</tool_call>', null, [['get_time', { zone: 'EST' }]]],
  ];
  for (const [family, text, content, calls] of cases) {
    for (const stream of [false, true]) {
      const choice = await cannedReply(templated[family], text, [weather, clock], stream);
      assert.deepEqual(callsOf(choice), calls, `${family} stream=${stream}: ${JSON.stringify(choice)}`);
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content || null, content, `${family} stream=${stream}`);
    }
  }
  const generic = await cannedReply(plain, '{"tool_calls": [{"name": "get_time", "arguments": {"zone": "JST"}}]}');
  assert.deepEqual(callsOf(generic), [['get_time', { zone: 'JST' }]]);
  // Text that only looks like a call start stays content; without tools nothing is parsed.
  const prose = await cannedReply(templated.hermes, 'I would use <tool_call> here.');
  assert.equal(prose.message.content, 'I would use <tool_call> here.');
  assert.equal(prose.finish_reason, 'stop');
  const noTools = await cannedReply(templated.hermes, '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>', null);
  assert.equal(noTools.message.tool_calls, undefined);
});

test('a conversation with assistant tool_calls and tool results is accepted through each template', async () => {
  const messages = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'a1b2c3d4e', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "c"}' } }] },
    { role: 'tool', tool_call_id: 'a1b2c3d4e', content: '{"temp": 21}' },
  ];
  for (const [family, server] of Object.entries({ generic: plain, ...templated })) {
    const openai = client(server);
    const r = await openai.chat.completions.create({ model: (await openai.models.list()).data[0].id, messages, tools: [weather], max_tokens: 5, temperature: 0 });
    assert.ok(r.usage.prompt_tokens > 20, family);
  }
});

test('text inside <think> (Gemma 4: its thought channel) goes to reasoning_content, streamed or not', async () => {
  for (const stream of [false, true]) {
    const qwen3 = await cannedReply(templated.qwen3, '<think>\nplan it\n</think>\n\nThe answer.', null, stream);
    assert.equal(qwen3.message.reasoning_content, '\nplan it\n');
    assert.equal(qwen3.message.content, 'The answer.');
    // DeepSeek-R1's generation prompt opens <think> itself (this template closes it again unless
    // enable_thinking is set): the reply starts inside it.
    const r1 = await cannedReply(templated.deepseek, 'hmm</think>\n\nDone.', null, stream, { chat_template_kwargs: { enable_thinking: true } });
    assert.equal(r1.message.reasoning_content, 'hmm');
    assert.equal(r1.message.content, 'Done.');
    // Gemma 4 thinks in a channel: <|channel>thought, the reasoning, <channel|>.
    const gemma4 = await cannedReply(templated.gemma4, '<|channel>thought\nplan it\n<channel|>The answer.', null, stream, { chat_template_kwargs: { enable_thinking: true } });
    assert.equal(gemma4.message.reasoning_content, 'plan it\n');
    assert.equal(gemma4.message.content, 'The answer.');
    // Both Nemotrons' generation prompts open <think>, unless /no_think (Nano 2) or enable_thinking false (3) closes it.
    const nano2 = await cannedReply(templated.nemotron2, 'plan it\n</think>\n\nThe answer.', null, stream);
    assert.equal(nano2.message.reasoning_content, 'plan it\n');
    assert.equal(nano2.message.content, 'The answer.');
    const nano3 = await cannedReply(templated.nemotron3, 'The answer.', null, stream, { chat_template_kwargs: { enable_thinking: false } });
    assert.equal(nano3.message.reasoning_content || '', '');
    assert.equal(nano3.message.content, 'The answer.');
  }
  // A model without <think> in its template keeps the text as it is.
  const plainReply = await cannedReply(plain, '<think>x</think>y', null);
  assert.equal(plainReply.message.content, '<think>x</think>y');
});

test('a template that writes BOS gets one BOS, not two: the tokenizer\'s stands for the template\'s, as in llama.cpp', async () => {
  for (const family of ['llama3', 'gemma4']) {
    const server = templated[family];
    const post = async (route, body) => (await fetch(`${server.url}${route}`, { method: 'POST', body: JSON.stringify(body) })).json();
    const { prompt } = await post('/apply-template', { messages: ask('hi') });
    assert.ok(!prompt.startsWith('<s>'), `${family}: ${prompt}`);
    const ids = (await post('/tokenize', { content: prompt, add_special: true })).tokens;
    assert.equal(ids[0], 1, family);
    assert.notEqual(ids[1], 1, family);
    const r = await client(server).chat.completions.create({ model: family, messages: ask('hi'), max_tokens: 1, temperature: 0 });
    assert.equal(r.usage.prompt_tokens, ids.length, family);
  }
});

test('after a Gemma 4 turn of text, calls and their results the prompt opens the model\'s next turn, as llama.cpp does', async () => {
  const messages = [
    ...ask('Weather in Paris?'),
    { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "c"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' },
  ];
  const res = await fetch(`${templated.gemma4.url}/apply-template`, { method: 'POST', body: JSON.stringify({ messages, tools: [weather] }) });
  const { prompt } = await res.json();
  assert.ok(prompt.endsWith('<tool_response|>Let me check.<turn|>\n<|turn>model\n'), prompt);
});

test('an LFM2 assistant turn\'s calls reach the prompt in the model\'s own syntax, as its templates render only content', async () => {
  const messages = [
    ...ask('Weather in Paris?'),
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "c"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' },
  ];
  for (const family of ['lfm2', 'lfm25']) {
    const res = await fetch(`${templated[family].url}/apply-template`, { method: 'POST', body: JSON.stringify({ messages, tools: [weather] }) });
    const { prompt } = await res.json();
    assert.ok(prompt.includes('<|im_start|>assistant\n<|tool_call_start|>[get_weather(city="Paris", unit="c")]<|tool_call_end|><|im_end|>\n'), `${family}: ${prompt}`);
  }
});

test('chat_template_kwargs and reasoning_effort reach the template', async () => {
  const openai = client(templated.qwen3);
  const base = { model: 'qwen3', messages: ask('hi'), max_tokens: 1, temperature: 0 };
  const on = await openai.chat.completions.create(base);
  const off = await openai.chat.completions.create({ ...base, chat_template_kwargs: { enable_thinking: false } });
  assert.ok(off.usage.prompt_tokens > on.usage.prompt_tokens, 'enable_thinking=false adds an empty <think></think> to the prompt');
  const effort = await openai.chat.completions.create({ ...base, reasoning_effort: 'low' });
  assert.equal(effort.choices.length, 1);
});

// rill eval's logits for `ids`: n rows of n_vocab float32.
function evalLogits(model, ids) {
  const out = path.join(tmp, 'logits.f32');
  execFileSync(RILL, ['eval', '-m', model, '--tokens', ids.join(','), '--out', out, '-t', '1']);
  const bytes = fs.readFileSync(out);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
}

function logSoftmax(row) {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const z = max + Math.log(sum);
  return Array.from(row, (v) => v - z);
}

test('at temperature 0 the top-1 of top_logprobs is the sampled token, and its log-prob matches rill eval within 1e-4', async () => {
  const openai = client(plain);
  const prompt = 'Once upon a time';
  const r = await openai.chat.completions.create({ model: 'llama-2-tiny-random', messages: ask(prompt), max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 5 });
  const entries = r.choices[0].logprobs.content;
  assert.equal(entries.length, r.usage.completion_tokens);
  for (const e of entries) {
    assert.equal(e.top_logprobs.length, 5);
    assert.equal(e.top_logprobs[0].token, e.token);
    assert.equal(e.top_logprobs[0].logprob, e.logprob);
    if (!e.token.includes('\uFFFD')) assert.deepEqual(e.bytes, [...Buffer.from(e.token, 'utf8')]);
    for (let i = 1; i < 5; i++) assert.ok(e.top_logprobs[i].logprob <= e.top_logprobs[i - 1].logprob);
  }
  // Streamed, the chunks carry the same entries in order.
  const streamed = [];
  for await (const chunk of await openai.chat.completions.create({ model: 'llama-2-tiny-random', messages: ask(prompt), max_tokens: 6, temperature: 0,
    logprobs: true, top_logprobs: 5, stream: true })) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(streamed, entries);
  // The same numbers from rill eval, on a completion (no template): the prompt's ids, then greedy ones.
  const completion = await (await fetch(`${plain.url}/v1/completions`, {
    method: 'POST', body: JSON.stringify({ model: 'llama-2-tiny-random', prompt, max_tokens: 5, temperature: 0, logprobs: 5 }),
  })).json();
  const lp = completion.choices[0].logprobs;
  const ids = execFileSync(RILL, ['tokenize', '-m', RANDOM_MODEL, prompt]).toString().trim().split(/\s+/).map(Number);
  for (let k = 0; k < lp.token_logprobs.length; k++) {
    const logits = evalLogits(RANDOM_MODEL, ids);
    const n_vocab = logits.length / ids.length;
    const row = logSoftmax(logits.subarray((ids.length - 1) * n_vocab));
    let best = 0;
    for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
    assert.ok(Math.abs(row[best] - lp.token_logprobs[k]) < 1e-4, `token ${k}: ${row[best]} vs ${lp.token_logprobs[k]}`);
    const top = Object.values(lp.top_logprobs[k]);
    const sorted = [...row].sort((a, b) => b - a).slice(0, 5);
    for (let i = 0; i < top.length; i++) assert.ok(Math.abs(top[i] - sorted[i]) < 1e-4);
    ids.push(best);
  }
});
