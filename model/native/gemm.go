package native

import (
	"runtime"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/agentrl/agentrl/internal/simd"
)

// GEMMs run on internal/simd's packed, cache-blocked AVX2/AVX-512 kernels
// (a portable Go kernel elsewhere). Each element of C is the same sequence
// of fused multiply-adds whatever the shape of the product, the row it is
// in, the number of goroutines or the SIMD width, so a row's result does
// not depend on the batch it is in and training is bit-identical across
// GOMAXPROCS (see simd.Gemm).

// netlibGemm is set by the netlib build (kernels_netlib.go): products of at
// least netlibMinWork multiply-adds then go to OpenBLAS through cgo, for
// comparison; smaller ones stay on simd, where cgo's per-call cost would
// dominate.
var netlibGemm = false

// netlibMinWork is the multiply-add count from which OpenBLAS beats small
// products' cgo overhead.
const netlibMinWork = 1 << 21

func transFlag(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// gemmObserver, when set (by benchmarks), is told the shape of every GEMM.
// It may be called from several goroutines at once.
var gemmObserver func(transA, transB bool, m, n, k, lda, ldb, ldc int, alpha, beta float32)

// gemm computes C = alpha·op(A)·op(B) + beta·C (row-major). With parallel
// false it runs on the calling goroutine, for callers that already
// parallelise across independent products (attention heads).
func gemm(parallel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if gemmObserver != nil {
		gemmObserver(transA, transB, m, n, k, lda, ldb, ldc, alpha, beta)
	}
	if gemmTimer != nil {
		start := time.Now()
		runGemm(parallel, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		gemmTimer(parallel, time.Since(start))
		return
	}
	runGemm(parallel, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmTimer, when set (by benchmarks), is told the duration of every GEMM
// after it ran. It may be called from several goroutines at once.
var gemmTimer func(parallel bool, d time.Duration)

// runGemm is gemm without the benchmark hooks.
func runGemm(parallel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if netlibGemm && m*n*k >= netlibMinWork {
		netlibSgemm(parallel, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if parallel {
		simd.GemmParallel(runtime.GOMAXPROCS(0), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	simd.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// netlibSgemm runs a product on the registered CBLAS (OpenBLAS), which runs
// single threaded here (OPENBLAS_NUM_THREADS=1, to avoid fighting the Go
// scheduler), so a parallel product is split into one chunk of rows per
// goroutine.
func netlibSgemm(parallel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	impl := blas32.Implementation()
	ta, tb := transFlag(transA), transFlag(transB)
	w := workers(m)
	if !parallel || w == 1 {
		impl.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	chunk := (m + w - 1) / w
	parallelFor(w, func(_, i int) {
		i0 := i * chunk
		if i0 >= m {
			return
		}
		ao := i0 * lda
		if transA {
			ao = i0
		}
		impl.Sgemm(ta, tb, min(chunk, m-i0), n, k, alpha, a[ao:], lda, b, ldb, beta, c[i0*ldc:], ldc)
	})
}
