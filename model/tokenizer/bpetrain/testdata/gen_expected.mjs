// gen_expected.mjs writes expected.json: the ids that two independent
// tokenizer implementations give for texts.json under the tokenizer.json
// this package trained (testdata/tokenizer.json):
//
//   - "hf": tokenizers, Hugging Face's Rust library through its Node binding;
//   - "js": @lenml/tokenizers, a fork of transformers.js.
//
// The Go test requires this package's encoder and model/tokenizer to give the
// "hf" ids. Regenerate after `go test ./model/tokenizer/bpetrain -run
// TestOracle -update` rewrote the tokenizer and texts:
//
//   node model/tokenizer/bpetrain/testdata/gen_expected.mjs [CACHE_DIR]
//
// The Node packages are the ones model/tokenizer/testdata/gen_expected.mjs
// installs under CACHE_DIR/node (default ~/.cache/argrl/node); run that
// script once if they are missing.
import { createRequire } from "node:module";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const cache = process.argv[2] || process.env.ARGRL_CACHE || path.join(os.homedir(), ".cache", "argrl");
const require = createRequire(path.join(cache, "node", "noop.js"));
const { Tokenizer: HFTokenizer } = require("tokenizers");
const { TokenizerLoader } = require("@lenml/tokenizers");

const tokFile = path.join(here, "tokenizer.json");
const tokenizerJSON = JSON.parse(fs.readFileSync(tokFile, "utf8"));
const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(here, "tokenizer_config.json"), "utf8"));
const texts = JSON.parse(fs.readFileSync(path.join(here, "texts.json"), "utf8"));

const hf = HFTokenizer.fromFile(tokFile);
const js = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
const cases = [];
let disagreements = 0;
for (const text of texts) {
  const enc = await hf.encode(text, null, { addSpecialTokens: false });
  const ids = enc.getIds();
  const c = { text, ids, decoded: await hf.decode(ids, false) };
  const jsIds = Array.from(js.encode(text, { add_special_tokens: false }));
  if (JSON.stringify(jsIds) !== JSON.stringify(ids)) {
    c.js_ids = jsIds;
    disagreements++;
    console.error(`js and hf differ on ${JSON.stringify(text).slice(0, 80)}`);
  }
  cases.push(c);
}
const out = { generator: "model/tokenizer/bpetrain/testdata/gen_expected.mjs", oracles: { hf: "tokenizers", js: "@lenml/tokenizers" }, cases };
fs.writeFileSync(path.join(here, "expected.json"), JSON.stringify(out) + "\n");
console.error(`wrote expected.json: ${cases.length} cases, ${disagreements} js/hf disagreements`);
