// Reference encodings for text/hftok's tests, made with Hugging Face's
// JavaScript implementation of tokenizer.json (@huggingface/tokenizers).
//
// Usage: node encode.mjs TOKENIZER_JSON INPUT_JSON OUTPUT_JSON
//
// INPUT_JSON is {"texts": [string...], "add": N, "decode": [[id...]...]}.
// OUTPUT_JSON gets, for each text,
//   special      encode(text, add_special_tokens=false)
//   plain        the same with the special added tokens' text not
//                recognised (see below)
// and for the first N texts also
//   special_add  encode(text, add_special_tokens=true)
//   plain_add    plain with add_special_tokens=true
// (the post-processor's template does not depend on the text, so a few
// texts check it); for each id list of "decode",
//   keep     decode(ids), special tokens kept, no clean-up
//   skip     decode(ids, skip_special_tokens=true), no clean-up
//   cleanup  decode(ids, clean_up_tokenization_spaces=true)
//
// The tokenizer gets no tokenizer_config.json: HF's tokenizers library
// reads only tokenizer.json, while tokenizers.js would take, for instance,
// extra special tokens to skip from the config. (Its WordLevel model is the
// one exception: it takes the unknown token from the config, so it gets
// the model's.)
//
// tokenizers.js cannot encode with special-token recognition off (the Rust
// library's encode_special_tokens, transformers' split_special_tokens). The
// "plain" tokenizer emulates it: a copy of the full one whose added-token
// matching knows only the non-special tokens (as if the special entries
// were dropped from added_tokens), which is the same thing whenever no
// non-special added token overlaps a special one (true of every file
// tested). It shares the full tokenizer's model, whose construction is
// most of the load time of a large file, and which still knows the special
// tokens' ids for the post-processor's template.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";

const [tokenizerPath, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node encode.mjs TOKENIZER_JSON INPUT_JSON OUTPUT_JSON");
  process.exit(2);
}
const tokenizerJSON = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));

const config = tokenizerJSON.model?.type === "WordLevel" ? { unk_token: tokenizerJSON.model.unk_token ?? "<unk>" } : {};
const full = new Tokenizer(tokenizerJSON, config);

// withoutSpecial repeats the added-token part of the Tokenizer constructor
// for the non-special tokens only.
function withoutSpecial(tok) {
  const t = Object.assign(Object.create(Object.getPrototypeOf(tok)), tok);
  t.added_tokens = tok.added_tokens.filter((x) => !x.special);
  t.added_tokens_map = new Map();
  const unnormalized = [];
  const normalized = [];
  for (const token of t.added_tokens) {
    t.added_tokens_map.set(token.content, token);
    if (token.normalized && t.normalizer !== null) {
      const n = t.normalizer(token.content);
      normalized.push(n);
      t.added_tokens_map.set(n, token);
    } else {
      unnormalized.push(token.content);
    }
  }
  const Splitter = tok.splitter_unnormalized.constructor;
  t.splitter_unnormalized = new Splitter(unnormalized);
  t.splitter_normalized = new Splitter(normalized);
  t.special_tokens = [];
  return t;
}
const plain = withoutSpecial(full);

const enc = (tok, text, add) => tok.encode(text, { add_special_tokens: add }).ids;
const encPlain = (text, add) => enc(plain, text, add);
const dec = (ids, skip, cleanup) =>
  ids.length === 0
    ? ""
    : full.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: cleanup });

const addN = input.add ?? 0;
const output = {
  implementation: "@huggingface/tokenizers@" +
    JSON.parse(fs.readFileSync(new URL("./node_modules/@huggingface/tokenizers/package.json", import.meta.url))).version,
  encode: input.texts.map((text, i) => {
    const out = { special: enc(full, text, false), plain: encPlain(text, false) };
    if (i < addN) {
      out.special_add = enc(full, text, true);
      out.plain_add = encPlain(text, true);
    }
    return out;
  }),
  decode: (input.decode ?? []).map((ids) => ({
    keep: dec(ids, false, false),
    skip: dec(ids, true, false),
    cleanup: dec(ids, false, true),
  })),
};
fs.writeFileSync(outputPath, JSON.stringify(output));
