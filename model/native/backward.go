package native

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/internal/simd"
)

// OutputGrads carries dL/d(output) per position, shaped like Outputs
// (token-aligned, [sequence][position]). A nil field means zero; entries at
// unselected positions are ignored.
type OutputGrads struct {
	LogProb [][]float32
	Entropy [][]float32
	Value   [][]float32
}

// Backward propagates the output gradients of the last Forward through the
// model and adds the parameter gradients into Grads(), or, while the model
// has adapters, the adapters' gradients into LoRA.Grads (no gradient of a
// base weight is computed then). The batch and workspace of that Forward
// must be unchanged.
func (m *Model) Backward(ctx context.Context, og OutputGrads) error {
	w := &m.ws
	if !w.ready {
		return errors.New("native: Backward without a successful Forward")
	}
	nseq := w.nseq
	first := w.seg.count() - nseq // segment of sequence 0
	for _, f := range [...]struct {
		name string
		g    [][]float32
	}{{"LogProb", og.LogProb}, {"Entropy", og.Entropy}, {"Value", og.Value}} {
		name, g := f.name, f.g
		if g == nil {
			continue
		}
		if len(g) != nseq {
			return fmt.Errorf("native: Backward: %s has %d sequences, forward had %d", name, len(g), nseq)
		}
		for i := range g {
			if want := w.seg.Start[first+i+1] - w.seg.Start[first+i]; len(g[i]) != want {
				return fmt.Errorf("native: Backward: %s[%d] has %d entries, want %d", name, i, len(g[i]), want)
			}
		}
	}
	if og.Value != nil && !m.cfg.ValueHead {
		return errors.New("native: Backward: value gradients given but the model has no value head")
	}
	lo := m.lora
	if (lo != nil) != w.lora {
		return errors.New("native: Backward: adapters were added or removed since the Forward")
	}

	c := m.cfg
	d, qd, _, qkvd, f, v := m.dims()
	n, sel := w.n, w.m
	kern := m.kern
	// Forward's ensure sized the backward buffers too (dx … dval, loraDU).

	// Gather the selected positions' output gradients.
	for i := 0; i < sel; i++ {
		seq, t := w.selSeq[i], w.selPos[i]
		w.dlogp[i], w.dent[i], w.dval[i] = 0, 0, 0
		if og.LogProb != nil {
			w.dlogp[i] = og.LogProb[seq][t]
		}
		if og.Entropy != nil {
			w.dent[i] = og.Entropy[seq][t]
		}
		if og.Value != nil {
			w.dval[i] = og.Value[seq][t]
		}
	}

	// backLinear handles y = x·Wᵀ for x [rows, in], W [out, in]: it adds
	// dYᵀ·X into dW, when dw is non-nil (a frozen weight has none), and,
	// when dx is non-nil, writes dX = dY·W.
	backLinear := func(dx, dy, x, wt, dw []float32, rows, in, out int) {
		if dw != nil {
			kern.Gemm(true, false, out, in, rows, 1, dy, out, x, in, 1, dw, in)
		}
		if dx != nil {
			kern.Gemm(false, false, rows, in, out, 1, dy, out, wt, in, 0, dx, in)
		}
	}

	// Head: logits → dlogits (in place), then back through h·Headᵀ.
	kern.TokenLogProbsBackward(w.logits, sel, v, w.target, w.hlse, w.ent, w.dlogp, w.dent)
	backLinear(w.dhsel, w.logits, w.hsel, m.head(), m.headGrad(), sel, d, v)
	if c.ValueHead {
		for i := 0; i < sel; i++ {
			g := w.dval[i]
			if g == 0 {
				continue
			}
			h := w.hsel[i*d : (i+1)*d]
			simd.Axpy(g, m.p.valueW, w.dhsel[i*d:(i+1)*d])
			if m.g.valueW != nil {
				simd.Axpy(g, h, m.g.valueW)
				m.g.valueB[0] += g
			}
		}
	}

	// Final norm: scatter dh to its rows, then back through RMSNorm into dx.
	dxf := w.dtmp[:n*d]
	clear(dxf)
	for i := 0; i < sel; i++ {
		r := int(w.selRow[i])
		simd.Add(dxf[r*d:(r+1)*d], w.dhsel[i*d:(i+1)*d])
	}
	dx := w.dx[:n*d]
	clear(dx)
	kern.RMSNormBackward(dx, m.g.finalNorm, dxf, w.xs[c.Layers], w.nfinal, w.rstdF, n, d)

	// While adapters train, the base weights have no gradient: their
	// views are nil, and the products and reductions for them are skipped.
	var frozen layer
	for l := c.Layers - 1; l >= 0; l-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, g, nw := &m.p.layers[l], &frozen, &w.nlayers[l]
		if lo == nil {
			g = &m.g.layers[l]
		}
		// MLP. dx is dL/d(xs[l+1]) = dL/d(residual after the MLP).
		dy := dx // dL/d(the down projection's output)
		if c.SandwichNorm {
			dy = w.dpost[:n*d]
			clear(dy)
			kern.RMSNormBackward(dy, g.mlpPost, dx, w.mo[l], nw.mlpPost, w.rstdMO[l], n, d)
		}
		backLinear(w.dact, dy, w.act[l], p.wdown, g.wdown, n, f, d)
		if lo != nil {
			lo.backward(kern, l, groupDown, dy, w.act[l], w.loraU[l][groupDown], w.dact, w.loraDU, n)
		}
		if c.gelu() {
			kern.GeGLUBackward(w.dgu, w.dact, w.gu[l], n, f)
		} else {
			kern.SwiGLUBackward(w.dgu, w.dact, w.gu[l], n, f)
		}
		backLinear(w.dtmp, w.dgu, w.xn2[l], p.wgu, g.wgu, n, d, 2*f)
		if lo != nil {
			lo.backward(kern, l, groupGU, w.dgu, w.xn2[l], w.loraU[l][groupGU], w.dtmp, w.loraDU, n)
		}
		kern.RMSNormBackward(dx, g.mlpNorm, w.dtmp, w.xmid[l], nw.mlpNorm, w.rstd2[l], n, d)
		// Attention. dx is now dL/d(xmid[l]).
		dy = dx // dL/d(the output projection's output)
		if c.SandwichNorm {
			dy = w.dpost[:n*d]
			clear(dy)
			kern.RMSNormBackward(dy, g.attnPost, dx, w.ao[l], nw.attnPost, w.rstdAO[l], n, d)
		}
		backLinear(w.datt, dy, w.att[l], p.wo, g.wo, n, qd, d)
		if lo != nil {
			lo.backward(kern, l, groupO, dy, w.att[l], w.loraU[l][groupO], w.datt, w.loraDU, n)
		}
		cos, sin := m.rope(l)
		kern.AttentionBackward(w.dqkv, w.datt, qd, w.qkv[l], qkvd, w.lse[l], w.seg, m.attnSpec(l))
		kern.RoPE(w.dqkv, n, qkvd, 0, c.Heads+c.KVHeads, c.HeadDim(), w.pos, cos, sin, true)
		if c.QKNorm {
			m.qkNormBackward(l, nw, g, n)
		}
		if g.bqkv != nil {
			for r := 0; r < n; r++ {
				simd.Add(g.bqkv, w.dqkv[r*qkvd:(r+1)*qkvd])
			}
		}
		if lo != nil && l == 0 {
			// Below the first layer is the frozen embedding: no input
			// gradient is needed.
			lo.backward(kern, l, groupQKV, w.dqkv, w.xn1[l], w.loraU[l][groupQKV], nil, w.loraDU, n)
			break
		}
		backLinear(w.dtmp, w.dqkv, w.xn1[l], p.wqkv, g.wqkv, n, d, qkvd)
		if lo != nil {
			lo.backward(kern, l, groupQKV, w.dqkv, w.xn1[l], w.loraU[l][groupQKV], w.dtmp, w.loraDU, n)
		}
		kern.RMSNormBackward(dx, g.attnNorm, w.dtmp, w.xs[l], nw.attnNorm, w.rstd1[l], n, d)
	}

	// Embedding: scatter-add each row's gradient into its token's row.
	for r := 0; r < n && m.g.embed != nil; r++ {
		t := int(w.tok[r])
		if c.EmbedScale != 0 {
			simd.Axpy(c.EmbedScale, dx[r*d:(r+1)*d], m.g.embed[t*d:(t+1)*d])
		} else {
			simd.Add(m.g.embed[t*d:(t+1)*d], dx[r*d:(r+1)*d])
		}
	}
	w.ready = false // the head logits were overwritten with their gradient
	return nil
}

// qkNormBackward takes layer l's dL/d(normed queries and keys) in the
// workspace's dqkv back through the query and key norms (qkNormForward):
// it overwrites them with dL/d(the projections' queries and keys) and adds
// the norms' weight gradients into g.qNorm and g.kNorm (nil when frozen).
func (m *Model) qkNormBackward(l int, nw, g *layer, n int) {
	w := &m.ws
	c := m.cfg
	_, qd, kvd, qkvd, _, _ := m.dims()
	hd := c.HeadDim()
	dn, dx := w.dqk[:n*(qd+kvd)], w.dqkx[:n*(qd+kvd)]
	gatherCols(dn[:n*qd], w.dqkv, n, qkvd, 0, qd)
	gatherCols(dn[n*qd:], w.dqkv, n, qkvd, qd, kvd)
	clear(dx)
	m.kern.RMSNormBackward(dx[:n*qd], g.qNorm, dn[:n*qd], w.qraw[l], nw.qNorm, w.qrstd[l], n*c.Heads, hd)
	m.kern.RMSNormBackward(dx[n*qd:], g.kNorm, dn[n*qd:], w.kraw[l], nw.kNorm, w.krstd[l], n*c.KVHeads, hd)
	scatterCols(w.dqkv, dx[:n*qd], n, qkvd, 0, qd)
	scatterCols(w.dqkv, dx[n*qd:], n, qkvd, qd, kvd)
}
