package onigre

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// opcode is an instruction of the backtracking machine.
type opcode uint8

const (
	opMatch    opcode = iota // success (at the required end, inside a look-behind)
	opOne                    // one character that ch accepts
	opSplit                  // try x, then y
	opJmp                    // go to x
	opAssert                 // a zero-width anchor
	opLook                   // look-around with sub
	opAtomic                 // run sub once, keep its first match
	opRun                    // min..max characters that ch accepts, greedy (possessive: no giving back)
	opRunLazy                // the same, lazy
	opMark                   // regs[x] = position (restored on backtracking)
	opProgress               // fail unless the position moved since regs[x]
)

// charTest accepts one character.
type charTest struct {
	kind  uint8 // tLit, tFold, tClass, tAny, tAnyNL
	r     rune
	folds []rune
	cls   *Class
}

const (
	tLit uint8 = iota
	tFold
	tClass
	tAny   // any character but \n
	tAnyNL // any character
)

func (t *charTest) test(r rune) bool {
	switch t.kind {
	case tLit:
		return r == t.r
	case tFold:
		for _, f := range t.folds {
			if r == f {
				return true
			}
		}
		return false
	case tClass:
		return t.cls.Matches(r)
	case tAny:
		return r != '\n'
	}
	return true
}

// guard accepts the characters a branch can start with.
type guard struct {
	ascii [utf8.RuneSelf]bool
	tests []charTest
}

func newGuard(tests []charTest) *guard {
	g := &guard{tests: tests}
	for r := rune(0); r < utf8.RuneSelf; r++ {
		g.ascii[r] = g.slow(r)
	}
	return g
}

func (g *guard) slow(r rune) bool {
	for i := range g.tests {
		if g.tests[i].test(r) {
			return true
		}
	}
	return false
}

func (g *guard) accepts(r rune) bool {
	if r < utf8.RuneSelf && r >= 0 {
		return g.ascii[r]
	}
	return g.slow(r)
}

type inst struct {
	op       opcode
	ch       charTest
	guard    *guard // opSplit: x can only match from a character it accepts
	x, y     int
	min, max int // opRun: counts (max -1: unbounded); opLook: look-behind length bounds
	poss     bool
	neg      bool
	behind   bool
	assert   int
	sub      *prog
}

// prog is a compiled (sub-)expression ending in opMatch.
type prog struct {
	insts []inst
}

// maxInsts bounds the size of a compiled pattern (counted repetitions are
// unrolled).
const maxInsts = 50000

type compiler struct {
	nregs int
	size  int
	err   error
}

func (c *compiler) prog(n *node) *prog {
	p := &prog{}
	c.emit(p, n)
	p.insts = append(p.insts, inst{op: opMatch})
	c.size += len(p.insts)
	if c.size > maxInsts && c.err == nil {
		c.err = fmt.Errorf("pattern too large once its counted repetitions are expanded")
	}
	return p
}

// single returns the character test of a one-character node.
func single(n *node) (charTest, bool) {
	switch n.kind {
	case nLit:
		if n.fold {
			folds := []rune{n.r}
			for f := unicode.SimpleFold(n.r); f != n.r; f = unicode.SimpleFold(f) {
				folds = append(folds, f)
			}
			if len(folds) > 1 {
				return charTest{kind: tFold, folds: folds}, true
			}
		}
		return charTest{kind: tLit, r: n.r}, true
	case nClass:
		n.cls.buildBMP()
		return charTest{kind: tClass, cls: n.cls}, true
	case nAny:
		if n.dotAll {
			return charTest{kind: tAnyNL}, true
		}
		return charTest{kind: tAny}, true
	}
	return charTest{}, false
}

func (c *compiler) emit(p *prog, n *node) {
	if c.err != nil {
		return
	}
	if len(p.insts) > maxInsts {
		c.err = fmt.Errorf("pattern too large once its counted repetitions are expanded")
		return
	}
	if ch, ok := single(n); ok {
		p.insts = append(p.insts, inst{op: opOne, ch: ch})
		return
	}
	switch n.kind {
	case nEmpty:
	case nConcat:
		for _, s := range n.subs {
			c.emit(p, s)
		}
	case nAlt:
		var jumps []int
		for i, s := range n.subs {
			if i < len(n.subs)-1 {
				split := len(p.insts)
				in := inst{op: opSplit, x: split + 1}
				if tests, nullable := firstSet(s); !nullable {
					in.guard = newGuard(tests)
				}
				p.insts = append(p.insts, in)
				c.emit(p, s)
				jumps = append(jumps, len(p.insts))
				p.insts = append(p.insts, inst{op: opJmp})
				p.insts[split].y = len(p.insts)
			} else {
				c.emit(p, s)
			}
		}
		for _, j := range jumps {
			p.insts[j].x = len(p.insts)
		}
	case nAssert:
		p.insts = append(p.insts, inst{op: opAssert, assert: n.assert})
	case nLook:
		in := inst{op: opLook, neg: n.neg, behind: n.behind, sub: c.prog(n.subs[0])}
		if n.behind {
			lo, hi := charLen(n.subs[0])
			if hi < 0 {
				c.err = fmt.Errorf("look-behind of unbounded length")
				return
			}
			in.min, in.max = lo, hi
		}
		p.insts = append(p.insts, in)
	case nAtomic:
		p.insts = append(p.insts, inst{op: opAtomic, sub: c.prog(n.subs[0])})
	case nRepeat:
		c.repeat(p, n)
	}
}

func (c *compiler) repeat(p *prog, n *node) {
	sub := n.subs[0]
	if ch, ok := single(sub); ok {
		op := opRun
		if n.lazy {
			op = opRunLazy
		}
		p.insts = append(p.insts, inst{op: op, ch: ch, min: n.min, max: n.max, poss: n.poss})
		return
	}
	if n.poss {
		inner := *n
		inner.poss = false
		p.insts = append(p.insts, inst{op: opAtomic, sub: c.prog(&inner)})
		return
	}
	for range n.min {
		c.emit(p, sub)
		if c.err != nil {
			return
		}
	}
	if n.max == n.min {
		return
	}
	nullable := canBeEmpty(sub)
	if n.max < 0 {
		// L: split B, E; B: [mark] sub [progress] jmp L; E:
		loop := len(p.insts)
		p.insts = append(p.insts, inst{op: opSplit})
		body := len(p.insts)
		reg := -1
		if nullable {
			reg = c.nregs
			c.nregs++
			p.insts = append(p.insts, inst{op: opMark, x: reg})
		}
		c.emit(p, sub)
		if reg >= 0 {
			p.insts = append(p.insts, inst{op: opProgress, x: reg})
		}
		p.insts = append(p.insts, inst{op: opJmp, x: loop})
		end := len(p.insts)
		if n.lazy {
			p.insts[loop].x, p.insts[loop].y = end, body
		} else {
			p.insts[loop].x, p.insts[loop].y = body, end
		}
		return
	}
	// Optional copies: split B1, E; B1: sub; split B2, E; … E:
	var splits []int
	for range n.max - n.min {
		splits = append(splits, len(p.insts))
		p.insts = append(p.insts, inst{op: opSplit})
		c.emit(p, sub)
		if c.err != nil {
			return
		}
	}
	end := len(p.insts)
	for _, s := range splits {
		if n.lazy {
			p.insts[s].x, p.insts[s].y = end, s+1
		} else {
			p.insts[s].x, p.insts[s].y = s+1, end
		}
	}
}

// canBeEmpty reports whether n can match the empty string.
func canBeEmpty(n *node) bool {
	switch n.kind {
	case nLit, nClass, nAny:
		return false
	case nConcat:
		for _, s := range n.subs {
			if !canBeEmpty(s) {
				return false
			}
		}
		return true
	case nAlt:
		for _, s := range n.subs {
			if canBeEmpty(s) {
				return true
			}
		}
		return false
	case nRepeat:
		return n.min == 0 || canBeEmpty(n.subs[0])
	case nAtomic:
		return canBeEmpty(n.subs[0])
	}
	return true // assertions, look-around, empty
}

// charLen returns the least and most characters n can match (hi -1:
// unbounded).
func charLen(n *node) (lo, hi int) {
	switch n.kind {
	case nLit, nClass, nAny:
		return 1, 1
	case nConcat:
		for _, s := range n.subs {
			a, b := charLen(s)
			lo += a
			if hi >= 0 {
				if b < 0 {
					hi = -1
				} else {
					hi += b
				}
			}
		}
		return lo, hi
	case nAlt:
		lo = -1
		for _, s := range n.subs {
			a, b := charLen(s)
			if lo < 0 || a < lo {
				lo = a
			}
			if hi >= 0 && (b < 0 || b > hi) {
				hi = b
			}
		}
		return lo, hi
	case nRepeat:
		a, b := charLen(n.subs[0])
		lo = a * n.min
		switch {
		case n.max < 0 && b != 0:
			hi = -1
		case b < 0:
			hi = -1
		default:
			hi = b * max(n.max, 0)
		}
		return lo, hi
	case nAtomic:
		return charLen(n.subs[0])
	}
	return 0, 0
}

// firstSet returns the tests one of which the first character of any
// non-empty match must pass, and whether the node can match without
// consuming a character (then the set says nothing).
func firstSet(n *node) (tests []charTest, nullable bool) {
	if ch, ok := single(n); ok {
		return []charTest{ch}, false
	}
	switch n.kind {
	case nConcat:
		for _, s := range n.subs {
			t, null := firstSet(s)
			tests = append(tests, t...)
			if !null {
				return tests, false
			}
		}
		return tests, true
	case nAlt:
		for _, s := range n.subs {
			t, null := firstSet(s)
			tests = append(tests, t...)
			nullable = nullable || null
		}
		return tests, nullable
	case nRepeat:
		t, null := firstSet(n.subs[0])
		return t, null || n.min == 0
	case nAtomic:
		return firstSet(n.subs[0])
	}
	return nil, true
}

// Regexp is a compiled pattern. It is safe for concurrent use.
type Regexp struct {
	src   string
	prog  *prog
	nregs int
	// first, when set, accepts every character a match can start with.
	first *guard
	pool  chan *machine
}

// Compile parses and compiles an Oniguruma (Ruby syntax) pattern.
func Compile(pattern string) (*Regexp, error) {
	n, err := parse(pattern)
	if err != nil {
		return nil, err
	}
	c := &compiler{}
	p := c.prog(n)
	if c.err != nil {
		return nil, fmt.Errorf("regex %q: %w", pattern, c.err)
	}
	re := &Regexp{src: pattern, prog: p, nregs: c.nregs, pool: make(chan *machine, 16)}
	if tests, nullable := firstSet(n); !nullable {
		re.first = newGuard(tests)
	}
	return re, nil
}

// MustCompile is Compile for patterns known to be valid.
func MustCompile(pattern string) *Regexp {
	re, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return re
}

// String returns the pattern.
func (re *Regexp) String() string { return re.src }
