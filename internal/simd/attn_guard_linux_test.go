package simd

import (
	"math/rand/v2"
	"testing"
)

// TestAttnTailsStayInBounds runs the attention kernels on operands of the
// exact length their shape needs, each ending where an inaccessible page
// begins: masked tails must not touch memory past them.
func TestAttnTailsStayInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	fill := func(n int) []float32 {
		g := guarded(t, n)
		copy(g, randVec(r, n, -1, 1))
		return g
	}
	for _, rows := range []int{1, 2, 3, 5} {
		for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, 65, 129} {
			for _, hd := range []int{2, 6, 8, 10, 16, 24, 30, 32, 34, 40} {
				for _, shared := range []bool{true, false} {
					ldq, ldk, lds, ldp, ldv, ldo := hd, n, n, n, hd, hd
					krow, vrow := 0, 0
					if !shared {
						krow, vrow = hd*ldk, n*ldv
					}
					q := fill((rows-1)*ldq + hd)
					k := fill((rows-1)*krow + (hd-1)*ldk + n)
					s := fill((rows-1)*lds + n)
					p := fill((rows-1)*ldp + n)
					v := fill((rows-1)*vrow + (n-1)*ldv + hd)
					o := fill((rows-1)*ldo + hd)
					for _, l := range levels() {
						atLevel(l, func() {
							AttnScores(rows, n, hd, q, ldq, k, ldk, krow, s, lds)
							AttnAccum(rows, n, hd, p, ldp, v, ldv, vrow, o, ldo)
						})
					}
				}
			}
		}
	}
}
