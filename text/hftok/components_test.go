package hftok

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

// parseParts builds a tokenizer from JSON components (empty: null).
func parseParts(t *testing.T, normalizer, preTokenizer, model, decoder string) *Tokenizer {
	t.Helper()
	or := func(s string) string {
		if s == "" {
			return "null"
		}
		return s
	}
	tok, err := Parse([]byte(fmt.Sprintf(`{"added_tokens": [], "normalizer": %s, "pre_tokenizer": %s, "post_processor": null,
		"decoder": %s, "model": %s}`, or(normalizer), or(preTokenizer), or(decoder), model)))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// preTokens returns the pre-tokens of s after normalization.
func preTokens(tok *Tokenizer, s string) []string {
	var sc scratch
	return pieceTexts(tok.pre.pieces(&sc, piece{tok.normalize(s), true}))
}

const wordLevelAB = `{"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}`

// TestPreTokenizers checks each pre-tokenizer on inputs worked out from HF's
// Rust implementation.
func TestPreTokenizers(t *testing.T) {
	for _, c := range []struct {
		pre, text string
		want      []string
	}{
		{`{"type": "Whitespace"}`, "Hello, café naïve!! x_1", []string{"Hello", ",", "café", "naïve", "!!", "x_1"}},
		{`{"type": "WhitespaceSplit"}`, " a\tb\u3000c\u0085d\ufeffe ", []string{"a", "b", "c", "d\ufeffe"}},
		{`{"type": "Punctuation"}`, "a!!b,c", []string{"a", "!", "!", "b", ",", "c"}},
		{`{"type": "Punctuation", "behavior": "Contiguous"}`, "a!!b,c", []string{"a", "!!", "b", ",", "c"}},
		{`{"type": "Punctuation", "behavior": "MergedWithPrevious"}`, "a!!b", []string{"a!", "!", "b"}},
		{`{"type": "Digits", "individual_digits": false}`, "a123b٣٤x²", []string{"a", "123", "b", "٣٤", "x", "²"}},
		{`{"type": "Digits", "individual_digits": true}`, "a12b", []string{"a", "1", "2", "b"}},
		{`{"type": "BertPreTokenizer"}`, " Hello,world! a-b ", []string{"Hello", ",", "world", "!", "a", "-", "b"}},
		{`{"type": "CharDelimiterSplit", "delimiter": "|"}`, "a|b||c", []string{"a", "b", "c"}},
		{`{"type": "FixedLength", "length": 2}`, "abcdé", []string{"ab", "cd", "é"}},
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`, "Hello  world", []string{"▁Hello", "▁", "▁world"}},
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false}`, "Hello world", []string{"▁Hello▁world"}},
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": false}`, "Hello world", []string{"Hello▁world"}},
		{`{"type": "Metaspace", "replacement": "▁", "add_prefix_space": false}`, "a b", []string{"a", "▁b"}},
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": false}`, " x", []string{"▁x"}},
		{`{"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}]}`,
			"ab cd", []string{"▁ab", "cd"}},
		{`{"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Removed", "invert": true}`, "a12b3", []string{"12", "3"}},
		{`{"type": "Split", "pattern": {"Regex": "(?<=[a-z])(?=[A-Z])"}, "behavior": "Isolated", "invert": false}`, "camelCaseWord", []string{"camel", "Case", "Word"}},
		{`{"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": false}`, "a b  c", []string{"a", " b", " ", " c"}},
		// Before a model other than BPE, ByteLevel spells the pieces itself.
		{`{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}`, "hi there", []string{"Ġhi", "Ġthere"}},
	} {
		tok := parseParts(t, "", c.pre, wordLevelAB, "")
		if got := preTokens(tok, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s on %q: got %q, want %q", c.pre, c.text, got, c.want)
		}
	}
	// ByteLevel before other steps spells the pieces with byte-level runes
	// for them; last before BPE it leaves that to the model.
	tok := parseParts(t, "", `{"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}, {"type": "Split", "pattern": {"String": "Ġ"}, "behavior": "Removed", "invert": false}]}`, wordLevelAB, "")
	if got := preTokens(tok, "hi there"); !slices.Equal(got, []string{"hi", "there"}) {
		t.Errorf("ByteLevel then Split = %q", got)
	}
}

// TestNormalizers checks each normalizer.
func TestNormalizers(t *testing.T) {
	for _, c := range []struct {
		norm, text, want string
	}{
		{`{"type": "NFD"}`, "é", "e\u0301"},
		{`{"type": "NFKC"}`, "ﬁ１", "fi1"},
		{`{"type": "NFKD"}`, "ﬁé", "fie\u0301"},
		// Lowercase maps each character on its own, as Rust's
		// char::to_lowercase: no final sigma, İ to i and a combining dot.
		{`{"type": "Lowercase"}`, "ΣΑΣ İ ÀB", "σασ i\u0307 àb"},
		{`{"type": "StripAccents"}`, "e\u0301a\u0308\u20dd", "ea"},
		{`{"type": "Strip", "strip_left": true, "strip_right": false}`, " \u3000a \u0085", "a \u0085"},
		{`{"type": "Strip", "strip_left": true, "strip_right": true}`, "\ufeff a \u0085", "\ufeff a"},
		{`{"type": "Replace", "pattern": {"String": "  "}, "content": " "}`, "a   b", "a  b"},
		{`{"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": "_"}`, "a \t\u0085b", "a_b"},
		{`{"type": "Prepend", "prepend": "▁"}`, "ab", "▁ab"},
		{`{"type": "Prepend", "prepend": "▁"}`, "", ""},
		{`{"type": "Nmt"}`, "a\x01b\tc\u200bd", "ab c d"},
		{`{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true}`,
			"Héllo\x00\tWORLD你好\u0085", "hello world 你  好 "},
		{`{"type": "BertNormalizer", "clean_text": false, "handle_chinese_chars": false, "strip_accents": false, "lowercase": true}`, "Héllo", "héllo"},
		{`{"type": "ByteLevel"}`, "a é", "aĠÃ©"},
		{`{"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]}`, "Ébène", "ebene"},
		{`{"type": "Sequence", "normalizers": []}`, "x", "x"},
	} {
		tok := parseParts(t, c.norm, "", wordLevelAB, "")
		if got := tok.normalize(c.text); got != c.want {
			t.Errorf("%s on %q: got %q, want %q", c.norm, c.text, got, c.want)
		}
	}
}

// TestDecoders checks each decoder.
func TestDecoders(t *testing.T) {
	vocab := map[string]int{}
	toks := []string{"▁Hello", "▁▁", "wor", "ld", "<0xE4>", "<0xBD>", "<0xA0>", "##ing", "do", "not", "x</w>", "y", " a ", "<0xZZ>", "."}
	for i, s := range toks {
		vocab[s] = i
	}
	ids := func(ss ...string) []int {
		var out []int
		for _, s := range ss {
			out = append(out, vocab[s])
		}
		return out
	}
	model := fmt.Sprintf(`{"type": "WordLevel", "vocab": %s, "unk_token": "y"}`, mustJSON(t, vocab))
	for _, c := range []struct {
		dec  string
		ids  []int
		want string
	}{
		// Rust's Metaspace decoder drops every "▁" of the first token.
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`, ids("▁▁", "▁Hello"), " Hello"},
		{`{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": true}`, ids("▁Hello", "wor"), " Hellowor"},
		{`{"type": "ByteFallback"}`, ids("<0xE4>", "<0xBD>", "<0xA0>", "wor"), "你wor"},
		// Invalid UTF-8: one U+FFFD per byte, as Rust does.
		{`{"type": "ByteFallback"}`, ids("<0xE4>", "<0xBD>", "wor", "<0xA0>"), "\uFFFD\uFFFDwor\uFFFD"},
		{`{"type": "ByteFallback"}`, ids("<0xZZ>"), "<0xZZ>"},
		{`{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`,
			ids("▁Hello", "▁▁", "<0xE4>", "<0xBD>", "<0xA0>"), "Hello  你"},
		{`{"type": "Strip", "content": " ", "start": 2, "stop": 1}`, ids(" a "), "a"},
		// The clean-up works on each token: " do not" never meets.
		{`{"type": "WordPiece", "prefix": "##", "cleanup": true}`, ids("wor", "##ing", "do", "not"), "woring do not"},
		{`{"type": "WordPiece", "prefix": "##", "cleanup": true}`, ids("wor", "."), "wor."},
		{`{"type": "WordPiece", "prefix": "##", "cleanup": false}`, ids("wor", "##ing", "do", "not"), "woring do not"},
		{`{"type": "BPEDecoder", "suffix": "</w>"}`, ids("x</w>", "x</w>"), "x x"},
		{`{"type": "Fuse"}`, ids("wor", "ld"), "world"},
		{``, ids("wor", "ld"), "wor ld"},
	} {
		tok := parseParts(t, "", "", model, c.dec)
		if got := tok.Decode(c.ids, false); got != c.want {
			t.Errorf("%s: Decode(%v) = %q, want %q", c.dec, c.ids, got, c.want)
		}
	}
	// TokenBytes: what a decoder makes of one token mid-text.
	tok := parseParts(t, "", "", model, `{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}`)
	for s, want := range map[string]string{"▁Hello": " Hello", "<0xE4>": "\xe4", "wor": "wor"} {
		if got, _ := tok.TokenBytes(vocab[s]); string(got) != want {
			t.Errorf("TokenBytes(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestModels checks the models on small vocabularies.
func TestModels(t *testing.T) {
	t.Run("Unigram", func(t *testing.T) {
		// "\n" and "\n\n" tie on "\n\n\n" (the same two scores either way):
		// HF's encode_optimized keeps the first path it finds.
		model := `{"type": "Unigram", "unk_id": 0, "byte_fallback": false, "vocab": [["<unk>", 0], ["\n", -2], ["\n\n", -3], ["a", -1], ["b", -1.5], ["ab", -2], ["abc", -9], ["c", -2]]}`
		tok := parseParts(t, "", "", model, "")
		for _, c := range []struct {
			text string
			want []int
		}{
			{"\n\n\n", []int{1, 2}},
			{"abab", []int{5, 5}},
			{"abc", []int{5, 7}},
			{"xyab", []int{0, 5}},    // unknown characters fused into one <unk>
			{"axyb", []int{3, 0, 4}}, //
		} {
			if got := tok.Encode(c.text, false); !slices.Equal(got, c.want) {
				t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
			}
		}
		bf := parseParts(t, "", "", `{"type": "Unigram", "unk_id": 0, "byte_fallback": true, "vocab": [["<unk>", 0], ["a", -1], ["<0xC3>", -5], ["<0xA9>", -5]]}`, "")
		if got := bf.Encode("aéx", false); !slices.Equal(got, []int{1, 0}) { // é and x fused: x has no byte token
			t.Errorf("byte fallback Encode(aéx) = %v", got)
		}
		if got := bf.Encode("aé", false); !slices.Equal(got, []int{1, 2, 3}) {
			t.Errorf("byte fallback Encode(aé) = %v", got)
		}
	})
	t.Run("WordPiece", func(t *testing.T) {
		model := `{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 10,
			"vocab": {"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "unaf": 4, "x": 5}}`
		tok := parseParts(t, "", `{"type": "WhitespaceSplit"}`, model, "")
		// "unaffable": the longest first piece, "unaf", leaves "##fable",
		// which no token covers, so the whole word is unknown; a word
		// longer than 10 characters is too.
		if got := tok.Encode("unable unaffable unx xxxxxxxxxxx x", false); !slices.Equal(got, []int{1, 3, 0, 0, 0, 5}) {
			t.Errorf("Encode = %v", got)
		}
	})
	t.Run("BPE affixes", func(t *testing.T) {
		model := `{"type": "BPE", "continuing_subword_prefix": "##", "end_of_word_suffix": "</w>",
			"vocab": {"a": 0, "##b": 1, "##c</w>": 2, "a##b": 3, "ab": 4, "a</w>": 5, "ab##c</w>": 6, "abc</w>": 7}, "merges": ["a ##b", "ab ##c</w>"]}`
		tok := parseParts(t, "", `{"type": "WhitespaceSplit"}`, model, `{"type": "BPEDecoder", "suffix": "</w>"}`)
		if got := tok.Encode("abc a", false); !slices.Equal(got, []int{7, 5}) {
			t.Errorf("Encode = %v", got)
		}
	})
	t.Run("BPE characters", func(t *testing.T) {
		// Without a ByteLevel step the BPE works on characters; invalid
		// UTF-8 bytes fall back to byte tokens. (As in HF's merge_word, a
		// pending unknown token goes after the byte tokens that follow it.)
		model := `{"type": "BPE", "byte_fallback": true, "unk_token": "<unk>",
			"vocab": {"<unk>": 0, "é": 1, "t": 2, "ét": 3, "<0xFF>": 4}, "merges": ["é t"]}`
		tok := parseParts(t, "", "", model, `{"type": "ByteFallback"}`)
		if got := tok.Encode("étx\xff", false); !slices.Equal(got, []int{3, 4, 0}) {
			t.Errorf("Encode = %v", got)
		}
	})
}

// TestRustSemantics pins where HF's Rust library, which this package
// follows, and tokenizers.js differ (see jsDivergences): the reference
// tests leave those cases out.
func TestRustSemantics(t *testing.T) {
	gpt2 := parseParts(t, "", `{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}`, wordLevelAB, "")
	for text, want := range map[string][]string{
		// U+FEFF is not White_Space: it joins the punctuation run.
		"a\ufeff!": {"a", "\xef\xbb\xbf!"},
		// U+0085 is: a run of spaces gives its last one to the word.
		"a\u0085\u0085b": {"a", "\xc2\x85", "\xc2\x85", "b"},
	} {
		for i := range want {
			want[i] = byteLevelEncode(want[i])
		}
		if got := preTokens(gpt2, text); !slices.Equal(got, want) {
			t.Errorf("GPT-2 pieces of %q = %q, want %q", text, got, want)
		}
	}
	if got := preTokens(parseParts(t, "", `{"type": "Split", "pattern": {"Regex": "(?i:'s)|\\p{L}+"}, "behavior": "Isolated", "invert": false}`, wordLevelAB, ""), "'ſa"); !slices.Equal(got, []string{"'ſ", "a"}) {
		t.Errorf("(?i:'s) on 'ſa = %q", got)
	}
	if _, err := os.Stat(llama2File.tokenizer); err == nil {
		tok := loadReal(t, llama2File.tokenizer)
		e4, _ := tok.TokenToID("<0xE4>")
		bd, _ := tok.TokenToID("<0xBD>")
		if got := tok.Decode([]int{e4, bd}, false); got != "\uFFFD\uFFFD" {
			t.Errorf("llama2 Decode(<0xE4> <0xBD>) = %q, want one U+FFFD per byte", got)
		}
		hi := tok.Encode("hi", false)
		if got := tok.Decode(append(slices.Clone(hi), 99999), false); got != "hi" {
			t.Errorf("llama2 Decode with an id no token has = %q, want it skipped", got)
		}
	}
}

// TestMetaspaceFirst checks prepend_scheme first: only the piece at the
// start of the input gets "▁", not the text after an added token.
func TestMetaspaceFirst(t *testing.T) {
	tok, err := Parse([]byte(`{"added_tokens": [{"id": 1, "content": "<s>", "special": true, "normalized": false}],
		"normalizer": null, "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
		"post_processor": null, "decoder": null,
		"model": {"type": "WordLevel", "vocab": {"<unk>": 0, "<s>": 1, "▁a": 2, "b": 3, "▁b": 4}, "unk_token": "<unk>"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string][]int{"a<s>b": {2, 1, 3}, "a<s> b": {2, 1, 4}, "<s>b": {1, 3}} {
		if got := tok.Encode(text, false); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
	}
}
