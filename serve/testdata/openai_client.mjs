// The official openai npm client against `train serve` (serve/npm_test.go
// runs it: node openai_client.mjs URL; OPENAI_DIR holds node_modules/openai,
// ARGRL_KEY the server's API key). Every check throws on failure; the last
// line printed is "ok N checks".
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [url] = process.argv.slice(2);
const { default: OpenAI } = await import(pathToFileURL(join(process.env.OPENAI_DIR, "node_modules", "openai", "index.mjs")).href);
const client = new OpenAI({ baseURL: url + "/v1", apiKey: process.env.ARGRL_KEY, maxRetries: 0, timeout: 240000 });
const toolReq = JSON.parse(readFileSync(new URL("./chat_tools.json", import.meta.url), "utf8"));
const toolNames = new Set(toolReq.tools.map((t) => t.function.name));

let checks = 0;
function check(cond, what, got) {
  if (!cond) {
    throw new Error(`${what}: got ${JSON.stringify(got)?.slice(0, 2000)}`);
  }
  checks++;
}

// A chat completion is well-formed: one choice per n, in order, an assistant
// message, a known finish reason, tool calls with a known name and JSON
// object arguments, usage that adds up.
function wellFormed(r, n, what) {
  check(typeof r.id === "string" && r.id.startsWith("chatcmpl-") && r.object === "chat.completion", `${what}: id/object`, r);
  check(Array.isArray(r.choices) && r.choices.length === n, `${what}: ${n} choices`, r.choices);
  r.choices.forEach((c, i) => {
    check(c.index === i && c.message.role === "assistant", `${what}: choice ${i}`, c);
    check(["stop", "length", "tool_calls"].includes(c.finish_reason), `${what}: finish_reason`, c);
    for (const tc of c.message.tool_calls ?? []) {
      check(tc.type === "function" && typeof tc.id === "string" && toolNames.has(tc.function.name), `${what}: tool call`, tc);
      const args = JSON.parse(tc.function.arguments);
      check(args !== null && typeof args === "object" && !Array.isArray(args), `${what}: arguments object`, tc);
    }
    if (c.finish_reason === "tool_calls") check((c.message.tool_calls ?? []).length > 0, `${what}: tool_calls finish without calls`, c);
  });
  check(r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens && r.usage.prompt_tokens > 0, `${what}: usage`, r.usage);
}

// 1. The models: the base and the adapter.
const models = [];
for await (const m of client.models.list()) models.push(m.id);
check(models.includes("base") && models.includes("tuned") && models.includes("other"), "models.list", models);

// 2. Chat with tools, greedy: the demo model calls one of the tools.
const greedy = { model: "base", ...toolReq, max_tokens: 48, temperature: 0 };
const whole = await client.chat.completions.create(greedy);
wellFormed(whole, 1, "chat with tools");
const calls = whole.choices[0].message.tool_calls ?? [];
check(calls.length > 0 && whole.choices[0].finish_reason === "tool_calls", "the greedy answer calls a tool", whole.choices[0]);

// 3. The same request streamed: the deltas assemble into the same calls.
// It streams: the first delta of a call carries its id, type and name,
// and its arguments come in more than one piece before the finish chunk.
const stream = await client.chat.completions.create({ ...greedy, stream: true, stream_options: { include_usage: true } });
const acc = [];
let finish = null, usage = null, role = null, chunks = 0, argChunks = 0;
for await (const chunk of stream) {
  chunks++;
  check(chunk.object === "chat.completion.chunk", "chunk object", chunk);
  if (chunk.usage) usage = chunk.usage;
  for (const ch of chunk.choices) {
    role = ch.delta.role ?? role;
    for (const d of ch.delta.tool_calls ?? []) {
      if (acc[d.index] === undefined) {
        check(typeof d.id === "string" && d.type === "function" && toolNames.has(d.function?.name), "a call's first delta: id, type, name", d);
      }
      acc[d.index] ??= { id: "", name: "", arguments: "" };
      if (d.id) acc[d.index].id = d.id;
      if (d.function?.name) acc[d.index].name += d.function.name;
      if (d.function?.arguments) {
        acc[d.index].arguments += d.function.arguments;
        if (!finish) argChunks++;
      }
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
}
check(role === "assistant" && finish === "tool_calls" && chunks >= 3, "stream role/finish", { role, finish, chunks });
check(argChunks > 1, "the arguments stream in pieces", argChunks);
check(JSON.stringify(acc.map((a) => [a.name, a.arguments])) === JSON.stringify(calls.map((c) => [c.function.name, c.function.arguments])),
  "streamed calls equal the whole answer's", { acc, calls });
check(usage && usage.completion_tokens === whole.usage.completion_tokens, "stream usage", usage);

// 4. Streamed plain text (tool_choice none) assembles into the whole text.
const plain = { model: "base", messages: [{ role: "user", content: "Hola" }], max_tokens: 12, temperature: 0 };
const plainWhole = await client.chat.completions.create(plain);
let text = "", textChunks = 0, ended = false;
for await (const chunk of await client.chat.completions.create({ ...plain, stream: true })) {
  for (const ch of chunk.choices) {
    if (ch.delta.content && !ended) textChunks++;
    text += ch.delta.content ?? "";
    ended = ended || ch.finish_reason !== null;
  }
}
check(text === (plainWhole.choices[0].message.content ?? ""), "streamed text", { text, whole: plainWhole.choices[0].message.content });
check(textChunks > 1, "the text streams in pieces", textChunks);

// 4b. The streaming helper (chat.completions.stream) assembles the same
// message as the whole answer.
const runner = client.chat.completions.stream({ ...greedy });
let helperDeltas = 0;
runner.on("tool_calls.function.arguments.delta", () => helperDeltas++);
const helperFinal = await runner.finalChatCompletion();
check(JSON.stringify(helperFinal.choices[0].message.tool_calls.map((c) => [c.function.name, c.function.arguments])) ===
  JSON.stringify(calls.map((c) => [c.function.name, c.function.arguments])), "the stream helper's calls", helperFinal.choices[0].message);
check(helperDeltas > 1, "the stream helper saw argument deltas", helperDeltas);

// 5. n > 1 with a seed: n choices, and the same seed gives the same answers.
const sampled = { model: "base", ...toolReq, max_tokens: 32, temperature: 0.9, n: 4, seed: 11 };
const s1 = await client.chat.completions.create(sampled);
const s2 = await client.chat.completions.create(sampled);
wellFormed(s1, 4, "n=4");
check(JSON.stringify(s1.choices) === JSON.stringify(s2.choices), "seeded n=4 is reproducible", [s1.choices, s2.choices]);

// 6. Log-probs: one entry per completion token, top_logprobs sorted, the
// sampled token's log-prob ≤ 0; token ids through the extension field.
const lp = await client.chat.completions.create({ ...greedy, logprobs: true, top_logprobs: 3, return_token_ids: true });
const content = lp.choices[0].logprobs.content;
check(content.length === lp.usage.completion_tokens && lp.choices[0].token_ids.length === content.length, "one log-prob per token", lp.choices[0]);
for (const e of content) {
  check(e.logprob <= 0 && e.top_logprobs.length === 3, "log-prob entry", e);
  check(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob && e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob, "top_logprobs sorted", e);
  check(Math.abs(e.top_logprobs[0].logprob - e.logprob) < 1e-4, "greedy token is the top one", e);
}
check(Array.isArray(lp.prompt_token_ids) && lp.prompt_token_ids.length === lp.usage.prompt_tokens, "prompt_token_ids", lp.prompt_token_ids?.length);

// 7. Multi-LoRA: the "model" field picks the adapter.
const tuned = await client.chat.completions.create({ ...greedy, model: "tuned", logprobs: true });
wellFormed(tuned, 1, "tuned");
check(tuned.model === "tuned", "the answer names the adapter", tuned.model);
const baseLps = lp.choices[0].logprobs.content.map((e) => e.logprob);
const tunedLps = tuned.choices[0].logprobs.content.map((e) => e.logprob);
check(JSON.stringify(baseLps) !== JSON.stringify(tunedLps), "the adapter changes the log-probs", tunedLps);

// 8. Completions with token ids in and out.
const comp = await client.completions.create({ model: "tuned", prompt: [5, 77, 301], max_tokens: 6, temperature: 0, logprobs: 2, return_token_ids: true });
check(comp.object === "text_completion" && comp.choices.length === 1 && comp.choices[0].token_ids.length === comp.usage.completion_tokens, "completions", comp);
check(comp.choices[0].logprobs.tokens.length === comp.usage.completion_tokens, "completion log-probs", comp.choices[0].logprobs);

// 9. Errors come back as the client's typed errors.
try {
  await client.chat.completions.create({ ...greedy, model: "gpt-4" });
  check(false, "unknown model accepted", null);
} catch (e) {
  check(e instanceof OpenAI.NotFoundError && e.status === 404 && e.code === "model_not_found", "unknown model error", { status: e.status, code: e.code, msg: e.message });
}
try {
  await new OpenAI({ baseURL: url + "/v1", apiKey: "wrong", maxRetries: 0 }).models.list();
  check(false, "wrong key accepted", null);
} catch (e) {
  check(e instanceof OpenAI.AuthenticationError && e.status === 401, "wrong key error", { status: e.status });
}

// 10. A burst of 64 concurrent requests, mixed models (two adapters and
// the base in one batch), tools and sampling: every answer well-formed,
// and each greedy one equal to the same request sent alone.
const modelOf = (i) => ["tuned", "other", "base"][i % 3];
const burstReq = (i) => ({
  model: modelOf(i), ...toolReq, max_tokens: 24, logprobs: true,
  temperature: i % 2 ? 0.7 : 0, seed: i, ...(i % 4 === 1 ? { tool_choice: "none" } : {}),
});
const alone = {};
for (const name of ["tuned", "other", "base"]) {
  alone[name] = await client.chat.completions.create({ ...burstReq(0), model: name });
}
check(JSON.stringify(alone.tuned.choices[0].logprobs) !== JSON.stringify(alone.other.choices[0].logprobs), "the two adapters differ", null);
const burst = await Promise.all(Array.from({ length: 64 }, (_, i) => client.chat.completions.create(burstReq(i))));
burst.forEach((r, i) => {
  wellFormed(r, 1, `burst ${i}`);
  check(r.model === modelOf(i), `burst ${i} model`, r.model);
  if (i % 2 === 0) {
    const a = alone[modelOf(i)].choices[0];
    check(JSON.stringify([r.choices[0].message, r.choices[0].logprobs]) === JSON.stringify([a.message, a.logprobs]),
      `burst ${i}: the answer alone`, [r.choices[0], a]);
  }
});
console.log(`ok ${checks} checks`);
