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

// lexer turns a template source into tokens, with Jinja2's whitespace
// rules under trim_blocks and lstrip_blocks.
type lexer struct {
	src    string
	pos    int
	line   int // the line of the byte at pos
	toks   []token
	starts bool // Jinja2's line_starting: the last match ended with "\n"
}

// tokenize lexes src.
func tokenize(src string) ([]token, error) {
	// Jinja2 normalizes every newline (\r\n, \r, \n) to \n and drops a
	// single trailing one (keep_trailing_newline=False).
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	lx := &lexer{src: strings.TrimSuffix(src, "\n"), line: 1, starts: true}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tEOF, line: lx.line})
	return lx.toks, nil
}

// advance moves to byte offset p, counting newlines.
func (lx *lexer) advance(p int) {
	lx.line += strings.Count(lx.src[lx.pos:p], "\n")
	lx.pos = p
}

func (lx *lexer) errf(format string, args ...any) error {
	return newError(KindSyntax, lx.line, format, args...)
}

// skipSpace returns the offset of the first non-whitespace byte at or
// after p.
func (lx *lexer) skipSpace(p int) int {
	for p < len(lx.src) {
		r, n := utf8.DecodeRuneInString(lx.src[p:])
		if !isPySpace(r) {
			break
		}
		p += n
	}
	return p
}

// allSpace reports whether s is non-empty and all whitespace.
func allSpace(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !isPySpace(r) {
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
		line := lx.line
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
		lx.emitText(lx.stripBefore(text, sign, kind), line)
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
		return strings.TrimRightFunc(text, isPySpace)
	}
	if sign == '+' || kind == '{' {
		return text
	}
	l := strings.LastIndexByte(text, '\n') + 1
	if (l > 0 || lx.starts) && allSpace(text[l:]) {
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
	case trim && sign != '+' && p < len(lx.src) && lx.src[p] == '\n':
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
	if end > start && (lx.src[end-1] == '-' || lx.src[end-1] == '+') {
		sign = lx.src[end-1]
	}
	lx.afterTag(end+2, sign, true)
	return nil
}

// raw handles {% raw %}…{% endraw %}; done is false when the tag is not
// raw.
func (lx *lexer) raw(open int) (done bool, err error) {
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
	line := lx.line
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
	lx.toks = append(lx.toks, token{kind: begin, line: lx.line})
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
		// Jinja2 sees the end of a tag only outside brackets.
		sign, n := byte(0), 0
		switch {
		case strings.HasPrefix(rest, "-"+closer):
			sign, n = '-', 3
		case begin == tBlockBegin && strings.HasPrefix(rest, "+"+closer):
			sign, n = '+', 3
		case strings.HasPrefix(rest, closer):
			n = 2
		}
		if n > 0 && depth == 0 {
			lx.toks = append(lx.toks, token{kind: endKind, line: lx.line})
			lx.afterTag(lx.pos+n, sign, begin == tBlockBegin)
			return nil
		}
		tok, n, err := lx.lexToken(rest)
		if err != nil {
			return err
		}
		tok.line = lx.line
		if tok.kind == tOp {
			switch tok.val {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth > 0 {
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
	if tok, n, ok, err := lx.lexPrefixedInt(s); ok {
		return tok, n, err
	}
	n, isFloat := lx.decimalEnd(s)
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
		return token{}, 0, lx.errf("integer literal %s out of range", s[:n])
	}
	return token{kind: tInt, val: s[:n], ival: v}, n, nil
}

func isDecDigit(b byte) bool { return b >= '0' && b <= '9' }
func isHexDigit(b byte) bool { return isDecDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }
func isOctDigit(b byte) bool { return b >= '0' && b <= '7' }
func isBinDigit(b byte) bool { return b == '0' || b == '1' }

// intPrefixes are the bases of integer literals by the letter after
// their "0", with their digits.
var intPrefixes = map[byte]struct {
	base  int
	digit func(byte) bool
}{
	'x': {16, isHexDigit}, 'X': {16, isHexDigit},
	'o': {8, isOctDigit}, 'O': {8, isOctDigit},
	'b': {2, isBinDigit}, 'B': {2, isBinDigit},
}

// scanDigits returns the end of the digits (and single "_" between
// digits) at or after s[i].
func scanDigits(s string, i int, digit func(byte) bool) int {
	for i < len(s) && (digit(s[i]) || s[i] == '_' && i+1 < len(s) && digit(s[i+1]) && i > 0 && digit(s[i-1])) {
		i++
	}
	return i
}

// lexPrefixedInt lexes a 0x, 0o or 0b integer; ok is false when s does
// not start with one.
func (lx *lexer) lexPrefixedInt(s string) (tok token, n int, ok bool, err error) {
	if len(s) <= 2 || s[0] != '0' {
		return token{}, 0, false, nil
	}
	p, known := intPrefixes[s[1]]
	if !known || !p.digit(s[2]) {
		return token{}, 0, false, nil
	}
	n = scanDigits(s, 2, p.digit)
	v, perr := strconv.ParseInt(strings.ReplaceAll(s[2:n], "_", ""), p.base, 64)
	if perr != nil {
		return token{}, 0, true, lx.errf("integer literal %s out of range", s[:n])
	}
	return token{kind: tInt, val: s[:n], ival: v}, n, true, nil
}

// decimalEnd returns the end of the decimal literal at the start of s
// and whether it is a float: it has a fraction or an exponent. After a
// ".", as in x.0.1, only the integer part counts.
func (lx *lexer) decimalEnd(s string) (n int, isFloat bool) {
	n = scanDigits(s, 0, isDecDigit)
	if len(lx.toks) > 0 && lx.toks[len(lx.toks)-1].kind == tOp && lx.toks[len(lx.toks)-1].val == "." {
		return n, false
	}
	if n+1 < len(s) && s[n] == '.' && isDecDigit(s[n+1]) {
		n = scanDigits(s, n+1, isDecDigit)
		isFloat = true
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if m < len(s) && isDecDigit(s[m]) {
			n = scanDigits(s, m, isDecDigit)
			isFloat = true
		}
	}
	return n, isFloat
}

// lexString lexes a quoted string literal and unescapes it as Python's
// unicode-escape codec does for Jinja2: unknown escapes keep their
// backslash.
func (lx *lexer) lexString(s string) (token, int, error) {
	q := s[0]
	var b strings.Builder
	i := 1
	for {
		if i >= len(s) {
			return token{}, 0, lx.errf("unexpected end of string literal")
		}
		c := s[i]
		switch {
		case c == q:
			return token{kind: tString, val: b.String()}, i + 1, nil
		case c != '\\':
			b.WriteByte(c)
			i++
		case i+1 >= len(s):
			return token{}, 0, lx.errf("unexpected end of string literal")
		default:
			n, err := lx.unescape(&b, s, i+1)
			if err != nil {
				return token{}, 0, err
			}
			i = n
		}
	}
}

// simpleEscapes are the one-character escapes and what they stand for;
// an escaped newline stands for nothing.
var simpleEscapes = map[byte]string{
	'n': "\n", 't': "\t", 'r': "\r", 'b': "\b", 'f': "\f", 'v': "\v", 'a': "\a",
	'\'': "'", '"': "\"", '\\': "\\", '\n': "",
}

// hexEscapes are the escapes of a code point in hex, by their number of
// digits.
var hexEscapes = map[byte]int{'x': 2, 'u': 4, 'U': 8}

// unescape writes the escape sequence whose character (after the
// backslash) is s[i] and returns the offset after it.
func (lx *lexer) unescape(b *strings.Builder, s string, i int) (int, error) {
	e := s[i]
	i++
	if r, ok := simpleEscapes[e]; ok {
		b.WriteString(r)
		return i, nil
	}
	if size, ok := hexEscapes[e]; ok {
		if i+size > len(s) {
			return 0, lx.errf("truncated \\%c escape in string literal", e)
		}
		v, err := strconv.ParseUint(s[i:i+size], 16, 32)
		if err != nil || strings.ContainsAny(s[i:i+size], "+-_") {
			return 0, lx.errf("truncated \\%c escape in string literal", e)
		}
		if v > unicode.MaxRune {
			return 0, lx.errf("illegal Unicode character in string literal")
		}
		b.WriteRune(rune(v))
		return i + size, nil
	}
	switch {
	case e >= '0' && e <= '7':
		v := int(e - '0')
		for k := 0; k < 2 && i < len(s) && s[i] >= '0' && s[i] <= '7'; k++ {
			v = v*8 + int(s[i]-'0')
			i++
		}
		b.WriteRune(rune(v))
		return i, nil
	case e == 'N':
		return 0, lx.errf("\\N{...} escapes are not supported")
	case e >= utf8.RuneSelf:
		// Python encodes the literal with backslashreplace before
		// decoding it, so "\\é" becomes "\\xe9".
		r, n := utf8.DecodeRuneInString(s[i-1:])
		b.WriteByte('\\')
		b.WriteString(backslashReplace(r))
		return i - 1 + n, nil
	}
	// An unknown escape: the backslash stays and the character after it
	// is ordinary.
	b.WriteByte('\\')
	return i - 1, nil
}
