package simd

import "fmt"

// PackedColAlign is the alignment of the first column of a PackedB.Cols
// view: the width of the panels a PackedB is stored in.
const PackedColAlign = packW

// Cols returns a view of columns [j0, j1) of the operand held in p, for
// computing part of the columns of a product (one goroutine's share of a
// product with few rows) without packing that part again; j0 must be a
// multiple of PackedColAlign. GemmPackedB with the view computes the same
// bits as with p for those columns. The view shares p's storage.
func (p *PackedB) Cols(j0, j1 int) PackedB {
	if j0 < 0 || j1 < j0 || j1 > p.n || j0%packW != 0 {
		panic(fmt.Sprintf("simd: PackedB.Cols(%d, %d) of %d columns: want 0 ≤ j0 ≤ j1 ≤ n, j0 a multiple of %d", j0, j1, p.n, packW))
	}
	q0, q1 := j0/packW, ceilDiv(j1, packW)
	return PackedB{k: p.k, n: j1 - j0, data: p.data[q0*p.k*packW : q1*p.k*packW]}
}
