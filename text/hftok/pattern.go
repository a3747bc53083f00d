package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrl/agentrl/text/hftok/internal/onigre"
)

// HF runs the regular expressions of Split pre-tokenizers, Replace
// normalizers and Replace decoders with Oniguruma; internal/onigre is a
// backtracking engine with its semantics. The pre-tokenizer patterns of
// the most common model families also have hand-written matchers here,
// derived alternative by alternative from the backtracking semantics (see
// matchCL100K and matchGPT2): they are several times faster than the
// engine, and a test checks that both give the same pieces.

// Pattern strings as they appear in tokenizer.json files.
const (
	// PatternGPT2 is the GPT-2 regex of HF's ByteLevel pre-tokenizer
	// (use_regex: true).
	PatternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// PatternLlama3 is the Split pattern of Llama-3 (and OpenAI's cl100k_base):
	// case-insensitive contractions and numbers in runs of at most three.
	PatternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternQwen2 is the Split pattern of Qwen2, Qwen2.5 and Qwen3: Llama-3's
	// with every number character on its own.
	PatternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// matcher returns the end of the pattern's match starting exactly at s[i:]
// (i < len(s)), or -1 when no match starts there. For the supported patterns
// some alternative always matches, so the leftmost match from i starts at i.
type matcher func(s string, i int) int

// knownPatterns maps the patterns with hand-written matchers to them.
var knownPatterns = map[string]matcher{
	PatternGPT2:   matchGPT2,
	PatternLlama3: func(s string, i int) int { return matchCL100K(s, i, 3) },
	PatternQwen2:  func(s string, i int) int { return matchCL100K(s, i, 1) },
}

// findAll appends the [start, end) offsets of the successive non-overlapping
// leftmost matches of m in s, as a regex find_iter does.
func findAll(dst [][2]int, s string, m matcher) [][2]int {
	for i := 0; i < len(s); {
		if e := m(s, i); e > i {
			dst = append(dst, [2]int{i, e})
			i = e
			continue
		}
		_, w := classAt(s, i)
		i += w
	}
	return dst
}

// contraction returns the byte length of the contraction suffix (s, t, re,
// ve, m, ll, d) at s[j:] after an apostrophe, or 0. With fold it matches as
// Oniguruma's (?i:...) does, by Unicode case folding: ASCII either case, and
// U+017F LATIN SMALL LETTER LONG S, which folds to s. (Of the letters
// involved, only s has a non-ASCII fold partner; tokenizers.js folds ASCII
// only and so differs from HF on "'ſ".)
func contraction(s string, j int, fold bool) int {
	if j >= len(s) {
		return 0
	}
	c := s[j]
	if fold {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		} else if c == 0xC5 && j+1 < len(s) && s[j+1] == 0xBF { // U+017F
			return 2
		}
	}
	switch c {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v', 'l':
		if j+1 >= len(s) {
			return 0
		}
		d := s[j+1]
		if fold && d >= 'A' && d <= 'Z' {
			d += 'a' - 'A'
		}
		if (c == 'l' && d == 'l') || (c != 'l' && d == 'e') {
			return 2
		}
	}
	return 0
}

// spaceTail returns the end of the whitespace run starting at i and where the
// two whitespace alternatives \s+(?!\S) and \s+ end: the whole run when it
// reaches the end of s, else all of it but its last character when it has at
// least two, else the whole (one-character) run.
func spaceTail(s string, i int) int {
	end := runEnd(s, i, clsSpace)
	if end == len(s) {
		return end
	}
	_, w := utf8.DecodeLastRuneInString(s[i:end])
	if last := end - w; last > i {
		return last
	}
	return end
}

// matchCL100K matches PatternLlama3 (maxDigits 3) or PatternQwen2 (maxDigits
// 1) at s[i:]. The alternatives, tried in order as Oniguruma does:
//
//  1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
//  2. [^\r\n\p{L}\p{N}]?\p{L}+ — a letter run, optionally preceded by one
//     character that is neither \r, \n, a letter nor a number;
//  3. \p{N}{1,maxDigits}
//  4. ' '?[^\s\p{L}\p{N}]+[\r\n]* — a run of "other" characters, optionally
//     after one space, with the newlines that follow it;
//  5. \s*[\r\n]+ — backtracking makes it end right after the last \r or \n of
//     the whitespace run;
//  6. \s+(?!\S) and 7. \s+ — see spaceTail.
func matchCL100K(s string, i int, maxDigits int) int {
	c := s[i]
	if c == '\'' {
		if n := contraction(s, i+1, true); n > 0 {
			return i + 1 + n
		}
	}
	cls, w := classAt(s, i)
	if cls == clsLetter {
		return runEnd(s, i, clsLetter)
	}
	if cls != clsNumber && c != '\r' && c != '\n' && i+w < len(s) {
		if next, _ := classAt(s, i+w); next == clsLetter {
			return runEnd(s, i+w, clsLetter)
		}
	}
	if cls == clsNumber {
		end := i
		for k := 0; k < maxDigits && end < len(s); k++ {
			c2, w2 := classAt(s, end)
			if c2 != clsNumber {
				break
			}
			end += w2
		}
		return end
	}
	start := -1
	if c == ' ' {
		if i+1 < len(s) {
			if next, _ := classAt(s, i+1); next == clsOther {
				start = i + 1
			}
		}
	} else if cls == clsOther {
		start = i
	}
	if start >= 0 {
		end := runEnd(s, start, clsOther)
		for end < len(s) && (s[end] == '\r' || s[end] == '\n') {
			end++
		}
		return end
	}
	// Whitespace.
	end := runEnd(s, i, clsSpace)
	for k := end - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	return spaceTail(s, i)
}

// matchGPT2 matches PatternGPT2 at s[i:]: case-sensitive contractions, then
// ' '?\p{L}+, ' '?\p{N}+, ' '?[^\s\p{L}\p{N}]+ (a space followed by a
// run of one class joins it), then the whitespace alternatives of spaceTail.
func matchGPT2(s string, i int) int {
	c := s[i]
	if c == '\'' {
		if n := contraction(s, i+1, false); n > 0 {
			return i + 1 + n
		}
	}
	if c == ' ' && i+1 < len(s) {
		if next, _ := classAt(s, i+1); next != clsSpace {
			return runEnd(s, i+1, next)
		}
	}
	if cls, _ := classAt(s, i); cls != clsSpace {
		return runEnd(s, i, cls)
	}
	return spaceTail(s, i)
}

// pattern is the pattern of a Split, a Replace normalizer or a Replace
// decoder: a literal string (HF escapes it into a regex) or a regex.
type pattern struct {
	literal string         // a String pattern
	hand    matcher        // a Regex with a hand-written matcher
	re      *onigre.Regexp // any other Regex
}

// patternJSON is {"String": "..."} or {"Regex": "..."}.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func (pj patternJSON) compile() (*pattern, error) {
	switch {
	case pj.Regex != nil:
		if m, ok := knownPatterns[*pj.Regex]; ok {
			return &pattern{hand: m}, nil
		}
		re, err := onigre.Compile(*pj.Regex)
		if err != nil {
			return nil, fmt.Errorf("unsupported regex pattern: %w", err)
		}
		return &pattern{re: re}, nil
	case pj.String != nil && *pj.String != "":
		return &pattern{literal: *pj.String}, nil
	}
	return nil, fmt.Errorf("pattern must be a non-empty String or a Regex")
}

// parsePatternJSON reads a pattern object.
func parsePatternJSON(raw json.RawMessage) (*pattern, error) {
	var pj patternJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, err
	}
	return pj.compile()
}

// findAll appends the [start, end) offsets of the pattern's successive
// matches in s.
func (p *pattern) findAll(dst [][2]int, s string) [][2]int {
	switch {
	case p.hand != nil:
		return findAll(dst, s, p.hand)
	case p.re != nil:
		return p.re.FindAll(dst, s)
	}
	for i := 0; i <= len(s)-len(p.literal); {
		j := strings.Index(s[i:], p.literal)
		if j < 0 {
			break
		}
		dst = append(dst, [2]int{i + j, i + j + len(p.literal)})
		i += j + len(p.literal)
	}
	return dst
}

// replaceAll replaces every match in s with content.
func (p *pattern) replaceAll(s, content string) string {
	if p.literal != "" {
		return strings.ReplaceAll(s, p.literal, content)
	}
	ms := p.findAll(nil, s)
	if len(ms) == 0 {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, m := range ms {
		b.WriteString(s[prev:m[0]])
		b.WriteString(content)
		prev = m[1]
	}
	b.WriteString(s[prev:])
	return b.String()
}
