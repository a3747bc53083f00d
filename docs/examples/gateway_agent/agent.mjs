// An agent program trained through agentrl's gateway (docs/gateway.md).
//
//   npm ci && node agent.mjs http://127.0.0.1:8400 [workers] [--idle SECONDS]
//
// It claims Countdown tasks from the gateway, plays each with the official
// openai client and a calculator tool it runs itself, and has the gateway
// score its final equation (POST /v1/episodes/{id}/answer). Every model
// request names its episode in the X-Agentrl-Episode header, so the
// gateway records the tokens it sampled. An episode that throws is
// reported as failed: the gateway drops it rather than scoring it 0.
//
// Environment variables, for tests: AGENTRL_AGENT_CRASH=group:sample makes
// that episode crash after its first request; AGENTRL_AGENT_TRIM=group:sample
// makes that episode re-send only its last message on its second request.
import OpenAI from "openai";

const base = (process.argv[2] || "http://127.0.0.1:8400").replace(/\/$/, "");
const workers = Number(process.argv[3] || 2);
const idleIdx = process.argv.indexOf("--idle");
const idle = idleIdx > 0 ? Number(process.argv[idleIdx + 1]) : 30;
const maxTurns = 4;

// calculator evaluates + - * / and parentheses over numbers, without eval.
export function calculator(expr) {
  const toks = String(expr).match(/\d+(?:\.\d+)?|[-+*/()]/g) || [];
  if (toks.join("") !== String(expr).replace(/\s+/g, "")) throw new Error(`cannot read ${JSON.stringify(expr)}`);
  let i = 0;
  const peek = () => toks[i];
  const atom = () => {
    const t = toks[i++];
    if (t === "(") {
      const v = sum();
      if (toks[i++] !== ")") throw new Error("missing )");
      return v;
    }
    if (t === "-") return -atom();
    const v = Number(t);
    if (t === undefined || Number.isNaN(v)) throw new Error("a number is missing");
    return v;
  };
  const product = () => {
    let v = atom();
    while (peek() === "*" || peek() === "/") v = toks[i++] === "*" ? v * atom() : v / atom();
    return v;
  };
  const sum = () => {
    let v = product();
    while (peek() === "+" || peek() === "-") v = toks[i++] === "+" ? v + product() : v - product();
    return v;
  };
  const v = sum();
  if (i !== toks.length) throw new Error(`unexpected ${toks[i]}`);
  return v;
}

const tools = [{
  type: "function",
  function: {
    name: "calculator",
    description: "Evaluates + - * / ( ).",
    parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
  },
}];

async function post(path, body) {
  const r = await fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body ?? {}) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

const match = (spec, t) => spec && spec === `${t.group}:${t.sample}` && t.step === 1;

async function play(t) {
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: "none", defaultHeaders: { "X-Agentrl-Episode": t.episode }, maxRetries: 0 });
  // A short prompt: the embedded model has a context of 768 tokens.
  const messages = [{ role: "user", content: t.task.prompt }];
  let answer = "";
  for (let turn = 0; turn < Math.min(maxTurns, t.max_requests); turn++) {
    let send = messages;
    if (match(process.env.AGENTRL_AGENT_TRIM, t) && turn === 1) send = [messages[messages.length - 1]];
    let resp;
    try {
      resp = await client.chat.completions.create({ model: t.model, messages: send, tools, max_tokens: 96 });
    } catch (e) {
      // Out of context after the first turn: answer with what we have.
      if (turn > 0 && e.status === 400 && /context length/.test(e.message)) break;
      throw e;
    }
    const msg = resp.choices[0].message;
    if (match(process.env.AGENTRL_AGENT_CRASH, t)) throw new Error("crashed on purpose");
    messages.push({ role: "assistant", content: msg.content ?? "", ...(msg.tool_calls?.length ? { tool_calls: msg.tool_calls } : {}) });
    if (!msg.tool_calls?.length) {
      answer = msg.content ?? "";
      if (turn >= 1) break;
      messages.push({ role: "user", content: "Check it with the calculator." });
      continue;
    }
    for (const call of msg.tool_calls) {
      let result;
      try {
        result = String(calculator(JSON.parse(call.function.arguments).expression));
      } catch (e) {
        result = "error: " + e.message;
      }
      messages.push({ role: "tool", tool_call_id: call.id, content: result });
    }
  }
  // The equation: inside <answer>…</answer> when the model writes one.
  const m = /<answer>([\s\S]*?)<\/answer>/.exec(answer);
  if (m) answer = m[1];
  const r = await post(`/v1/episodes/${t.episode}/answer`, { answer: answer.trim() });
  if (r.status !== 200) throw new Error(`answer: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.reward;
}

async function worker() {
  for (;;) {
    const r = await fetch(`${base}/v1/episodes/claim?wait=${idle}`, { method: "POST" });
    if (r.status === 204 || r.status === 410) return;
    if (r.status !== 200) throw new Error(`claim: ${r.status} ${await r.text()}`);
    const t = await r.json();
    try {
      const reward = await play(t);
      console.log(JSON.stringify({ episode: t.episode, reward }));
    } catch (e) {
      await post(`/v1/episodes/${t.episode}/fail`, { error: String(e.message || e) });
      console.log(JSON.stringify({ episode: t.episode, failed: String(e.message || e) }));
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await Promise.all(Array.from({ length: workers }, worker));
}
