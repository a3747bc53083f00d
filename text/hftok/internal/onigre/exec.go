package onigre

import (
	"unicode"
	"unicode/utf8"
)

// frame is a backtracking entry.
type frame struct {
	kind uint8
	pc   int
	pos  int
	lo   int // fRun: the least position to give back to; fLazy: count; fRestore: old value
}

const (
	fResume  uint8 = iota // resume at pc, pos
	fRun                  // a greedy run at pc-1 gives back one character
	fLazy                 // a lazy run at pc takes one more character
	fRestore              // regs[pc] = lo
)

// machine holds the state of one match attempt; machines are pooled.
type machine struct {
	re          *Regexp
	s           string
	searchStart int
	stack       []frame
	regs        []int
}

func (re *Regexp) get(s string) *machine {
	var m *machine
	select {
	case m = <-re.pool:
	default:
		m = &machine{re: re, regs: make([]int, re.nregs)}
	}
	m.s = s
	return m
}

func (re *Regexp) put(m *machine) {
	m.s = ""
	m.stack = m.stack[:0]
	select {
	case re.pool <- m:
	default:
	}
}

// decode returns the character at s[i] and its width; an invalid byte is
// U+FFFD of width 1.
func decode(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// prevWidth returns the width of the character that ends at s[:i].
func prevWidth(s string, i int) int {
	if c := s[i-1]; c < utf8.RuneSelf {
		return 1
	}
	_, w := utf8.DecodeLastRuneInString(s[:i])
	return w
}

func isWordAt(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	r, _ := decode(s, i)
	return unicode.In(r, unicode.L, unicode.M, unicode.Nd, unicode.Pc)
}

func wordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	return isWordAt(s, i-prevWidth(s, i))
}

func (m *machine) assert(kind, pos int) bool {
	s := m.s
	switch kind {
	case aLineStart:
		return pos == 0 || s[pos-1] == '\n'
	case aLineEnd:
		return pos == len(s) || s[pos] == '\n'
	case aTextStart:
		return pos == 0
	case aTextEnd:
		return pos == len(s)
	case aTextEndNL:
		return pos == len(s) || (pos == len(s)-1 && s[pos] == '\n')
	case aSearchStart:
		return pos == m.searchStart
	case aWordB:
		return wordBefore(s, pos) != isWordAt(s, pos)
	case aNotWordB:
		return wordBefore(s, pos) == isWordAt(s, pos)
	}
	return false
}

// run matches p at pos and returns the end of the first match in
// backtracking order; with mustEnd >= 0 only a match ending there counts.
func (m *machine) run(p *prog, pos, mustEnd int) (int, bool) {
	s := m.s
	base := len(m.stack)
	pc := 0
	insts := p.insts
	for {
		in := &insts[pc]
		switch in.op {
		case opMatch:
			if mustEnd < 0 || pos == mustEnd {
				m.stack = m.stack[:base]
				return pos, true
			}
			goto fail
		case opOne:
			if pos < len(s) {
				r, w := decode(s, pos)
				if in.ch.test(r) {
					pos += w
					pc++
					continue
				}
			}
			goto fail
		case opSplit:
			if g := in.guard; g != nil {
				if pos >= len(s) {
					pc = in.y
					continue
				}
				if r, _ := decode(s, pos); !g.accepts(r) {
					pc = in.y
					continue
				}
			}
			m.stack = append(m.stack, frame{kind: fResume, pc: in.y, pos: pos})
			pc = in.x
			continue
		case opJmp:
			pc = in.x
			continue
		case opAssert:
			if m.assert(in.assert, pos) {
				pc++
				continue
			}
			goto fail
		case opLook:
			if m.look(in, pos) != in.neg {
				pc++
				continue
			}
			goto fail
		case opAtomic:
			end, ok := m.run(in.sub, pos, -1)
			if !ok {
				goto fail
			}
			pos = end
			pc++
			continue
		case opRun:
			start := pos
			n := 0
			for pos < len(s) && (in.max < 0 || n < in.max) {
				r, w := decode(s, pos)
				if !in.ch.test(r) {
					break
				}
				pos += w
				n++
				if n == in.min {
					start = pos
				}
			}
			if n < in.min {
				goto fail
			}
			if pos > start && !in.poss {
				m.stack = append(m.stack, frame{kind: fRun, pc: pc + 1, pos: pos, lo: start})
			}
			pc++
			continue
		case opRunLazy:
			n := 0
			for n < in.min {
				if pos >= len(s) {
					goto fail
				}
				r, w := decode(s, pos)
				if !in.ch.test(r) {
					goto fail
				}
				pos += w
				n++
			}
			if in.max < 0 || n < in.max {
				m.stack = append(m.stack, frame{kind: fLazy, pc: pc, pos: pos, lo: n})
			}
			pc++
			continue
		case opMark:
			m.stack = append(m.stack, frame{kind: fRestore, pc: in.x, lo: m.regs[in.x]})
			m.regs[in.x] = pos
			pc++
			continue
		case opProgress:
			if pos != m.regs[in.x] {
				pc++
				continue
			}
			goto fail
		}
	fail:
		for {
			if len(m.stack) == base {
				return 0, false
			}
			f := m.stack[len(m.stack)-1]
			m.stack = m.stack[:len(m.stack)-1]
			switch f.kind {
			case fResume:
				pc, pos = f.pc, f.pos
			case fRun:
				pos = f.pos - prevWidth(s, f.pos)
				if pos > f.lo {
					m.stack = append(m.stack, frame{kind: fRun, pc: f.pc, pos: pos, lo: f.lo})
				}
				pc = f.pc
			case fLazy:
				if f.pos >= len(s) {
					continue
				}
				in := &insts[f.pc]
				r, w := decode(s, f.pos)
				if !in.ch.test(r) {
					continue
				}
				pos = f.pos + w
				if n := f.lo + 1; in.max < 0 || n < in.max {
					m.stack = append(m.stack, frame{kind: fLazy, pc: f.pc, pos: pos, lo: n})
				}
				pc = f.pc + 1
			case fRestore:
				m.regs[f.pc] = f.lo
				continue
			}
			break
		}
	}
}

// look evaluates a look-around at pos (before its negation).
func (m *machine) look(in *inst, pos int) bool {
	if !in.behind {
		_, ok := m.run(in.sub, pos, -1)
		return ok
	}
	// Try every start from which the body can span [start, pos): between
	// in.min and in.max characters back.
	start := pos
	for k := 0; k <= in.max; k++ {
		if k >= in.min {
			if _, ok := m.run(in.sub, start, pos); ok {
				return true
			}
		}
		if start == 0 {
			break
		}
		start -= prevWidth(m.s, start)
	}
	return false
}

// MatchAt returns the end of the match that starts exactly at s[i:], as a
// backtracking engine finds it, or false when none starts there.
func (re *Regexp) MatchAt(s string, i int) (int, bool) {
	m := re.get(s)
	m.searchStart = i
	end, ok := m.run(re.prog, i, -1)
	re.put(m)
	return end, ok
}

// find returns the leftmost match starting at or after from.
func (m *machine) find(from int) (start, end int, ok bool) {
	re, s := m.re, m.s
	m.searchStart = from
	for i := from; i <= len(s); {
		if re.first != nil {
			// Skip the characters no match can start with.
			for i < len(s) {
				r, w := decode(s, i)
				if re.first.accepts(r) {
					break
				}
				i += w
			}
			if i >= len(s) {
				return 0, 0, false
			}
		}
		if e, ok := m.run(re.prog, i, -1); ok {
			return i, e, true
		}
		if i == len(s) {
			break
		}
		_, w := decode(s, i)
		i += w
	}
	return 0, 0, false
}

// FindAll appends the [start, end) offsets of the successive matches in s
// to dst, as Oniguruma's search loop in HF's tokenizers finds them: each
// search starts where the previous match ended, and an empty match right
// where the previous one ended is skipped by moving one character on.
func (re *Regexp) FindAll(dst [][2]int, s string) [][2]int {
	m := re.get(s)
	from, lastEnd := 0, -1
	for from <= len(s) {
		st, e, ok := m.find(from)
		if !ok {
			break
		}
		if st == e && e == lastEnd {
			if from >= len(s) {
				break
			}
			_, w := decode(s, from)
			from += w
			continue
		}
		dst = append(dst, [2]int{st, e})
		from, lastEnd = e, e
	}
	re.put(m)
	return dst
}
