package native

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"
)

// pureGo is gonum's own BLAS. The tiled driver and the inference attention
// call it directly, even in the netlib build: its kernels round every
// element the same way whatever the vector length or alignment, which the
// batch-invariance guarantees rely on, and it has no per-call cgo cost.
var pureGo gonum.Implementation

// Tiling of the pure-Go GEMM driver. gonum's Sgemm, given a large matrix,
// starts one goroutine per 64×64 block of C (allocating for each) and sums
// the A·Bᵀ form in 64-wide pieces of k, while for small matrices it runs
// serially over the whole of k; which one it picks depends on the number of
// rows. The driver below instead hands gonum tiles small enough that it
// always runs serially (at most 3 of its 64×64 blocks), splits k into fixed
// pieces so the tiles stay in cache, and runs the tiles on our own
// goroutines. Each output element is then computed the same way whatever
// the number of rows (gonum's dot kernel aligns on its second operand, the
// row of B, whose address does not depend on the batch), and the hot loop
// does not allocate per block.
const (
	gemmTileM = 64
	gemmTileN = 192
	gemmTileK = 256
	// gemmSerialWork is the multiply-add count below which one goroutine
	// does the whole product.
	gemmSerialWork = 1 << 18
)

// tiledGemm is false when a BLAS with its own blocking (OpenBLAS via -tags
// netlib) is in use: products of at least cblasMinWork multiply-adds then go
// to it directly, smaller ones still take the tiled pure-Go path.
var tiledGemm = true

// cblasMinWork is the multiply-add count from which OpenBLAS beats the
// pure-Go kernels despite cgo's per-call cost.
const cblasMinWork = 1 << 21

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
	if k == 0 {
		// BLAS leaves C untouched when alpha·AB is empty and beta == 1, but
		// implementations differ on the beta scaling; do it explicitly.
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	ta, tb := transFlag(transA), transFlag(transB)
	if !tiledGemm && m*n*k >= cblasMinWork {
		// OpenBLAS blocks and vectorises well on its own but runs single
		// threaded here (OPENBLAS_NUM_THREADS=1, to avoid fighting the Go
		// scheduler), so only split the rows into one large chunk per
		// goroutine. Small products stay on the pure-Go path below, where
		// cgo's per-call cost does not dominate.
		impl := blas32.Implementation()
		w := workers(m)
		if !parallel || m*n*k < gemmSerialWork || w == 1 {
			impl.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		chunk := (m + w - 1) / w
		parallelFor(w, func(_, i int) {
			i0 := i * chunk
			if i0 >= m {
				return
			}
			mt := min(chunk, m-i0)
			ao := i0 * lda
			if transA {
				ao = i0
			}
			impl.Sgemm(ta, tb, mt, n, k, alpha, a[ao:], lda, b, ldb, beta, c[i0*ldc:], ldc)
		})
		return
	}
	g := gemmArgs{transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc}
	tiles := g.tiles()
	if !parallel || m*n*k < gemmSerialWork || tiles == 1 {
		// A plain loop, so that the many small serial products of the
		// attention kernels do not allocate.
		for t := 0; t < tiles; t++ {
			g.tile(t)
		}
		return
	}
	gp := g // only this copy escapes to the goroutines
	parallelFor(tiles, func(_, t int) { gp.tile(t) })
}

// gemmArgs holds the operands of one GEMM for the tiled driver.
type gemmArgs struct {
	transA, transB bool
	m, n, k        int
	alpha          float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	beta           float32
	c              []float32
	ldc            int
}

func (g *gemmArgs) tiles() int {
	return ((g.m + gemmTileM - 1) / gemmTileM) * ((g.n + gemmTileN - 1) / gemmTileN)
}

// tile computes tile t of C (row-major order of tiles), looping over k in
// gemmTileK pieces.
func (g *gemmArgs) tile(t int) {
	tilesN := (g.n + gemmTileN - 1) / gemmTileN
	i0, j0 := (t/tilesN)*gemmTileM, (t%tilesN)*gemmTileN
	mt, nt := min(gemmTileM, g.m-i0), min(gemmTileN, g.n-j0)
	ta, tb := transFlag(g.transA), transFlag(g.transB)
	bt := g.beta
	for k0 := 0; k0 < g.k; k0 += gemmTileK {
		kt := min(gemmTileK, g.k-k0)
		var ao, bo int
		if g.transA {
			ao = k0*g.lda + i0
		} else {
			ao = i0*g.lda + k0
		}
		if g.transB {
			bo = j0*g.ldb + k0
		} else {
			bo = k0*g.ldb + j0
		}
		pureGo.Sgemm(ta, tb, mt, nt, kt, g.alpha, g.a[ao:], g.lda, g.b[bo:], g.ldb, bt, g.c[i0*g.ldc+j0:], g.ldc)
		bt = 1
	}
}
