package constrain

import "sort"

// The automaton is nondeterministic: a state is a set of configurations,
// each a stack of frames. The top frame reads the next byte; a frame that
// may end here (a number after a digit) also lets the frame below read it.
// A frame that starts a nested value pushes it over its own continuation
// (the frame in the state after that value), so a value that ends simply
// pops itself. Stacks are immutable and share their tails.

// stack is one configuration; nil is the finished one.
type stack struct {
	f    frame
	next *stack
}

func push(f frame, below *stack) *stack { return &stack{f: f, next: below} }

// frame is one level of a configuration. Implementations are comparable
// values (two equal frames behave the same).
type frame interface {
	// feed appends to out the configurations that follow reading b at this
	// frame, below being the rest of the stack.
	feed(m *machine, b byte, below *stack, out []*stack) []*stack
	// canEnd reports whether the frame may end before the next byte.
	canEnd() bool
	// rest is the fewest bytes that end the frame.
	rest() int
}

// machine holds what frames share: the text strings must not contain.
type machine struct {
	forbid []byte
	kmp    []int // forbid's failure function
}

func newMachine(forbid string) *machine {
	m := &machine{forbid: []byte(forbid)}
	m.kmp = make([]int, len(m.forbid))
	for i, k := 1, 0; i < len(m.forbid); i++ {
		for k > 0 && m.forbid[i] != m.forbid[k] {
			k = m.kmp[k-1]
		}
		if m.forbid[i] == m.forbid[k] {
			k++
		}
		m.kmp[i] = k
	}
	return m
}

// match advances the forbidden-text matcher from state k by b; it returns
// the new state, and false when b completes the forbidden text.
func (m *machine) match(k int, b byte) (int, bool) {
	if len(m.forbid) == 0 {
		return 0, true
	}
	for k > 0 && m.forbid[k] != b {
		k = m.kmp[k-1]
	}
	if m.forbid[k] == b {
		k++
	}
	return k, k < len(m.forbid)
}

// step appends to out the configurations that follow reading b in st.
func step(m *machine, st *stack, b byte, out []*stack) []*stack {
	for st != nil {
		out = st.f.feed(m, b, st.next, out)
		if !st.f.canEnd() {
			break
		}
		st = st.next
	}
	return out
}

// cost is the fewest bytes that finish st (0: st may end here).
func cost(st *stack) int {
	n := 0
	for ; st != nil; st = st.next {
		n += st.f.rest()
	}
	return capCost(n)
}

// same reports whether two configurations are equal.
func same(a, b *stack) bool {
	for a != b {
		if a == nil || b == nil || a.f != b.f {
			return false
		}
		a, b = a.next, b.next
	}
	return true
}

// maxConfigs bounds a state's configurations. Dropping some (of
// pathological schemas, such as nested alternatives that all match the
// same text) keeps every accepted prefix completable; it only narrows what
// is accepted.
const maxConfigs = 256

// advance returns the state after reading b in state cs.
func advance(m *machine, cs []*stack, b byte) []*stack {
	var out []*stack
	for _, c := range cs {
		out = step(m, c, b, out)
	}
	return dedupe(out)
}

func dedupe(cs []*stack) []*stack {
	if len(cs) < 2 {
		return cs
	}
	out := cs[:1]
	for _, c := range cs[1:] {
		dup := false
		for _, o := range out {
			if same(c, o) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, c)
			if len(out) == maxConfigs {
				break
			}
		}
	}
	return out
}

// minCost is the least cost of a state's configurations (maxCost when it
// has none).
func minCost(cs []*stack) int {
	n := maxCost
	for _, c := range cs {
		n = min(n, cost(c))
	}
	return n
}

// startValue appends the configurations that begin a value of v with byte
// b; depth is the number of objects and arrays around the value.
func startValue(m *machine, v *Value, depth int, b byte, below *stack, out []*stack) []*stack {
	for _, br := range v.alts {
		switch br.kind {
		case kObject:
			if b == '{' && depth < MaxNesting {
				out = append(out, push(objFrame{br: br, depth: uint8(depth + 1)}, below))
			}
		case kArray:
			if b == '[' && depth < MaxNesting {
				out = append(out, push(arrFrame{br: br, depth: uint8(depth + 1)}, below))
			}
		case kString:
			if b == '"' {
				out = append(out, push(strFrame{br: br}, below))
			}
		case kNumber, kInteger:
			if f, ok := (numFrame{br: br}).read(b); ok {
				out = append(out, push(f, below))
			}
		case kLiteral:
			if lo, hi := narrow(br.lits.s, 0, len(br.lits.s), 0, b); lo < hi {
				out = append(out, push(litFrame{set: br.lits, lo: int32(lo), hi: int32(hi), pos: 1}, below))
			}
		}
	}
	return out
}

// narrow returns the range of s[lo:hi] (sorted, sharing their first pos
// bytes) whose byte pos is b.
func narrow(s []string, lo, hi, pos int, b byte) (int, int) {
	sub := s[lo:hi]
	i := sort.Search(len(sub), func(i int) bool { return len(sub[i]) > pos && sub[i][pos] >= b })
	j := sort.Search(len(sub), func(i int) bool { return len(sub[i]) > pos && sub[i][pos] > b })
	return lo + i, lo + j
}

// valFrame is a value not begun.
type valFrame struct {
	v     *Value
	depth uint8
}

func (f valFrame) feed(m *machine, b byte, below *stack, out []*stack) []*stack {
	return startValue(m, f.v, int(f.depth), b, below, out)
}
func (f valFrame) canEnd() bool { return false }
func (f valFrame) rest() int    { return f.v.minLen }

// litFrame is a fixed text, one of set.s[lo:hi], pos bytes read.
type litFrame struct {
	set         *litSet
	lo, hi, pos int32
}

func (f litFrame) feed(_ *machine, b byte, below *stack, out []*stack) []*stack {
	lo, hi := narrow(f.set.s, int(f.lo), int(f.hi), int(f.pos), b)
	if lo < hi {
		out = append(out, push(litFrame{set: f.set, lo: int32(lo), hi: int32(hi), pos: f.pos + 1}, below))
	}
	return out
}

// canEnd: the texts share pos bytes and are sorted, so a complete one is
// the first.
func (f litFrame) canEnd() bool { return len(f.set.s[f.lo]) == int(f.pos) }

func (f litFrame) rest() int {
	n := maxCost
	for _, s := range f.set.s[f.lo:f.hi] {
		n = min(n, len(s)-int(f.pos))
	}
	return n
}

// Object states.
const (
	oOpen   = iota // after '{'
	oKey           // in a declared key: keys[lo:hi] match pos bytes
	oColon         // after a key
	oVal1          // after ':' (a space may follow)
	oVal0          // after ": "
	oAfter         // after a value
	oComma1        // after ',' (a space may follow)
	oComma0        // after ", "
)

// objFrame is an object being read.
type objFrame struct {
	br          *branch
	st          uint8
	depth       uint8 // objects and arrays around the object's values
	key         int32 // the current declared key (oColon, oVal*), -1 for a free key
	lo, hi, pos int32 // oKey
	nSeen       int32
	seen        string // bitset of the declared keys used
}

func (f objFrame) has(i int) bool { return i/8 < len(f.seen) && f.seen[i/8]&(1<<(i%8)) != 0 }

func (f objFrame) with(i int) objFrame {
	b := []byte(f.seen)
	for len(b) <= i/8 {
		b = append(b, 0)
	}
	b[i/8] |= 1 << (i % 8)
	f.seen, f.nSeen = string(b), f.nSeen+1
	return f
}

// missing reports whether a required key is unused.
func (f objFrame) missing() bool {
	for _, i := range f.br.required {
		if !f.has(i) {
			return true
		}
	}
	return false
}

// unusedIn reports whether keys[lo:hi] holds an unused key.
func (f objFrame) unusedIn(lo, hi int) bool {
	for i := lo; i < hi; i++ {
		if !f.has(i) {
			return true
		}
	}
	return false
}

func (f objFrame) canEnd() bool { return false }

func (f objFrame) feed(m *machine, b byte, below *stack, out []*stack) []*stack {
	br := f.br
	switch f.st {
	case oOpen, oComma1, oComma0:
		switch {
		case b == '}' && f.st == oOpen && !f.missing():
			return append(out, below)
		case b == ' ' && f.st == oComma1:
			f.st = oComma0
			return append(out, push(f, below))
		case b != '"':
			return out
		case br.free:
			g := f
			g.st, g.key = oColon, -1
			return append(out, push(strFrame{}, push(g, below)))
		}
		lo, hi := narrow(br.keys, 0, len(br.keys), 0, '"')
		if !f.unusedIn(lo, hi) {
			return out
		}
		f.st, f.lo, f.hi, f.pos = oKey, int32(lo), int32(hi), 1
		return append(out, push(f, below))
	case oKey:
		lo, hi := narrow(br.keys, int(f.lo), int(f.hi), int(f.pos), b)
		if !f.unusedIn(lo, hi) {
			return out
		}
		f.lo, f.hi, f.pos = int32(lo), int32(hi), f.pos+1
		if len(br.keys[lo]) == int(f.pos) { // a key is complete (no key is a prefix of another)
			f.st, f.key, f.lo, f.hi, f.pos = oColon, int32(lo), 0, 0, 0
		}
		return append(out, push(f, below))
	case oColon:
		if b == ':' {
			f.st = oVal1
			out = append(out, push(f, below))
		}
		return out
	case oVal1, oVal0:
		if b == ' ' && f.st == oVal1 {
			f.st = oVal0
			return append(out, push(f, below))
		}
		v, g := anyValue, f
		if f.key >= 0 {
			v, g = br.vals[f.key], f.with(int(f.key))
		}
		g.st, g.key = oAfter, -1
		return startValue(m, v, int(f.depth), b, push(g, below), out)
	case oAfter:
		switch {
		case b == ',' && (br.free || int(f.nSeen) < len(br.keys)):
			f.st = oComma1
			return append(out, push(f, below))
		case b == '}' && !f.missing():
			return append(out, below)
		}
	}
	return out
}

func (f objFrame) rest() int {
	br := f.br
	if br.free {
		switch f.st {
		case oOpen, oAfter:
			return 1
		case oComma1, oComma0:
			return 5 // "":0}
		case oColon:
			return 3 // :0}
		default:
			return 2 // 0}
		}
	}
	// pairs is the cost of the unused required keys other than skip, each
	// with its ',' before it.
	pairs := func(skip int) int {
		n := 0
		for _, i := range br.required {
			if i != skip && !f.has(i) {
				n += 1 + len(br.keys[i]) + 1 + br.vals[i].minLen
			}
		}
		return n
	}
	switch f.st {
	case oOpen:
		if n := pairs(-1); n > 0 {
			return capCost(n - 1 + 1) // no ',' before the first
		}
		return 1
	case oAfter:
		return capCost(pairs(-1) + 1)
	case oComma1, oComma0, oKey:
		// Some unused key must come next (the current one, in oKey).
		lo, hi, pos := 0, len(br.keys), 0
		if f.st == oKey {
			lo, hi, pos = int(f.lo), int(f.hi), int(f.pos)
		}
		all := pairs(-1)
		best := maxCost
		for i := lo; i < hi; i++ {
			if f.has(i) {
				continue
			}
			own := len(br.keys[i]) - pos + 1 + br.vals[i].minLen
			others := all
			if br.isReq[i] {
				others -= 1 + len(br.keys[i]) + 1 + br.vals[i].minLen
			}
			best = min(best, own+others+1)
		}
		return capCost(best)
	default: // oColon, oVal1, oVal0: a value of key, then the rest
		n := br.vals[f.key].minLen + pairs(int(f.key)) + 1
		if f.st == oColon {
			n++
		}
		return capCost(n)
	}
}

// Array states.
const (
	aOpen   = iota // after '['
	aAfter         // after an element
	aComma1        // after ','
	aComma0        // after ", "
)

// arrFrame is an array being read; n elements are begun.
type arrFrame struct {
	br    *branch
	st    uint8
	depth uint8
	n     int32
}

func (f arrFrame) canEnd() bool { return false }

func (f arrFrame) feed(m *machine, b byte, below *stack, out []*stack) []*stack {
	br := f.br
	switch f.st {
	case aOpen, aComma1, aComma0:
		if b == ']' && f.st == aOpen {
			if br.minItems == 0 {
				out = append(out, below)
			}
			return out
		}
		if b == ' ' && f.st == aComma1 {
			f.st = aComma0
			return append(out, push(f, below))
		}
		if br.maxItems >= 0 && int(f.n) >= br.maxItems {
			return out
		}
		g := f
		g.st, g.n = aAfter, f.n+1
		return startValue(m, br.items, int(f.depth), b, push(g, below), out)
	case aAfter:
		switch {
		case b == ',' && (br.maxItems < 0 || int(f.n) < br.maxItems):
			f.st = aComma1
			return append(out, push(f, below))
		case b == ']' && int(f.n) >= br.minItems:
			return append(out, below)
		}
	}
	return out
}

func (f arrFrame) rest() int {
	br := f.br
	each := br.items.minLen
	switch f.st {
	case aOpen:
		if br.minItems == 0 {
			return 1
		}
		return capCost(br.minItems*(each+1) - 1 + 1)
	case aAfter:
		return capCost(max(0, br.minItems-int(f.n))*(each+1) + 1)
	default:
		r := max(1, br.minItems-int(f.n))
		return capCost(each + (r-1)*(each+1) + 1)
	}
}

// String lexer states: in a character (none pending), after '\', in a \u
// escape (k hex digits read; u1d: the first was d or D, so the second must
// keep it off the surrogates), in a UTF-8 character (the bytes still due
// and the range of the next).
const (
	sNormal = iota
	sEsc
	sU0
	sU1
	sU1d
	sU2
	sU3
	sC1 // 1 continuation byte due, 80–BF
	sC2 // 2 due, next 80–BF
	sC3 // 3 due, next 80–BF
	sE0 // 2 due, next A0–BF
	sED // 2 due, next 80–9F
	sF0 // 3 due, next 90–BF
	sF4 // 3 due, next 80–8F
	numLex
)

// pendingBytes is the bytes each lexer state still needs to end its
// character.
var pendingBytes = [numLex]int{sNormal: 0, sEsc: 1, sU0: 4, sU1: 3, sU1d: 3, sU2: 2, sU3: 1,
	sC1: 1, sC2: 2, sC3: 3, sE0: 2, sED: 2, sF0: 3, sF4: 3}

// lexByte moves the string lexer from state s by byte b (not an unescaped
// '"'): the new state, whether a character was completed, whether a
// character was begun, and whether b is allowed at all.
func lexByte(s uint8, b byte) (next uint8, done, begun, ok bool) {
	cont := func(lo, hi byte, then uint8) (uint8, bool, bool, bool) {
		if b < lo || b > hi {
			return 0, false, false, false
		}
		return then, then == sNormal, false, true
	}
	switch s {
	case sNormal:
		switch {
		case b == '\\':
			return sEsc, false, true, true
		case b < 0x20 || b == '"':
			return 0, false, false, false
		case b < 0x80:
			return sNormal, true, true, true
		case b >= 0xC2 && b <= 0xDF:
			return sC1, false, true, true
		case b == 0xE0:
			return sE0, false, true, true
		case b == 0xED:
			return sED, false, true, true
		case b >= 0xE1 && b <= 0xEF:
			return sC2, false, true, true
		case b == 0xF0:
			return sF0, false, true, true
		case b >= 0xF1 && b <= 0xF3:
			return sC3, false, true, true
		case b == 0xF4:
			return sF4, false, true, true
		}
		return 0, false, false, false
	case sEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return sNormal, true, false, true
		case 'u':
			return sU0, false, false, true
		}
		return 0, false, false, false
	case sU0:
		switch {
		case b == 'd' || b == 'D':
			return sU1d, false, false, true
		case isHex(b):
			return sU1, false, false, true
		}
		return 0, false, false, false
	case sU1d:
		if b >= '0' && b <= '7' {
			return sU2, false, false, true
		}
		return 0, false, false, false
	case sU1, sU2, sU3:
		if !isHex(b) {
			return 0, false, false, false
		}
		switch s {
		case sU1:
			return sU2, false, false, true
		case sU2:
			return sU3, false, false, true
		}
		return sNormal, true, false, true
	case sC1:
		return cont(0x80, 0xBF, sNormal)
	case sC2:
		return cont(0x80, 0xBF, sC1)
	case sC3:
		return cont(0x80, 0xBF, sC2)
	case sE0:
		return cont(0xA0, 0xBF, sC1)
	case sED:
		return cont(0x80, 0x9F, sC1)
	case sF0:
		return cont(0x90, 0xBF, sC2)
	case sF4:
		return cont(0x80, 0x8F, sC2)
	}
	return 0, false, false, false
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// strFrame is a string being read, after its opening quote; br is nil for
// a string without limits (an object's free key).
type strFrame struct {
	br    *branch
	lex   uint8
	kmp   int16 // the forbidden-text matcher's state
	count int32 // characters completed
}

func (f strFrame) limits() (minC, maxC int) {
	if f.br == nil {
		return 0, -1
	}
	return f.br.minChars, f.br.maxChars
}

func (f strFrame) canEnd() bool { return false }

func (f strFrame) feed(m *machine, b byte, below *stack, out []*stack) []*stack {
	minC, maxC := f.limits()
	if b == '"' && f.lex == sNormal {
		if int(f.count) >= minC {
			out = append(out, below)
		}
		return out
	}
	next, done, begun, ok := lexByte(f.lex, b)
	if !ok || begun && maxC >= 0 && int(f.count) >= maxC {
		return out
	}
	k, ok := m.match(int(f.kmp), b)
	if !ok {
		return out
	}
	f.lex, f.kmp = next, int16(k)
	if done {
		f.count++
	}
	return append(out, push(f, below))
}

func (f strFrame) rest() int {
	minC, _ := f.limits()
	pending := pendingBytes[f.lex]
	chars := int(f.count)
	if pending > 0 {
		chars++
	}
	return capCost(pending + max(0, minC-chars) + 1)
}

// Number states.
const (
	nStart = iota // nothing read
	nSign         // after '-'
	nZero         // integer part "0"
	nInt          // integer digits
	nDot          // after '.'
	nFrac         // fraction digits
	nE            // after 'e' or 'E'
	nESign        // after the exponent's sign
	nExp          // exponent digits
)

// numFrame is a number being read. A bounded one keeps its text.
type numFrame struct {
	br               *branch
	st               uint8
	nInt, nFrac, nEx uint8
	text             string // bounded numbers only
}

func (f numFrame) bounded() bool { return f.br.lo != nil || f.br.hi != nil }

// read returns the frame after reading b, and whether b is allowed.
func (f numFrame) read(b byte) (numFrame, bool) {
	digit := b >= '0' && b <= '9'
	integer := f.br.kind == kInteger
	switch {
	case f.st == nStart && b == '-':
		f.st = nSign
	case (f.st == nStart || f.st == nSign) && digit:
		f.st, f.nInt = nInt, 1
		if b == '0' {
			f.st = nZero
		}
	case f.st == nInt && digit && f.nInt < maxIntDigits:
		f.nInt++
	case (f.st == nZero || f.st == nInt) && b == '.' && !integer:
		f.st = nDot
	case (f.st == nDot || f.st == nFrac) && digit && f.nFrac < maxFracDigits:
		f.st, f.nFrac = nFrac, f.nFrac+1
	case (f.st == nZero || f.st == nInt || f.st == nFrac) && (b == 'e' || b == 'E') && !integer && !f.bounded():
		f.st = nE
	case f.st == nE && (b == '+' || b == '-'):
		f.st = nESign
	case (f.st == nE || f.st == nESign || f.st == nExp) && digit && f.nEx < maxExpDigits:
		f.st, f.nEx = nExp, f.nEx+1
	default:
		return f, false
	}
	if f.bounded() {
		f.text += string(b)
		if f.br.extend(f.prefix()) < 0 {
			return f, false
		}
	}
	return f, true
}

// prefix parses a bounded number's text.
func (f numFrame) prefix() numPrefix {
	t := f.text
	var p numPrefix
	if len(t) > 0 && t[0] == '-' {
		p.neg, t = true, t[1:]
	}
	i := 0
	for i < len(t) && t[i] != '.' {
		i++
	}
	p.int = t[:i]
	if i < len(t) {
		p.dot, p.frac = true, t[i+1:]
	}
	return p
}

func (f numFrame) feed(_ *machine, b byte, below *stack, out []*stack) []*stack {
	if g, ok := f.read(b); ok {
		out = append(out, push(g, below))
	}
	return out
}

func (f numFrame) canEnd() bool { return f.rest() == 0 }

func (f numFrame) rest() int {
	if f.bounded() {
		return f.br.extend(f.prefix())
	}
	switch f.st {
	case nStart, nSign, nDot, nE, nESign:
		return 1
	}
	return 0
}
