package simd

import (
	"sync/atomic"
	"testing"
)

func TestParallelRunsEachIterationOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 17, 1000} {
		for _, workers := range []int{1, 2, 4} {
			hits := make([]atomic.Int32, n)
			var busy [8]atomic.Int32
			Parallel(workers, n, func(w, i int) {
				if w < 0 || w >= workers {
					t.Errorf("worker %d outside [0, %d)", w, workers)
					return
				}
				if busy[w].Add(1) != 1 {
					t.Errorf("worker index %d used by two goroutines at once", w)
				}
				hits[i].Add(1)
				busy[w].Add(-1)
			})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("n %d workers %d: iteration %d ran %d times", n, workers, i, h)
				}
			}
		}
	}
}

// TestParallelNestsProducts: a loop iteration may run a parallel GEMM; the
// result equals the serial product.
func TestParallelNestsProducts(t *testing.T) {
	const m, n, k = 96, 80, 64
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%13) - 6
	}
	for i := range b {
		b[i] = float32(i%7) - 3
	}
	want := make([]float32, m*n)
	Gemm(false, false, m, n, k, 1, a, k, b, n, 0, want, n)
	outs := make([][]float32, 4)
	Parallel(2, len(outs), func(_, i int) {
		outs[i] = make([]float32, m*n)
		GemmParallel(2, false, false, m, n, k, 1, a, k, b, n, 0, outs[i], n)
	})
	for i, c := range outs {
		if d := firstBitDiff(want, c); d >= 0 {
			t.Fatalf("loop %d: element %d differs", i, d)
		}
	}
}
