package simd

// The portable kernel: panels of goMR rows, strips of goNR columns, the
// sums of a full 4×4 tile in scalar locals so that the compiler can keep
// them in registers.
const (
	goMR = 4
	goNR = 4
)

func init() {
	kernels[Portable] = &gemmKernel{mr: goMR, nr: goNR, kc: 256, mc: 64, nc: 256, run: runGo}
}

// runGo performs a kernelCall strip by strip.
func runGo(x *kernelCall, s *gemmScratch) {
	accStrip := roundUp(x.m, goMR) * goNR
	for j := 0; j < x.n; j += goNR {
		nr := min(goNR, x.n-j)
		var b []float32
		var boff, bs int
		switch {
		case x.panel > 0:
			b, boff, bs = x.b, x.boff+(j/packW)*x.panel+j%packW, packW
		case nr == goNR:
			b, boff, bs = x.b, x.boff+j, x.bs
		default:
			s.bEdge = grow(s.bEdge, x.k*goNR)
			packEdge(s.bEdge, goNR, x.b[x.boff+j:], x.bs, x.k, nr)
			b, boff, bs = s.bEdge, 0, goNR
		}
		stripGo(x.m, x.k, x.a, x.aoff, x.apanel, x.astride, b, boff, bs, x.c, x.coff+j, x.ldc, x.acc, (j/goNR)*accStrip, nr, x.flags, x.alpha, x.beta)
	}
}

// stripGo computes one strip of nr ≤ goNR columns: B element (p, j) at
// b[boff+p*bs+j] for j < goNR, the raw sums of the panel of rows at r at
// acc[accoff+r*goNR:].
func stripGo(m, k int, a []float32, aoff, apanel, astride int, b []float32, boff, bs int, c []float32, coff, ldc int, acc []float32, accoff, nr, flags int, alpha, beta float32) {
	rs, cs := 1, astride
	if flags&flagRows != 0 {
		rs, cs = astride, 1
	}
	for i := 0; i < m; i += goMR {
		mr := min(goMR, m-i)
		var t [goMR * goNR]float32
		if flags&flagLoad != 0 {
			copy(t[:mr*goNR], acc[accoff:accoff+mr*goNR])
		}
		if mr == goMR {
			tile4x4(&t, k, a, aoff, rs, cs, b, boff, bs)
		} else {
			for p := 0; p < k; p++ {
				bp := b[boff+p*bs : boff+p*bs+goNR]
				for r := 0; r < mr; r++ {
					av := a[aoff+r*rs+p*cs]
					tr := t[r*goNR : r*goNR+goNR]
					for j, bv := range bp {
						tr[j] = av*bv + tr[j]
					}
				}
			}
		}
		if flags&flagPartial != 0 {
			copy(acc[accoff:accoff+mr*goNR], t[:mr*goNR])
		} else {
			for r := 0; r < mr; r++ {
				row := c[coff+r*ldc : coff+r*ldc+nr]
				tr := t[r*goNR : r*goNR+nr]
				if flags&flagBeta0 != 0 {
					for j, s := range tr {
						row[j] = alpha * s
					}
				} else {
					for j, s := range tr {
						row[j] = alpha*s + beta*row[j]
					}
				}
			}
		}
		aoff += apanel
		coff += goMR * ldc
		accoff += goMR * goNR
	}
}

// tile4x4 adds k steps of a full 4×4 tile to t.
func tile4x4(t *[goMR * goNR]float32, k int, a []float32, aoff, rs, cs int, b []float32, boff, bs int) {
	c00, c01, c02, c03 := t[0], t[1], t[2], t[3]
	c10, c11, c12, c13 := t[4], t[5], t[6], t[7]
	c20, c21, c22, c23 := t[8], t[9], t[10], t[11]
	c30, c31, c32, c33 := t[12], t[13], t[14], t[15]
	for p := 0; p < k; p++ {
		bp := b[boff+p*bs : boff+p*bs+4]
		b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
		ap := aoff + p*cs
		a0 := a[ap]
		a1 := a[ap+rs]
		a2 := a[ap+2*rs]
		a3 := a[ap+3*rs]
		c00 = a0*b0 + c00
		c01 = a0*b1 + c01
		c02 = a0*b2 + c02
		c03 = a0*b3 + c03
		c10 = a1*b0 + c10
		c11 = a1*b1 + c11
		c12 = a1*b2 + c12
		c13 = a1*b3 + c13
		c20 = a2*b0 + c20
		c21 = a2*b1 + c21
		c22 = a2*b2 + c22
		c23 = a2*b3 + c23
		c30 = a3*b0 + c30
		c31 = a3*b1 + c31
		c32 = a3*b2 + c32
		c33 = a3*b3 + c33
	}
	*t = [goMR * goNR]float32{
		c00, c01, c02, c03,
		c10, c11, c12, c13,
		c20, c21, c22, c23,
		c30, c31, c32, c33,
	}
}
