package hftok

import (
	"slices"
	"testing"

	"github.com/agentrl/agentrl/text/hftok/internal/onigre"
)

// TestPatternPieces checks each supported pattern's pieces on tricky inputs.
// The expected pieces are worked out by hand from the regexes' backtracking
// semantics; all of them agree with Oniguruma 6.9.8 (the engine HF's
// tokenizers library uses).
func TestPatternPieces(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          []string
	}{
		// \s+(?!\S): a whitespace run before a non-space gives its last
		// space to the next piece; \s*[\r\n]+ ends at the run's last newline.
		{PatternQwen2, "Hello  world\n\n  x", []string{"Hello", " ", " world", "\n\n", " ", " x"}},
		{PatternQwen2, "a   b", []string{"a", "  ", " b"}},
		{PatternQwen2, "  \n  ", []string{"  \n", "  "}},
		{PatternQwen2, "end   ", []string{"end", "   "}},
		{PatternQwen2, " \n \n x", []string{" \n \n", " x"}},
		{PatternQwen2, "a\r\n\r\nb", []string{"a", "\r\n\r\n", "b"}},
		{PatternQwen2, "x\t.y", []string{"x", "\t", ".y"}},
		{PatternQwen2, "a \t b", []string{"a", " \t", " b"}},
		{PatternQwen2, "\tword", []string{"\tword"}}, // any non-\r\n non-letter non-number joins a word
		{PatternQwen2, "\nword", []string{"\n", "word"}},
		{PatternQwen2, "\u3000中文", []string{"\u3000中文"}},
		{PatternQwen2, " 1", []string{" ", "1"}},
		// Contractions, case-insensitive (with U+017F folding to s).
		{PatternQwen2, "I'M you'Re don't", []string{"I", "'M", " you", "'Re", " don", "'t"}},
		{PatternQwen2, "'sup 'LL 'lL 'x", []string{"'s", "up", " '", "LL", " '", "lL", " '", "x"}},
		{PatternQwen2, "we'll they've", []string{"we", "'ll", " they", "'ve"}},
		{PatternQwen2, "'ſa", []string{"'ſ", "a"}},
		{PatternQwen2, "''s", []string{"''", "s"}},
		// Numbers: one per piece (Qwen), up to three (Llama-3).
		{PatternQwen2, "12345", []string{"1", "2", "3", "4", "5"}},
		{PatternQwen2, "3.14", []string{"3", ".", "1", "4"}},
		{PatternLlama3, "1234567", []string{"123", "456", "7"}},
		{PatternLlama3, "12 345", []string{"12", " ", "345"}},
		{PatternLlama3, "x²³⁴⁵", []string{"x", "²³⁴", "⁵"}},
		// Punctuation runs take the newlines after them.
		{PatternQwen2, "(hello)", []string{"(hello", ")"}},
		{PatternQwen2, "...\n\nnext", []string{"...\n\n", "next"}},
		{PatternQwen2, " !!\nx", []string{" !!\n", "x"}},
		{PatternQwen2, "a.b", []string{"a", ".b"}},
		{PatternQwen2, "<|im_start|>", []string{"<|", "im", "_start", "|>"}},
		{PatternQwen2, "e\u0301", []string{"e", "\u0301"}}, // a combining mark is not a letter
		// GPT-2: case-sensitive contractions, one optional space before a run.
		{PatternGPT2, "Hello  world\n\n  x", []string{"Hello", " ", " world", "\n\n ", " x"}},
		{PatternGPT2, "I'M you're", []string{"I", "'", "M", " you", "'re"}},
		{PatternGPT2, " 123abc", []string{" 123", "abc"}},
		{PatternGPT2, "a  1", []string{"a", " ", " 1"}},
		{PatternGPT2, "hi!!  ?", []string{"hi", "!!", " ", " ?"}},
		{PatternGPT2, "\tword", []string{"\t", "word"}},
		{PatternGPT2, "x \n", []string{"x", " \n"}},
		// NEL (U+0085) is White_Space for Oniguruma; ZWSP and BOM are not.
		{PatternQwen2, "a\u0085\u0085b", []string{"a", "\u0085", "\u0085b"}},
		{PatternQwen2, "a\u200b\u200bb", []string{"a", "\u200b\u200b", "b"}},
		{PatternQwen2, "a\u200bb", []string{"a", "\u200bb"}},
		// Invalid UTF-8 bytes are "other" characters.
		{PatternQwen2, "a\xff\xfeb", []string{"a", "\xff\xfe", "b"}},
		{PatternQwen2, "a\xffb", []string{"a", "\xffb"}},
		{PatternGPT2, "a \xff", []string{"a", " \xff"}},
	} {
		var got []string
		for _, m := range findAll(nil, c.text, knownPatterns[c.pattern]) {
			got = append(got, c.text[m[0]:m[1]])
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%.20s… on %q: got %q, want %q", c.pattern, c.text, got, c.want)
		}
	}
}

// TestSplitBehaviors checks the Split behaviours on HF's own example.
func TestSplitBehaviors(t *testing.T) {
	s := "the-final--countdown"
	for _, c := range []struct {
		behavior splitBehavior
		invert   bool
		want     []string
	}{
		{behaviorRemoved, false, []string{"the", "final", "countdown"}},
		{behaviorIsolated, false, []string{"the", "-", "final", "-", "-", "countdown"}},
		{behaviorMergedWithPrevious, false, []string{"the-", "final-", "-", "countdown"}},
		{behaviorMergedWithNext, false, []string{"the", "-final", "-", "-countdown"}},
		{behaviorContiguous, false, []string{"the", "-", "final", "--", "countdown"}},
		{behaviorRemoved, true, []string{"-", "-", "-"}},
		{behaviorIsolated, true, []string{"the", "-", "final", "-", "-", "countdown"}},
		{behaviorMergedWithPrevious, true, []string{"the", "-final", "-", "-countdown"}},
	} {
		st := &splitStep{pat: &pattern{literal: "-"}, behavior: c.behavior, invert: c.invert}
		got, _ := st.split(nil, piece{s: s}, nil)
		if !slices.Equal(pieceTexts(got), c.want) {
			t.Errorf("behavior %d invert %v: got %q, want %q", c.behavior, c.invert, pieceTexts(got), c.want)
		}
	}
	st := &splitStep{pat: &pattern{hand: knownPatterns[PatternQwen2]}, behavior: behaviorRemoved}
	if got, _ := st.split(nil, piece{s: "a b"}, nil); len(got) != 0 {
		t.Errorf("Removed with a pattern matching everything = %q", pieceTexts(got))
	}
}

func pieceTexts(ps []piece) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.s
	}
	return out
}

// TestHandMatchersAgainstEngine checks the hand-written matchers against
// the general regex engine on the reference corpus and generated text.
func TestHandMatchersAgainstEngine(t *testing.T) {
	texts := append(referenceCorpus(), generatedCorpus(5, 2000, 40)...)
	for src, m := range knownPatterns {
		re := onigre.MustCompile(src)
		for _, s := range texts {
			if got, want := findAll(nil, s, m), re.FindAll(nil, s); !slices.Equal(got, want) {
				t.Fatalf("%.30q on %q: hand-written matcher %v, engine %v", src, s, got, want)
			}
		}
	}
}

// FuzzHandMatchers compares the hand-written matchers with the engine on
// arbitrary input.
func FuzzHandMatchers(f *testing.F) {
	for _, s := range handCorpus {
		f.Add(s)
	}
	type pair struct {
		hand matcher
		re   *onigre.Regexp
	}
	var pairs []pair
	for src, m := range knownPatterns {
		pairs = append(pairs, pair{m, onigre.MustCompile(src)})
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range pairs {
			if got, want := findAll(nil, s, p.hand), p.re.FindAll(nil, s); !slices.Equal(got, want) {
				t.Fatalf("%.30q on %q: hand-written matcher %v, engine %v", p.re, s, got, want)
			}
		}
	})
}

// TestByteLevelTable checks GPT-2's bytes_to_unicode against the tests'
// own copy and its inverse.
func TestByteLevelTable(t *testing.T) {
	want := gpt2Bytes()
	for b := range 256 {
		if string(byteRune[b]) != want[b] {
			t.Fatalf("byte %#x -> %q, want %q", b, byteRune[b], want[b])
		}
		if got, ok := byteLevelDecode(want[b]); !ok || len(got) != 1 || got[0] != byte(b) {
			t.Fatalf("decode %q = %v, %v", want[b], got, ok)
		}
	}
	if byteLevelEncode("a b\n") != "aĠbĊ" {
		t.Errorf("byteLevelEncode = %q", byteLevelEncode("a b\n"))
	}
	if _, ok := byteLevelDecode("a b"); ok {
		t.Error("a plain space is outside the byte-level alphabet")
	}
}

// TestAppendLossy checks U+FFFD substitution against Go's own decoder where
// they agree (valid input) and against hand-worked maximal subparts.
func TestAppendLossy(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"abc":              "abc",
		"héllo 你好 😀":       "héllo 你好 😀",
		"\xe4\xbd":         "\uFFFD",
		"\xe4\xbdx":        "\uFFFDx",
		"\xf0\x9f\x98":     "\uFFFD",
		"\xf0\x80\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD", // overlong: F0 needs 90..BF next
		"\xf4\x90\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD", // above U+10FFFF
		"\xed\xa0\x80":     "\uFFFD\uFFFD\uFFFD",       // surrogate
		"\xe0\x80\x80":     "\uFFFD\uFFFD\uFFFD",       // overlong
		"\xc2":             "\uFFFD",
		"\xc2\xc2\xa9":     "\uFFFD©",
		"\xf1\x80\x80":     "\uFFFD",
		"\xfe\xff":         "\uFFFD\uFFFD",
	} {
		if got := string(appendLossy(nil, []byte(in))); got != want {
			t.Errorf("appendLossy(%q) = %q, want %q", in, got, want)
		}
	}
}
