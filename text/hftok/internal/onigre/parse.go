// Package onigre matches the regular expressions of Hugging Face
// tokenizer.json files (Split pre-tokenizers, Replace normalizers and
// decoders) the way HF's tokenizers library does, which runs them with
// Oniguruma in its Ruby syntax: a backtracking engine with leftmost-first
// alternation, greedy, lazy and possessive quantifiers, look-ahead,
// look-behind, atomic groups and Unicode classes.
//
// Go's regexp cannot stand in for it: it has no look-around, and its
// leftmost-longest-free RE2 semantics still differ from backtracking on
// patterns such as \s+(?!\S)|\s+. This package implements the Oniguruma
// syntax that tokenizer files use, on UTF-8 strings directly:
//
//   - literals and escapes (\t \n \r \f \v \a \e, \xHH, \x{H…}, \uHHHH,
//     escaped punctuation);
//   - . (any character but \n; with (?m) any character), ^ and $ (line
//     anchors, as in Ruby), \A, \z, \Z, \G, \b, \B;
//   - classes [...] with ranges, negation, nesting, && intersection,
//     POSIX brackets ([:alpha:] …), \p{…}, \P{…}, \p{^…}, and the
//     shorthands \s \S \d \D \w \W \h \H;
//   - Unicode properties by general category (L, Lu, Letter, …), script
//     (Han, Hiragana, …) and a few binary properties (White_Space,
//     Alphabetic, …), names matched loosely as Oniguruma does;
//   - groups (...), (?:...), (?<name>...), (?i:...), (?-i:...), (?m:...),
//     inline (?i) and (?m), (?=...), (?!...), (?<=...), (?<!...), (?>...),
//     (?#...);
//   - quantifiers ?, *, +, {n}, {n,}, {n,m}, {,m}, each greedy, lazy (a
//     trailing ?) or possessive (a trailing +).
//
// The classes follow Oniguruma's Unicode definitions: \s is White_Space
// (U+0085 included, U+200B and U+FEFF not), \d is Decimal_Number, \w is
// Letter, Mark, Decimal_Number and Connector_Punctuation, \h is an ASCII
// hexadecimal digit. (?i) folds case by Unicode simple case folding, so
// (?i:s) also matches U+017F and (?i:k) U+212A (multi-character folds such
// as ß to ss are not applied). The Unicode tables are Go's.
//
// A byte that is not part of valid UTF-8 counts as one character, U+FFFD.
//
// Back-references, conditionals, absent operators, \K, \R, \X, callouts and
// the extended (?x) syntax are not supported: Compile names them in its
// error.
package onigre

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// nodeKind is the kind of a syntax tree node.
type nodeKind uint8

const (
	nLit    nodeKind = iota // one character (fold: case-insensitive)
	nClass                  // a character class
	nAny                    // . (dotAll: also \n)
	nConcat                 // subs in order
	nAlt                    // subs, first match first
	nRepeat                 // sub repeated min..max (max -1: unbounded)
	nLook                   // look-around: ahead or behind, negated or not
	nAtomic                 // (?>sub)
	nAssert                 // a zero-width anchor
	nEmpty                  // matches the empty string
)

// Zero-width assertions.
const (
	aLineStart   = iota // ^
	aLineEnd            // $
	aTextStart          // \A
	aTextEnd            // \z
	aTextEndNL          // \Z
	aSearchStart        // \G
	aWordB              // \b
	aNotWordB           // \B
)

// node is a syntax tree node.
type node struct {
	kind     nodeKind
	r        rune
	fold     bool
	dotAll   bool
	cls      *Class
	subs     []*node
	min, max int
	lazy     bool
	poss     bool
	behind   bool
	neg      bool
	assert   int
}

// flags are the inline options in force.
type flags struct {
	fold   bool // (?i)
	dotAll bool // (?m) in Ruby syntax
}

type parser struct {
	src string
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("regex %q: at offset %d: %s", p.src, p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }

func (p *parser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r
}

func (p *parser) next() rune {
	r, w := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += w
	return r
}

func (p *parser) consume(s string) bool {
	if strings.HasPrefix(p.src[p.pos:], s) {
		p.pos += len(s)
		return true
	}
	return false
}

// parse parses the whole pattern.
func parse(src string) (*node, error) {
	if !utf8.ValidString(src) {
		return nil, fmt.Errorf("regex %q: not valid UTF-8", src)
	}
	p := &parser{src: src}
	f := flags{}
	n, err := p.alternation(&f)
	if err != nil {
		return nil, err
	}
	if !p.eof() {
		return nil, p.errorf("unmatched )")
	}
	return n, nil
}

// alternation parses a|b|… up to a ) or the end. Inline options such as
// (?i) change f for the rest of the enclosing group.
func (p *parser) alternation(f *flags) (*node, error) {
	var alts []*node
	for {
		c, err := p.concat(f)
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if p.eof() || p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &node{kind: nAlt, subs: alts}, nil
}

func (p *parser) concat(f *flags) (*node, error) {
	var items []*node
	for !p.eof() {
		c := p.peek()
		if c == '|' || c == ')' {
			break
		}
		if strings.HasPrefix(p.src[p.pos:], "(?") && p.inlineFlags(f) {
			// (?i) and the like apply to the rest of the group, including
			// the following alternatives: parse them here as one group.
			rest, err := p.alternation(f)
			if err != nil {
				return nil, err
			}
			items = append(items, rest)
			break
		}
		atom, err := p.atom(f)
		if err != nil {
			return nil, err
		}
		if atom == nil {
			continue // a comment
		}
		atom, err = p.quantifiers(atom)
		if err != nil {
			return nil, err
		}
		items = append(items, atom)
	}
	switch len(items) {
	case 0:
		return &node{kind: nEmpty}, nil
	case 1:
		return items[0], nil
	}
	return &node{kind: nConcat, subs: items}, nil
}

// inlineFlags consumes an option group without a body, such as (?i) or
// (?-i), applying it to f, and reports whether there was one.
func (p *parser) inlineFlags(f *flags) bool {
	i := p.pos + 2
	on := true
	nf := *f
	for i < len(p.src) {
		switch p.src[i] {
		case '-':
			on = false
		case 'i':
			nf.fold = on
		case 'm':
			nf.dotAll = on
		case ')':
			if i == p.pos+2 {
				return false
			}
			p.pos = i + 1
			*f = nf
			return true
		default:
			return false
		}
		i++
	}
	return false
}

// quantifiers applies the quantifiers that follow an atom.
func (p *parser) quantifiers(atom *node) (*node, error) {
	for !p.eof() {
		start := p.pos
		min, max := -1, -1
		switch p.peek() {
		case '?':
			min, max = 0, 1
			p.pos++
		case '*':
			min, max = 0, -1
			p.pos++
		case '+':
			min, max = 1, -1
			p.pos++
		case '{':
			lo, hi, ok := p.braces()
			if !ok {
				return atom, nil // a literal {, which atom() reads next
			}
			min, max = lo, hi
		default:
			return atom, nil
		}
		if atom.kind == nAssert || atom.kind == nLook {
			p.pos = start
			return nil, p.errorf("quantifier after a zero-width assertion")
		}
		rep := &node{kind: nRepeat, subs: []*node{atom}, min: min, max: max}
		if !p.eof() {
			switch p.peek() {
			case '?':
				rep.lazy = true
				p.pos++
			case '+':
				// Possessive, except after {n,m}, where Ruby syntax reads
				// the + as a second quantifier.
				if p.src[start] != '{' {
					rep.poss = true
					p.pos++
				}
			}
		}
		atom = rep
	}
	return atom, nil
}

// braces reads {n}, {n,}, {n,m} or {,m} at p.pos; ok is false (and nothing
// is consumed) when the text is not a valid interval, which Oniguruma then
// reads as literal characters.
func (p *parser) braces() (min, max int, ok bool) {
	s := p.src[p.pos:]
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return 0, 0, false
	}
	body := s[1:end]
	lo, hi, comma := strings.Cut(body, ",")
	num := func(t string) (int, bool) {
		if t == "" {
			return -1, true
		}
		for _, c := range t {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		v, err := strconv.Atoi(t)
		return v, err == nil && v <= 100000
	}
	a, okA := num(lo)
	b, okB := num(hi)
	if !okA || !okB || (a < 0 && (!comma || b < 0)) {
		return 0, 0, false
	}
	switch {
	case !comma:
		min, max = a, a
	case a < 0:
		min, max = 0, b
	default:
		min, max = a, b
	}
	if max >= 0 && max < min {
		return 0, 0, false
	}
	p.pos += end + 1
	return min, max, true
}

// atom parses one atom; it returns nil for a comment.
func (p *parser) atom(f *flags) (*node, error) {
	c := p.next()
	switch c {
	case '(':
		return p.group(f)
	case '[':
		cls, err := p.class(f.fold)
		if err != nil {
			return nil, err
		}
		return &node{kind: nClass, cls: cls}, nil
	case '.':
		return &node{kind: nAny, dotAll: f.dotAll}, nil
	case '^':
		return &node{kind: nAssert, assert: aLineStart}, nil
	case '$':
		return &node{kind: nAssert, assert: aLineEnd}, nil
	case '\\':
		return p.escape(f)
	case '*', '+', '?':
		p.pos--
		return nil, p.errorf("quantifier %q without an operand", c)
	}
	return &node{kind: nLit, r: c, fold: f.fold}, nil
}

// group parses what follows a (.
func (p *parser) group(outer *flags) (*node, error) {
	f := *outer
	kind := nConcat // a plain group
	var look *node
	switch {
	case p.consume("?#"):
		end := strings.IndexByte(p.src[p.pos:], ')')
		if end < 0 {
			return nil, p.errorf("unterminated comment")
		}
		p.pos += end + 1
		return nil, nil
	case p.consume("?:"):
	case p.consume("?>"):
		kind = nAtomic
	case p.consume("?="):
		look = &node{kind: nLook}
	case p.consume("?!"):
		look = &node{kind: nLook, neg: true}
	case p.consume("?<="):
		look = &node{kind: nLook, behind: true}
	case p.consume("?<!"):
		look = &node{kind: nLook, behind: true, neg: true}
	case p.consume("?<"), p.consume("?P<"), p.consume("?'"):
		// A named group: its name is read and ignored (nothing captures).
		end := strings.IndexAny(p.src[p.pos:], ">'")
		if end < 0 {
			return nil, p.errorf("unterminated group name")
		}
		p.pos += end + 1
	case strings.HasPrefix(p.src[p.pos:], "?"):
		// Options scoped to the group: (?i:...), (?-i:...), (?im-i:...).
		i := p.pos + 1
		on := true
		for ; i < len(p.src) && p.src[i] != ':'; i++ {
			switch p.src[i] {
			case '-':
				on = false
			case 'i':
				f.fold = on
			case 'm':
				f.dotAll = on
			default:
				return nil, p.errorf("unsupported group syntax (?%s", p.src[p.pos+1:min(len(p.src), i+1)])
			}
		}
		if i >= len(p.src) {
			return nil, p.errorf("unterminated group")
		}
		p.pos = i + 1
	}
	body, err := p.alternation(&f)
	if err != nil {
		return nil, err
	}
	if p.eof() || p.peek() != ')' {
		return nil, p.errorf("missing )")
	}
	p.pos++
	switch {
	case look != nil:
		look.subs = []*node{body}
		return look, nil
	case kind == nAtomic:
		return &node{kind: nAtomic, subs: []*node{body}}, nil
	}
	return body, nil
}

// escape parses what follows a \ outside a class.
func (p *parser) escape(f *flags) (*node, error) {
	if p.eof() {
		return nil, p.errorf("trailing backslash")
	}
	start := p.pos - 1
	c := p.next()
	switch c {
	case 'A':
		return &node{kind: nAssert, assert: aTextStart}, nil
	case 'z':
		return &node{kind: nAssert, assert: aTextEnd}, nil
	case 'Z':
		return &node{kind: nAssert, assert: aTextEndNL}, nil
	case 'G':
		return &node{kind: nAssert, assert: aSearchStart}, nil
	case 'b':
		return &node{kind: nAssert, assert: aWordB}, nil
	case 'B':
		return &node{kind: nAssert, assert: aNotWordB}, nil
	case 'K', 'R', 'X', 'k', 'g', 'N', 'O', 'y', 'Y':
		p.pos = start
		return nil, p.errorf("unsupported escape \\%c", c)
	}
	if c >= '1' && c <= '9' {
		p.pos = start
		return nil, p.errorf("back-references are not supported")
	}
	if cls, ok, err := p.classEscape(c); err != nil {
		return nil, err
	} else if ok {
		if f.fold {
			cls = cls.withFold()
		}
		return &node{kind: nClass, cls: cls}, nil
	}
	r, err := p.charEscape(c)
	if err != nil {
		return nil, err
	}
	return &node{kind: nLit, r: r, fold: f.fold}, nil
}

// charEscape returns the character that an escape stands for (c is the
// character after the backslash, already consumed).
func (p *parser) charEscape(c rune) (rune, error) {
	switch c {
	case 't':
		return '\t', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 'f':
		return '\f', nil
	case 'v':
		return '\v', nil
	case 'a':
		return '\a', nil
	case 'e':
		return 0x1b, nil
	case '0':
		return p.octal()
	case 'x':
		if p.consume("{") {
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return 0, p.errorf("unterminated \\x{")
			}
			return p.hexValue(p.src[p.pos:p.pos+end], end+1)
		}
		n := 0
		for n < 2 && p.pos+n < len(p.src) && isHex(p.src[p.pos+n]) {
			n++
		}
		if n == 0 {
			return 0, p.errorf("\\x without hex digits")
		}
		return p.hexValue(p.src[p.pos:p.pos+n], n)
	case 'u':
		if p.pos+4 > len(p.src) {
			return 0, p.errorf("\\u needs four hex digits")
		}
		return p.hexValue(p.src[p.pos:p.pos+4], 4)
	case 'c':
		if p.eof() {
			return 0, p.errorf("\\c without a character")
		}
		return p.next() & 0x1f, nil
	}
	if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		p.pos -= 2
		return 0, p.errorf("unsupported escape \\%c", c)
	}
	return c, nil
}

func (p *parser) octal() (rune, error) {
	v := rune(0)
	for n := 0; n < 2 && !p.eof() && p.peek() >= '0' && p.peek() <= '7'; n++ {
		v = v*8 + p.next() - '0'
	}
	return v, nil
}

func (p *parser) hexValue(digits string, advance int) (rune, error) {
	v, err := strconv.ParseUint(digits, 16, 32)
	if err != nil || v > unicode.MaxRune {
		return 0, p.errorf("bad hexadecimal escape %q", digits)
	}
	p.pos += advance
	return rune(v), nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// classEscape returns the class of a shorthand or property escape (c is
// the character after the backslash, already consumed); ok is false for
// any other escape.
func (p *parser) classEscape(c rune) (cls *Class, ok bool, err error) {
	switch c {
	case 's', 'S', 'd', 'D', 'w', 'W', 'h', 'H':
		return shorthand(c), true, nil
	case 'p', 'P':
		if !p.consume("{") {
			return nil, false, p.errorf("\\%c without {", c)
		}
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return nil, false, p.errorf("unterminated \\%c{", c)
		}
		name := p.src[p.pos : p.pos+end]
		neg := c == 'P'
		if strings.HasPrefix(name, "^") {
			neg, name = !neg, name[1:]
		}
		prop, found := property(name)
		if !found {
			return nil, false, p.errorf("unknown Unicode property %q", name)
		}
		p.pos += end + 1
		cls := &Class{}
		cls.addProperty(prop)
		if neg {
			cls.neg = true
		}
		cls.finish()
		return cls, true, nil
	}
	return nil, false, nil
}

// class parses a bracket expression after its [.
func (p *parser) class(fold bool) (*Class, error) {
	cls, err := p.classBody(0)
	if err != nil {
		return nil, err
	}
	if fold {
		cls = cls.withFold()
	}
	return cls, nil
}

func (p *parser) classBody(depth int) (*Class, error) {
	if depth > 64 {
		return nil, p.errorf("classes nested too deeply")
	}
	cls := &Class{}
	if p.consume("^") {
		cls.neg = true
	}
	first := true
	var operands []*Class // the operands before each &&
	for {
		if p.eof() {
			return nil, p.errorf("unterminated character class")
		}
		if p.peek() == ']' && !first {
			p.pos++
			break
		}
		first = false
		if p.consume("&&") {
			cur := cls
			operands = append(operands, cur)
			cls = &Class{}
			continue
		}
		if p.consume("[:") {
			name, neg, ok := p.posixName()
			if !ok {
				return nil, p.errorf("bad POSIX bracket expression")
			}
			prop, found := posixClass(name)
			if !found {
				return nil, p.errorf("unknown POSIX class [:%s:]", name)
			}
			sub := &Class{}
			sub.addProperty(prop)
			sub.neg = neg
			sub.finish()
			cls.subs = append(cls.subs, sub)
			continue
		}
		if p.consume("[") {
			sub, err := p.classBody(depth + 1)
			if err != nil {
				return nil, err
			}
			cls.subs = append(cls.subs, sub)
			continue
		}
		lo, isChar, err := p.classAtom(cls)
		if err != nil {
			return nil, err
		}
		if !isChar {
			continue
		}
		// A range lo-hi, unless the - is last or before &&.
		if strings.HasPrefix(p.src[p.pos:], "-") && !strings.HasPrefix(p.src[p.pos:], "-]") && !strings.HasPrefix(p.src[p.pos:], "-&&") && p.pos+1 < len(p.src) {
			save := p.pos
			p.pos++
			if p.peek() == '[' {
				p.pos = save
				cls.addRange(lo, lo)
				continue
			}
			hi, hiIsChar, err := p.classAtom(nil)
			if err != nil {
				return nil, err
			}
			if !hiIsChar {
				return nil, p.errorf("bad range end in character class")
			}
			if hi < lo {
				return nil, p.errorf("empty range in character class")
			}
			cls.addRange(lo, hi)
			continue
		}
		cls.addRange(lo, lo)
	}
	if len(operands) > 0 {
		cls.finish()
		operands = append(operands, cls)
		// The leading ^ applies to the whole intersection.
		neg := operands[0].neg
		operands[0].neg = false
		operands[0].finish()
		out := &Class{inter: operands, neg: neg}
		out.finish()
		return out, nil
	}
	cls.finish()
	return cls, nil
}

// posixName reads the rest of [:name:] after "[:".
func (p *parser) posixName() (name string, neg, ok bool) {
	end := strings.Index(p.src[p.pos:], ":]")
	if end < 0 {
		return "", false, false
	}
	name = p.src[p.pos : p.pos+end]
	p.pos += end + 2
	if strings.HasPrefix(name, "^") {
		return name[1:], true, true
	}
	return name, false, true
}

// classAtom reads one item of a class: a character (isChar true) or a
// shorthand or property, which it adds to cls (cls nil: only characters
// are allowed).
func (p *parser) classAtom(cls *Class) (r rune, isChar bool, err error) {
	c := p.next()
	if c != '\\' {
		return c, true, nil
	}
	if p.eof() {
		return 0, false, p.errorf("trailing backslash in character class")
	}
	e := p.next()
	if sub, ok, err := p.classEscape(e); err != nil {
		return 0, false, err
	} else if ok {
		if cls == nil {
			return 0, false, p.errorf("a class cannot end a range")
		}
		cls.subs = append(cls.subs, sub)
		return 0, false, nil
	}
	if e == 'b' {
		return '\b', true, nil
	}
	r, err = p.charEscape(e)
	return r, err == nil, err
}
