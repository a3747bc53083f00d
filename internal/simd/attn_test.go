package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// attnCase is one call of each attention kernel, with every operand
// embedded at a random stride and guarded by sentinels.
type attnCase struct {
	rows, n, hd         int
	ldq, ldk, krow, lds int
	ldp, ldv, vrow, ldo int
	q, k, s             []float32
	p, v, o             []float32
}

var (
	attnRows = []int{1, 2, 3, 4, 5, 7, 9}
	attnN    = []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 144, 200, 300}
	attnHD   = []int{0, 2, 4, 6, 8, 10, 16, 24, 30, 32, 34, 40, 48, 64, 66, 128}
)

const attnSentinel = -12345.5

func sentinels(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = attnSentinel
	}
	return s
}

func newAttnCase(r *rand.Rand, rows, n, hd int, shared bool) *attnCase {
	c := &attnCase{rows: rows, n: n, hd: hd}
	c.ldq = hd + r.IntN(3)
	c.ldk = n + r.IntN(5)
	c.lds = max(1, n+r.IntN(3))
	c.ldp = n + r.IntN(3)
	c.ldv = hd + r.IntN(3)
	c.ldo = max(1, hd+r.IntN(3))
	if !shared {
		c.krow = hd*c.ldk + r.IntN(4)
		c.vrow = n*c.ldv + r.IntN(4)
	}
	c.q = randVec(r, rows*c.ldq+3, -1, 1)
	c.k = randVec(r, rows*c.krow+max(hd, 1)*c.ldk+3, -1, 1)
	c.p = randVec(r, rows*c.ldp+3, 0, 1)
	c.v = randVec(r, rows*c.vrow+n*c.ldv+hd+3, -1, 1)
	c.s = sentinels(rows*c.lds + 3)
	c.o = sentinels(rows*c.ldo + 3)
	for i := 0; i < rows; i++ {
		copy(c.o[i*c.ldo:i*c.ldo+hd], randVec(r, hd, -1, 1))
	}
	return c
}

func (c *attnCase) String() string {
	return fmt.Sprintf("rows=%d n=%d hd=%d krow=%d vrow=%d", c.rows, c.n, c.hd, c.krow, c.vrow)
}

// run returns the scores and the accumulated outputs at the current level.
func (c *attnCase) run() (s, o []float32) {
	s, o = slices.Clone(c.s), slices.Clone(c.o)
	AttnScores(c.rows, c.n, c.hd, c.q, c.ldq, c.k, c.ldk, c.krow, s, c.lds)
	AttnAccum(c.rows, c.n, c.hd, c.p, c.ldp, c.v, c.ldv, c.vrow, o, c.ldo)
	return s, o
}

// check compares s and o with float64 references and checks that nothing
// outside the outputs changed.
func (c *attnCase) check(t *testing.T, what string, s, o []float32) {
	t.Helper()
	inS := func(i int) bool { return i/c.lds < c.rows && i%c.lds < c.n }
	for i, x := range s {
		if !inS(i) {
			if x != attnSentinel {
				t.Fatalf("%s %v: AttnScores wrote s[%d] outside the output", what, c, i)
			}
			continue
		}
		r, j := i/c.lds, i%c.lds
		var want, mag float64
		for d := 0; d < c.hd; d++ {
			pr := f64(c.q[r*c.ldq+d]) * f64(c.k[r*c.krow+d*c.ldk+j])
			want += pr
			mag += math.Abs(pr)
		}
		if math.Abs(f64(x)-want) > 1e-6*(mag+1e-30)*float64(c.hd+1) {
			t.Fatalf("%s %v: s[%d][%d] = %g, want %g", what, c, r, j, x, want)
		}
	}
	for i, x := range o {
		r, col := i/c.ldo, i%c.ldo
		if r >= c.rows || col >= c.hd {
			if x != attnSentinel {
				t.Fatalf("%s %v: AttnAccum wrote o[%d] outside the output", what, c, i)
			}
			continue
		}
		want := f64(c.o[i])
		mag := math.Abs(want)
		for j := 0; j < c.n; j++ {
			pr := f64(c.p[r*c.ldp+j]) * f64(c.v[r*c.vrow+j*c.ldv+col])
			want += pr
			mag += math.Abs(pr)
		}
		if math.Abs(f64(x)-want) > 1e-6*(mag+1e-30)*float64(c.n+1) {
			t.Fatalf("%s %v: o[%d][%d] = %g, want %g", what, c, r, col, x, want)
		}
	}
}

func forAttnCases(f func(c *attnCase)) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, rows := range attnRows {
		for _, n := range attnN {
			for _, hd := range attnHD {
				f(newAttnCase(r, rows, n, hd, r.IntN(2) == 0))
			}
		}
	}
}

// TestAttnKernels checks both kernels on every level against float64
// references, and the AVX2 and AVX-512 results against each other bit
// for bit.
func TestAttnKernels(t *testing.T) {
	forAttnCases(func(c *attnCase) {
		var asmS, asmO []float32
		for _, l := range levels() {
			var s, o []float32
			atLevel(l, func() { s, o = c.run() })
			c.check(t, l.String(), s, o)
			if l == Portable || !haveAsm {
				continue
			}
			if asmS == nil {
				asmS, asmO = s, o
				continue
			}
			for i := range s {
				if !sameBits(s[i], asmS[i]) {
					t.Fatalf("%v: %v score %d = %g, AVX2 %g", c, l, i, s[i], asmS[i])
				}
			}
			for i := range o {
				if !sameBits(o[i], asmO[i]) {
					t.Fatalf("%v: %v output %d = %g, AVX2 %g", c, l, i, o[i], asmO[i])
				}
			}
		}
	})
}

// TestAttnSplitInvariance: splitting the positions into spans, or the rows
// into separate calls, gives the same bits on every level.
func TestAttnSplitInvariance(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	forAttnCases(func(c *attnCase) {
		for _, l := range levels() {
			atLevel(l, func() {
				s, o := c.run()
				// Rows one at a time.
				s1, o1 := slices.Clone(c.s), slices.Clone(c.o)
				for i := 0; i < c.rows; i++ {
					AttnScores(1, c.n, c.hd, c.q[i*c.ldq:], c.ldq, c.k[i*c.krow:], c.ldk, c.krow, s1[i*c.lds:], c.lds)
					AttnAccum(1, c.n, c.hd, c.p[i*c.ldp:], c.ldp, c.v[i*c.vrow:], c.ldv, c.vrow, o1[i*c.ldo:], c.ldo)
				}
				// Positions in random spans, some empty.
				s2, o2 := slices.Clone(c.s), slices.Clone(c.o)
				for j0 := 0; j0 < c.n || j0 == 0; {
					cnt := min(r.IntN(40), c.n-j0)
					AttnScores(c.rows, cnt, c.hd, c.q, c.ldq, c.k[j0:], c.ldk, c.krow, s2[j0:], c.lds)
					AttnAccum(c.rows, cnt, c.hd, c.p[j0:], c.ldp, c.v[j0*c.ldv:], c.ldv, c.vrow, o2, c.ldo)
					j0 += cnt
					if c.n == 0 {
						break
					}
				}
				for _, got := range [][2][]float32{{s1, o1}, {s2, o2}} {
					if !slices.EqualFunc(got[0], s, sameBits) || !slices.EqualFunc(got[1], o, sameBits) {
						t.Fatalf("%v %v: split calls differ from one call", l, c)
					}
				}
			})
		}
	})
}

// TestAttnScoresMatchGemm: on the assembly levels a score is exactly the
// element of a Gemm with k = hd and alpha = 1.
func TestAttnScoresMatchGemm(t *testing.T) {
	if !haveAsm || Hardware() < AVX2 {
		t.Skip("no assembly level")
	}
	r := rand.New(rand.NewPCG(35, 36))
	for _, l := range levels()[1:] {
		if kernelFor(l) == kernels[Portable] {
			continue // a build whose GEMM has no assembly (purego)
		}
		atLevel(l, func() {
			for _, n := range attnN {
				for _, hd := range attnHD {
					c := newAttnCase(r, 5, n, hd, true)
					s, _ := c.run()
					g := make([]float32, c.rows*c.lds)
					Gemm(false, false, c.rows, n, hd, 1, c.q, c.ldq, c.k, c.ldk, 0, g, c.lds)
					for i := 0; i < c.rows; i++ {
						if !slices.EqualFunc(s[i*c.lds:i*c.lds+n], g[i*c.lds:i*c.lds+n], sameBits) {
							t.Fatalf("%v %v: row %d differs from Gemm", l, c, i)
						}
					}
				}
			}
		})
	}
}

func TestAttnShapeErrors(t *testing.T) {
	short := make([]float32, 5)
	long := make([]float32, 1000)
	for i, f := range []func(){
		func() { AttnScores(2, 8, 4, short, 4, long, 8, 0, long, 8) },
		func() { AttnScores(2, 8, 4, long, 4, short, 8, 0, long, 8) },
		func() { AttnScores(2, 8, 4, long, 4, long, 8, 0, short, 8) },
		func() { AttnScores(2, 8, 4, long, 4, long, 8, 0, long, 7) },
		func() { AttnScores(-1, 8, 4, long, 4, long, 8, 0, long, 8) },
		func() { AttnAccum(2, 8, 4, short, 8, long, 4, 0, long, 4) },
		func() { AttnAccum(2, 8, 4, long, 8, short, 4, 0, long, 4) },
		func() { AttnAccum(2, 8, 4, long, 8, long, 4, 0, short, 4) },
		func() { AttnAccum(2, 8, 4, long, 8, long, 4, 0, long, 3) },
		func() { AttnAccum(1, 8, 4, long, 8, long, -4, 0, long, 4) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("call %d: no panic", i)
				}
			}()
			f()
		}()
	}
	// Empty calls touch nothing.
	AttnScores(0, 8, 4, nil, 4, nil, 8, 0, nil, 8)
	AttnScores(3, 0, 4, nil, 4, nil, 8, 0, nil, 8)
	AttnAccum(3, 0, 4, nil, 8, nil, 4, 0, nil, 4)
	AttnAccum(3, 8, 0, nil, 8, nil, 4, 0, nil, 4)
}

func TestAttnNoAlloc(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	c := newAttnCase(r, 4, 144, 32, false)
	s, o := slices.Clone(c.s), slices.Clone(c.o)
	for _, l := range levels() {
		atLevel(l, func() {
			if a := testing.AllocsPerRun(10, func() {
				AttnScores(c.rows, c.n, c.hd, c.q, c.ldq, c.k, c.ldk, c.krow, s, c.lds)
				AttnAccum(c.rows, c.n, c.hd, c.p, c.ldp, c.v, c.ldv, c.vrow, o, c.ldo)
			}); a != 0 {
				t.Errorf("%v: %g allocations per call", l, a)
			}
		})
	}
}
