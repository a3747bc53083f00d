//go:build netlib

package native

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/netlib/blas/netlib"
)

// With -tags netlib every GEMM goes through CBLAS (OpenBLAS) via cgo instead
// of gonum's pure-Go kernels; the backend spike measured about 8× faster
// sgemm. Build with
//
//	apt-get install -y libopenblas-dev
//	CGO_LDFLAGS=-lopenblas OPENBLAS_NUM_THREADS=1 go test -tags netlib ./model/native
//
// OPENBLAS_NUM_THREADS=1 matters: the model already runs GEMMs from several
// goroutines, and OpenBLAS threads on top oversubscribe the cores (the spike
// measured a 2.4× slowdown with 2 threads on 2 cores).
//
// Batch-composition invariance of sampled tokens is guaranteed only for the
// pure-Go build, whose summation order per output element is fixed (see
// newInferState); OpenBLAS may pick kernels by matrix size.
func init() {
	blas32.Use(netlib.Implementation{})
	netlibGemm = true
}
