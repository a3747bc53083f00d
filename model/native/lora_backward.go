package native

// backward propagates dy, dL/d(output) of group g of layer l (n rows of
// stride ld), through the group's adapters: with u = x·Aᵀ saved by the
// forward and s = Alpha/Rank, for each target
//
//	dB += s·dy_blockᵀ·u_block    du_block = s·dy_block·B
//
// and then, for the group's stacked A, dA += duᵀ·x and dx += du·A. dx must
// already hold the base projection's input gradient dy·W, or be nil when
// no input gradient is wanted; du is scratch of n·k·r floats.
func (lo *LoRA) backward(kern Kernels, l, g int, dy, x, u, dx, du []float32, n int) {
	grp := &lo.layers[l].groups[g]
	if len(grp.blocks) == 0 {
		return
	}
	r := lo.cfg.Rank
	kr := len(grp.blocks) * r
	for i, bk := range grp.blocks {
		kern.Gemm(true, false, bk.out, r, n, lo.scale, dy[bk.off:], grp.ld, u[i*r:], kr, 1, bk.gb, r)
		kern.Gemm(false, false, n, r, bk.out, lo.scale, dy[bk.off:], grp.ld, bk.b, r, 0, du[i*r:], kr)
	}
	kern.Gemm(true, false, kr, grp.in, n, 1, du, kr, x, grp.in, 1, grp.ga, grp.in)
	if dx != nil {
		kern.Gemm(false, false, n, grp.in, kr, 1, du, kr, grp.a, grp.in, 1, dx, grp.in)
	}
}

// maxGroupWidth is the widest group's k·r: the size per row of the
// backward's scratch.
func (lo *LoRA) maxGroupWidth() int {
	w := 0
	for g := 0; g < numGroups; g++ {
		w = max(w, lo.groupWidth(g))
	}
	return w
}
