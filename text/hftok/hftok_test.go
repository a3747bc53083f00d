package hftok

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestTinyEncode checks hand-computed ids on the tiny tokenizer (see
// tiny_test.go for its vocabulary).
func TestTinyEncode(t *testing.T) {
	for _, pairs := range []bool{false, true} {
		tok := tiny(t, tinyOptions{mergesAsPairs: pairs})
		for _, c := range []struct {
			text string
			opts EncodeOptions
			want []int
		}{
			{"hello world", EncodeOptions{}, []int{259, 264}},
			{"hello world", EncodeOptions{AddSpecialTokens: true}, []int{270, 259, 264}},
			{"", EncodeOptions{}, nil},
			{"", EncodeOptions{AddSpecialTokens: true}, []int{270}},
			{"hell", EncodeOptions{}, []int{258}},
			{"help", EncodeOptions{}, []int{256, 108, 112}},       // he l p
			{"aaa", EncodeOptions{}, []int{267, 97}},              // equal ranks: leftmost first
			{"aaaa", EncodeOptions{}, []int{267, 267}},            //
			{"world", EncodeOptions{}, []int{119, 261, 263}},      // w or ld: no Ġ, no Ġw merge
			{"  world", EncodeOptions{}, []int{32, 264}},          // " " + " world": \s+(?!\S)
			{"   ", EncodeOptions{}, []int{265, 32}},              // one piece at the end; ĠĠ then Ġ
			{"12345", EncodeOptions{}, []int{49, 50, 51, 52, 53}}, // Qwen: one digit per piece
			{"e\u0301", EncodeOptions{}, []int{101, 204, 129}},    // no normalizer: e + U+0301 (CC 81)
			{"hello<|end|>world", EncodeOptions{AllowSpecial: true}, []int{259, 268, 119, 261, 263}},
			// Not recognised: "<|", "end", "|>" are ordinary pieces.
			{"hello<|end|>world", EncodeOptions{}, []int{259, 60, 124, 101, 110, 100, 124, 62, 119, 261, 263}},
			// A non-special added token is recognised either way.
			{"a<think>b", EncodeOptions{}, []int{97, 269, 98}},
			{"a<think>b", EncodeOptions{AllowSpecial: true}, []int{97, 269, 98}},
			{"<|bos|><|bos|>", EncodeOptions{AllowSpecial: true, AddSpecialTokens: true}, []int{270, 270, 270}},
		} {
			if got := tok.EncodeWithOptions(c.text, c.opts); !slices.Equal(got, c.want) {
				t.Errorf("pairs=%v: EncodeWithOptions(%q, %+v) = %v, want %v", pairs, c.text, c.opts, got, c.want)
			}
		}
		if got := tok.Encode("x<|end|>", true); !slices.Equal(got, []int{270, 120, 268}) {
			t.Errorf("Encode(x<|end|>, true) = %v", got)
		}
		if got := tok.AppendEncode([]int{7}, "hello", EncodeOptions{AddSpecialTokens: true}); !slices.Equal(got, []int{7, 270, 259}) {
			t.Errorf("AppendEncode = %v", got)
		}
	}
}

// TestTinyVariants checks the other components on the tiny tokenizer.
func TestTinyVariants(t *testing.T) {
	t.Run("NFC", func(t *testing.T) {
		tok := tiny(t, tinyOptions{normalizer: `{"type": "NFC"}`})
		if got := tok.Encode("e\u0301", false); !slices.Equal(got, []int{195, 169}) { // é = C3 A9
			t.Errorf("NFC e+U+0301 = %v", got)
		}
		seq := tiny(t, tinyOptions{normalizer: `{"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "NFC"}]}`})
		if got := seq.Encode("e\u0301", false); !slices.Equal(got, []int{195, 169}) {
			t.Errorf("NFD+NFC e+U+0301 = %v", got)
		}
	})
	t.Run("GPT-2 ByteLevel with prefix space", func(t *testing.T) {
		tok := tiny(t, tinyOptions{preTokenizer: `{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true}`})
		if got := tok.Encode("hello world", false); !slices.Equal(got, []int{32, 259, 264}) {
			t.Errorf("GPT-2 hello world = %v", got)
		}
		// Every piece between added tokens gets its own prefix space.
		if got := tok.Encode("a<|end|>b", false); !slices.Equal(got, []int{32, 97, 268, 32, 98}) {
			t.Errorf("GPT-2 a<|end|>b = %v", got)
		}
		if got := tok.Encode(" world", false); !slices.Equal(got, []int{264}) {
			t.Errorf("GPT-2 ' world' = %v (a leading space is not doubled)", got)
		}
	})
	t.Run("Llama-3 digits", func(t *testing.T) {
		pat := strings.ReplaceAll(PatternLlama3, `\`, `\\`)
		tok := tiny(t, tinyOptions{preTokenizer: `{"type": "Sequence", "pretokenizers": [
			{"type": "Split", "pattern": {"Regex": "` + pat + `"}, "behavior": "Isolated", "invert": false},
			{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]}`})
		if got := tok.Encode("12345", false); !slices.Equal(got, []int{266, 51, 52, 53}) { // 12|3, 4|5
			t.Errorf("Llama-3 12345 = %v", got)
		}
	})
	t.Run("ignore_merges", func(t *testing.T) {
		extra := map[string]int{"abc": 300}
		plain := tiny(t, tinyOptions{extraVocab: extra})
		if got := plain.Encode("abc", false); !slices.Equal(got, []int{97, 98, 99}) {
			t.Errorf("abc without ignore_merges = %v", got)
		}
		im := tiny(t, tinyOptions{extraVocab: extra, model: `, "ignore_merges": true`})
		if got := im.Encode("abc", false); !slices.Equal(got, []int{300}) {
			t.Errorf("abc with ignore_merges = %v", got)
		}
		if got := im.Encode("abc hello", false); !slices.Equal(got, []int{300, 32, 259}) {
			t.Errorf("abc hello with ignore_merges = %v", got) // " hello" is not in the vocabulary
		}
	})
	t.Run("post-processors", func(t *testing.T) {
		for _, c := range []struct {
			json string
			want []int
		}{
			{`null`, []int{259}},
			{`{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`, []int{259}},
			{`{"type": "RobertaProcessing", "sep": ["<|end|>", 268], "cls": ["<|bos|>", 270], "trim_offsets": true, "add_prefix_space": false}`, []int{270, 259, 268}},
			{`{"type": "BertProcessing", "sep": ["<|end|>", 268], "cls": ["<|bos|>", 270]}`, []int{270, 259, 268}},
			{`{"type": "TemplateProcessing", "single": ["<|bos|>", "$A", "<|end|>:1"], "pair": [],
			  "special_tokens": {"<|bos|>": {"id": "<|bos|>", "ids": [270], "tokens": ["<|bos|>"]}, "<|end|>": {"id": "<|end|>", "ids": [268, 268], "tokens": ["<|end|>", "<|end|>"]}}}`, []int{270, 259, 268, 268}},
			{`{"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "BertProcessing", "sep": ["<|end|>", 268], "cls": ["<|bos|>", 270]}]}`, []int{270, 259, 268}},
		} {
			tok := tiny(t, tinyOptions{postProcessor: c.json})
			if got := tok.Encode("hello", true); !slices.Equal(got, c.want) {
				t.Errorf("post_processor %s: Encode(hello, true) = %v, want %v", c.json, got, c.want)
			}
			if got := tok.Encode("hello", false); !slices.Equal(got, []int{259}) {
				t.Errorf("post_processor %s: Encode(hello, false) = %v", c.json, got)
			}
			if got := tok.NumSpecialTokensToAdd(); got != len(c.want)-1 {
				t.Errorf("post_processor %s: NumSpecialTokensToAdd = %d", c.json, got)
			}
		}
	})
}

// TestAddedTokenFlags checks lstrip, rstrip, single_word and normalized with
// HF's semantics (AddedVocabulary::find_matches).
func TestAddedTokenFlags(t *testing.T) {
	tok := tiny(t, tinyOptions{
		normalizer: `{"type": "NFC"}`,
		added: `[
		{"id": 268, "content": "<mask>", "lstrip": true, "rstrip": false, "single_word": false, "normalized": false, "special": true},
		{"id": 269, "content": "[R]", "lstrip": false, "rstrip": true, "single_word": false, "normalized": false, "special": true},
		{"id": 270, "content": "word", "lstrip": false, "rstrip": false, "single_word": true, "normalized": false, "special": false},
		{"id": 271, "content": "cafe\u0301", "lstrip": false, "rstrip": false, "single_word": false, "normalized": true, "special": false},
		{"id": 272, "content": "<|bos|>", "normalized": false, "special": true}]`,
		postProcessor: `null`,
	})
	for _, c := range []struct {
		text string
		want []int
	}{
		{"a <mask> b", []int{97, 268, 32, 98}},                       // "a" | " <mask>" | " b"
		{"a  \t<mask>", []int{97, 268}},                              // lstrip takes the whole run
		{"x[R]  y", []int{120, 269, 121}},                            // "x" | "[R]  " | "y"
		{"a word b", []int{97, 32, 270, 32, 98}},                     // a, " ", word, " b"
		{"word", []int{270}},                                         //
		{"swordfish", []int{115, 119, 261, 100, 102, 105, 115, 104}}, // inside a word: plain text
		{"word_x", []int{119, 261, 100, 95, 120}},                    // '_' is a word character: no match
		{"(word)", []int{40, 270, 41}},                               //
		{"café", []int{271}},                                         // normalized match
		{"cafe\u0301", []int{271}},                                   // the same after NFC
	} {
		if got := tok.EncodeWithOptions(c.text, EncodeOptions{AllowSpecial: true}); !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if s, ok := tok.IDToToken(271); !ok || s != "café" {
		t.Errorf("IDToToken(271) = %q, %v: want the normalized content", s, ok)
	}
	// Without AllowSpecial the special <mask> is plain text and strips
	// nothing.
	if got := tok.EncodeWithOptions("a <mask>", EncodeOptions{}); !slices.Equal(got, []int{97, 32, 60, 109, 97, 115, 107, 62}) {
		t.Errorf("Encode(a <mask>) without special = %v", got)
	}
}

// TestUnknownHandling checks unk_token, fuse_unk and byte_fallback on a
// vocabulary that lacks byte tokens.
func TestUnknownHandling(t *testing.T) {
	build := func(model string) *Tokenizer {
		t.Helper()
		tok, err := Parse([]byte(`{"added_tokens": [], "normalizer": null,
			"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
			"post_processor": null, "decoder": {"type": "ByteLevel"},
			"model": {"type": "BPE", "vocab": {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "<0x63>": 4}, "merges": ["a b"]` + model + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, c := range []struct {
		model, text string
		want        []int
	}{
		{``, "dab", []int{3}}, // no unk: the unknown byte is dropped, as in HF
		{`, "unk_token": "<unk>"`, "ddab", []int{0, 0, 3}},
		{`, "unk_token": "<unk>", "fuse_unk": true`, "ddab", []int{0, 3}},
		{`, "byte_fallback": true`, "abc", []int{3, 4}},
		// HF's merge_word adds byte-fallback tokens before a pending unk.
		{`, "byte_fallback": true, "unk_token": "<unk>"`, "dcab", []int{4, 0, 3}},
	} {
		if got := build(c.model).Encode(c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("model%s: Encode(%q) = %v, want %v", c.model, c.text, got, c.want)
		}
	}
}

// TestTinyDecode checks Decode, including bytes that are not valid UTF-8.
func TestTinyDecode(t *testing.T) {
	tok := tiny(t, tinyOptions{})
	for _, c := range []struct {
		ids  []int
		skip bool
		want string
	}{
		{nil, false, ""},
		{[]int{259, 264}, false, "hello world"},
		{[]int{270, 259, 268, 119}, false, "<|bos|>hello<|end|>w"},
		{[]int{270, 259, 268, 119}, true, "hellow"},
		{[]int{269, 97}, true, "<think>a"}, // not special: kept
		{[]int{195, 169}, false, "é"},
		{[]int{195}, false, "\uFFFD"},
		{[]int{0xE4, 0xBD}, false, "\uFFFD"},       // truncated sequence: one U+FFFD
		{[]int{0xE4, 0xBD, 0xA0}, false, "你"},      //
		{[]int{0xE4, 65}, false, "\uFFFDA"},        //
		{[]int{0xFF, 0xFE}, false, "\uFFFD\uFFFD"}, // impossible bytes: one each
		{[]int{0xED, 0xA0, 0x80}, false, "\uFFFD\uFFFD\uFFFD"},
		{[]int{0xF0, 0x9F, 0x98}, false, "\uFFFD"},
		{[]int{0xF0, 0x9F, 0x98, 0x80}, false, "😀"},
		{[]int{0xC0, 0x80}, false, "\uFFFD\uFFFD"},
		{[]int{0x80, 97}, false, "\uFFFDa"},
		{[]int{0xE4, 268, 0xBD}, false, "\uFFFD<|end|>\uFFFD"},
		{[]int{97, 9999, -1, 98}, false, "ab"}, // ids without a token are skipped
	} {
		if got := tok.Decode(c.ids, c.skip); got != c.want {
			t.Errorf("Decode(%v, %v) = %q, want %q", c.ids, c.skip, got, c.want)
		}
	}
	if got := tok.DecodeWithOptions(tok.Encode("Hello , world . I 'm sure it 's n't", false), DecodeOptions{CleanUpTokenizationSpaces: true}); got != "Hello, world. I'm sure it'sn't" {
		t.Errorf("clean-up = %q", got)
	}
	joined := tiny(t, tinyOptions{decoder: "null"})
	if got := joined.Decode([]int{259, 264}, false); got != "hello Ġworld" {
		t.Errorf("null decoder = %q, want the tokens joined by spaces", got)
	}
}

// TestLookups checks the vocabulary accessors.
func TestLookups(t *testing.T) {
	tok := tiny(t, tinyOptions{})
	if got := tok.VocabSize(); got != 256+len(tinyMerges)+3 {
		t.Errorf("VocabSize = %d", got)
	}
	for s, want := range map[string]int{"Ġworld": 264, "hello": 259, "<|end|>": 268, "<think>": 269, "Ġ": 32} {
		if id, ok := tok.TokenToID(s); !ok || id != want {
			t.Errorf("TokenToID(%q) = %d, %v, want %d", s, id, ok, want)
		}
		if got, ok := tok.IDToToken(want); !ok || got != s {
			t.Errorf("IDToToken(%d) = %q, %v, want %q", want, got, ok, s)
		}
	}
	if _, ok := tok.TokenToID("nope"); ok {
		t.Error("TokenToID(nope) found")
	}
	if _, ok := tok.IDToToken(5000); ok {
		t.Error("IDToToken(5000) found")
	}
	sp := tok.SpecialTokens()
	if len(sp) != 2 || sp[0].Content != "<|end|>" || sp[1].Content != "<|bos|>" || sp[0].ID != 268 || !sp[0].Special {
		t.Errorf("SpecialTokens = %+v", sp)
	}
	if at := tok.AddedTokens(); len(at) != 3 || at[1].Content != "<think>" || at[1].Special {
		t.Errorf("AddedTokens = %+v", at)
	}
	if !tok.IsSpecial(268) || tok.IsSpecial(269) || tok.IsSpecial(259) || tok.IsSpecial(-3) {
		t.Error("IsSpecial")
	}
	for id, want := range map[int]string{259: "hello", 264: " world", 268: "<|end|>", 0xC3: "\xc3", 32: " "} {
		if got, ok := tok.TokenBytes(id); !ok || string(got) != want {
			t.Errorf("TokenBytes(%d) = %q, %v, want %q", id, got, ok, want)
		}
	}
	for _, id := range []int{-1, 5000} {
		if _, ok := tok.TokenBytes(id); ok {
			t.Errorf("TokenBytes(%d) found", id)
		}
	}
	// Token bytes concatenate to the text, also where a character is split
	// between tokens.
	ids := tok.Encode("héllo world <|end|>", false)
	var all []byte
	for _, id := range ids {
		b, _ := tok.TokenBytes(id)
		all = append(all, b...)
	}
	if string(all) != "héllo world <|end|>" {
		t.Errorf("token bytes of %v join to %q", ids, all)
	}
}

// TestAddedTokenIDs checks that added tokens get ids as HF assigns them.
func TestAddedTokenIDs(t *testing.T) {
	tok := tiny(t, tinyOptions{added: `[
		{"id": 500, "content": "<a>", "special": true},
		{"id": 501, "content": "hello", "special": true},
		{"id": 502, "content": "<b>", "special": false},
		{"id": 503, "content": "<a>", "special": true},
		{"id": 504, "content": "", "special": true}]`, postProcessor: "null"})
	for s, want := range map[string]int{"<a>": 268, "hello": 259, "<b>": 269} {
		if id, ok := tok.TokenToID(s); !ok || id != want {
			t.Errorf("TokenToID(%q) = %d, %v, want %d", s, id, ok, want)
		}
	}
	if got := tok.Encode("<a>hello<b>", false); !slices.Equal(got, []int{268, 259, 269}) {
		t.Errorf("Encode = %v", got)
	}
	if got := tok.Decode([]int{268, 259, 269}, true); got != "<b>" {
		t.Errorf("Decode skipping = %q (hello is special here)", got)
	}
}

// TestConcurrentEncode encodes from many goroutines (run with -race).
func TestConcurrentEncode(t *testing.T) {
	tok := tiny(t, tinyOptions{})
	texts := generatedCorpus(3, 50, 20)
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, true)
	}
	fresh := tiny(t, tinyOptions{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range texts {
				i := (k + g*13) % len(texts)
				if got := fresh.Encode(texts[i], true); !slices.Equal(got, want[i]) {
					t.Errorf("goroutine %d: Encode(%q) = %v, want %v", g, texts[i], got, want[i])
				}
			}
		}()
	}
	wg.Wait()
}

// TestErrors checks that unsupported or malformed files are refused with an
// error that names the problem.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name, json, want string
	}{
		{"malformed JSON", `{"model": `, "tokenizer.json"},
		{"not an object", `[1, 2]`, "tokenizer.json"},
		{"unknown model", strings.Replace(tinyJSON(tinyOptions{}), `"type": "BPE"`, `"type": "Fancy"`, 1), `model type "Fancy" is not supported`},
		{"no model", `{"pre_tokenizer": null}`, "model is missing"},
		{"Unigram unk_id", `{"model": {"type": "Unigram", "unk_id": 3, "vocab": [["a", 0.0]]}}`, `model (Unigram): unk_id 3 is outside the vocabulary`},
		{"WordPiece vocab", `{"model": {"type": "WordPiece", "vocab": [1]}}`, `model (WordPiece): vocab`},
		{"dropout", tinyJSON(tinyOptions{model: `, "dropout": 0.1`}), "dropout"},
		{"unk not in vocab", tinyJSON(tinyOptions{model: `, "unk_token": "<unk>"`}), `unk_token "<unk>" is not in the vocabulary`},
		{"bad merge", strings.Replace(tinyJSON(tinyOptions{}), `"h e"`, `"h q9"`, 1), `"q9" is not in the vocabulary`},
		{"merge of three", strings.Replace(tinyJSON(tinyOptions{}), `"h e"`, `"h e x"`, 1), "not two tokens"},
		{"Precompiled normalizer", tinyJSON(tinyOptions{normalizer: `{"type": "Precompiled", "precompiled_charsmap": "AAAA"}`}), `normalizer (Precompiled): the Precompiled normalizer`},
		{"nested normalizer", tinyJSON(tinyOptions{normalizer: `{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Fancy"}]}`}), `normalizer.normalizers[1]: unsupported normalizer type "Fancy"`},
		{"Replace without content", tinyJSON(tinyOptions{normalizer: `{"type": "Replace", "pattern": {"String": " "}}`}), `normalizer (Replace): want a pattern and a content string`},
		{"UnicodeScripts pre-tokenizer", tinyJSON(tinyOptions{preTokenizer: `{"type": "UnicodeScripts"}`}), `unsupported pre-tokenizer type "UnicodeScripts"`},
		{"Metaspace scheme", tinyJSON(tinyOptions{preTokenizer: `{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}`}), `pre_tokenizer (Metaspace): unsupported prepend_scheme "sometimes"`},
		{"Metaspace replacement", tinyJSON(tinyOptions{preTokenizer: `{"type": "Metaspace", "replacement": "ab"}`}), `must be one character`},
		{"empty String pattern", tinyJSON(tinyOptions{preTokenizer: `{"type": "Split", "pattern": {"String": ""}, "behavior": "Removed", "invert": false}`}), "non-empty String or a Regex"},
		{"back-reference", tinyJSON(tinyOptions{preTokenizer: `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(a)\\1"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel"}]}`}), `pre_tokenizer.pretokenizers[0] (Split): unsupported regex pattern: regex "(a)\\1"`},
		{"unknown behavior", tinyJSON(tinyOptions{preTokenizer: `{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"String": "-"}, "behavior": "Sideways", "invert": false}, {"type": "ByteLevel"}]}`}), `unsupported behavior "Sideways"`},
		{"CTC decoder", tinyJSON(tinyOptions{decoder: `{"type": "CTC"}`}), `unsupported decoder type "CTC"`},
		{"Strip decoder", tinyJSON(tinyOptions{decoder: `{"type": "Strip", "content": "ab", "start": 1, "stop": 0}`}), `decoder (Strip): want one content character`},
		{"unknown post-processor", tinyJSON(tinyOptions{postProcessor: `{"type": "Fancy"}`}), `unsupported post-processor type "Fancy"`},
		{"template without its token", tinyJSON(tinyOptions{postProcessor: `{"type": "TemplateProcessing", "single": ["[CLS]", "$A"], "special_tokens": {}}`}), `special token "[CLS]" is missing`},
		{"template with B", tinyJSON(tinyOptions{postProcessor: `{"type": "TemplateProcessing", "single": ["$A", "$B"], "special_tokens": {}}`}), `refers to sequence "B"`},
		{"truncation", strings.Replace(tinyJSON(tinyOptions{}), `"truncation": null`, `"truncation": {"max_length": 8}`, 1), "truncation is not supported"},
		{"padding", strings.Replace(tinyJSON(tinyOptions{}), `"padding": null`, `"padding": {"strategy": "BatchLongest"}`, 1), "padding is not supported"},
	} {
		tok, err := Parse([]byte(c.json))
		if err == nil {
			t.Errorf("%s: Parse succeeded (%v)", c.name, tok != nil)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "hftok: ") {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("Load(missing) = %v", err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, []byte(`{"model": {"type": "WordLevel"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "WordLevel") {
		t.Errorf("Load(WordLevel file without vocab) = %v, want an error naming the file and the model", err)
	}
	if _, err := ParseConfig([]byte(`{"bos_token": 3}`)); err == nil || !strings.Contains(err.Error(), "bos_token") {
		t.Errorf("ParseConfig(bad bos) = %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// TestConfig checks tokenizer_config.json parsing.
func TestConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "</s>", "pad_token": null,
		"additional_special_tokens": ["<x>", {"content": "<y>"}], "clean_up_tokenization_spaces": true, "add_bos_token": false,
		"chat_template": "{{ messages }}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.BOSToken != "<s>" || c.EOSToken != "</s>" || c.PadToken != "" || !slices.Equal(c.AdditionalSpecialTokens, []string{"<x>", "<y>"}) ||
		!c.CleanUpTokenizationSpaces || c.AddBOSToken == nil || *c.AddBOSToken || c.AddEOSToken != nil || c.ChatTemplate != "{{ messages }}" {
		t.Errorf("ParseConfig = %+v", c)
	}
}
