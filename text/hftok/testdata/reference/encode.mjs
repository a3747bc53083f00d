// Reference encodings for text/hftok's tests, made with Hugging Face's
// JavaScript implementation of tokenizer.json (@huggingface/tokenizers).
//
// Usage: node encode.mjs TOKENIZER_JSON CONFIG_JSON|- INPUT_JSON OUTPUT_JSON
//
// INPUT_JSON is {"texts": [string...], "decode": [[id...]...]}. OUTPUT_JSON
// gets, for each text,
//   special_add  encode(text, add_special_tokens=true)
//   special      encode(text, add_special_tokens=false)
//   plain        the same with the special added tokens' text not
//                recognised (see below), add_special_tokens=false
//   plain_add    plain with add_special_tokens=true
// and, for each id list of "decode",
//   keep     decode(ids), special tokens kept, no clean-up
//   skip     decode(ids, skip_special_tokens=true), no clean-up
//   cleanup  decode(ids, clean_up_tokenization_spaces=true)
//
// tokenizers.js cannot encode with special-token recognition off (the Rust
// library's encode_special_tokens, transformers' split_special_tokens). The
// "plain" tokenizer emulates it by dropping the special entries from
// added_tokens, which is the same thing whenever no non-special added token
// overlaps a special one (true of the Qwen3 and Llama-3 files); its tokens
// are then given their ids by the full tokenizer, which still knows the
// special tokens a post-processor template adds.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";

const [tokenizerPath, configPath, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node encode.mjs TOKENIZER_JSON CONFIG_JSON|- INPUT_JSON OUTPUT_JSON");
  process.exit(2);
}
const tokenizerJSON = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
const config = configPath === "-" ? {} : JSON.parse(fs.readFileSync(configPath, "utf8"));
const input = JSON.parse(fs.readFileSync(inputPath, "utf8"));

const full = new Tokenizer(tokenizerJSON, config);
const plainJSON = structuredClone(tokenizerJSON);
plainJSON.added_tokens = plainJSON.added_tokens.filter((t) => !t.special);
const plain = new Tokenizer(plainJSON, config);

const enc = (tok, text, add) => tok.encode(text, { add_special_tokens: add }).ids;
const encPlain = (text, add) =>
  plain.encode(text, { add_special_tokens: add }).tokens.map((t) => {
    const id = full.token_to_id(t);
    if (id === undefined) throw new Error(`no id for token ${JSON.stringify(t)}`);
    return id;
  });
const dec = (ids, skip, cleanup) =>
  ids.length === 0
    ? ""
    : full.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: cleanup });

const output = {
  implementation: "@huggingface/tokenizers@" +
    JSON.parse(fs.readFileSync(new URL("./node_modules/@huggingface/tokenizers/package.json", import.meta.url))).version,
  encode: input.texts.map((text) => ({
    special_add: enc(full, text, true),
    special: enc(full, text, false),
    plain: encPlain(text, false),
    plain_add: encPlain(text, true),
  })),
  decode: (input.decode ?? []).map((ids) => ({
    keep: dec(ids, false, false),
    skip: dec(ids, true, false),
    cleanup: dec(ids, false, true),
  })),
};
fs.writeFileSync(outputPath, JSON.stringify(output));
