package simd

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackedCols: a product over a view of some columns of a packed B
// gives the bits of the full product for those columns, on every level.
func TestPackedCols(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, l := range levels() {
		atLevel(l, func() {
			for _, n := range []int{1, 15, 16, 17, 40, 100, 384} {
				for _, k := range []int{1, 7, 128, 400} {
					var p PackedB
					p.Pack(true, k, n, randVec(r, n*k, -1, 1), k)
					for _, m := range []int{1, 3, 13} {
						a := randVec(r, m*k, -1, 1)
						c0 := randVec(r, m*n, -1, 1)
						full := slices.Clone(c0)
						GemmPackedB(1, false, m, 1, a, k, &p, 1, full, n)
						for j0 := 0; j0 <= n; j0 += PackedColAlign {
							for _, j1 := range []int{j0, min(j0+1, n), min(j0+PackedColAlign, n), n} {
								v := p.Cols(j0, j1)
								part := slices.Clone(c0)
								GemmPackedB(1, false, m, 1, a, k, &v, 1, part[j0:], n)
								for i := 0; i < m; i++ {
									row, want := part[i*n:(i+1)*n], full[i*n:(i+1)*n]
									if !slices.EqualFunc(row[j0:j1], want[j0:j1], sameBits) ||
										!slices.Equal(row[:j0], c0[i*n:i*n+j0]) || !slices.Equal(row[j1:], c0[i*n+j1:(i+1)*n]) {
										t.Fatalf("%v n=%d k=%d m=%d cols [%d,%d): differs from the full product", l, n, k, m, j0, j1)
									}
								}
							}
						}
					}
				}
			}
		})
	}
	var p PackedB
	p.Pack(true, 4, 40, make([]float32, 160), 4)
	for _, c := range [][2]int{{1, 5}, {-16, 4}, {16, 41}, {32, 20}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Cols(%d, %d): no panic", c[0], c[1])
				}
			}()
			p.Cols(c[0], c[1])
		}()
	}
}
