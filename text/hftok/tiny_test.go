package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The tiny tokenizer is written by the tests themselves, so that the unit
// and round-trip tests run without npm. Its vocabulary has one token per
// byte value, id = byte value (so every string round-trips), then one token
// per merge, id 256+rank:
//
//	256 he   257 ll   258 hell   259 hello   260 Ġw   261 or
//	262 Ġwor 263 ld   264 Ġworld 265 ĠĠ     266 12   267 aa
//
// and added tokens <|end|> (268, special), <think> (269, not special) and
// <|bos|> (270, special), which the post-processor puts first.
var tinyMerges = []string{"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld", "Ġ Ġ", "1 2", "a a"}

// gpt2Bytes is GPT-2's bytes_to_unicode, written out independently of the
// package's own table.
func gpt2Bytes() [256]string {
	var out [256]string
	n := 0
	for b := 0; b < 256; b++ {
		if b >= 33 && b <= 126 || b >= 161 && b <= 172 || b >= 174 {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// tinyOptions vary the tiny tokenizer.json.
type tinyOptions struct {
	normalizer    string // JSON, default null
	preTokenizer  string // JSON, default Split(Qwen2) + ByteLevel
	postProcessor string // JSON, default a template putting <|bos|> first
	decoder       string // JSON, default ByteLevel
	model         string // JSON fields replacing the default model fields
	added         string // JSON list, default <|end|>, <think>, <|bos|>
	extraVocab    map[string]int
	mergesAsPairs bool
}

// tinyJSON returns the tiny tokenizer.json.
func tinyJSON(o tinyOptions) string {
	vocab := map[string]int{}
	bytes := gpt2Bytes()
	for b, s := range bytes {
		vocab[s] = b
	}
	for i, m := range tinyMerges {
		a, b, _ := strings.Cut(m, " ")
		vocab[a+b] = 256 + i
	}
	for k, id := range o.extraVocab {
		vocab[k] = id
	}
	v, _ := json.Marshal(vocab)
	var merges []byte
	if o.mergesAsPairs {
		var pairs [][2]string
		for _, m := range tinyMerges {
			a, b, _ := strings.Cut(m, " ")
			pairs = append(pairs, [2]string{a, b})
		}
		merges, _ = json.Marshal(pairs)
	} else {
		merges, _ = json.Marshal(tinyMerges)
	}
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	pattern, _ := json.Marshal(PatternQwen2)
	model := fmt.Sprintf(`{"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
		"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false%s,
		"vocab": %s, "merges": %s}`, o.model, v, merges)
	return fmt.Sprintf(`{
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": %s,
  "normalizer": %s,
  "pre_tokenizer": %s,
  "post_processor": %s,
  "decoder": %s,
  "model": %s
}`,
		or(o.added, `[
    {"id": 268, "content": "<|end|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 269, "content": "<think>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
    {"id": 270, "content": "<|bos|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}]`),
		or(o.normalizer, "null"),
		or(o.preTokenizer, `{"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": `+string(pattern)+`}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]}`),
		or(o.postProcessor, `{"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|bos|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [270], "tokens": ["<|bos|>"]}}}`),
		or(o.decoder, `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`),
		model)
}

// tiny parses the tiny tokenizer with o.
func tiny(t testing.TB, o tinyOptions) *Tokenizer {
	t.Helper()
	tok, err := Parse([]byte(tinyJSON(o)))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
