package chattemplate

// Python's str operations, for filters and str methods.

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// isPySpace is Python's str.isspace for one character, which \s in
// Jinja2's regular expressions also follows.
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

var upperCaser = cases.Upper(language.Und)
var lowerCaser = cases.Lower(language.Und)

func pyUpper(s string) string { return upperCaser.String(s) }
func pyLower(s string) string { return lowerCaser.String(s) }

// pyCapitalize is str.capitalize: the first character in title case, the
// rest lower.
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToTitle(r)) + pyLower(s[n:])
}

// jinjaTitle is Jinja2's title filter: each word (split at runs of
// whitespace, "-", "(", "{", "[" and "<") gets its first character upper
// and the rest lower.
func jinjaTitle(s string) string {
	var b strings.Builder
	isSep := func(r rune) bool { return isPySpace(r) || strings.ContainsRune("-({[<", r) }
	word := true
	start := 0
	flush := func(end int) {
		if start < end {
			w := s[start:end]
			r, n := utf8.DecodeRuneInString(w)
			b.WriteString(pyUpper(string(r)) + pyLower(w[n:]))
		}
	}
	for i, c := range s {
		if isSep(c) {
			if word {
				flush(i)
				word = false
				start = i
			}
		} else if !word {
			b.WriteString(s[start:i])
			word = true
			start = i
		}
	}
	if word {
		flush(len(s))
	} else {
		b.WriteString(s[start:])
	}
	return b.String()
}

// pySwapcase is str.swapcase.
func pySwapcase(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case unicode.IsUpper(c):
			b.WriteString(pyLower(string(c)))
		case unicode.IsLower(c):
			b.WriteString(pyUpper(string(c)))
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// pyTitle is str.title.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, c := range s {
		cased := unicode.IsUpper(c) || unicode.IsLower(c) || unicode.IsTitle(c)
		switch {
		case cased && !prevCased:
			b.WriteString(string(unicode.ToTitle(c)))
		case cased:
			b.WriteString(pyLower(string(c)))
		default:
			b.WriteRune(c)
		}
		prevCased = cased
	}
	return b.String()
}

// pyStrip is str.strip/lstrip/rstrip; chars nil strips whitespace.
func pyStrip(s string, chars any, left, right bool) (string, error) {
	var cut func(rune) bool
	switch c := chars.(type) {
	case nil:
		cut = isPySpace
	case string:
		cut = func(r rune) bool { return strings.ContainsRune(c, r) }
	default:
		return "", fmt.Errorf("strip arg must be None or str")
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

// pySplit is str.split(sep, maxsplit).
func pySplit(s string, sep any, maxsplit int64) ([]string, error) {
	switch sp := sep.(type) {
	case nil:
		var out []string
		i := 0
		for {
			for i < len(s) {
				r, n := utf8.DecodeRuneInString(s[i:])
				if !isPySpace(r) {
					break
				}
				i += n
			}
			if i >= len(s) {
				return out, nil
			}
			if maxsplit >= 0 && int64(len(out)) >= maxsplit {
				return append(out, s[i:]), nil
			}
			j := i
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if isPySpace(r) {
					break
				}
				j += n
			}
			out = append(out, s[i:j])
			i = j
		}
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		n := -1
		if maxsplit >= 0 {
			n = int(maxsplit) + 1
		}
		return strings.SplitN(s, sp, n), nil
	}
	return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
}

// pyRSplit is str.rsplit(sep, maxsplit).
func pyRSplit(s string, sep any, maxsplit int64) ([]string, error) {
	if maxsplit < 0 {
		return pySplit(s, sep, maxsplit)
	}
	switch sp := sep.(type) {
	case nil:
		var out []string
		j := len(s)
		for {
			for j > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:j])
				if !isPySpace(r) {
					break
				}
				j -= n
			}
			if j == 0 {
				break
			}
			if int64(len(out)) >= maxsplit {
				out = append(out, s[:j])
				break
			}
			i := j
			for i > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:i])
				if isPySpace(r) {
					break
				}
				i -= n
			}
			out = append(out, s[i:j])
			j = i
		}
		reverseStrings(out)
		return out, nil
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		var out []string
		for int64(len(out)) < maxsplit {
			i := strings.LastIndex(s, sp)
			if i < 0 {
				break
			}
			out = append(out, s[i+len(sp):])
			s = s[:i]
		}
		out = append(out, s)
		reverseStrings(out)
		return out, nil
	}
	return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
}

func reverseStrings(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// pySplitlines is str.splitlines(keepends).
func pySplitlines(s string, keep bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end := i + n
			if r == '\r' && end < len(s) && s[end] == '\n' {
				end++
			}
			if keep {
				out = append(out, s[start:end])
			} else {
				out = append(out, s[start:i])
			}
			start = end
			i = end
			continue
		}
		i += n
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func strList(ss []string) *listV {
	l := &listV{items: make([]any, len(ss))}
	for i, s := range ss {
		l.items[i] = s
	}
	return l
}

// pyReplace is str.replace(old, new, count).
func pyReplace(s, old, new string, count int64) string {
	if count < 0 {
		count = -1
	}
	if old == "" {
		// Python inserts new before every character and at the end.
		var b strings.Builder
		n := int64(0)
		for _, c := range s {
			if count >= 0 && n >= count {
				b.WriteRune(c)
				continue
			}
			b.WriteString(new)
			b.WriteRune(c)
			n++
		}
		if count < 0 || n < count {
			b.WriteString(new)
		}
		if s == "" && count != 0 {
			return new
		}
		return b.String()
	}
	return strings.Replace(s, old, new, int(count))
}

// runeRange converts Python's start/end arguments to byte offsets.
func runeRange(s string, start, end any) (int, int, error) {
	n := utf8.RuneCountInString(s)
	conv := func(v any, def int) (int, error) {
		if v == nil || v == missing {
			return def, nil
		}
		i, _, isFloat, ok := number(v)
		if !ok || isFloat {
			return 0, fmt.Errorf("slice indices must be integers or None")
		}
		if i < 0 {
			i += int64(n)
			if i < 0 {
				i = 0
			}
		}
		if i > int64(n) {
			i = int64(n)
		}
		return int(i), nil
	}
	a, err := conv(start, 0)
	if err != nil {
		return 0, 0, err
	}
	b, err := conv(end, n)
	if err != nil {
		return 0, 0, err
	}
	return runeOffset(s, a), runeOffset(s, max(a, b)), nil
}

func runeOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

// caseTest is str.islower (lower true) or str.isupper: at least one cased
// character and none of the other case.
func caseTest(s string, lower bool) bool {
	cased := false
	for _, c := range s {
		if unicode.IsUpper(c) || unicode.IsTitle(c) {
			if lower {
				return false
			}
			cased = true
		} else if unicode.IsLower(c) {
			if !lower {
				return false
			}
			cased = true
		}
	}
	return cased
}

// pad is str.center, ljust or rjust (how) to w characters with fill.
func pad(s string, w int, fill, how string) string {
	n := utf8.RuneCountInString(s)
	if w <= n {
		return s
	}
	total := w - n
	left := 0
	switch how {
	case "center":
		left = total / 2
		if total%2 == 1 && w%2 == 1 {
			left++
		}
	case "rjust":
		left = total
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, total-left)
}
