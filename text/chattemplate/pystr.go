package chattemplate

// Python's str operations, for filters and str methods.

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/transform"
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

// pyUpper and pyLower are str.upper and str.lower, without limits (for
// one character, or where the budget was counted).
func pyUpper(s string) string { return upperCaser.String(s) }
func pyLower(s string) string { return lowerCaser.String(s) }

// upper and lower are str.upper and str.lower within the budget.
func (b *budget) upper(what, s string) (string, error) { return b.convertCase(what, true, s) }
func (b *budget) lower(what, s string) (string, error) { return b.convertCase(what, false, s) }

// convertCase is s upper- or lower-cased within the budget.
func (b *budget) convertCase(what string, upper bool, s string) (string, error) {
	w := newSbuf(b, what)
	writeCase(w, upper, s)
	return w.result()
}

// writeCase writes s upper- or lower-cased: ASCII by itself, other text
// with the casers, both a few kilobytes at a time so that w checks the
// budget as the text grows (a case conversion may make a string up to
// three times as long).
func writeCase(w *sbuf, upper bool, s string) {
	if !w.b.spend(int64(len(s))) {
		w.done = true
		return
	}
	if isASCII(s) {
		writeASCIICase(w, upper, s)
		return
	}
	c := lowerCaser
	if upper {
		c = upperCaser
	}
	switch {
	case !w.b.spend(caseCost * int64(len(s))):
		w.done = true
	case len(s) <= 256:
		w.WriteString(c.String(s))
	default:
		writeTransformed(w, c, s)
	}
}

// writeASCIICase writes ASCII s upper- or lower-cased.
func writeASCIICase(w *sbuf, upper bool, s string) {
	lo, hi := byte('a'), byte('z')
	if !upper {
		lo, hi = 'A', 'Z'
	}
	var buf [4096]byte
	for s != "" && !w.done {
		n := copy(buf[:], s)
		s = s[n:]
		for i, c := range buf[:n] {
			if lo <= c && c <= hi {
				buf[i] = c ^ ('a' - 'A') // the other case
			}
		}
		w.Write(buf[:n])
	}
}

// writeTransformed writes s transformed by t, a few kilobytes at a time.
func writeTransformed(w *sbuf, t transform.Transformer, s string) {
	var in, out [4096]byte
	n := 0 // bytes in in
	t.Reset()
	for !w.done {
		k := copy(in[n:], s)
		s = s[k:]
		n += k
		atEOF := s == ""
		nDst, nSrc, err := t.Transform(out[:], in[:n], atEOF)
		w.Write(out[:nDst])
		n = copy(in[:], in[nSrc:n])
		if err == nil && atEOF && n == 0 {
			return
		}
		stuck := nDst == 0 && nSrc == 0 && (err == transform.ErrShortDst || atEOF || n == len(in))
		if err != nil && err != transform.ErrShortDst && err != transform.ErrShortSrc || stuck {
			// No progress (which the casers never make): keep the rest
			// as it is.
			w.Write(in[:n])
			w.WriteString(s)
			return
		}
	}
}

// pyCapitalize is str.capitalize within the budget: the first character
// in title case, the rest lower.
func (b *budget) capitalize(what, s string) (string, error) {
	w := newSbuf(b, what)
	if s != "" {
		r, n := utf8.DecodeRuneInString(s)
		w.WriteRune(unicode.ToTitle(r))
		writeCase(w, false, s[n:])
	}
	return w.result()
}

// writeUpperRune and writeLowerRune write one character upper- or
// lower-cased, as str.upper and str.lower do.
func writeUpperRune(w *sbuf, c rune) {
	switch {
	case c < utf8.RuneSelf:
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		w.writeByte(byte(c))
	case w.b.spend(caseRuneCost):
		w.WriteString(pyUpper(string(c)))
	default:
		w.done = true
	}
}

func writeLowerRune(w *sbuf, c rune) {
	switch {
	case c < utf8.RuneSelf:
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		w.writeByte(byte(c))
	case w.b.spend(caseRuneCost):
		w.WriteString(pyLower(string(c)))
	default:
		w.done = true
	}
}

// jinjaTitle is Jinja2's title filter within the budget: each word
// (split at runs of whitespace, "-", "(", "{", "[" and "<") gets its
// first character upper and the rest lower.
func (b *budget) jinjaTitle(what, s string) (string, error) {
	w := newSbuf(b, what)
	isSep := func(r rune) bool { return isPySpace(r) || strings.ContainsRune("-({[<", r) }
	word := true
	start := 0
	flush := func(end int) {
		if start < end && w.b.spend(wordCost) {
			wd := s[start:end]
			r, n := utf8.DecodeRuneInString(wd)
			writeUpperRune(w, r)
			writeCase(w, false, wd[n:])
		}
	}
	for i, c := range s {
		if w.done {
			break
		}
		if isSep(c) {
			if word {
				flush(i)
				word = false
				start = i
			}
		} else if !word {
			w.WriteString(s[start:i])
			word = true
			start = i
		}
	}
	if word {
		flush(len(s))
	} else {
		w.WriteString(s[start:])
	}
	return w.result()
}

// swapcase is str.swapcase within the budget.
func (b *budget) swapcase(what, s string) (string, error) {
	w := newSbuf(b, what)
	for _, c := range s {
		if w.done {
			break
		}
		switch {
		case unicode.IsUpper(c):
			writeLowerRune(w, c)
		case unicode.IsLower(c):
			writeUpperRune(w, c)
		default:
			w.WriteRune(c)
		}
	}
	return w.result()
}

// title is str.title within the budget.
func (b *budget) title(what, s string) (string, error) {
	w := newSbuf(b, what)
	prevCased := false
	for _, c := range s {
		if w.done {
			break
		}
		cased := unicode.IsUpper(c) || unicode.IsLower(c) || unicode.IsTitle(c)
		switch {
		case cased && !prevCased:
			w.WriteRune(unicode.ToTitle(c))
		case cased:
			writeLowerRune(w, c)
		default:
			w.WriteRune(c)
		}
		prevCased = cased
	}
	return w.result()
}

// pyStrip is str.strip/lstrip/rstrip within the budget; chars nil
// strips whitespace. Each character looked at costs work.
func (b *budget) strip(s string, chars any, left, right bool) (string, error) {
	var cut func(rune) bool
	switch c := chars.(type) {
	case nil:
		cut = func(r rune) bool { return b.spend(stripCost) && isPySpace(r) }
	case string:
		cost := int64(stripCost + len(c))
		if isASCII(c) {
			cost = stripCost // a search of one byte, which is fast
		}
		cut = func(r rune) bool { return b.spend(cost) && strings.ContainsRune(c, r) }
	default:
		return "", fmt.Errorf("strip arg must be None or str")
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	if err := b.failed(); err != nil {
		return "", err
	}
	return s, nil
}

// split is str.split(sep, maxsplit) within the budget, as a list.
func (b *budget) split(what, s string, sep any, maxsplit int64) (*listV, error) {
	if err := b.workFor(what, 2*int64(len(s))); err != nil {
		return nil, err
	}
	var each func(s string, yield func(string))
	switch sp := sep.(type) {
	case nil:
		each = func(s string, yield func(string)) { splitSpace(s, maxsplit, yield) }
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		each = func(s string, yield func(string)) { splitSep(s, sp, maxsplit, yield) }
	default:
		return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
	}
	return b.collect(what, s, each)
}

// collect is the list of the strs that each yields from s: counted
// first, so that the list is checked against the budget before it is
// made.
func (b *budget) collect(what, s string, each func(s string, yield func(string))) (*listV, error) {
	n := int64(0)
	each(s, func(string) { n++ })
	if err := b.takeItems(what, "list", n, strItemBytes); err != nil {
		return nil, err
	}
	l := &listV{items: make([]any, 0, n)}
	each(s, func(part string) { l.items = append(l.items, part) })
	return l, nil
}

// splitSpace yields the parts of str.split(None, maxsplit).
func splitSpace(s string, maxsplit int64, yield func(string)) {
	i, parts := 0, int64(0)
	for {
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isPySpace(r) {
				break
			}
			i += n
		}
		if i >= len(s) {
			return
		}
		if maxsplit >= 0 && parts >= maxsplit {
			yield(s[i:])
			return
		}
		j := i
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if isPySpace(r) {
				break
			}
			j += n
		}
		yield(s[i:j])
		parts++
		i = j
	}
}

// splitSep yields the parts of str.split(sep, maxsplit).
func splitSep(s, sep string, maxsplit int64, yield func(string)) {
	for parts := int64(0); maxsplit < 0 || parts < maxsplit; parts++ {
		i := strings.Index(s, sep)
		if i < 0 {
			break
		}
		yield(s[:i])
		s = s[i+len(sep):]
	}
	yield(s)
}

// rsplit is str.rsplit(sep, maxsplit) within the budget, as a list.
func (b *budget) rsplit(what, s string, sep any, maxsplit int64) (*listV, error) {
	if maxsplit < 0 {
		return b.split(what, s, sep, maxsplit)
	}
	if err := b.workFor(what, 2*int64(len(s))); err != nil {
		return nil, err
	}
	var each func(yield func(string)) // the parts, last first
	switch sp := sep.(type) {
	case nil:
		each = func(yield func(string)) { rsplitSpace(s, maxsplit, yield) }
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		each = func(yield func(string)) { rsplitSep(s, sp, maxsplit, yield) }
	default:
		return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
	}
	n := 0
	each(func(string) { n++ })
	if err := b.takeItems(what, "list", int64(n), strItemBytes); err != nil {
		return nil, err
	}
	l := &listV{items: make([]any, n)}
	each(func(part string) {
		n--
		l.items[n] = part
	})
	return l, nil
}

// rsplitSpace yields the parts of str.rsplit(None, maxsplit), for
// maxsplit >= 0, last first.
func rsplitSpace(s string, maxsplit int64, yield func(string)) {
	j, parts := len(s), int64(0)
	for {
		for j > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:j])
			if !isPySpace(r) {
				break
			}
			j -= n
		}
		if j == 0 {
			return
		}
		if parts >= maxsplit {
			yield(s[:j])
			return
		}
		i := j
		for i > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:i])
			if isPySpace(r) {
				break
			}
			i -= n
		}
		yield(s[i:j])
		parts++
		j = i
	}
}

// rsplitSep yields the parts of str.rsplit(sep, maxsplit), for
// maxsplit >= 0, last first.
func rsplitSep(s, sep string, maxsplit int64, yield func(string)) {
	for parts := int64(0); parts < maxsplit; parts++ {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		yield(s[i+len(sep):])
		s = s[:i]
	}
	yield(s)
}

// splitlines is str.splitlines(keepends) within the budget, as a list.
func (b *budget) splitlines(what, s string, keep bool) (*listV, error) {
	if err := b.workFor(what, 2*int64(len(s))); err != nil {
		return nil, err
	}
	return b.collect(what, s, func(s string, yield func(string)) { eachLine(s, keep, yield) })
}

// eachLine yields the lines of str.splitlines(keepends).
func eachLine(s string, keep bool, yield func(string)) {
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
				yield(s[start:end])
			} else {
				yield(s[start:i])
			}
			start = end
			i = end
			continue
		}
		i += n
	}
	if start < len(s) {
		yield(s[start:])
	}
}

func strList(ss []string) *listV {
	l := &listV{items: make([]any, len(ss))}
	for i, s := range ss {
		l.items[i] = s
	}
	return l
}

// replace is str.replace(old, new, count) within the budget: the size
// of the result is known (and checked) before it is made.
func (b *budget) replace(what, s, old, new string, count int64) (string, error) {
	if err := b.workFor(what, int64(len(s))); err != nil {
		return "", err
	}
	if count < 0 {
		count = -1
	}
	var k int64 // the replacements
	if old == "" {
		k = int64(utf8.RuneCountInString(s)) + 1
	} else {
		k = int64(strings.Count(s, old))
	}
	if count >= 0 {
		k = min(k, count)
	}
	size := int64(len(s)) - k*int64(len(old))
	size = addSat(size, mulSat(k, int64(len(new))))
	if err := b.takeStr(what, size); err != nil {
		return "", err
	}
	return pyReplace(s, old, new, count), nil
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

// pad is str.center, ljust or rjust (how) to w characters with fill,
// within the budget: the size of the result is checked first.
func (b *budget) pad(what, s string, w int64, fill, how string) (string, error) {
	if err := b.workFor(what, int64(len(s))); err != nil {
		return "", err
	}
	n := int64(utf8.RuneCountInString(s))
	if w <= n {
		return s, nil
	}
	total := w - n
	size := addSat(int64(len(s)), mulSat(total, int64(len(fill))))
	if err := b.takeStr(what, size); err != nil {
		return "", err
	}
	left := int64(0)
	switch how {
	case "center":
		left = total / 2
		if total%2 == 1 && w%2 == 1 {
			left++
		}
	case "rjust":
		left = total
	}
	var sb strings.Builder
	sb.Grow(int(size))
	writeRepeat(&sb, fill, left)
	sb.WriteString(s)
	writeRepeat(&sb, fill, total-left)
	return sb.String(), nil
}

// writeRepeat writes s n times, a few kilobytes at a time.
func writeRepeat(sb *strings.Builder, s string, n int64) {
	if n <= 0 || s == "" {
		return
	}
	per := int64(max(1, 4096/len(s)))
	chunk := strings.Repeat(s, int(min(n, per)))
	for n > 0 {
		k := min(n, per)
		sb.WriteString(chunk[:k*int64(len(s))])
		n -= k
	}
}
