package constrain

import (
	"math/big"
)

// Numbers: a number is -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? with
// at most maxIntDigits integer digits, maxFracDigits fraction digits and
// maxExpDigits exponent digits; an integer has neither fraction nor
// exponent, and a bounded number (minimum or maximum) no exponent. The
// bounds are checked on the prefix: a digit is accepted only if some
// number it can still grow into lies within them.

// numPrefix is a number's text so far, without an exponent.
type numPrefix struct {
	neg  bool
	int  string // integer digits
	dot  bool
	frac string // fraction digits
}

var ten = big.NewInt(10)

// pow10 returns 10^n as a Rat (n may be negative).
func pow10(n int) *big.Rat {
	p := new(big.Int).Exp(ten, big.NewInt(int64(abs(n))), nil)
	if n >= 0 {
		return new(big.Rat).SetInt(p)
	}
	return new(big.Rat).SetFrac(big.NewInt(1), p)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// extend returns the fewest bytes that complete p into a number branch b
// accepts (0 when p is one already), or -1 when none is reachable.
func (b *branch) extend(p numPrefix) int {
	if b.lo == nil && b.hi == nil {
		return b.extendSigned(p)
	}
	key := p.key()
	b.mu.Lock()
	n, ok := b.ext[key]
	b.mu.Unlock()
	if ok {
		return n
	}
	n = b.extendBounded(p)
	b.mu.Lock()
	if b.ext == nil || len(b.ext) >= maxExtCache {
		b.ext = map[string]int{}
	}
	b.ext[key] = n
	b.mu.Unlock()
	return n
}

// maxExtCache bounds a bounded number branch's cache of extend results.
const maxExtCache = 1 << 14

func (p numPrefix) key() string {
	s := p.int
	if p.neg {
		s = "-" + s
	}
	if p.dot {
		s += "." + p.frac
	}
	return s
}

func (b *branch) extendBounded(p numPrefix) int {
	if p.int == "" && !p.neg && !p.dot {
		// Nothing read: a positive number, or '-' and a negative one.
		pos := b.extendSigned(p)
		neg := b.extendSigned(numPrefix{neg: true})
		switch {
		case neg < 0:
			return pos
		case pos < 0:
			return neg + 1
		}
		return min(pos, neg+1)
	}
	return b.extendSigned(p)
}

// extendSigned is extend for a prefix whose sign is known.
func (b *branch) extendSigned(p numPrefix) int {
	if b.lo == nil && b.hi == nil {
		switch {
		case p.int == "" || p.dot && p.frac == "":
			return 1
		}
		return 0
	}
	if p.dot {
		f := len(p.frac)
		P := decimal(p.int + p.frac)
		P.Mul(P, pow10(-f))
		for g := 0; f+g <= maxFracDigits; g++ {
			if f+g == 0 {
				continue
			}
			// [P, P + 10^-f - 10^-(f+g)] on the grid 10^-(f+g).
			hiM := new(big.Rat).Add(P, pow10(-f))
			hiM.Sub(hiM, pow10(-(f + g)))
			if b.hit(P, hiM, p.neg, f+g) {
				return g
			}
		}
		return -1
	}
	best := -1
	k := len(p.int)
	jmin, jmax := 0, maxIntDigits-k
	switch p.int {
	case "":
		jmin = 1
	case "0":
		jmax = 0
	}
	for j := jmin; j <= jmax; j++ {
		var iMin, iMax *big.Rat
		switch {
		case p.int == "" && j == 1:
			iMin, iMax = new(big.Rat), big.NewRat(9, 1)
		case p.int == "":
			iMin = pow10(j - 1)
			iMax = new(big.Rat).Sub(pow10(j), big.NewRat(1, 1))
		default:
			iMin = decimal(p.int)
			iMin.Mul(iMin, pow10(j))
			iMax = new(big.Rat).Add(iMin, pow10(j))
			iMax.Sub(iMax, big.NewRat(1, 1))
		}
		if best >= 0 && j >= best {
			break
		}
		// The whole range this j reaches, fractions included.
		top := iMax
		if b.kind == kNumber {
			top = new(big.Rat).Add(iMax, big.NewRat(1, 1))
		}
		if !b.overlaps(iMin, top, p.neg) {
			continue
		}
		if b.hit(iMin, iMax, p.neg, 0) {
			best = j
			break // longer j cost more
		}
		if b.kind != kNumber {
			continue
		}
		for g := 1; g <= maxFracDigits && (best < 0 || j+1+g < best); g++ {
			hiM := new(big.Rat).Add(iMax, big.NewRat(1, 1))
			hiM.Sub(hiM, pow10(-g))
			if b.hit(iMin, hiM, p.neg, g) {
				best = j + 1 + g
				break
			}
		}
	}
	return best
}

// overlaps reports whether the magnitudes [a, c] (negated when neg) meet
// [lo, hi].
func (b *branch) overlaps(a, c *big.Rat, neg bool) bool {
	lo, hi := a, c
	if neg {
		lo, hi = new(big.Rat).Neg(c), new(big.Rat).Neg(a)
	}
	if b.lo != nil && hi.Cmp(b.lo) < 0 {
		return false
	}
	if b.hi != nil && lo.Cmp(b.hi) > 0 {
		return false
	}
	return true
}

// hit reports whether a multiple of 10^-g whose magnitude is in [a, c]
// (negated when neg) lies in [lo, hi].
func (b *branch) hit(a, c *big.Rat, neg bool, g int) bool {
	lo, hi := a, c
	if neg {
		lo, hi = new(big.Rat).Neg(c), new(big.Rat).Neg(a)
	}
	if b.lo != nil && b.lo.Cmp(lo) > 0 {
		lo = b.lo
	}
	if b.hi != nil && b.hi.Cmp(hi) < 0 {
		hi = b.hi
	}
	if lo.Cmp(hi) > 0 {
		return false
	}
	scale := pow10(g)
	l := new(big.Rat).Mul(lo, scale)
	h := new(big.Rat).Mul(hi, scale)
	return ceil(l).Cmp(floor(h)) <= 0
}

// decimal reads a string of digits.
func decimal(digits string) *big.Rat {
	r, ok := new(big.Rat).SetString(digits)
	if !ok {
		return new(big.Rat)
	}
	return r
}

func floor(r *big.Rat) *big.Int {
	q, m := new(big.Int), new(big.Int)
	q.DivMod(r.Num(), r.Denom(), m) // Euclidean: the floor for a positive denominator
	return q
}

func ceil(r *big.Rat) *big.Int {
	q, m := new(big.Int), new(big.Int)
	q.DivMod(r.Num(), r.Denom(), m)
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}
