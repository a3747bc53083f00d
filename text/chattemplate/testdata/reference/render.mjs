// Reference renderings for text/chattemplate's tests, made with Hugging
// Face's JavaScript Jinja (@huggingface/jinja), and encodings of them made
// with Hugging Face's JavaScript tokenizers (@huggingface/tokenizers).
//
// Usage: node render.mjs INPUT_JSON OUTPUT_JSON
//
// INPUT_JSON is
//   {"templates": {NAME: SOURCE, ...},
//    "tokenizers": {NAME: TOKENIZER_JSON_PATH, ...},
//    "cases": [{"template": NAME, "vars": {...}, "encode": NAME?}, ...],
//    "now": "YYYY-MM-DDTHH:MM:SS"?}
// where vars are the template's variables exactly as the Go side renders
// with them (messages, tools, add_generation_prompt, the special tokens,
// extra keyword arguments), and now, if given, is the local time that
// strftime_now formats instead of the clock's. OUTPUT_JSON gets, for each
// case, {"text": ...} or {"error": ...}, and "ids" (encode(text,
// add_special_tokens=false)) when the case names a tokenizer.
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";

const [inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node render.mjs INPUT_JSON OUTPUT_JSON");
  process.exit(2);
}
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));

if (input.now) {
  // strftime_now formats new Date(): make that the given time.
  const fixed = new Date(input.now).getTime();
  globalThis.Date = class extends Date {
    constructor(...args) {
      if (args.length === 0) super(fixed);
      else super(...args);
    }
    static now() {
      return fixed;
    }
  };
}

const templates = new Map();
const parseErrors = new Map();
for (const [name, source] of Object.entries(input.templates ?? {})) {
  try {
    templates.set(name, new Template(source));
  } catch (e) {
    parseErrors.set(name, String(e && e.message ? e.message : e));
  }
}
const tokenizers = new Map();
for (const [name, path] of Object.entries(input.tokenizers ?? {})) {
  tokenizers.set(name, new Tokenizer(JSON.parse(fs.readFileSync(path, "utf8")), {}));
}

const version = (pkg) =>
  JSON.parse(fs.readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;

const results = (input.cases ?? []).map((c) => {
  if (parseErrors.has(c.template)) return { error: parseErrors.get(c.template) };
  const template = templates.get(c.template);
  if (!template) return { error: `no template ${c.template}` };
  let text;
  try {
    text = template.render(c.vars ?? {});
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
  const out = { text };
  if (c.encode) {
    out.ids = tokenizers.get(c.encode).encode(text, { add_special_tokens: false }).ids;
  }
  return out;
});

fs.writeFileSync(
  outputPath,
  JSON.stringify({
    implementation: `@huggingface/jinja@${version("@huggingface/jinja")} @huggingface/tokenizers@${version("@huggingface/tokenizers")}`,
    results,
  }),
);
