//go:build netlib

package simd

import (
	"sync"
	"time"

	"gonum.org/v1/netlib/blas/netlib"
)

// openblasRate times OpenBLAS's sgemm (through cgo, built with -tags
// netlib and OPENBLAS_NUM_THREADS=1) on the shape in GFLOP/s, at its
// median call (shapeRate). With two
// workers, two goroutines each compute half of the rows of C with a
// single-threaded sgemm (this package's driver may split a product by
// columns instead; the comparison is of the two cores' throughput).
func openblasRate(s benchShape, workers int, a, b, c []float32, lda, ldb, ldc int) float64 {
	var impl netlib.Implementation
	rows := func(i0, i1 int) {
		if i1 <= i0 {
			return
		}
		aoff := i0 * lda
		if s.transA {
			aoff = i0
		}
		impl.Sgemm(blasTrans(s.transA), blasTrans(s.transB), i1-i0, s.n, s.k, 1, a[aoff:], lda, b, ldb, s.beta, c[i0*ldc:], ldc)
	}
	call := func() {
		if workers < 2 {
			rows(0, s.m)
			return
		}
		half := (s.m/2 + 15) &^ 15
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { rows(half, s.m); wg.Done() }()
		rows(0, min(half, s.m))
		wg.Wait()
	}
	return shapeRate(s, call, 200*time.Millisecond)
}
