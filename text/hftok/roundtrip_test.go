package hftok

import (
	"os"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// roundTripTokenizers returns the tokenizers to round-trip through: the
// tiny one always, the real files when installed. want maps a valid input
// to what Decode(Encode(s)) must give: s itself, or its NFC form for Qwen
// (whose normalizer is NFC).
type roundTripper struct {
	name string
	tok  *Tokenizer
	want func(string) string
}

func roundTripTokenizers(t testing.TB) []roundTripper {
	t.Helper()
	same := func(s string) string { return s }
	out := []roundTripper{{"tiny", tiny(t, tinyOptions{}), same}}
	for _, f := range []struct {
		file realFile
		want func(string) string
	}{{qwen3File, norm.NFC.String}, {llama3File, same}} {
		if _, err := os.Stat(f.file.tokenizer); err == nil {
			out = append(out, roundTripper{f.file.name, loadReal(t, f.file.tokenizer), f.want})
		}
	}
	return out
}

// checkRoundTrip checks Decode(Encode(s)) for s with special tokens not
// recognised and recognised.
func checkRoundTrip(t *testing.T, rt roundTripper, s string) {
	t.Helper()
	want := rt.want(s)
	for _, opts := range []EncodeOptions{{}, {AllowSpecial: true}} {
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
