package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// levels returns the levels this machine can run, Portable first.
func levels() []Level {
	var ls []Level
	for l := Portable; l <= Hardware(); l++ {
		ls = append(ls, l)
	}
	return ls
}

// atLevel runs f with the kernels at level l.
func atLevel(l Level, f func()) {
	prev := SetLevel(l)
	defer SetLevel(prev)
	f()
}

// gemmCase is a product with its operands embedded, at offsets, in larger
// slices whose unused elements hold sentinels.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	aoff, boff     int
	coff           int
	lda, ldb, ldc  int
}

const sentinel = float32(-12345.5)

func (g *gemmCase) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%v beta=%v lda=%d ldb=%d ldc=%d",
		g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.beta, g.lda, g.ldb, g.ldc)
}

// newCase builds a product with random operands; pad > 0 adds that much to
// the leading dimensions and offsets.
func newCase(rng *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32, pad int) *gemmCase {
	g := &gemmCase{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	mk := func(rows, cols int) ([]float32, int, int) {
		ld := max(cols, 1)
		off := 0
		if pad > 0 {
			ld += rng.IntN(pad + 1)
			off = rng.IntN(pad + 1)
		}
		s := make([]float32, off+rows*ld+rng.IntN(pad+1))
		for i := range s {
			s[i] = sentinel
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				s[off+i*ld+j] = rng.Float32()*2 - 1
			}
		}
		return s, off, ld
	}
	g.a, g.aoff, g.lda = mk(ar, ac)
	g.b, g.boff, g.ldb = mk(br, bc)
	g.c, g.coff, g.ldc = mk(m, n)
	return g
}

func (g *gemmCase) opA(i, p int) float32 {
	if g.transA {
		return g.a[g.aoff+p*g.lda+i]
	}
	return g.a[g.aoff+i*g.lda+p]
}

func (g *gemmCase) opB(p, j int) float32 {
	if g.transB {
		return g.b[g.boff+j*g.ldb+p]
	}
	return g.b[g.boff+p*g.ldb+j]
}

// run computes the product into a copy of C with f and returns the copy.
func (g *gemmCase) run(f func(c []float32)) []float32 {
	c := append([]float32(nil), g.c...)
	f(c)
	return c
}

func (g *gemmCase) gemm(workers int) []float32 {
	return g.run(func(c []float32) {
		GemmParallel(workers, g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a[g.aoff:], g.lda, g.b[g.boff:], g.ldb, g.beta, c[g.coff:], g.ldc)
	})
}

// check compares got with a float64 reference, within float32 rounding of
// the sequential sums, and checks that nothing outside C changed.
func (g *gemmCase) check(t *testing.T, what string, got []float32) {
	t.Helper()
	inC := make([]bool, len(g.c))
	bad := 0
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.n; j++ {
			idx := g.coff + i*g.ldc + j
			inC[idx] = true
			var want, bound float64
			if g.alpha != 0 {
				for p := 0; p < g.k; p++ {
					x := float64(g.opA(i, p)) * float64(g.opB(p, j))
					want += x
					bound += math.Abs(x)
				}
			}
			want *= float64(g.alpha)
			bound *= math.Abs(float64(g.alpha))
			if g.beta != 0 {
				cv := float64(g.c[idx])
				want += float64(g.beta) * cv
				bound += math.Abs(float64(g.beta) * cv)
			}
			tol := float64(g.k+4)*0x1p-23*bound + 1e-30
			if d := math.Abs(float64(got[idx]) - want); !(d <= tol) {
				if bad++; bad <= 5 {
					t.Errorf("%s %v: C[%d][%d] = %v, want %v (tolerance %.3g)", what, g, i, j, got[idx], want, tol)
				}
			}
		}
	}
	for i, v := range got {
		if !inC[i] && v != g.c[i] && !(math.IsNaN(float64(v)) && math.IsNaN(float64(g.c[i]))) {
			t.Fatalf("%s %v: element %d outside C changed from %v to %v", what, g, i, g.c[i], v)
		}
	}
}

// firstBitDiff returns the first index where x and y differ bitwise, or -1.
func firstBitDiff(x, y []float32) int {
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return i
		}
	}
	return -1
}

var forms = [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}

// randomShape returns dimensions around the kernels' tile sizes.
func randomShape(rng *rand.Rand) (m, n, k int) {
	dims := []int{0, 1, 2, 3, 5, 7, 11, 12, 13, 16, 17, 24, 31, 32, 33, 47, 64, 65, 97}
	return dims[rng.IntN(len(dims))], dims[rng.IntN(len(dims))], dims[rng.IntN(len(dims))]
}

func TestGemmReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	scalars := [][2]float32{{1, 0}, {1, 1}, {0.75, -1.25}, {-2, 0}, {0, 0.5}, {0, 0}, {1, 2}}
	for _, l := range levels() {
		atLevel(l, func() {
			for it := 0; it < 300; it++ {
				f := forms[it%4]
				m, n, k := randomShape(rng)
				ab := scalars[rng.IntN(len(scalars))]
				g := newCase(rng, f[0], f[1], m, n, k, ab[0], ab[1], 5*(it%2))
				g.check(t, l.String(), g.gemm(1))
			}
		})
	}
}

// TestGemmLarge covers shapes that cut k into pieces and C into several
// blocks, on several goroutines.
func TestGemmLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{{130, 70, 600}, {200, 300, 40}, {37, 1100, 20}, {5, 40, 1500}}
	for _, l := range levels() {
		atLevel(l, func() {
			for i, s := range shapes {
				f := forms[i%4]
				g := newCase(rng, f[0], f[1], s[0], s[1], s[2], 1.5, 0.5, 3)
				g.check(t, l.String(), g.gemm(3))
			}
		})
	}
}

// TestGemmPrefetchC covers the products whose tiles prefetch their C (a
// short k into a C larger than L2), in every form, with edges, at every
// level, against the reference; and checks that those shapes, and only
// those, take that path.
func TestGemmPrefetchC(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := [][3]int{{1030, 300, 200}, {700, 405, 77}, {2048, 131, 1}, {513, 640, 256}}
	for _, s := range shapes {
		g := gemmOp{kern: kernelFor(Current()), m: s[0], n: s[1], k: s[2]}
		g.plan(1)
		if !g.prefetchC {
			t.Fatalf("%v: no C prefetch planned", s)
		}
	}
	for _, s := range [][3]int{{1030, 300, 257}, {96, 704, 128}} {
		g := gemmOp{kern: kernelFor(Current()), m: s[0], n: s[1], k: s[2]}
		g.plan(1)
		if g.prefetchC {
			t.Fatalf("%v: C prefetch planned", s)
		}
	}
	for _, l := range levels() {
		atLevel(l, func() {
			for i, s := range shapes {
				f := forms[i%4]
				beta := []float32{0, 0.5}[i%2]
				g := newCase(rng, f[0], f[1], s[0], s[1], s[2], 1.5, beta, 3)
				g.check(t, l.String(), g.gemm(1))
				g.check(t, l.String()+" 2 workers", g.gemm(2))
			}
		})
	}
}

// TestGemmBeta0NaN checks that beta == 0 overwrites C without reading it,
// and that alpha == 0 does not read A or B.
func TestGemmBeta0NaN(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, l := range levels() {
		atLevel(l, func() {
			for _, f := range forms {
				for _, k := range []int{0, 3, 40, 700} {
					m, n := 13, 37
					rng := rand.New(rand.NewPCG(5, uint64(k)))
					g := newCase(rng, f[0], f[1], m, n, k, 1, 0, 0)
					for i := range g.c {
						g.c[i] = []float32{nan, inf, -inf}[i%3]
					}
					got := g.gemm(1)
					for i, v := range got {
						want := float32(0)
						if k > 0 {
							continue // checked below
						}
						if v != want {
							t.Fatalf("%v %v k=0 beta=0: C[%d] = %v, want 0", l, g, i, v)
						}
					}
					for i, v := range got {
						if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
							t.Fatalf("%v %v: C[%d] = %v leaked through beta = 0", l, g, i, v)
						}
					}
					// alpha == 0: A and B full of NaN are not read.
					g2 := newCase(rng, f[0], f[1], m, n, k, 0, 2, 0)
					for i := range g2.a {
						g2.a[i] = nan
					}
					for i := range g2.b {
						g2.b[i] = nan
					}
					got = g2.gemm(1)
					for i, v := range got {
						if v != 2*g2.c[i] {
							t.Fatalf("%v %v alpha=0: C[%d] = %v, want %v", l, g2, i, v, 2*g2.c[i])
						}
					}
				}
			}
		})
	}
}

// TestGemmBitIdentity checks that AVX2, AVX-512, any number of workers,
// a packed B, any cut of k and any subset of rows or columns give the
// same bits.
func TestGemmBitIdentity(t *testing.T) {
	if Hardware() < AVX2 {
		t.Skip("no SIMD kernels on this machine")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var simd []Level
	for _, l := range levels() {
		if l >= AVX2 {
			simd = append(simd, l)
		}
	}
	for it := 0; it < 60; it++ {
		f := forms[it%4]
		m, n, k := randomShape(rng)
		if it%5 == 0 {
			m, n, k = 64+rng.IntN(200), 32+rng.IntN(300), 200+rng.IntN(500)
		}
		beta := []float32{0, 1, -0.5}[it%3]
		g := newCase(rng, f[0], f[1], m, n, k, []float32{1, 0.3}[it%2], beta, 4)
		var want []float32
		check := func(what string, got []float32) {
			t.Helper()
			if want == nil {
				want = got
				return
			}
			if i := firstBitDiff(want, got); i >= 0 {
				t.Fatalf("%v: %s differs at %d: %v vs %v", g, what, i, got[i], want[i])
			}
		}
		for _, l := range simd {
			atLevel(l, func() {
				check(l.String(), g.gemm(1))
				check(l.String()+" 2 workers", g.gemm(2))
				check(l.String()+" 4 workers", g.gemm(4))
				var p PackedB
				p.Pack(g.transB, g.k, g.n, g.b[g.boff:], g.ldb)
				check(l.String()+" PackedB", g.run(func(c []float32) {
					GemmPackedB(2, g.transA, g.m, g.alpha, g.a[g.aoff:], g.lda, &p, g.beta, c[g.coff:], g.ldc)
				}))
				// Other cuts of k.
				kern := kernelFor(l)
				kc := kern.kc
				for _, cut := range []int{8, 24, 1000} {
					kern.kc = cut
					check(fmt.Sprintf("%v kc=%d", l, cut), g.gemm(1))
				}
				kern.kc = kc
				// Rows [i0,i1) alone.
				if g.m > 2 {
					i0, i1 := rng.IntN(g.m/2), g.m/2+rng.IntN(g.m/2)+1
					got := append([]float32(nil), want...)
					for i := i0; i < i1; i++ {
						copy(got[g.coff+i*g.ldc:g.coff+i*g.ldc+g.n], g.c[g.coff+i*g.ldc:])
					}
					aoff := g.aoff + i0*g.lda
					if g.transA {
						aoff = g.aoff + i0
					}
					Gemm(g.transA, g.transB, i1-i0, g.n, g.k, g.alpha, g.a[aoff:], g.lda, g.b[g.boff:], g.ldb, g.beta, got[g.coff+i0*g.ldc:], g.ldc)
					check(fmt.Sprintf("%v rows [%d,%d)", l, i0, i1), got)
				}
				// Columns [j0,j1) alone.
				if g.n > 2 && g.m > 0 {
					j0, j1 := rng.IntN(g.n/2), g.n/2+rng.IntN(g.n/2)+1
					got := append([]float32(nil), want...)
					for i := 0; i < g.m; i++ {
						copy(got[g.coff+i*g.ldc+j0:g.coff+i*g.ldc+j1], g.c[g.coff+i*g.ldc+j0:])
					}
					boff := g.boff + j0
					if g.transB {
						boff = g.boff + j0*g.ldb
					}
					Gemm(g.transA, g.transB, g.m, j1-j0, g.k, g.alpha, g.a[g.aoff:], g.lda, g.b[boff:], g.ldb, g.beta, got[g.coff+j0:], g.ldc)
					check(fmt.Sprintf("%v columns [%d,%d)", l, j0, j1), got)
				}
			})
		}
	}
}

// TestGemmPortableDeterministic checks that the portable path does not
// depend on the cut of k, the workers or packing either.
func TestGemmPortableDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	atLevel(Portable, func() {
		for it := 0; it < 20; it++ {
			f := forms[it%4]
			m, n, k := 20+rng.IntN(100), 20+rng.IntN(100), 100+rng.IntN(400)
			g := newCase(rng, f[0], f[1], m, n, k, 1, 1, 2)
			want := g.gemm(1)
			if i := firstBitDiff(want, g.gemm(3)); i >= 0 {
				t.Fatalf("%v: 3 workers differ at %d", g, i)
			}
			var p PackedB
			p.Pack(g.transB, g.k, g.n, g.b[g.boff:], g.ldb)
			got := g.run(func(c []float32) {
				GemmPackedB(1, g.transA, g.m, g.alpha, g.a[g.aoff:], g.lda, &p, g.beta, c[g.coff:], g.ldc)
			})
			if i := firstBitDiff(want, got); i >= 0 {
				t.Fatalf("%v: PackedB differs at %d", g, i)
			}
		}
	})
}

func TestPackedBReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var p PackedB
	for _, s := range [][2]int{{100, 70}, {20, 10}, {33, 65}} {
		for _, tb := range []bool{false, true} {
			g := newCase(rng, false, tb, 9, s[1], s[0], 1, 0, 2)
			p.Pack(tb, g.k, g.n, g.b[g.boff:], g.ldb)
			got := g.run(func(c []float32) {
				GemmPackedB(1, false, g.m, g.alpha, g.a[g.aoff:], g.lda, &p, g.beta, c[g.coff:], g.ldc)
			})
			g.check(t, "PackedB", got)
		}
	}
}

func TestGemmPanics(t *testing.T) {
	a := make([]float32, 20)
	cases := []struct {
		want string
		f    func()
	}{
		{"len(a)", func() { Gemm(false, false, 3, 2, 3, 1, a[:8], 3, a, 2, 0, a, 2) }},
		{"len(b)", func() { Gemm(false, false, 2, 2, 3, 1, a, 3, a[:5], 2, 0, a, 2) }},
		{"len(c)", func() { Gemm(false, false, 2, 3, 3, 1, a, 3, a, 3, 0, a[:5], 3) }},
		{"lda", func() { Gemm(false, false, 2, 2, 3, 1, a, 2, a, 2, 0, a, 2) }},
		{"ldb", func() { Gemm(false, true, 2, 2, 3, 1, a, 3, a, 2, 0, a, 2) }},
		{"ldc", func() { Gemm(false, false, 2, 2, 3, 1, a, 3, a, 2, 0, a, 1) }},
		{"negative", func() { Gemm(false, false, -1, 2, 3, 1, a, 3, a, 2, 0, a, 2) }},
		{"len(a)", func() {
			var p PackedB
			p.Pack(false, 3, 2, a, 2)
			GemmPackedB(1, true, 3, 1, a[:7], 3, &p, 0, a, 2)
		}},
		{"len(b)", func() {
			var p PackedB
			p.Pack(true, 3, 2, a[:5], 3)
		}},
	}
	for _, c := range cases {
		func() {
			defer func() {
				r := recover()
				if s, ok := r.(string); !ok || !strings.Contains(s, c.want) {
					t.Errorf("panic %v, want one mentioning %q", r, c.want)
				}
			}()
			c.f()
		}()
	}
}

func TestGemmNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, s := range [][5]int{{0, 1, 64, 256, 32}, {0, 0, 300, 128, 700}, {1, 0, 256, 128, 256}, {0, 1, 512, 256, 64}} {
		g := newCase(rng, s[0] == 1, s[1] == 1, s[2], s[3], s[4], 1, 1, 0)
		c := append([]float32(nil), g.c...)
		for _, w := range []int{1, 2} {
			allocs := testing.AllocsPerRun(20, func() {
				GemmParallel(w, g.transA, g.transB, g.m, g.n, g.k, 1, g.a, g.lda, g.b, g.ldb, 0, c, g.ldc)
			})
			if allocs != 0 {
				t.Errorf("%v with %d workers: %v allocations per call", g, w, allocs)
			}
			var p PackedB
			p.Pack(g.transB, g.k, g.n, g.b, g.ldb)
			allocs = testing.AllocsPerRun(20, func() {
				GemmPackedB(w, g.transA, g.m, 1, g.a, g.lda, &p, 0, c, g.ldc)
				p.Pack(g.transB, g.k, g.n, g.b, g.ldb)
			})
			if allocs != 0 {
				t.Errorf("%v with %d workers, PackedB: %v allocations per call", g, w, allocs)
			}
		}
	}
}

// TestGemmConcurrentCallers runs parallel products from several goroutines
// at once, sharing the helpers.
func TestGemmConcurrentCallers(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cases := make([]*gemmCase, 6)
	wants := make([][]float32, len(cases))
	for i := range cases {
		f := forms[i%4]
		cases[i] = newCase(rng, f[0], f[1], 150+10*i, 130, 100+20*i, 1, 0.5, 2)
		wants[i] = cases[i].gemm(1)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(cases))
	for i, g := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := 0; rep < 20; rep++ {
				if d := firstBitDiff(wants[i], g.gemm(1+rep%3)); d >= 0 {
					errs <- fmt.Sprintf("%v: differs at %d", g, d)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestGemmTransARegions covers the products with a transposed A, which
// run in regions of C and pack A in the kernels: regions cut by rows and
// by columns, several blocks of rows and pieces of k in a region, edge
// panels and strips, and a B packed or not. Every cut gives the same bits
// as one goroutine with one piece of k, at every SIMD level.
func TestGemmTransARegions(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	shapes := [][3]int{
		{7, 40, 100}, {13, 33, 800}, {30, 100, 600}, {50, 300, 500},
		{97, 17, 400}, {200, 70, 900}, {250, 130, 260}, {64, 64, 1},
	}
	for i, sh := range shapes {
		for _, transB := range []bool{false, true} {
			beta := []float32{0, 1, -0.5}[i%3]
			g := newCase(rng, true, transB, sh[0], sh[1], sh[2], 1.25, beta, 3)
			var want []float32
			for _, l := range levels() {
				atLevel(l, func() {
					kern := kernelFor(l)
					kc := kern.kc
					defer func() { kern.kc = kc }()
					kern.kc = 1 << 20
					ref := g.gemm(1)
					if l == Portable {
						g.check(t, l.String(), ref)
						return
					}
					if want == nil {
						want = ref
						g.check(t, l.String(), ref)
					} else if d := firstBitDiff(want, ref); d >= 0 {
						t.Fatalf("%v: %v differs from AVX2 at %d", g, l, d)
					}
					for _, cut := range []int{8, 40, 128} {
						kern.kc = cut
						for _, w := range []int{1, 2, 3} {
							if d := firstBitDiff(want, g.gemm(w)); d >= 0 {
								t.Fatalf("%v: %v kc=%d workers=%d differs at %d", g, l, cut, w, d)
							}
						}
					}
				})
			}
		}
	}
}
