// bench.mjs: tokens/s of argrl's Go tokenizer next to the JS tokenizer
// (@lenml/tokenizers, the transformers.js fork shipped with the model
// packages) on the same text, one core each, and their ratio. Hugging Face's
// Rust tokenizers (Node binding) and github.com/sugarme/tokenizer are timed
// too, for the record.
//
//   node bench/tokenizer/bench.mjs [--model qwen3|llama3] [--text FILE] [--seconds 3]
//
// The text defaults to the papers in ../shared/papers (English prose) plus the
// multilingual corpus of model/tokenizer/testdata/expected.json; every non-empty line is
// encoded without special tokens. Needs node, npm (first run) and go.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const VERSION = "3.7.2";
const HF_VERSION = "0.23.2";
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");

const args = { model: "qwen3", text: "", seconds: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, "");
  if (!(k in args)) throw new Error(`unknown flag ${process.argv[i]}`);
  args[k] = k === "seconds" ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
const pkg = `@lenml/tokenizer-${args.model}`;

const cache =
  process.env.ARGRL_CACHE ||
  (process.env.XDG_CACHE_HOME ? path.join(process.env.XDG_CACHE_HOME, "argrl") : path.join(os.homedir(), ".cache", "argrl"));
const nodeDir = path.join(cache, "node");
fs.mkdirSync(nodeDir, { recursive: true });
if (!fs.existsSync(path.join(nodeDir, "package.json")))
  fs.writeFileSync(path.join(nodeDir, "package.json"), '{"name":"argrl-oracles","private":true}\n');
const want = [`${pkg}@${VERSION}`, `@lenml/tokenizers@${VERSION}`, `tokenizers@${HF_VERSION}`].filter(
  (w) => !fs.existsSync(path.join(nodeDir, "node_modules", w.slice(0, w.lastIndexOf("@")), "package.json")),
);
if (want.length > 0)
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefix", nodeDir, ...want], { stdio: ["ignore", 2, 2] });
const require = createRequire(path.join(nodeDir, "noop.js"));
const tokFile = path.join(nodeDir, "node_modules", pkg, "models", "tokenizer.json");

// The text, written to a temp file so Go reads exactly the same bytes.
let text = "";
if (args.text) {
  text = fs.readFileSync(args.text, "utf8");
} else {
  const papers = path.join(repo, "..", "shared", "papers");
  if (fs.existsSync(papers))
    for (const f of fs.readdirSync(papers).sort()) text += fs.readFileSync(path.join(papers, f), "utf8") + "\n";
  const exp = JSON.parse(fs.readFileSync(path.join(repo, "model", "tokenizer", "testdata", "expected.json"), "utf8"));
  for (const c of exp.models.qwen3.cases) if (!c.add_special) text += c.text + "\n";
}
const textFile = path.join(os.tmpdir(), `argrl-tokbench-${process.pid}.txt`);
fs.writeFileSync(textFile, text);
const lines = text.split("\n").filter((l) => l !== "");

async function timeIt(impl, pass) {
  let t0 = performance.now();
  const n = await pass();
  const cold = (performance.now() - t0) / 1000;
  let passes = 1;
  while ((performance.now() - t0) / 1000 < args.seconds) {
    await pass();
    passes++;
  }
  const sec = (performance.now() - t0) / 1000;
  return { impl, tokens_per_pass: n, passes, seconds: sec, tokens_per_s: (n * passes) / sec, cold_tokens_per_s: n / cold };
}

const results = [];
const js = require(pkg).fromPreTrained();
results.push(
  await timeIt("transformers.js (@lenml/tokenizers)", () => {
    let n = 0;
    for (const l of lines) n += js.encode(l, { add_special_tokens: false }).length;
    return n;
  }),
);
const { Tokenizer } = require("tokenizers");
const hf = Tokenizer.fromFile(tokFile);
results.push(
  await timeIt("HF tokenizers (Rust, Node binding, async per call)", async () => {
    let n = 0;
    for (const l of lines) n += (await hf.encode(l, null, { addSpecialTokens: false })).getIds().length;
    return n;
  }),
);
const goOut = execFileSync(
  "go",
  ["run", "./bench/tokenizer", "-tokenizer", tokFile, "-text", textFile, "-seconds", String(args.seconds), "-sugarme"],
  { cwd: repo, encoding: "utf8", stdio: ["ignore", "pipe", 2] },
);
for (const l of goOut.split("\n")) if (l.trim()) results.push(JSON.parse(l));
fs.rmSync(textFile);

const ours = results.find((r) => r.impl === "argrl");
const ref = results[0];
console.log(`tokenizer bench: ${args.model}, ${lines.length} lines, ${Buffer.byteLength(text)} bytes, ${args.seconds}s per implementation, one core`);
for (const r of results) {
  if (r.error) {
    console.log(`  ${r.impl.padEnd(52)} failed: ${r.error.slice(0, 160)}`);
    continue;
  }
  const same = r.tokens_per_pass === ref.tokens_per_pass ? "" : `  (${r.tokens_per_pass} tokens/pass vs ${ref.tokens_per_pass}: ids differ)`;
  console.log(
    `  ${r.impl.padEnd(52)} ${Math.round(r.tokens_per_s).toString().padStart(10)} tokens/s  (cold ${Math.round(r.cold_tokens_per_s)})${same}`,
  );
}
console.log(
  `  ratio argrl / transformers.js: warm ${(ours.tokens_per_s / ref.tokens_per_s).toFixed(2)}x, cold (first pass, empty caches) ${(ours.cold_tokens_per_s / ref.cold_tokens_per_s).toFixed(2)}x`,
);
if (ours.tokens_per_pass !== ref.tokens_per_pass) {
  console.error("argrl and transformers.js produced different token counts");
  process.exit(1);
}
