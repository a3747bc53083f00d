package chattemplate

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexer token.
type tokKind uint8

const (
	tEOF        tokKind = iota
	tText               // template data between tags
	tVarBegin           // {{
	tVarEnd             // }}
	tBlockBegin         // {%
	tBlockEnd           // %}
	tName               // identifier
	tString             // string literal (value unescaped)
	tInt                // integer literal
	tFloat              // float literal
	tOp                 // operator or punctuation
)

// token is one lexer token; line is the 1-based line of the source where
// it starts.
type token struct {
	kind tokKind
	val  string
	line int
	ival int64
	fval float64
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tText:
		return "template data"
	case tVarBegin:
		return "begin of print statement"
	case tVarEnd:
		return "end of print statement"
	case tBlockBegin:
		return "begin of statement block"
	case tBlockEnd:
		return "end of statement block"
	case tString:
		return "string"
	case tInt, tFloat:
		return "number"
	}
	return "'" + t.val + "'"
}

// lexer turns a template source into tokens. Its whitespace rules are
// Jinja2's with trim_blocks and lstrip_blocks (Dialect Jinja2) or those of
// @huggingface/jinja, which applies them to the source beforehand with
// regular expressions (Dialect HFJS; see preprocessJS).
type lexer struct {
	src    string
	lines  []int32 // HFJS: the original line of each byte of src; nil: count newlines
	pos    int
	line   int
	js     bool
	toks   []token
	starts bool // Jinja2's line_starting: the last match ended with "\n"
}

// tokenize lexes src for dialect d.
func tokenize(src string, d Dialect) ([]token, error) {
	lx := &lexer{line: 1, starts: true, js: d == HFJS}
	if lx.js {
		lx.src, lx.lines = preprocessJS(src)
	} else {
		// Jinja2 normalizes every newline (\r\n, \r, \n) to \n and drops
		// a single trailing one (keep_trailing_newline=False).
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
		lx.src = strings.TrimSuffix(src, "\n")
	}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tEOF, line: lx.curLine()})
	return lx.toks, nil
}

// curLine returns the line of the byte at lx.pos.
func (lx *lexer) curLine() int {
	if lx.lines != nil {
		if len(lx.lines) == 0 {
			return 1
		}
		if lx.pos < len(lx.lines) {
			return int(lx.lines[lx.pos])
		}
		return int(lx.lines[len(lx.lines)-1])
	}
	return lx.line
}

// advance moves to byte offset p, counting newlines.
func (lx *lexer) advance(p int) {
	if lx.lines == nil {
		lx.line += strings.Count(lx.src[lx.pos:p], "\n")
	}
	lx.pos = p
}

func (lx *lexer) errf(format string, args ...any) error {
	return newError(KindSyntax, lx.curLine(), format, args...)
}

// isSpace reports whether r is whitespace for the dialect: Python's
// str.isspace (which \s in Jinja2's regular expressions also follows), or
// JavaScript's \s.
func isSpace(r rune, js bool) bool {
	if js {
		return isJSSpace(r)
	}
	return isPySpace(r)
}

// isPySpace is Python's str.isspace for one character.
func isPySpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// isJSSpace is JavaScript's \s (WhiteSpace and LineTerminator), which
// String.prototype.trim also strips.
func isJSSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// trimRightSpace strips trailing whitespace.
func trimRightSpace(s string, js bool) string {
	return strings.TrimRightFunc(s, func(r rune) bool { return isSpace(r, js) })
}

// skipSpace returns the offset of the first non-whitespace byte at or
// after p.
func (lx *lexer) skipSpace(p int) int {
	for p < len(lx.src) {
		r, n := utf8.DecodeRuneInString(lx.src[p:])
		if !isSpace(r, lx.js) {
			break
		}
		p += n
	}
	return p
}

// allSpace reports whether s is non-empty and all whitespace.
func allSpace(s string, js bool) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !isSpace(r, js) {
			return false
		}
	}
	return true
}

func (lx *lexer) emitText(text string, line int) {
	if text != "" {
		lx.toks = append(lx.toks, token{kind: tText, val: text, line: line})
	}
}

// nextTag finds the next "{{", "{%" or "{#" at or after p.
func (lx *lexer) nextTag(p int) int {
	for {
		i := strings.IndexByte(lx.src[p:], '{')
		if i < 0 || p+i+1 >= len(lx.src) {
			return -1
		}
		switch lx.src[p+i+1] {
		case '{', '%', '#':
			return p + i
		}
		p += i + 1
	}
}

func (lx *lexer) run() error {
	for lx.pos < len(lx.src) {
		line := lx.curLine()
		at := lx.nextTag(lx.pos)
		if at < 0 {
			lx.emitText(lx.src[lx.pos:], line)
			lx.advance(len(lx.src))
			return nil
		}
		text := lx.src[lx.pos:at]
		kind := lx.src[at+1]
		sign := byte(0)
		if at+2 < len(lx.src) && (lx.src[at+2] == '-' || (lx.src[at+2] == '+' && kind != '{')) {
			sign = lx.src[at+2]
		}
		if !lx.js {
			text = lx.stripBefore(text, sign, kind)
		} else if sign == '-' {
			text = trimRightSpace(text, true)
		} else if sign == '+' {
			sign = 0 // @huggingface/jinja has no "+" modifier: it is an operator
		}
		lx.emitText(text, line)
		lx.advance(at)
		open := 2
		if sign != 0 {
			open = 3
		}
		var err error
		switch kind {
		case '#':
			err = lx.comment(open)
		case '%':
			if done, rerr := lx.raw(open); rerr != nil || done {
				err = rerr
				break
			}
			err = lx.tag(open, tBlockBegin)
		default:
			err = lx.tag(open, tVarBegin)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// stripBefore applies Jinja2's whitespace control to the text before a
// tag: "-" strips all trailing whitespace; otherwise lstrip_blocks removes
// spaces and tabs between the line's start and a block or comment tag.
func (lx *lexer) stripBefore(text string, sign, kind byte) string {
	if sign == '-' {
		return trimRightSpace(text, false)
	}
	if sign == '+' || kind == '{' {
		return text
	}
	l := strings.LastIndexByte(text, '\n') + 1
	if (l > 0 || lx.starts) && allSpace(text[l:], false) {
		return text[:l]
	}
	return text
}

// afterTag applies the whitespace control after a tag that ends at p:
// "-" strips the following whitespace, trim_blocks a single newline (for
// block and comment tags, not after "+").
func (lx *lexer) afterTag(p int, sign byte, trim bool) {
	switch {
	case sign == '-':
		p = lx.skipSpace(p)
	case trim && sign != '+' && !lx.js && p < len(lx.src) && lx.src[p] == '\n':
		p++
	}
	lx.starts = p > 0 && lx.src[p-1] == '\n'
	lx.advance(p)
}

func (lx *lexer) comment(open int) error {
	start := lx.pos + open
	end := strings.Index(lx.src[start:], "#}")
	if end < 0 {
		return lx.errf("missing end of comment tag")
	}
	end += start
	sign := byte(0)
	if end > start && (lx.src[end-1] == '-' || (lx.src[end-1] == '+' && !lx.js)) {
		sign = lx.src[end-1]
	}
	lx.afterTag(end+2, sign, true)
	return nil
}

// raw handles {% raw %}…{% endraw %} (Jinja2 only); done is false when
// the tag is not raw.
func (lx *lexer) raw(open int) (done bool, err error) {
	if lx.js {
		return false, nil
	}
	p := lx.skipSpace(lx.pos + open)
	if !strings.HasPrefix(lx.src[p:], "raw") || (p+3 < len(lx.src) && isNameByte(lx.src[p+3])) {
		return false, nil
	}
	p = lx.skipSpace(p + 3)
	sign := byte(0)
	if p < len(lx.src) && (lx.src[p] == '-' || lx.src[p] == '+') {
		sign = lx.src[p]
		p++
	}
	if !strings.HasPrefix(lx.src[p:], "%}") {
		return false, nil
	}
	p += 2
	if sign == '-' {
		p = lx.skipSpace(p)
	}
	line := lx.curLine()
	lx.advance(p)
	// Find {%[-+]? endraw [-+]?%}.
	for q := p; ; {
		i := strings.Index(lx.src[q:], "{%")
		if i < 0 {
			return true, lx.errf("missing end of raw directive")
		}
		i += q
		j := i + 2
		esign := byte(0)
		if j < len(lx.src) && (lx.src[j] == '-' || lx.src[j] == '+') {
			esign = lx.src[j]
			j++
		}
		j = lx.skipSpace(j)
		if !strings.HasPrefix(lx.src[j:], "endraw") {
			q = i + 2
			continue
		}
		j = lx.skipSpace(j + 6)
		csign := byte(0)
		if j < len(lx.src) && (lx.src[j] == '-' || lx.src[j] == '+') {
			csign = lx.src[j]
			j++
		}
		if !strings.HasPrefix(lx.src[j:], "%}") {
			q = i + 2
			continue
		}
		body := lx.stripBefore(lx.src[p:i], esign, '%')
		lx.emitText(body, line)
		lx.advance(i)
		lx.afterTag(j+2, csign, true)
		return true, nil
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// tag lexes the inside of {{ … }} or {% … %} starting after the opener.
func (lx *lexer) tag(open int, begin tokKind) error {
	lx.toks = append(lx.toks, token{kind: begin, line: lx.curLine()})
	lx.advance(lx.pos + open)
	closer, endKind := "}}", tVarEnd
	if begin == tBlockBegin {
		closer, endKind = "%}", tBlockEnd
	}
	depth := 0
	for {
		lx.advance(lx.skipSpace(lx.pos))
		if lx.pos >= len(lx.src) {
			return lx.errf("unexpected end of template, expected '%s'", closer)
		}
		rest := lx.src[lx.pos:]
		// Jinja2 sees the end of a tag only outside brackets;
		// @huggingface/jinja always sees "%}" and "-%}", and "}}" outside
		// curly braces.
		sign, n := byte(0), 0
		switch {
		case strings.HasPrefix(rest, "-"+closer):
			sign, n = '-', 3
		case begin == tBlockBegin && !lx.js && strings.HasPrefix(rest, "+"+closer):
			sign, n = '+', 3
		case strings.HasPrefix(rest, closer):
			n = 2
		}
		if n > 0 && (depth == 0 || lx.js && (begin == tBlockBegin || sign == '-')) {
			lx.toks = append(lx.toks, token{kind: endKind, line: lx.curLine()})
			lx.afterTag(lx.pos+n, sign, begin == tBlockBegin)
			return nil
		}
		tok, n, err := lx.lexToken(rest)
		if err != nil {
			return err
		}
		tok.line = lx.curLine()
		if tok.kind == tOp {
			switch tok.val {
			case "(", "[", "{":
				if !lx.js || tok.val == "{" {
					depth++
				}
			case ")", "]", "}":
				if depth > 0 && (!lx.js || tok.val == "}") {
					depth--
				}
			}
		}
		lx.toks = append(lx.toks, tok)
		lx.advance(lx.pos + n)
	}
}

// operators, longest first.
var operators = []string{"**", "//", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"}

// lexToken lexes one token at the start of s, returning it and its length.
func (lx *lexer) lexToken(s string) (token, int, error) {
	c := s[0]
	switch {
	case c == '\'' || c == '"':
		return lx.lexString(s)
	case c >= '0' && c <= '9':
		return lx.lexNumber(s)
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == '_' || unicode.IsLetter(r) {
		for n < len(s) {
			r2, m := utf8.DecodeRuneInString(s[n:])
			if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) && !unicode.Is(unicode.Mn, r2) {
				break
			}
			n += m
		}
		return token{kind: tName, val: s[:n]}, n, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(s, op) {
			return token{kind: tOp, val: op}, len(op), nil
		}
	}
	if r == utf8.RuneError && n <= 1 {
		return token{}, 0, lx.errf("unexpected byte %#x", s[0])
	}
	return token{}, 0, lx.errf("unexpected char %q", r)
}

// lexNumber lexes an integer or float literal as Jinja2 does: digits with
// "_" separators, 0x/0o/0b prefixes, a fraction and an exponent.
func (lx *lexer) lexNumber(s string) (token, int, error) {
	digits := func(i int, ok func(byte) bool) int {
		for i < len(s) && (ok(s[i]) || !lx.js && s[i] == '_' && i+1 < len(s) && ok(s[i+1]) && i > 0 && ok(s[i-1])) {
			i++
		}
		return i
	}
	dec := func(b byte) bool { return b >= '0' && b <= '9' }
	if len(s) > 2 && s[0] == '0' && !lx.js {
		base, ok := 0, func(byte) bool { return false }
		switch s[1] {
		case 'x', 'X':
			base, ok = 16, func(b byte) bool { return dec(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }
		case 'o', 'O':
			base, ok = 8, func(b byte) bool { return b >= '0' && b <= '7' }
		case 'b', 'B':
			base, ok = 2, func(b byte) bool { return b == '0' || b == '1' }
		}
		if base != 0 && ok(s[2]) {
			n := digits(2, ok)
			v, err := strconv.ParseInt(strings.ReplaceAll(s[2:n], "_", ""), base, 64)
			if err != nil {
				return token{}, 0, lx.errf("integer literal %s out of range", s[:n])
			}
			return token{kind: tInt, val: s[:n], ival: v}, n, nil
		}
	}
	n := digits(0, dec)
	isFloat := false
	prevDot := len(lx.toks) > 0 && lx.toks[len(lx.toks)-1].kind == tOp && lx.toks[len(lx.toks)-1].val == "."
	if !prevDot && n+1 < len(s) && s[n] == '.' && dec(s[n+1]) {
		n = digits(n+1, dec)
		isFloat = true
	}
	if !lx.js && !prevDot && n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if m < len(s) && dec(s[m]) {
			n = digits(m, dec)
			isFloat = true
		}
	}
	lit := strings.ReplaceAll(s[:n], "_", "")
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil && f == 0 {
			return token{}, 0, lx.errf("invalid float literal %s", s[:n])
		}
		return token{kind: tFloat, val: s[:n], fval: f}, n, nil
	}
	v, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		if lx.js {
			f, _ := strconv.ParseFloat(lit, 64)
			return token{kind: tFloat, val: s[:n], fval: f}, n, nil
		}
		return token{}, 0, lx.errf("integer literal %s out of range", s[:n])
	}
	return token{kind: tInt, val: s[:n], ival: v}, n, nil
}

// lexString lexes a quoted string literal and unescapes it: as Python's
// unicode-escape codec does for Jinja2 (unknown escapes keep their
// backslash), as @huggingface/jinja does for HFJS (unknown escapes are an
// error).
func (lx *lexer) lexString(s string) (token, int, error) {
	q := s[0]
	var b strings.Builder
	i := 1
	for {
		if i >= len(s) {
			return token{}, 0, lx.errf("unexpected end of string literal")
		}
		c := s[i]
		if c == q {
			return token{kind: tString, val: b.String()}, i + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return token{}, 0, lx.errf("unexpected end of string literal")
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\'', '"', '\\':
			b.WriteByte(e)
		case 'a':
			if lx.js {
				return token{}, 0, lx.errf("unexpected escaped character: %c", e)
			}
			b.WriteByte('\a')
		case '\n':
			if lx.js {
				return token{}, 0, lx.errf("unexpected escaped character: newline")
			}
			// Python drops an escaped newline.
		case 'x', 'u', 'U':
			size := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if lx.js && e == 'U' {
				return token{}, 0, lx.errf("unexpected escaped character: %c", e)
			}
			if i+size > len(s) {
				return token{}, 0, lx.errf("truncated \\%c escape in string literal", e)
			}
			v, err := strconv.ParseUint(s[i:i+size], 16, 32)
			if err != nil || strings.ContainsAny(s[i:i+size], "+-_") {
				return token{}, 0, lx.errf("truncated \\%c escape in string literal", e)
			}
			if v > unicode.MaxRune {
				return token{}, 0, lx.errf("illegal Unicode character in string literal")
			}
			b.WriteRune(rune(v))
			i += size
		case '0', '1', '2', '3', '4', '5', '6', '7':
			if lx.js {
				return token{}, 0, lx.errf("unexpected escaped character: %c", e)
			}
			v := int(e - '0')
			for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
				v = v*8 + int(s[i]-'0')
				i++
			}
			b.WriteRune(rune(v))
		case 'N':
			if lx.js {
				return token{}, 0, lx.errf("unexpected escaped character: %c", e)
			}
			return token{}, 0, lx.errf("\\N{...} escapes are not supported")
		default:
			if lx.js {
				return token{}, 0, lx.errf("unexpected escaped character: %c", e)
			}
			b.WriteByte('\\')
			if e >= utf8.RuneSelf {
				// Python encodes the literal with backslashreplace before
				// decoding it, so "\\é" becomes "\\xe9".
				r, n := utf8.DecodeRuneInString(s[i-1:])
				b.WriteString(backslashReplace(r))
				i += n - 1
				continue
			}
			i-- // the character after the backslash is ordinary
		}
	}
}

// preprocessJS applies @huggingface/jinja's source transformations: drop
// one trailing "\n"; lstrip_blocks as /^[ \t]*({[#%-])/gm → "$1";
// trim_blocks as /([#%-]})\n/g → "$1"; and the removal of transformers'
// {% generation %} and {% endgeneration %} tags with the whitespace
// around them unless a "-" keeps it out. It returns the new source and
// the original line of each of its bytes.
func preprocessJS(src string) (string, []int32) {
	lines := make([]int32, len(src))
	ln := int32(1)
	for i := range len(src) {
		lines[i] = ln
		if src[i] == '\n' {
			ln++
		}
	}
	if strings.HasSuffix(src, "\n") {
		src, lines = src[:len(src)-1], lines[:len(lines)-1]
	}
	keep := func(drop []bool) {
		var b strings.Builder
		nl := lines[:0:0]
		for i := range len(src) {
			if !drop[i] {
				b.WriteByte(src[i])
				nl = append(nl, lines[i])
			}
		}
		src, lines = b.String(), nl
	}
	// lstrip_blocks: at each line start (after \n, \r, \u2028 or \u2029,
	// JavaScript's multiline ^), spaces and tabs before "{#", "{%" or "{-".
	drop := make([]bool, len(src))
	for i := 0; i < len(src); {
		if i == 0 || src[i-1] == '\n' || src[i-1] == '\r' || i >= 3 && (src[i-3:i] == "\u2028" || src[i-3:i] == "\u2029") {
			j := i
			for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
				j++
			}
			if j > i && j+1 < len(src) && src[j] == '{' && strings.IndexByte("#%-", src[j+1]) >= 0 {
				for k := i; k < j; k++ {
					drop[k] = true
				}
			}
			if j > i {
				i = j
				continue
			}
		}
		i++
	}
	keep(drop)
	// trim_blocks: the "\n" after "#}", "%}" or "-}".
	drop = make([]bool, len(src))
	for i := 2; i < len(src); i++ {
		if src[i] == '\n' && src[i-1] == '}' && strings.IndexByte("#%-", src[i-2]) >= 0 {
			drop[i] = true
		}
	}
	keep(drop)
	// {% generation %} / {% endgeneration %}.
	drop = make([]bool, len(src))
	for i := 0; i+1 < len(src); i++ {
		if src[i] != '{' || src[i+1] != '%' {
			continue
		}
		j := i + 2
		lstrip := j < len(src) && src[j] == '-'
		if lstrip {
			j++
		}
		j = skipJSSpace(src, j)
		if strings.HasPrefix(src[j:], "end") {
			j += 3
		}
		if !strings.HasPrefix(src[j:], "generation") {
			continue
		}
		j = skipJSSpace(src, j+len("generation"))
		rstrip := j < len(src) && src[j] == '-'
		if rstrip {
			j++
		}
		if !strings.HasPrefix(src[j:], "%}") {
			continue
		}
		j += 2
		// The whitespace before (back to the previous match or non-space).
		k := i
		for k > 0 {
			r, n := utf8.DecodeLastRuneInString(src[:k])
			if !isJSSpace(r) || drop[k-1] {
				break
			}
			k -= n
		}
		after := skipJSSpace(src, j)
		for m := i; m < j; m++ {
			drop[m] = true
		}
		if lstrip {
			for m := k; m < i; m++ {
				drop[m] = true
			}
		}
		if rstrip {
			for m := j; m < after; m++ {
				drop[m] = true
			}
		}
		i = after - 1
	}
	keep(drop)
	return src, lines
}

func skipJSSpace(s string, p int) int {
	for p < len(s) {
		r, n := utf8.DecodeRuneInString(s[p:])
		if !isJSSpace(r) {
			break
		}
		p += n
	}
	return p
}
