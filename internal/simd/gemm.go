package simd

import (
	"fmt"
)

//go:generate sh -c "cd _asm && go run ./gemm -kind gemm -out ../gemm_amd64.s && go run ./gemm -kind peak -out ../peak_amd64.s"

// Gemm computes C = alpha·op(A)·op(B) + beta·C on the calling goroutine,
// where op(A) is m×k, op(B) is k×n and C is m×n, all dense row-major
// float32 matrices with leading dimensions lda, ldb and ldc (the distance
// between the starts of consecutive stored rows). op(X) is X, or Xᵀ when
// transX is set; a transposed A is stored k×m, a transposed B n×k.
//
// Every element of C is computed the same way, whatever the shape, the
// element's position, the number of goroutines, whether B was packed in
// advance and which instruction set runs:
//
//	s := float32(0)
//	for p := 0; p < k; p++ {
//		s = fma(op(A)[i][p], op(B)[p][j], s) // one rounding per step
//	}
//	if beta == 0 {
//		C[i][j] = alpha * s                // C is not read
//	} else {
//		C[i][j] = fma(alpha, s, beta*C[i][j]) // beta*C rounded first
//	}
//
// (with alpha or beta equal to 1 the corresponding product is exact). The
// sum over k is never split or reordered: cache blocking only pauses it
// (the raw sum is stored and resumed), so no blocking parameter, edge
// padding or split of C among goroutines changes a bit of the result, and
// computing any subset of the rows or columns of C gives the same values
// for them. The AVX2 and AVX-512 kernels follow this exactly and agree bit
// for bit; the portable Go kernel writes s = a*b + s, which the compiler
// may or may not fuse, and agrees with them to float32 rounding.
//
// As in BLAS, when alpha == 0 or k == 0 A and B are not read and C becomes
// beta·C (zero, without reading C, when beta == 0); when m or n is 0
// nothing happens. Gemm panics if a leading dimension is smaller than the
// stored row width or a slice is shorter than its shape requires. C must
// not overlap A or B.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	GemmParallel(1, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// GemmParallel computes the same product as Gemm, with the same bits,
// splitting it across up to workers goroutines (the caller's included, at
// most GOMAXPROCS) when it is large enough to gain from that.
func GemmParallel(workers int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm("Gemm", transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	g := gemmOp{
		kern:   kernelFor(Current()),
		transA: transA, transB: transB,
		m: m, n: n, k: k,
		alpha: alpha, beta: beta,
		a: a, lda: lda,
		b: b, ldb: ldb,
		c: c, ldc: ldc,
	}
	g.run(workers)
}

// PackedB is a B operand laid out once for many products with different
// A: the weights of a layer during decoding, where m is small and packing
// B on every call would cost as much as the product itself. Its layout
// does not depend on the instruction set, so a PackedB stays valid across
// SetLevel. The zero value is an empty operand ready for Pack.
type PackedB struct {
	k, n int
	data []float32 // panels of packW columns, see packB
}

// Pack stores op(B) (k×n; B is stored n×k when transB is set) in p,
// reusing p's storage when it is large enough. It panics on the same
// shape errors as Gemm.
func (p *PackedB) Pack(transB bool, k, n int, b []float32, ldb int) {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("simd: PackedB.Pack: negative dimension k=%d n=%d", k, n))
	}
	rows, cols := k, n
	if transB {
		rows, cols = n, k
	}
	checkMatrix("PackedB.Pack", "b", "ldb", rows, cols, b, ldb)
	p.k, p.n = k, n
	size := packedBSize(k, n)
	if cap(p.data) < size {
		p.data = make([]float32, size)
	}
	p.data = p.data[:size]
	packB(p.data, transB, k, n, b, ldb, 0, n)
}

// GemmPackedB computes C = alpha·op(A)·B + beta·C for the op(B) held in p
// (op(A) is m×k, C is m×n, with p's k and n), on up to workers goroutines
// like GemmParallel. The result is bit-identical to Gemm's on the operand
// p was packed from.
func GemmPackedB(workers int, transA bool, m int, alpha float32, a []float32, lda int, p *PackedB, beta float32, c []float32, ldc int) {
	k, n := p.k, p.n
	if m < 0 {
		panic(fmt.Sprintf("simd: GemmPackedB: negative dimension m=%d", m))
	}
	rows, cols := m, k
	if transA {
		rows, cols = k, m
	}
	if m > 0 && n > 0 && k > 0 {
		checkMatrix("GemmPackedB", "a", "lda", rows, cols, a, lda)
	}
	checkMatrix("GemmPackedB", "c", "ldc", m, n, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	g := gemmOp{
		kern:   kernelFor(Current()),
		transA: transA,
		m:      m, n: n, k: k,
		alpha: alpha, beta: beta,
		a: a, lda: lda,
		packed: p.data,
		c:      c, ldc: ldc,
	}
	g.run(workers)
}

// checkGemm panics unless the operands of a product have the shapes it
// needs.
func checkGemm(name string, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("simd: %s: negative dimension m=%d n=%d k=%d", name, m, n, k))
	}
	if m > 0 && n > 0 && k > 0 {
		ar, ac := m, k
		if transA {
			ar, ac = k, m
		}
		checkMatrix(name, "a", "lda", ar, ac, a, lda)
		br, bc := k, n
		if transB {
			br, bc = n, k
		}
		checkMatrix(name, "b", "ldb", br, bc, b, ldb)
	}
	checkMatrix(name, "c", "ldc", m, n, c, ldc)
}

// checkMatrix panics unless x holds a rows×cols matrix with leading
// dimension ld.
func checkMatrix(fn, x, ldName string, rows, cols int, s []float32, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("simd: %s: %s = %d, want ≥ %d (the row width of %s)", fn, ldName, ld, max(1, cols), x))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("simd: %s: len(%s) = %d, want ≥ %d for a %d×%d matrix with %s = %d", fn, x, len(s), need, rows, cols, ldName, ld))
	}
}

// scaleC sets C = beta·C, writing zeros without reading C when beta == 0.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		if beta == 1 {
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
