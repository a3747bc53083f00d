// Conformance calls of the official openai npm client against an
// OpenAI-compatible server (server/openaiapi's `trainer serve` stand-in for
// vLLM). Each call checks what the SDK's types promise, not only that the
// call did not throw, and prints one JSON line:
//
//   {"n": 3, "name": "completions.basic", "ok": true}
//   {"n": 5, "name": "completions.logprobs", "ok": false, "error": "BadRequestError 400: ..."}
//   {"n": 20, "name": "lora.flow", "ok": "skip", "error": "no adapter given (--adapter-path)"}
//
// Usage (flags, or the environment variables in brackets):
//
//   node calls.mjs --base-url http://127.0.0.1:8000 [BASE_URL] --api-key KEY [API_KEY]
//                  --model NAME [MODEL] [--adapter-path DIR [ADAPTER_PATH]]
//                  [--adapter-name NAME [ADAPTER_NAME]] [--only 3,5,chat.stop]
//                  [--openapi FILE [OPENAI_OPENAPI]]
//
// The base URL is the server's root (a trailing /v1 is accepted). The LoRA
// call (20) runs only with --adapter-path, a PEFT adapter directory of the
// served model, which it loads over POST /v1/load_lora_adapter (vLLM's
// runtime LoRA API; the SDK has no method for it), uses and unloads.
//
// With --openapi, a copy of OpenAI's published OpenAPI document
// (openapi.json of github.com/openai/openai-openapi; no npm package ships
// it), every non-streamed reply and error body is also validated, with ajv,
// against its schema (CreateCompletionResponse, CreateChatCompletionResponse,
// ListModelsResponse, Model, ErrorResponse); a call with replies that do not
// conform prints a second line named "<call>.schema".
//
// The exit status is 0 when every call printed ok true or "skip", 1
// otherwise, 2 on bad usage.

import fs from 'node:fs';
import OpenAI from 'openai';

function parseArgs(argv) {
  const o = {
    baseURL: process.env.BASE_URL,
    apiKey: process.env.API_KEY,
    model: process.env.MODEL,
    adapterPath: process.env.ADAPTER_PATH,
    adapterName: process.env.ADAPTER_NAME,
    openapi: process.env.OPENAI_OPENAPI,
    only: null,
  };
  const flags = {
    '--base-url': 'baseURL', '--api-key': 'apiKey', '--model': 'model',
    '--adapter-path': 'adapterPath', '--adapter-name': 'adapterName', '--only': 'only', '--openapi': 'openapi',
  };
  for (let i = 0; i < argv.length; i++) {
    const k = flags[argv[i]];
    if (!k || i + 1 >= argv.length) {
      console.error(`calls.mjs: unknown flag or missing value: ${argv[i]}`);
      process.exit(2);
    }
    o[k] = argv[++i];
  }
  if (!o.baseURL || !o.model) {
    console.error('calls.mjs: --base-url and --model are required');
    process.exit(2);
  }
  o.baseURL = o.baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
  o.apiKey = o.apiKey || 'EMPTY';
  o.adapterName = o.adapterName || 'agentrl-test-adapter';
  if (o.only) o.only = new Set(o.only.split(',').map((s) => s.trim()));
  return o;
}

const opts = parseArgs(process.argv.slice(2));

// conforms validates body against a schema of the OpenAPI document, when
// one is given, and records the failures for the call being made.
let schemaErrors = [];
let conforms = () => {};
if (opts.openapi) {
  const { default: Ajv } = await import('ajv/dist/2020.js');
  const doc = JSON.parse(fs.readFileSync(opts.openapi, 'utf8'));
  doc.$id = 'openai-openapi';
  const ajv = new Ajv({ strict: false, validateFormats: false, validateSchema: false, allErrors: true });
  ajv.addSchema(doc);
  conforms = (schema, body) => {
    const validate = ajv.getSchema(`openai-openapi#/components/schemas/${schema}`);
    if (!validate) throw new Error(`the OpenAPI document has no schema ${schema}`);
    if (validate(body)) return;
    const errs = validate.errors.map((e) => `${e.instancePath || '/'} ${e.message}`);
    schemaErrors.push(`${schema}: ${[...new Set(errs)].join('; ')}`);
  };
}
const MODEL = opts.model;
const client = new OpenAI({ baseURL: `${opts.baseURL}/v1`, apiKey: opts.apiKey, maxRetries: 0, timeout: 60_000 });

// ---- checks

class CheckError extends Error {}

function check(cond, msg) {
  if (!cond) throw new CheckError(msg);
}

const j = (v) => JSON.stringify(v);
const isInt = (v) => Number.isInteger(v);
const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const FINISH = ['stop', 'length'];

function checkUsage(u, what) {
  check(u && typeof u === 'object', `${what}: usage missing: ${j(u)}`);
  for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) {
    check(isInt(u[k]) && u[k] >= 0, `${what}: usage.${k} = ${j(u[k])}, want an integer >= 0`);
  }
  check(u.prompt_tokens + u.completion_tokens === u.total_tokens,
    `${what}: usage ${j(u)}: prompt_tokens + completion_tokens != total_tokens`);
  check(u.prompt_tokens > 0, `${what}: usage.prompt_tokens is 0`);
}

function checkIndices(choices, n, what) {
  const idx = choices.map((c) => c.index).sort((a, b) => a - b);
  check(j(idx) === j([...Array(n).keys()]), `${what}: choice indices ${j(idx)}, want 0..${n - 1}`);
}

// checkCompletion checks a non-streamed /v1/completions reply.
function checkCompletion(r, { n = 1, maxTokens, logprobs = false, model = MODEL, what = 'completion' } = {}) {
  check(typeof r.id === 'string' && r.id.length > 0, `${what}: id ${j(r.id)}`);
  check(r.object === 'text_completion', `${what}: object ${j(r.object)}, want "text_completion"`);
  check(isInt(r.created) && r.created > 1.5e9, `${what}: created ${j(r.created)}, want Unix seconds`);
  check(r.model === model, `${what}: model ${j(r.model)}, want ${j(model)}`);
  check(Array.isArray(r.choices) && r.choices.length === n, `${what}: ${r.choices?.length} choices, want ${n}`);
  checkIndices(r.choices, n, what);
  for (const c of r.choices) {
    check(typeof c.text === 'string', `${what}: choice ${c.index}: text ${j(c.text)}`);
    check(FINISH.includes(c.finish_reason), `${what}: choice ${c.index}: finish_reason ${j(c.finish_reason)}`);
    if (!logprobs) check(c.logprobs == null, `${what}: choice ${c.index}: logprobs ${j(c.logprobs)} not asked for`);
  }
  checkUsage(r.usage, what);
  conforms(r.object === 'chat.completion' ? 'CreateChatCompletionResponse' : 'CreateCompletionResponse', r);
  if (maxTokens !== undefined) {
    check(r.usage.completion_tokens <= n * maxTokens, `${what}: ${r.usage.completion_tokens} completion tokens for ${n} × max_tokens ${maxTokens}`);
    if (n === 1 && r.choices[0].finish_reason === 'length') {
      check(r.usage.completion_tokens === maxTokens, `${what}: finish_reason "length" after ${r.usage.completion_tokens} of max_tokens ${maxTokens}`);
    }
  }
}

// checkChat checks a non-streamed /v1/chat/completions reply.
function checkChat(r, { n = 1, maxTokens, logprobs = false, model = MODEL, what = 'chat' } = {}) {
  check(typeof r.id === 'string' && r.id.length > 0, `${what}: id ${j(r.id)}`);
  check(r.object === 'chat.completion', `${what}: object ${j(r.object)}, want "chat.completion"`);
  check(isInt(r.created) && r.created > 1.5e9, `${what}: created ${j(r.created)}, want Unix seconds`);
  check(r.model === model, `${what}: model ${j(r.model)}, want ${j(model)}`);
  check(Array.isArray(r.choices) && r.choices.length === n, `${what}: ${r.choices?.length} choices, want ${n}`);
  checkIndices(r.choices, n, what);
  for (const c of r.choices) {
    check(c.message && c.message.role === 'assistant', `${what}: choice ${c.index}: message.role ${j(c.message?.role)}`);
    check(typeof c.message.content === 'string', `${what}: choice ${c.index}: message.content ${j(c.message.content)}`);
    check(c.message.tool_calls === undefined || Array.isArray(c.message.tool_calls), `${what}: tool_calls ${j(c.message.tool_calls)}`);
    check(FINISH.includes(c.finish_reason), `${what}: choice ${c.index}: finish_reason ${j(c.finish_reason)}`);
    if (!logprobs) check(c.logprobs == null, `${what}: choice ${c.index}: logprobs ${j(c.logprobs)} not asked for`);
  }
  checkUsage(r.usage, what);
  conforms(r.object === 'chat.completion' ? 'CreateChatCompletionResponse' : 'CreateCompletionResponse', r);
  if (maxTokens !== undefined) {
    check(r.usage.completion_tokens <= n * maxTokens, `${what}: ${r.usage.completion_tokens} completion tokens for ${n} × max ${maxTokens}`);
    if (n === 1 && r.choices[0].finish_reason === 'length') {
      check(r.usage.completion_tokens === maxTokens, `${what}: finish_reason "length" after ${r.usage.completion_tokens} of max ${maxTokens}`);
    }
  }
}

// checkChatTokenLogprob checks a chat logprob entry or a top_logprobs entry.
function checkChatTokenLogprob(e, what) {
  check(typeof e.token === 'string', `${what}: token ${j(e.token)}`);
  check(isNum(e.logprob) && e.logprob <= 1e-6, `${what}: logprob ${j(e.logprob)}, want a number <= 0`);
  check(e.bytes === null || (Array.isArray(e.bytes) && e.bytes.every((b) => isInt(b) && b >= 0 && b < 256)),
    `${what}: bytes ${j(e.bytes)}, want null or a list of bytes`);
}

// stopFor picks a stop string from the middle of text: two characters,
// free of U+FFFD, whose first occurrence has at least two characters
// before it and some after; null when there is none.
function stopFor(text) {
  for (let i = 2; i + 3 <= text.length; i++) {
    const s = text.slice(i, i + 2);
    if (!s.includes('\uFFFD') && text.indexOf(s) === i) return s;
  }
  return null;
}

// cut is text up to the first of the stop strings, and whether one occurred.
function cut(text, stops) {
  let at = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at < 0 ? [text, false] : [text.slice(0, at), true];
}

// rawSSE posts body to path and returns the response and its SSE data lines.
async function rawSSE(path, body) {
  const resp = await fetch(`${opts.baseURL}/v1${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${opts.apiKey}` },
    body: JSON.stringify(body),
  });
  const text = await resp.text();
  const data = text.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
  return { resp, text, data };
}

async function checkRawStream(path, body, what) {
  const { resp, text, data } = await rawSSE(path, body);
  check(resp.status === 200, `${what}: raw stream: status ${resp.status}: ${text.slice(0, 300)}`);
  const ct = resp.headers.get('content-type') || '';
  check(ct.startsWith('text/event-stream'), `${what}: raw stream: Content-Type ${j(ct)}, want text/event-stream`);
  check(data.length >= 2 && data[data.length - 1] === '[DONE]', `${what}: raw stream does not end with "data: [DONE]": ${j(data.slice(-2))}`);
  for (const d of data.slice(0, -1)) {
    try { JSON.parse(d); } catch { check(false, `${what}: raw stream: an event is not JSON: ${d.slice(0, 200)}`); }
  }
}

async function expectAPIError(promise, cls, status, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof cls, `${what}: raised ${e?.constructor?.name} ${e?.status ?? ''}: ${e?.message}, want ${cls.name}`);
    check(e.status === status, `${what}: status ${e.status}, want ${status}`);
    conforms('ErrorResponse', { error: e.error });
    check(e.error && typeof e.error === 'object' && typeof e.error.message === 'string',
      `${what}: error body ${j(e.error)}, want {"message": ...}`);
    return e;
  }
  check(false, `${what}: the call succeeded, want ${cls.name}`);
}

// ---- the calls

const PROMPT = 'Once upon a time';
const calls = [];
const call = (n, name, fn) => calls.push({ n, name, fn });

call(1, 'models.list', async () => {
  const page = await client.models.list();
  conforms('ListModelsResponse', page.body);
  check(page.object === 'list', `object ${j(page.object)}, want "list"`);
  check(Array.isArray(page.data), `data ${j(page.data)}`);
  const ids = [];
  for await (const m of client.models.list()) ids.push(m);
  const base = ids.find((m) => m.id === MODEL);
  check(base, `models ${j(ids.map((m) => m.id))} lack ${j(MODEL)}`);
  check(base.object === 'model', `object ${j(base.object)}, want "model"`);
  check(isInt(base.created), `created ${j(base.created)}`);
  check(typeof base.owned_by === 'string' && base.owned_by.length > 0, `owned_by ${j(base.owned_by)}`);
});

call(2, 'models.retrieve', async () => {
  const m = await client.models.retrieve(MODEL);
  conforms('Model', m);
  check(m.id === MODEL, `id ${j(m.id)}, want ${j(MODEL)}`);
  check(m.object === 'model', `object ${j(m.object)}`);
  check(isInt(m.created), `created ${j(m.created)}`);
  check(typeof m.owned_by === 'string' && m.owned_by.length > 0, `owned_by ${j(m.owned_by)}`);
  await expectAPIError(client.models.retrieve('no-such-model'), OpenAI.NotFoundError, 404, 'retrieve an unknown model');
});

call(3, 'completions.basic', async () => {
  // temperature 0 is greedy decoding: two seeds give the same text.
  const body = { model: MODEL, prompt: PROMPT, max_tokens: 8, temperature: 0 };
  const a = await client.completions.create({ ...body, seed: 1 });
  checkCompletion(a, { maxTokens: 8 });
  const b = await client.completions.create({ ...body, seed: 2 });
  checkCompletion(b, { maxTokens: 8 });
  check(a.choices[0].text === b.choices[0].text, `temperature 0 is not greedy: ${j(a.choices[0].text)} vs ${j(b.choices[0].text)}`);
  check(a.id !== b.id, `two completions share the id ${j(a.id)}`);
});

call(4, 'completions.multi_prompt_n2', async () => {
  const r = await client.completions.create({
    model: MODEL, prompt: [PROMPT, 'The cat sat on'], n: 2, max_tokens: 6, seed: 4, temperature: 1,
  });
  checkCompletion(r, { n: 4, maxTokens: 6 });
  // Prompt i's choices are 2i and 2i+1, as OpenAI and vLLM order them, and
  // (doc.go) choice c of every prompt samples with seed+c: choice 2 is the
  // second prompt alone with the same seed.
  const one = await client.completions.create({ model: MODEL, prompt: 'The cat sat on', max_tokens: 6, seed: 4, temperature: 1 });
  const c2 = r.choices.find((c) => c.index === 2);
  check(c2.text === one.choices[0].text, `choice 2 ${j(c2.text)} is not the second prompt's seed-4 completion ${j(one.choices[0].text)}`);
});

call(5, 'completions.logprobs', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 6, seed: 5, temperature: 1, logprobs: 2 });
  checkCompletion(r, { maxTokens: 6, logprobs: true });
  const lp = r.choices[0].logprobs;
  check(lp && typeof lp === 'object', `logprobs ${j(lp)}`);
  const L = r.usage.completion_tokens;
  check(Array.isArray(lp.tokens) && lp.tokens.length === L && lp.tokens.every((t) => typeof t === 'string'),
    `tokens ${j(lp.tokens)} for ${L} completion tokens`);
  check(Array.isArray(lp.token_logprobs) && lp.token_logprobs.length === L && lp.token_logprobs.every((v) => isNum(v) && v <= 1e-6),
    `token_logprobs ${j(lp.token_logprobs)}`);
  check(Array.isArray(lp.top_logprobs) && lp.top_logprobs.length === L, `top_logprobs ${j(lp.top_logprobs)}`);
  lp.top_logprobs.forEach((d, i) => {
    check(d && typeof d === 'object' && !Array.isArray(d), `top_logprobs[${i}] ${j(d)}, want a dict`);
    const vals = Object.values(d);
    check(vals.length >= 1 && vals.length <= 3, `top_logprobs[${i}] has ${vals.length} entries, want 1..3 for logprobs 2`);
    check(vals.every((v) => isNum(v) && v <= 1e-6), `top_logprobs[${i}] ${j(d)}: values must be log-probs`);
    check(Math.max(...vals) >= lp.token_logprobs[i] - 1e-4, `top_logprobs[${i}] ${j(d)} has no entry as likely as the sampled token (${lp.token_logprobs[i]})`);
  });
  check(Array.isArray(lp.text_offset) && lp.text_offset.length === L && lp.text_offset.every(isInt), `text_offset ${j(lp.text_offset)}`);
  check(L === 0 || lp.text_offset[0] === 0, `text_offset[0] = ${lp.text_offset[0]}, want 0 without echo`);
  check(lp.text_offset.every((v, i) => i === 0 || v >= lp.text_offset[i - 1]), `text_offset ${j(lp.text_offset)} decreases`);
});

// The stop calls sample with a seed (the same seed samples the same tokens)
// rather than greedily: a random model's greedy text repeats one token.
call(6, 'completions.stop', async () => {
  const body = { model: MODEL, prompt: PROMPT, max_tokens: 24, seed: 6, temperature: 1 };
  const full = await client.completions.create(body);
  checkCompletion(full, { maxTokens: 24 });
  const text = full.choices[0].text;
  const s = stopFor(text);
  const stops = s ? [s, '\n'] : ['\n'];
  const r = await client.completions.create({ ...body, stop: stops });
  checkCompletion(r, { maxTokens: 24 });
  const [want, stopped] = cut(text, stops);
  const c = r.choices[0];
  check(c.text === want, `stop ${j(stops)}: text ${j(c.text)}, want ${j(want)} (the unstopped text is ${j(text)})`);
  check(stops.every((x) => !c.text.includes(x)), `text ${j(c.text)} holds a stop string of ${j(stops)}`);
  check(s === null || stopped, `the stop string ${j(s)} is not in ${j(text)}`);
  check(s === null || want.length >= 2, `the text before the stop is ${j(want)}`);
  if (stopped) check(c.finish_reason === 'stop', `finish_reason ${j(c.finish_reason)} after a stop string, want "stop"`);
  return s === null ? `the unstopped text ${j(text)} has no stop string to pick; only "\\n" was tried` : undefined;
});

call(7, 'completions.echo', async () => {
  const body = { model: MODEL, prompt: PROMPT, max_tokens: 4, seed: 7, temperature: 1 };
  const plain = await client.completions.create(body);
  const r = await client.completions.create({ ...body, echo: true, logprobs: 0 });
  checkCompletion(r, { maxTokens: 4, logprobs: true });
  const c = r.choices[0];
  check(c.text === PROMPT + plain.choices[0].text, `echo text ${j(c.text)}, want the prompt + ${j(plain.choices[0].text)}`);
  const lp = c.logprobs;
  const L = r.usage.prompt_tokens + r.usage.completion_tokens;
  check(lp && Array.isArray(lp.tokens) && lp.tokens.length === L, `echo logprobs.tokens ${j(lp?.tokens)}, want ${L} (prompt + completion)`);
  check(Array.isArray(lp.token_logprobs) && lp.token_logprobs.length === L &&
    lp.token_logprobs.every((v, i) => (isNum(v) && v <= 1e-6) || (i === 0 && v === null)),
  `echo token_logprobs ${j(lp.token_logprobs)} (only the first may be null)`);
  check(Array.isArray(lp.text_offset) && lp.text_offset.length === L, `echo text_offset ${j(lp.text_offset)}`);
  check(lp.top_logprobs === null || (Array.isArray(lp.top_logprobs) && lp.top_logprobs.length === L &&
    lp.top_logprobs.every((d, i) => (i === 0 && d === null) || (d && typeof d === 'object' && Object.keys(d).length <= 1))),
  `echo top_logprobs ${j(lp.top_logprobs)} for logprobs 0`);
});

call(8, 'completions.stream_usage', async () => {
  const body = { model: MODEL, prompt: PROMPT, max_tokens: 10, seed: 8, temperature: 1 };
  const ref = await client.completions.create(body);
  checkCompletion(ref, { maxTokens: 10 });
  const stream = await client.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  let id = null;
  for await (const ch of stream) {
    check(usage === null, `a chunk after the usage chunk: ${j(ch)}`);
    chunks++;
    check(ch.object === 'text_completion', `chunk object ${j(ch.object)}, want "text_completion"`);
    check(typeof ch.id === 'string' && (id === null || ch.id === id), `chunk id ${j(ch.id)} (first ${j(id)})`);
    id = ch.id;
    check(ch.model === MODEL, `chunk model ${j(ch.model)}`);
    check(Array.isArray(ch.choices), `chunk choices ${j(ch.choices)}`);
    if (ch.usage) {
      check(ch.choices.length === 0, `the usage chunk has choices ${j(ch.choices)}`);
      usage = ch.usage;
      continue;
    }
    for (const c of ch.choices) {
      check(c.index === 0, `chunk choice index ${c.index}`);
      check(finish === null, `text after finish_reason ${j(finish)}`);
      text += c.text ?? '';
      if (c.finish_reason != null) finish = c.finish_reason;
    }
  }
  check(chunks >= 2, `${chunks} chunks`);
  check(text.length > 0, 'the streamed text is empty');
  check(text === ref.choices[0].text, `streamed text ${j(text)}, want the non-streamed ${j(ref.choices[0].text)}`);
  check(finish === ref.choices[0].finish_reason, `finish_reason ${j(finish)}, want ${j(ref.choices[0].finish_reason)}`);
  check(usage !== null, 'no usage chunk with include_usage');
  checkUsage(usage, 'usage chunk');
  check(j(usage) === j(ref.usage) || (usage.prompt_tokens === ref.usage.prompt_tokens && usage.completion_tokens === ref.usage.completion_tokens),
    `usage ${j(usage)}, want ${j(ref.usage)}`);
  await checkRawStream('/completions', { ...body, stream: true, stream_options: { include_usage: true } }, 'completions');
});

const HELLO = [{ role: 'user', content: 'Hello there' }];

call(9, 'chat.basic', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: HELLO, max_completion_tokens: 12, seed: 9 });
  checkChat(r, { maxTokens: 12 });
});

call(10, 'chat.multi_turn', async () => {
  const last = { role: 'user', content: 'And now go right.' };
  const r = await client.chat.completions.create({
    model: MODEL, max_completion_tokens: 8, seed: 10,
    messages: [
      { role: 'system', content: 'You play a grid game. Answer with one move.' },
      { role: 'user', content: 'Turn 1: you are at the start.' },
      { role: 'assistant', content: 'Left' },
      last,
    ],
  });
  checkChat(r, { maxTokens: 8 });
  const one = await client.chat.completions.create({ model: MODEL, max_completion_tokens: 8, seed: 10, messages: [last] });
  checkChat(one, { maxTokens: 8 });
  check(r.usage.prompt_tokens > one.usage.prompt_tokens + 10,
    `the history is not in the prompt: ${r.usage.prompt_tokens} prompt tokens with it, ${one.usage.prompt_tokens} without`);
});

call(11, 'chat.n2_seed', async () => {
  const body = { model: MODEL, messages: HELLO, max_completion_tokens: 8, temperature: 1 };
  const r = await client.chat.completions.create({ ...body, n: 2, seed: 11 });
  checkChat(r, { n: 2, maxTokens: 8 });
  // doc.go: choice i of an n > 1 request is the n = 1 request with seed+i.
  for (const i of [0, 1]) {
    const one = await client.chat.completions.create({ ...body, seed: 11 + i });
    const c = r.choices.find((x) => x.index === i);
    check(c.message.content === one.choices[0].message.content,
      `choice ${i} ${j(c.message.content)} is not the seed ${11 + i} reply ${j(one.choices[0].message.content)}`);
  }
  const again = await client.chat.completions.create({ ...body, n: 2, seed: 11 });
  check(j(again.choices.map((c) => c.message.content)) === j(r.choices.map((c) => c.message.content)), 'the same seed gave other choices');
});

call(12, 'chat.logprobs', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: HELLO, max_completion_tokens: 6, seed: 12, logprobs: true, top_logprobs: 2,
  });
  checkChat(r, { maxTokens: 6, logprobs: true });
  const lp = r.choices[0].logprobs;
  check(lp && Array.isArray(lp.content), `logprobs ${j(lp)}, want {content: [...]}`);
  check(lp.content.length === r.usage.completion_tokens, `${lp.content.length} logprobs for ${r.usage.completion_tokens} tokens`);
  lp.content.forEach((e, i) => {
    checkChatTokenLogprob(e, `content[${i}]`);
    check(Array.isArray(e.top_logprobs) && e.top_logprobs.length === 2, `content[${i}].top_logprobs ${j(e.top_logprobs)}, want 2 entries`);
    e.top_logprobs.forEach((t, k) => checkChatTokenLogprob(t, `content[${i}].top_logprobs[${k}]`));
    check(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob, `content[${i}].top_logprobs not in descending order`);
    check(e.top_logprobs[0].logprob >= e.logprob - 1e-4, `content[${i}]: top_logprobs[0] (${e.top_logprobs[0].logprob}) is less likely than the sampled token (${e.logprob})`);
  });
});

call(13, 'chat.stop', async () => {
  const body = { model: MODEL, messages: HELLO, max_completion_tokens: 24, seed: 13, temperature: 1 };
  const full = await client.chat.completions.create(body);
  checkChat(full, { maxTokens: 24 });
  const text = full.choices[0].message.content;
  const s = stopFor(text);
  const stops = s ? [s, '\n\n'] : ['\n'];
  const r = await client.chat.completions.create({ ...body, stop: stops });
  checkChat(r, { maxTokens: 24 });
  const [want, stopped] = cut(text, stops);
  const c = r.choices[0];
  check(c.message.content === want, `stop ${j(stops)}: content ${j(c.message.content)}, want ${j(want)} (the unstopped content is ${j(text)})`);
  check(s === null || stopped, `the stop string ${j(s)} is not in ${j(text)}`);
  check(s === null || want.length >= 2, `the content before the stop is ${j(want)}`);
  if (stopped) check(c.finish_reason === 'stop', `finish_reason ${j(c.finish_reason)} after a stop string, want "stop"`);
  return s === null ? `the unstopped content ${j(text)} has no stop string to pick; only "\\n" was tried` : undefined;
});

// chatStream iterates a chat stream and checks the chunks.
async function chatStream(body, includeUsage) {
  const stream = await client.chat.completions.create({
    ...body, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
  });
  const out = { text: '', finish: null, usage: null, chunks: 0, role: null };
  let id = null;
  for await (const ch of stream) {
    check(out.usage === null, `a chunk after the usage chunk: ${j(ch)}`);
    check(ch.object === 'chat.completion.chunk', `chunk object ${j(ch.object)}, want "chat.completion.chunk"`);
    check(typeof ch.id === 'string' && (id === null || ch.id === id), `chunk id ${j(ch.id)} (first ${j(id)})`);
    id = ch.id;
    check(isInt(ch.created), `chunk created ${j(ch.created)}`);
    check(ch.model === MODEL, `chunk model ${j(ch.model)}`);
    check(Array.isArray(ch.choices), `chunk choices ${j(ch.choices)}`);
    if (ch.usage) {
      check(includeUsage, `a usage chunk without include_usage: ${j(ch)}`);
      check(ch.choices.length === 0, `the usage chunk has choices ${j(ch.choices)}`);
      out.usage = ch.usage;
      continue;
    }
    for (const c of ch.choices) {
      check(c.index === 0, `chunk choice index ${c.index}`);
      check(c.delta && typeof c.delta === 'object', `chunk delta ${j(c.delta)}`);
      if (out.chunks === 0) {
        check(c.delta.role === 'assistant', `the first delta ${j(c.delta)} has no role "assistant"`);
        out.role = c.delta.role;
      }
      out.chunks++;
      check(out.finish === null, `a delta after finish_reason ${j(out.finish)}: ${j(c)}`);
      if (c.delta.content != null) {
        check(typeof c.delta.content === 'string', `delta.content ${j(c.delta.content)}`);
        out.text += c.delta.content;
      }
      if (c.finish_reason != null) out.finish = c.finish_reason;
    }
  }
  check(out.chunks >= 2, `${out.chunks} choice chunks`);
  check(out.finish !== null, 'no chunk carried a finish_reason');
  return out;
}

call(14, 'chat.stream', async () => {
  const body = { model: MODEL, messages: HELLO, max_completion_tokens: 10, seed: 14, temperature: 1 };
  const ref = await client.chat.completions.create(body);
  checkChat(ref, { maxTokens: 10 });
  const s = await chatStream(body, false);
  check(s.text.length > 0, 'the streamed content is empty');
  check(s.text === ref.choices[0].message.content, `streamed content ${j(s.text)}, want the non-streamed ${j(ref.choices[0].message.content)}`);
  check(s.finish === ref.choices[0].finish_reason, `finish_reason ${j(s.finish)}, want ${j(ref.choices[0].finish_reason)}`);
  await checkRawStream('/chat/completions', { ...body, stream: true }, 'chat');
});

call(15, 'chat.stream_usage', async () => {
  const body = { model: MODEL, messages: HELLO, max_completion_tokens: 10, seed: 15, temperature: 1 };
  const ref = await client.chat.completions.create(body);
  checkChat(ref, { maxTokens: 10 });
  const s = await chatStream(body, true);
  check(s.text === ref.choices[0].message.content, `streamed content ${j(s.text)}, want ${j(ref.choices[0].message.content)}`);
  check(s.usage !== null, 'no usage chunk with include_usage');
  checkUsage(s.usage, 'usage chunk');
  check(s.usage.prompt_tokens === ref.usage.prompt_tokens && s.usage.completion_tokens === ref.usage.completion_tokens,
    `usage ${j(s.usage)}, want ${j(ref.usage)}`);
});

call(16, 'chat.max_tokens_legacy', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: HELLO, max_tokens: 5, seed: 16 });
  checkChat(r, { maxTokens: 5 });
});

call(17, 'error.unknown_model', async () => {
  await expectAPIError(client.chat.completions.create({ model: 'no-such-model', messages: HELLO, max_completion_tokens: 4 }),
    OpenAI.NotFoundError, 404, 'chat');
  await expectAPIError(client.completions.create({ model: 'no-such-model', prompt: PROMPT, max_tokens: 4 }),
    OpenAI.NotFoundError, 404, 'completions');
});

call(18, 'error.wrong_key', async () => {
  const bad = new OpenAI({ baseURL: `${opts.baseURL}/v1`, apiKey: `${opts.apiKey}-wrong`, maxRetries: 0, timeout: 30_000 });
  await expectAPIError(bad.models.list(), OpenAI.AuthenticationError, 401, 'models.list');
  await expectAPIError(bad.chat.completions.create({ model: MODEL, messages: HELLO, max_completion_tokens: 4 }),
    OpenAI.AuthenticationError, 401, 'chat');
});

call(19, 'chat.with_response', async () => {
  const { data, response, request_id: requestID } = await client.chat.completions
    .create({ model: MODEL, messages: HELLO, max_completion_tokens: 4, seed: 19 })
    .withResponse();
  checkChat(data, { maxTokens: 4 });
  check(response.status === 200, `status ${response.status}`);
  const ct = response.headers.get('content-type') || '';
  check(ct.startsWith('application/json'), `Content-Type ${j(ct)}`);
  check(requestID === null || (typeof requestID === 'string' && requestID.length > 0), `request_id ${j(requestID)}`);
  check(data._request_id === requestID, `_request_id ${j(data._request_id)} differs from request_id ${j(requestID)}`);
  const raw = await client.models.list().asResponse();
  check(raw.status === 200 && (raw.headers.get('content-type') || '').startsWith('application/json'),
    `models asResponse: status ${raw.status}, Content-Type ${raw.headers.get('content-type')}`);
  return requestID ? undefined : 'no x-request-id header (the SDK exposes request_id null)';
});

async function postJSON(path, body) {
  const resp = await fetch(`${opts.baseURL}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${opts.apiKey}` },
    body: JSON.stringify(body),
  });
  return { status: resp.status, text: await resp.text() };
}

call(20, 'lora.flow', async () => {
  if (!opts.adapterPath) return { skip: 'no adapter given (--adapter-path): the harness says the server offers no runtime LoRA loading' };
  const name = opts.adapterName;
  const load = await postJSON('/v1/load_lora_adapter', { lora_name: name, lora_path: opts.adapterPath });
  check(load.status === 200, `load_lora_adapter: status ${load.status}: ${load.text.slice(0, 300)}`);
  try {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m);
    const a = ids.find((m) => m.id === name);
    check(a, `models ${j(ids.map((m) => m.id))} lack the adapter ${j(name)}`);
    check(a.parent === MODEL, `adapter parent ${j(a.parent)}, want ${j(MODEL)}`);
    check(a.object === 'model', `adapter object ${j(a.object)}`);
    check(ids.some((m) => m.id === MODEL), 'the base model left the list');
    const got = await client.models.retrieve(name);
    check(got.id === name, `retrieve(adapter): id ${j(got.id)}`);

    const body = { messages: HELLO, max_completion_tokens: 6, temperature: 0, logprobs: true };
    const withA = await client.chat.completions.create({ ...body, model: name });
    checkChat(withA, { maxTokens: 6, logprobs: true, model: name });
    const base = await client.chat.completions.create({ ...body, model: MODEL });
    checkChat(base, { maxTokens: 6, logprobs: true });
    const la = withA.choices[0].logprobs?.content ?? [];
    const lb = base.choices[0].logprobs?.content ?? [];
    check(la.length > 0 && lb.length > 0, 'no logprobs to compare the adapter with the base model');
    check(la[0].token !== lb[0].token || Math.abs(la[0].logprob - lb[0].logprob) > 1e-6,
      `the adapter changes nothing: first token ${j(la[0])} with it, ${j(lb[0])} without`);
    const comp = await client.completions.create({ model: name, prompt: PROMPT, max_tokens: 4, temperature: 0 });
    checkCompletion(comp, { maxTokens: 4, model: name, what: 'completion with the adapter' });
  } finally {
    const un = await postJSON('/v1/unload_lora_adapter', { lora_name: name });
    check(un.status === 200, `unload_lora_adapter: status ${un.status}: ${un.text.slice(0, 300)}`);
  }
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  check(!ids.includes(name), `the unloaded adapter is still listed: ${j(ids)}`);
  await expectAPIError(client.chat.completions.create({ model: name, messages: HELLO, max_completion_tokens: 4 }),
    OpenAI.NotFoundError, 404, 'chat with the unloaded adapter');
});

// ---- run

// Tool calls. The served model is random; tool_choice "required" and a
// named function force a call whose arguments fit the schema (constrained
// decoding), so the calls can check them.
const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 10 }, unit: { enum: ['c', 'f'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const SEARCH = {
  type: 'function',
  function: { name: 'search', parameters: { type: 'object', properties: { query: { type: 'string', maxLength: 8 } }, required: ['query'] } },
};
const TOOL_MSGS = [{ role: 'user', content: 'What is the weather in Paris?' }];

// checkWeatherArgs checks get_weather's arguments against its schema.
function checkWeatherArgs(args, what) {
  let a;
  try {
    a = JSON.parse(args);
  } catch (e) {
    check(false, `${what}: arguments ${j(args)} are not JSON: ${e.message}`);
  }
  check(a && typeof a === 'object' && !Array.isArray(a), `${what}: arguments ${j(args)} are not an object`);
  check(typeof a.city === 'string' && [...a.city].length <= 10, `${what}: city ${j(a.city)}`);
  check(a.unit === 'c' || a.unit === 'f', `${what}: unit ${j(a.unit)}`);
  check(a.days === undefined || (isInt(a.days) && a.days >= 1 && a.days <= 7), `${what}: days ${j(a.days)}`);
  check(Object.keys(a).every((k) => ['city', 'unit', 'days'].includes(k)), `${what}: keys ${j(Object.keys(a))}`);
}

// checkToolCall checks a message's one call of get_weather.
function checkToolCall(m, what) {
  check(Array.isArray(m.tool_calls) && m.tool_calls.length === 1, `${what}: tool_calls ${j(m.tool_calls)}, want one call`);
  const tc = m.tool_calls[0];
  check(typeof tc.id === 'string' && tc.id.length > 0, `${what}: call id ${j(tc.id)}`);
  check(tc.type === 'function', `${what}: call type ${j(tc.type)}`);
  check(tc.function?.name === 'get_weather', `${what}: called ${j(tc.function?.name)}, want get_weather`);
  check(typeof tc.function.arguments === 'string', `${what}: arguments ${j(tc.function.arguments)} are not a string`);
  checkWeatherArgs(tc.function.arguments, what);
  return tc;
}

call(21, 'tools.required', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: TOOL_MSGS, tools: [WEATHER], tool_choice: 'required', parallel_tool_calls: false,
    max_completion_tokens: 80, seed: 21, temperature: 1,
  });
  check(r.choices.length === 1, `${r.choices.length} choices`);
  const c = r.choices[0];
  check(c.finish_reason === 'tool_calls', `finish_reason ${j(c.finish_reason)}, want "tool_calls"`);
  check(c.message.content === null || c.message.content === '', `content ${j(c.message.content)} beside a forced call`);
  checkToolCall(c.message, 'required');
  checkUsage(r.usage, 'required');
});

call(22, 'tools.named_stream', async () => {
  const body = {
    model: MODEL, messages: TOOL_MSGS, tools: [SEARCH, WEATHER], max_completion_tokens: 80, seed: 22, temperature: 1,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  };
  const ref = await client.chat.completions.create(body);
  const want = checkToolCall(ref.choices[0].message, 'named');
  check(ref.choices[0].finish_reason === 'stop', `named: finish_reason ${j(ref.choices[0].finish_reason)}, want "stop" (OpenAI's for a named function)`);
  // The SDK's own stream helper assembles the deltas into a message.
  const runner = client.chat.completions.stream(body);
  const final = await runner.finalChatCompletion();
  const got = checkToolCall(final.choices[0].message, 'streamed (SDK helper)');
  check(got.function.arguments === want.function.arguments, `streamed arguments ${j(got.function.arguments)}, want ${j(want.function.arguments)}`);
  // The raw deltas: the first of a call has its id, type and name with
  // empty arguments, the next ones only argument pieces, all index 0.
  const stream = await client.chat.completions.create({ ...body, stream: true });
  let first = null;
  let args = '';
  let finish = null;
  for await (const ch of stream) {
    for (const c of ch.choices) {
      for (const d of c.delta.tool_calls ?? []) {
        check(d.index === 0, `delta index ${j(d.index)}`);
        if (first === null) {
          first = d;
          check(typeof d.id === 'string' && d.type === 'function' && d.function?.name === 'get_weather' && d.function.arguments === '',
            `the call's first delta ${j(d)}: want id, type, name and empty arguments`);
        } else {
          check(d.id === undefined && d.function?.name === undefined, `a later delta ${j(d)} repeats the id or name`);
          args += d.function?.arguments ?? '';
        }
      }
      if (c.finish_reason != null) finish = c.finish_reason;
    }
  }
  check(first !== null, 'no tool call delta');
  check(args === want.function.arguments, `streamed arguments ${j(args)}, want ${j(want.function.arguments)}`);
  check(finish === 'stop', `streamed finish_reason ${j(finish)}`);
});

call(23, 'tools.multi_turn', async () => {
  const r = await client.chat.completions.create({
    model: MODEL, messages: TOOL_MSGS, tools: [WEATHER], tool_choice: 'required', parallel_tool_calls: false,
    max_completion_tokens: 80, seed: 23,
  });
  const tc = checkToolCall(r.choices[0].message, 'call');
  const messages = [...TOOL_MSGS, r.choices[0].message, { role: 'tool', tool_call_id: tc.id, content: '{"sky": "sunny", "temp": 21}' }];
  const r2 = await client.chat.completions.create({ model: MODEL, messages, tools: [WEATHER], max_completion_tokens: 12, seed: 23 });
  const m = r2.choices[0].message;
  check(m.role === 'assistant', `role ${j(m.role)}`);
  check(typeof m.content === 'string' || (m.content === null && m.tool_calls?.length > 0), `content ${j(m.content)}`);
  check(['stop', 'length', 'tool_calls'].includes(r2.choices[0].finish_reason), `finish_reason ${j(r2.choices[0].finish_reason)}`);
  check(r2.usage.prompt_tokens > r.usage.prompt_tokens, `the second prompt (${r2.usage.prompt_tokens} tokens) is not longer than the first (${r.usage.prompt_tokens})`);
});

call(24, 'chat.json_schema', async () => {
  const schema = {
    type: 'object',
    properties: { answer: { type: 'integer', minimum: 0, maximum: 99 }, sure: { type: 'boolean' } },
    required: ['answer', 'sure'],
    additionalProperties: false,
  };
  const r = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: '2 + 2?' }], max_completion_tokens: 40, seed: 24, temperature: 1,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } },
  });
  checkChat(r, { maxTokens: 40 });
  const a = JSON.parse(r.choices[0].message.content);
  check(isInt(a.answer) && a.answer >= 0 && a.answer <= 99 && typeof a.sure === 'boolean' && Object.keys(a).length === 2,
    `content ${j(r.choices[0].message.content)} does not fit the schema`);
});

call(25, 'error.tool_choice', async () => {
  await expectAPIError(client.chat.completions.create({
    model: MODEL, messages: TOOL_MSGS, tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'nope' } },
  }), OpenAI.BadRequestError, 400, 'unknown tool_choice function');
});

function describe(e) {
  if (e instanceof CheckError) return e.message;
  if (e instanceof OpenAI.APIError) return `${e.constructor.name} ${e.status ?? ''}: ${e.message}`;
  return `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? String(e)}`;
}

let failed = 0;
for (const { n, name, fn } of calls) {
  if (opts.only && !opts.only.has(String(n)) && !opts.only.has(name)) continue;
  const line = { n, name };
  schemaErrors = [];
  try {
    const r = await fn();
    if (r && typeof r === 'object' && r.skip) {
      line.ok = 'skip';
      line.error = r.skip;
    } else {
      line.ok = true;
      if (typeof r === 'string') line.note = r;
    }
  } catch (e) {
    failed++;
    line.ok = false;
    line.error = describe(e);
  }
  console.log(JSON.stringify(line));
  if (schemaErrors.length) {
    failed++;
    const errs = [...new Set(schemaErrors)];
    console.log(JSON.stringify({ n, name: `${name}.schema`, ok: false, error: errs.join(' | ') }));
  }
}
process.exit(failed ? 1 : 0);
