package onigre

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func pieces(re *Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAll(nil, s) {
		out = append(out, s[m[0]:m[1]])
	}
	return out
}

// The pre-tokenizer patterns of real tokenizer.json files.
const (
	gpt2     = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	cl100k   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2    = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200k    = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	deepseek = `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_` + "`" + `{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// TestPieces checks matches worked out by hand from Oniguruma's
// backtracking semantics.
func TestPieces(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          []string
	}{
		{qwen2, "Hello  world\n\n  x", []string{"Hello", " ", " world", "\n\n", " ", " x"}},
		{qwen2, "a   b", []string{"a", "  ", " b"}},
		{qwen2, "  \n  ", []string{"  \n", "  "}},
		{qwen2, " \n \n x", []string{" \n \n", " x"}},
		{qwen2, "I'M you'Re don't", []string{"I", "'M", " you", "'Re", " don", "'t"}},
		{qwen2, "'ſa", []string{"'ſ", "a"}},
		{qwen2, "12345", []string{"1", "2", "3", "4", "5"}},
		{cl100k, "1234567", []string{"123", "456", "7"}},
		{cl100k, "x²³⁴⁵", []string{"x", "²³⁴", "⁵"}},
		{qwen2, "...\n\nnext", []string{"...\n\n", "next"}},
		{qwen2, "a\u0085\u0085b", []string{"a", "\u0085", "\u0085b"}},
		{qwen2, "a\u200b\u200bb", []string{"a", "\u200b\u200b", "b"}},
		{qwen2, "a\xff\xfeb", []string{"a", "\xff\xfe", "b"}},
		{gpt2, "Hello  world\n\n  x", []string{"Hello", " ", " world", "\n\n ", " x"}},
		{gpt2, "I'M you're", []string{"I", "'", "M", " you", "'re"}},
		{gpt2, "a \xff", []string{"a", " \xff"}},
		{o200k, "HelloWorld don't", []string{"Hello", "World", " don't"}},
		{o200k, "ABCdef GHI", []string{"ABCdef", " GHI"}},
		{o200k, "path/to/x\n", []string{"path", "/to", "/x", "\n"}},
		{o200k, "a.//\nb", []string{"a", ".//\n", "b"}},
		{deepseek, "foo.bar", []string{"foo", ".bar"}},
		{deepseek, "x=1", []string{"x", "="}}, // digits are split off by an earlier step
		{`\p{N}{1,3}`, "a12345b", []string{"123", "45"}},
		{`[一-龥぀-ゟ゠-ヿ]+`, "ab中文カタ123", []string{"中文カタ"}},
		// Empty matches: Oniguruma's search loop skips one right after a match.
		{`a*`, "baab", []string{"", "aa", ""}},
		{`x*`, "", []string{""}},
		{`(?=a)`, "aa", []string{"", ""}},
		// Lazy, possessive, atomic.
		{`a+?`, "aaa", []string{"a", "a", "a"}},
		{`a{2,3}?`, "aaaaa", []string{"aa", "aa"}},
		{`a*+a`, "aaa", nil},
		{`(?>a*)a`, "aaa", nil},
		{`(?:ab)++c`, "ababc", []string{"ababc"}},
		// Look-behind.
		{`(?<=\d)x`, "1x ax 2x", []string{"x", "x"}},
		{`(?<!\d)x`, "1x ax", []string{"x"}},
		{`(?<=ab|c)d`, "abd cd bd", []string{"d", "d"}},
		// Anchors (^ and $ are line anchors in Ruby syntax).
		{`^\w+`, "one two\nthree", []string{"one", "three"}},
		{`\w+$`, "one two\nthree", []string{"two", "three"}},
		{`\bis\b`, "this is it", []string{"is"}},
		{`\Aa`, "aa", []string{"a"}},
		{`a\z`, "aa", []string{"a"}},
		// Classes.
		{`[^a-c]+`, "abxyzc", []string{"xyz"}},
		{`[a-z&&[^aeiou]]+`, "hello", []string{"h", "ll"}},
		{`[[:digit:][:upper:]]+`, "aB9c", []string{"B9"}},
		{`[\p{Lu}\d]+`, "aB9c", []string{"B9"}},
		{`\h+`, "xDEADbeefz", []string{"DEADbeef"}},
		{`[-a]+`, "b-a-c", []string{"-a-"}},
		{`(?i)[a-c]+`, "xAbCx", []string{"AbC"}},
		{`(?i:k)`, "k K \u212a", []string{"k", "K", "\u212a"}},
		{`.+`, "ab\ncd", []string{"ab", "cd"}},
		{`(?m:.+)`, "ab\ncd", []string{"ab\ncd"}},
		{`\x41\x{42}\u0043`, "ABC", []string{"ABC"}},
		{`a{,2}`, "aaa", []string{"aa", "a"}},
		{`a{x`, "a{x", []string{"a{x"}},
		{`(a|ab)(c|bcd)(d*)`, "abcd", []string{"abcd"}},
		{`(?#comment)a`, "a", []string{"a"}},
		// An isolated option takes the rest of the group, alternatives
		// included: a(?i)b|c is a(?i:b|c) in Oniguruma.
		{`a(?i)b|c`, "aB C ac", []string{"aB", "ac"}},
	} {
		re, err := Compile(c.pattern)
		if err != nil {
			t.Errorf("Compile(%q): %v", c.pattern, err)
			continue
		}
		if got := pieces(re, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%.30q on %q: got %q, want %q", c.pattern, c.text, got, c.want)
		}
	}
}

// TestAgainstRE2 compares with Go's regexp on patterns whose leftmost-first
// semantics RE2 shares (no look-around, no possessive or lazy subtleties).
func TestAgainstRE2(t *testing.T) {
	patterns := []string{`[a-z]+`, `\d+|[a-z]+`, `a|ab|abc`, `(?:ab|a)c?`, `x*y`, `[^ ]+`, `(?:a|b)*c`, `\p{L}+|\p{N}`, `a{2,3}`, `(?:a{1,2}b){2}`}
	texts := []string{"", "abc 123 abcabc", "aaab aabab xy xxy", "ab abc aab ababc", "你好 world 42", "aaaaaaa"}
	for _, p := range patterns {
		re := MustCompile(p)
		std := regexp.MustCompile(p)
		for _, s := range texts {
			var want []string
			for _, m := range std.FindAllStringIndex(s, -1) {
				want = append(want, s[m[0]:m[1]])
			}
			if got := pieces(re, s); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%q on %q: got %q, regexp gives %q", p, s, got, want)
			}
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct{ pattern, want string }{
		{`(a`, "missing )"},
		{`a)`, "unmatched )"},
		{`[a`, "unterminated character class"},
		{`\1`, "back-references"},
		{`\p{Klingon}`, `unknown Unicode property "Klingon"`},
		{`(?<=a+)b`, "unbounded"},
		{`*a`, "without an operand"},
		{`(?x)a`, ""},
		{`\K`, "unsupported escape"},
		{`[z-a]`, "empty range"},
		{`(?:ab){300}{300}`, "too large"},
	} {
		_, err := Compile(c.pattern)
		if err == nil {
			if c.want != "" {
				t.Errorf("Compile(%q) succeeded", c.pattern)
			}
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compile(%q) = %v, want %q", c.pattern, err, c.want)
		}
	}
}

func TestMatchAt(t *testing.T) {
	re := MustCompile(`\s+(?!\S)|\s+`)
	if e, ok := re.MatchAt("a   b", 1); !ok || e != 3 {
		t.Errorf("MatchAt = %d, %v", e, ok)
	}
	if _, ok := re.MatchAt("ab", 0); ok {
		t.Error("MatchAt matched a letter")
	}
}

// TestClassBitmaps checks the classes' bitmaps against their definitions.
func TestClassBitmaps(t *testing.T) {
	for _, p := range []string{`[^\r\n\p{L}\p{N}]`, `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, `(?i)[a-zſ]`, `[a-z&&[^aeiou]]`, `\s`, `[^\s\p{L}\p{N}]`, `[一-龥぀-ゟ゠-ヿ]`} {
		re := MustCompile(p)
		cls := re.prog.insts[0].ch.cls
		bmp := cls.bmp
		cls.bmp = nil
		for r := rune(0); r < 0x10000; r++ {
			if want, got := cls.Matches(r), bmp[r>>6]&(1<<(r&63)) != 0; want != got {
				t.Fatalf("%s: bitmap says %v for %U, the class %v", p, got, r, want)
			}
		}
	}
}

// TestPathological bounds the work of nested quantifiers on a long input.
func TestPathological(t *testing.T) {
	re := MustCompile(`\s*[\r\n]+|\s+(?!\S)|\s+`)
	s := strings.Repeat(" ", 20000) + "x"
	if got := re.FindAll(nil, s); !slices.Equal(got, [][2]int{{0, 19999}, {19999, 20000}}) {
		t.Errorf("FindAll = %v", got)
	}
}

func BenchmarkFindAll(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. 12345 你好世界 I'm here!\n\n  ", 200)
	for _, p := range []struct{ name, pattern string }{{"qwen2", qwen2}, {"o200k", o200k}, {"deepseek", deepseek}} {
		re := MustCompile(p.pattern)
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var dst [][2]int
			for b.Loop() {
				dst = re.FindAll(dst[:0], text)
			}
		})
	}
}

// FuzzFindAll runs the tokenizer patterns on arbitrary text: the matches
// must be in order, within the text, on character boundaries, and each
// must be what MatchAt finds at its start.
func FuzzFindAll(f *testing.F) {
	for _, s := range []string{"Hello  world\n\n  x", "I'M 12345 你好 \xff\xfe", "a.//\nb", " \u0085\u3000\ufeff"} {
		f.Add(s)
	}
	var res []*Regexp
	for _, p := range []string{gpt2, cl100k, qwen2, o200k, deepseek, `a*`, `(?<=\d)x|\b\w+\b`, `(?:ab|a)+?c?`} {
		res = append(res, MustCompile(p))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, re := range res {
			prev := 0
			for _, m := range re.FindAll(nil, s) {
				if m[0] < prev || m[1] < m[0] || m[1] > len(s) {
					t.Fatalf("%q on %q: bad match %v after %d", re, s, m, prev)
				}
				if end, ok := re.MatchAt(s, m[0]); !ok || end != m[1] {
					t.Fatalf("%q on %q: match %v, MatchAt gives %d, %v", re, s, m, end, ok)
				}
				prev = m[1]
			}
		}
	})
}

// FuzzCompile compiles arbitrary patterns: no panic, and a compiled one
// runs on a short text.
func FuzzCompile(f *testing.F) {
	for _, p := range []string{gpt2, o200k, `[a-z&&[^b]]+`, `(?i)(?<!x)k{2,}?`, `\p{^L}`, `a{,3}+`, `(?>a|ab)c`} {
		f.Add(p, "abc kK 12")
	}
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(s) > 24 || len(p) > 64 {
			return
		}
		re, err := Compile(p)
		if err != nil {
			return
		}
		re.FindAll(nil, s)
	})
}
