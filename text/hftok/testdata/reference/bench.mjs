// Encode throughput of Hugging Face's JavaScript tokenizers
// (@huggingface/tokenizers), for text/hftok's benchmarks to compare with.
//
// Usage: node bench.mjs TOKENIZER_JSON INPUT_JSON OUTPUT_JSON
//
// INPUT_JSON is {"texts": [string...], "seconds": S}. The texts are encoded
// once to warm the tokenizer up (its BPE cache, the JIT), then again and
// again for at least S seconds. OUTPUT_JSON gets {"ns_per_pass",
// "tokens_per_pass", "passes"}, a pass being one encode(text,
// add_special_tokens=false) of every text.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";

const [tokenizerPath, inputPath, outputPath] = process.argv.slice(2);
if (!outputPath) {
  console.error("usage: node bench.mjs TOKENIZER_JSON INPUT_JSON OUTPUT_JSON");
  process.exit(2);
}
const tok = new Tokenizer(JSON.parse(fs.readFileSync(tokenizerPath, "utf8")), {});
const { texts, seconds } = JSON.parse(fs.readFileSync(inputPath, "utf8"));

const pass = () => {
  let n = 0;
  for (const text of texts) n += tok.encode(text, { add_special_tokens: false }).ids.length;
  return n;
};
const tokens = pass();
let passes = 0;
const start = process.hrtime.bigint();
let elapsed = 0n;
do {
  pass();
  passes++;
  elapsed = process.hrtime.bigint() - start;
} while (elapsed < BigInt(Math.round(seconds * 1e9)));
fs.writeFileSync(outputPath, JSON.stringify({ ns_per_pass: Number(elapsed) / passes, tokens_per_pass: tokens, passes }));
