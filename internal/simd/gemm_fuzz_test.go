package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzGemm compares the SIMD kernels with the portable one (to float32
// rounding) and with each other (bit for bit) on fuzzed shapes.
func FuzzGemm(f *testing.F) {
	f.Add(uint8(13), uint8(37), uint8(5), uint8(0), uint8(0), uint8(1), uint64(1))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), uint8(1), uint8(0), uint64(2))
	f.Add(uint8(64), uint8(33), uint8(70), uint8(2), uint8(2), uint8(2), uint64(3))
	f.Add(uint8(7), uint8(100), uint8(0), uint8(3), uint8(3), uint8(3), uint64(4))
	f.Fuzz(func(t *testing.T, m, n, k, form, alphaSel, betaSel uint8, seed uint64) {
		scal := []float32{1, 0, -0.5, 3}
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		fm := forms[form%4]
		g := newCase(rng, fm[0], fm[1], int(m%80), int(n%80), int(k%100), scal[alphaSel%4], scal[betaSel%4], int(seed%4))
		var want []float32
		atLevel(Portable, func() { want = g.gemm(1) })
		for _, l := range levels()[1:] {
			var got []float32
			atLevel(l, func() { got = g.gemm(1 + int(seed%3)) })
			if l > AVX2 {
				var avx2 []float32
				atLevel(AVX2, func() { avx2 = g.gemm(1) })
				if i := firstBitDiff(avx2, got); i >= 0 {
					t.Fatalf("%v: %v and avx2 differ at %d: %v vs %v", g, l, i, got[i], avx2[i])
				}
			}
			for i := 0; i < g.m; i++ {
				for j := 0; j < g.n; j++ {
					idx := g.coff + i*g.ldc + j
					var bound float64
					for p := 0; p < g.k; p++ {
						bound += math.Abs(float64(g.opA(i, p)) * float64(g.opB(p, j)))
					}
					bound = bound*math.Abs(float64(g.alpha)) + math.Abs(float64(g.beta)*float64(g.c[idx]))
					tol := float64(2*g.k+4)*0x1p-24*bound + 1e-30
					if d := math.Abs(float64(got[idx]) - float64(want[idx])); !(d <= tol) {
						t.Fatalf("%v: %v C[%d][%d] = %v, portable %v", g, l, i, j, got[idx], want[idx])
					}
				}
			}
			for i := range got {
				if i < g.coff || (i-g.coff)/g.ldc >= g.m || (i-g.coff)%g.ldc >= g.n {
					if got[i] != g.c[i] {
						t.Fatalf("%v: %v wrote outside C at %d", g, l, i)
					}
				}
			}
		}
	})
}
