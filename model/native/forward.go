package native

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/internal/hugemem"
	"github.com/agentrl/agentrl/internal/simd"
)

// Batch is a training or scoring batch of variable-length token sequences.
//
// Sequences are packed, not padded: the B sequences are concatenated into one
// N×DModel activation matrix (N = Σ len), every row-wise operation runs once
// per real token, RoPE positions restart at 0 for each sequence, and
// attention is restricted to each sequence's own causal prefix. There are no
// pad tokens and no attention-mask tensor.
//
// Outputs are computed only at the positions selected for the loss (see
// Mask and PromptLen), because the vocabulary projection at every position
// would otherwise cost as much as a layer.
//
// Sequences that start with the same prompt (the K samples of a GRPO group)
// can share it: put the prompt in Prefixes and set Prefix[b] to its index.
// The prompt's forward and backward then run once for the whole group,
// which is exact (its rows are the same tokens at the same positions) and
// saves most of the work when prompts are long and replies short.
type Batch struct {
	// Tokens[b] is sequence b; each must have 1..MaxSeq valid token ids.
	Tokens [][]int
	// PromptLen[b], if set, selects positions t ≥ max(1, PromptLen[b]):
	// the continuation after the prompt. Ignored when Mask is set.
	PromptLen []int
	// Mask[b][t], if set, selects position t. Mask[b] must have
	// len(Tokens[b]) entries. Position 0 is ignored unless the sequence has
	// a prefix (otherwise it has no preceding context).
	Mask [][]bool
	// Prefixes are shared prompts (1..MaxSeq tokens each).
	Prefixes [][]int
	// Prefix[b], if Prefix is set, is the index in Prefixes of the prompt
	// that precedes Tokens[b], or -1 for none. Sequence b is then
	// Prefixes[Prefix[b]] followed by Tokens[b]: positions, masks, PromptLen
	// and outputs count within Tokens[b] only, and position 0 is predicted
	// from the prefix's last token.
	Prefix []int
}

// Outputs holds per-position results of Forward, token-aligned with the
// input: index t describes the prediction of Tokens[b][t] from the tokens
// before it (Tokens[b][:t], after the shared prefix if there is one).
// Entries at unselected positions (and at t = 0 without a prefix) are zero.
//
// The slices alias the model's workspace and are overwritten by the next
// Forward; copy them to keep them.
type Outputs struct {
	// LogProb[b][t] = log p(Tokens[b][t] | Tokens[b][:t]) under softmax of
	// the raw logits (temperature 1).
	LogProb [][]float32
	// Entropy[b][t] is the entropy (nats) of the full next-token
	// distribution from which Tokens[b][t] is drawn.
	Entropy [][]float32
	// Value[b][t] is the value head's estimate on the state Tokens[b][:t]
	// (the hidden state of position t-1); nil without a value head.
	Value [][]float32
}

// trainWorkspace holds everything Forward saves for Backward, plus backward
// scratch. Buffers grow to the largest batch seen and are then reused, so a
// steady training loop does not allocate.
type trainWorkspace struct {
	ready bool // a Forward has filled the workspace
	n, m  int  // packed tokens, selected positions

	seg    Segments // prefix segments first, then one per sequence
	nseq   int      // sequences (the last nseq segments)
	tok    []int32  // [N]
	pos    []int32  // [N]
	selRow []int32  // [M] row whose hidden state predicts the target
	selSeq []int32  // [M] sequence of the target
	selPos []int32  // [M] position of the target within Tokens[seq]
	target []int32  // [M]

	xs                [][]float32 // [L+1][N·D] residual stream entering each block (xs[L] leaves the last)
	xmid              [][]float32 // [L][N·D] residual after attention
	xn1, xn2          [][]float32 // [L][N·D] normed inputs of attention and MLP
	rstd1, rstd2      [][]float32 // [L][N]
	qkv, att, lse     [][]float32 // [L][N·QKV], [L][N·Q], [L][N·H]
	gu, act           [][]float32 // [L][N·2F], [L][N·F]
	xf, rstdF         []float32   // final norm output [N·D] and its rstd [N]
	hsel, logits      []float32   // [M·D], [M·V]
	hlse, logp, ent   []float32   // [M]
	val               []float32   // [M]
	outLogp, outEnt   []float32   // [N] token-aligned outputs
	outVal            []float32   // [N]
	hdrLogp, hdrEnt   [][]float32 // per-sequence views of the above
	hdrVal            [][]float32
	dx, dtmp          []float32 // [N·D]
	dqkv, datt        []float32 // [N·QKV], [N·Q]
	dgu, dact         []float32 // [N·2F], [N·F]
	dhsel             []float32 // [M·D]
	dlogp, dent, dval []float32 // [M]

	// With QKNorm: the queries and keys before their norms, each head a
	// row ([L][N·H·hd] and [L][N·KVH·hd]), and the norms' rstd; the
	// backward's dL/d(normed queries and keys) and dL/d(queries and keys)
	// ([N·(H+KVH)·hd] each).
	qraw, kraw   [][]float32
	qrstd, krstd [][]float32 // [L][N·H], [L][N·KVH]
	dqk, dqkx    []float32
	// With SandwichNorm: the outputs of the attention's and the MLP's
	// projections before their norms, the norms' rstd, and the backward's
	// dL/d(a projection's output) ([N·D]).
	ao, mo         [][]float32 // [L][N·D]
	rstdAO, rstdMO [][]float32 // [L][N]
	dpost          []float32
	// The layers' weights with the RMSNorms' scales (1+w with
	// NormPlusOne), and the final norm's (Model.normWeights).
	nlayers []layer
	nfinal  []float32
	nbuf    []float32

	// With adapters: each layer's and group's x·Aᵀ ([N, k·r], lora.go),
	// and the backward's scratch for dL/d(x·Aᵀ).
	lora   bool // the last Forward applied adapters
	loraU  [][numGroups][]float32
	loraDU []float32

	bufs []sizedBuf // ensure's list of the float32 buffers, kept to reuse
}

// layerBufs returns s with one entry per layer.
func layerBufs(s [][]float32, layers int) [][]float32 {
	if len(s) != layers {
		s = make([][]float32, layers)
	}
	return s
}

// sizedBuf is a workspace buffer and the length a batch needs of it.
type sizedBuf struct {
	p *[]float32
	n int
}

// ensure sizes the workspace for n packed tokens and m selected positions,
// with the adapters' saved activations if lo is not nil.
//
// The float32 buffers are carved from one slab on transparent huge pages
// (package hugemem): the step reads and writes them all, and one slab
// costs one huge-page alignment instead of one per buffer. When any buffer
// is too small for the batch, the whole slab is replaced by one sized for
// it with 25% headroom per buffer; contents are not preserved.
func (w *trainWorkspace) ensure(m *Model, n, sel, nseq int, lo *LoRA) {
	d, qd, kvd, qkv, f, v := m.dims()
	L, h := m.cfg.Layers, m.cfg.Heads
	w.xs = layerBufs(w.xs, L+1)
	for _, s := range []*[][]float32{&w.xmid, &w.xn1, &w.xn2, &w.rstd1, &w.rstd2, &w.qkv, &w.att, &w.lse, &w.gu, &w.act} {
		*s = layerBufs(*s, L)
	}
	c := m.cfg
	qkNorm, sandwich := 0, 0 // 1 with the feature, to size its buffers
	if c.QKNorm {
		qkNorm = 1
		for _, s := range []*[][]float32{&w.qraw, &w.kraw, &w.qrstd, &w.krstd} {
			*s = layerBufs(*s, L)
		}
	}
	if c.SandwichNorm {
		sandwich = 1
		for _, s := range []*[][]float32{&w.ao, &w.mo, &w.rstdAO, &w.rstdMO} {
			*s = layerBufs(*s, L)
		}
	}
	bufs := w.bufs[:0]
	add := func(p *[]float32, size int) { bufs = append(bufs, sizedBuf{p, size}) }
	for l := range L + 1 {
		add(&w.xs[l], n*d)
	}
	for l := range L {
		add(&w.xmid[l], n*d)
		add(&w.xn1[l], n*d)
		add(&w.xn2[l], n*d)
		add(&w.rstd1[l], n)
		add(&w.rstd2[l], n)
		add(&w.qkv[l], n*qkv)
		add(&w.att[l], n*qd)
		add(&w.lse[l], n*h)
		add(&w.gu[l], n*2*f)
		add(&w.act[l], n*f)
		if c.QKNorm {
			add(&w.qraw[l], n*qd)
			add(&w.kraw[l], n*kvd)
			add(&w.qrstd[l], n*h)
			add(&w.krstd[l], n*c.KVHeads)
		}
		if c.SandwichNorm {
			add(&w.ao[l], n*d)
			add(&w.mo[l], n*d)
			add(&w.rstdAO[l], n)
			add(&w.rstdMO[l], n)
		}
	}
	add(&w.xf, n*d)
	add(&w.rstdF, n)
	add(&w.hsel, sel*d)
	add(&w.logits, sel*v)
	for _, p := range []*[]float32{&w.hlse, &w.logp, &w.ent, &w.val, &w.dlogp, &w.dent, &w.dval} {
		add(p, sel)
	}
	for _, p := range []*[]float32{&w.outLogp, &w.outEnt, &w.outVal} {
		add(p, n)
	}
	// Backward's buffers.
	add(&w.dx, n*d)
	add(&w.dtmp, n*d)
	add(&w.dqkv, n*qkv)
	add(&w.datt, n*qd)
	add(&w.dgu, n*2*f)
	add(&w.dact, n*f)
	add(&w.dqk, qkNorm*n*(qd+kvd))
	add(&w.dqkx, qkNorm*n*(qd+kvd))
	add(&w.dpost, sandwich*n*d)
	add(&w.dhsel, sel*d)
	if lo != nil {
		if len(w.loraU) != L {
			w.loraU = make([][numGroups][]float32, L)
		}
		for l := range w.loraU {
			for g := range numGroups {
				add(&w.loraU[l][g], n*lo.groupWidth(g))
			}
		}
		add(&w.loraDU, n*lo.maxGroupWidth())
	}
	carveWorkspace(bufs)
	w.bufs = bufs

	w.tok = growInt32(w.tok, n)
	w.pos = growInt32(w.pos, n)
	w.selRow = growInt32(w.selRow, sel)
	w.selSeq = growInt32(w.selSeq, sel)
	w.selPos = growInt32(w.selPos, sel)
	w.target = growInt32(w.target, sel)
	if cap(w.hdrLogp) < nseq {
		w.hdrLogp = make([][]float32, nseq)
		w.hdrEnt = make([][]float32, nseq)
		w.hdrVal = make([][]float32, nseq)
	}
	w.hdrLogp, w.hdrEnt, w.hdrVal = w.hdrLogp[:nseq], w.hdrEnt[:nseq], w.hdrVal[:nseq]
}

// carveWorkspace gives each buffer its length, reslicing them all if every
// one has the capacity, or else carving them all afresh from one slab.
// Each buffer's capacity is its length plus 25%, rounded up to a 64-byte
// line, and capped so that appending cannot reach the next buffer.
func carveWorkspace(bufs []sizedBuf) {
	fits := true
	for _, b := range bufs {
		fits = fits && cap(*b.p) >= b.n
	}
	if fits {
		for _, b := range bufs {
			*b.p = (*b.p)[:b.n]
		}
		return
	}
	const line = 16 // floats per 64-byte cache line
	room := func(n int) int { return (n + n/4 + line - 1) / line * line }
	total := 0
	for _, b := range bufs {
		total += room(b.n)
	}
	slab := hugemem.Floats(total, 0)
	for _, b := range bufs {
		c := room(b.n)
		*b.p, slab = slab[:b.n:c], slab[c:]
	}
}

// prefixOf returns the index of sequence i's shared prefix, or -1.
func (b *Batch) prefixOf(i int) int {
	if b.Prefix == nil {
		return -1
	}
	return b.Prefix[i]
}

// WorkspaceBytes estimates the memory Forward and Backward keep for a batch
// of the given number of packed tokens (prefixes included) and selected
// positions, for sizing micro-batches. Buffers are kept at their largest size
// once grown, with 25% headroom each; on huge pages (package hugemem) the Go
// heap counts up to 2·hugemem.PageBytes more, of which at most one huge
// page is ever touched.
func (m *Model) WorkspaceBytes(tokens, selected int) int64 {
	d, qd, kvd, qkv, f, v := m.dims()
	L, h := m.cfg.Layers, m.cfg.Heads
	perLayer := 4*d + 2 + qkv + qd + h + 2*f + f // xs, xmid, xn1, xn2, rstd1/2, qkv, att, lse, gu, act
	perToken := L*perLayer + d + d + 1 + 3 + 2   // xs[L], xf, rstdF, outputs, tok/pos
	perToken += 2*d + qkv + qd + 2*f + f         // backward dx, dtmp, dqkv, datt, dgu, dact
	perSel := 2*d + v + 8                        // hsel, dhsel, logits, per-position scalars
	if m.cfg.QKNorm {
		// qraw, kraw, qrstd, krstd per layer; the backward's dqk, dqkx.
		perToken += L*(qd+kvd+h+m.cfg.KVHeads) + 2*(qd+kvd)
	}
	if m.cfg.SandwichNorm {
		perToken += L*(2*d+2) + d // ao, mo, rstdAO, rstdMO per layer; the backward's dpost
	}
	if lo := m.lora; lo != nil {
		for g := range numGroups {
			perToken += L * lo.groupWidth(g) // x·Aᵀ of every layer and group
		}
		perToken += lo.maxGroupWidth() // backward scratch
	}
	return 4 * (int64(tokens)*int64(perToken) + int64(selected)*int64(perSel))
}

// selected reports whether position t of sequence i is an output position.
func (b *Batch) selected(i, t int) bool {
	if t == 0 && b.prefixOf(i) < 0 {
		return false
	}
	if b.Mask != nil {
		return b.Mask[i][t]
	}
	if b.PromptLen != nil {
		return t >= b.PromptLen[i]
	}
	return true
}

// validate checks the batch against the model and returns the packed size.
func (m *Model) validate(b *Batch) (n, sel int, err error) {
	if len(b.Tokens) == 0 {
		return 0, 0, errors.New("native: empty batch")
	}
	if b.Mask != nil && len(b.Mask) != len(b.Tokens) {
		return 0, 0, fmt.Errorf("native: batch has %d sequences but %d masks", len(b.Tokens), len(b.Mask))
	}
	if b.Mask == nil && b.PromptLen != nil && len(b.PromptLen) != len(b.Tokens) {
		return 0, 0, fmt.Errorf("native: batch has %d sequences but %d prompt lengths", len(b.Tokens), len(b.PromptLen))
	}
	if b.Prefix != nil && len(b.Prefix) != len(b.Tokens) {
		return 0, 0, fmt.Errorf("native: batch has %d sequences but %d prefix indices", len(b.Tokens), len(b.Prefix))
	}
	for i, p := range b.Prefixes {
		if len(p) == 0 || len(p) > m.cfg.MaxSeq {
			return 0, 0, fmt.Errorf("native: prefix %d has length %d, want 1..%d (MaxSeq)", i, len(p), m.cfg.MaxSeq)
		}
		if err := m.checkTokens(fmt.Sprintf("prefix %d", i), p); err != nil {
			return 0, 0, err
		}
		n += len(p)
	}
	for i, s := range b.Tokens {
		plen := 0
		if p := b.prefixOf(i); p >= len(b.Prefixes) || p < -1 {
			return 0, 0, fmt.Errorf("native: sequence %d: prefix index %d out of range [-1, %d)", i, p, len(b.Prefixes))
		} else if p >= 0 {
			plen = len(b.Prefixes[p])
		}
		if len(s) == 0 || plen+len(s) > m.cfg.MaxSeq {
			return 0, 0, fmt.Errorf("native: sequence %d has length %d (+%d prefix), want 1..%d (MaxSeq) in all", i, len(s), plen, m.cfg.MaxSeq)
		}
		if err := m.checkTokens(fmt.Sprintf("sequence %d", i), s); err != nil {
			return 0, 0, err
		}
		if b.Mask != nil && len(b.Mask[i]) != len(s) {
			return 0, 0, fmt.Errorf("native: sequence %d has %d tokens but its mask has %d entries", i, len(s), len(b.Mask[i]))
		}
		n += len(s)
		for t := range s {
			if b.selected(i, t) {
				sel++
			}
		}
	}
	return n, sel, nil
}

// Forward runs the model over a packed batch, returns log-probabilities,
// entropies and values at the selected positions, and keeps the activations
// needed by Backward (WorkspaceBytes estimates their size). The returned
// Outputs alias the workspace. With adapters (EnableLoRA), each adapted
// projection adds (Alpha/Rank)·B·(A·x) to its output.
func (m *Model) Forward(ctx context.Context, b Batch) (*Outputs, error) {
	out, err := m.forward(ctx, b, m.lora)
	if err == nil {
		m.ws.ready = true
	}
	return out, err
}

// ForwardBase is Forward without the adapters: the outputs of the frozen
// base model, such as the KL reference of a run that trains adapters
// (which, with B zero at the start, is the starting policy). Backward
// cannot follow it. For a model without adapters it is Forward.
func (m *Model) ForwardBase(ctx context.Context, b Batch) (*Outputs, error) {
	return m.forward(ctx, b, nil)
}

// forward is Forward with the adapters lo (nil: none). It leaves the
// workspace not ready for Backward.
func (m *Model) forward(ctx context.Context, b Batch, lo *LoRA) (*Outputs, error) {
	w := &m.ws
	w.ready = false
	n, sel, err := m.validate(&b)
	if err != nil {
		return nil, err
	}
	w.ensure(m, n, sel, len(b.Tokens), lo)
	w.lora = lo != nil
	w.n, w.m, w.nseq = n, sel, len(b.Tokens)
	// Pack: shared prefixes first, then the sequences.
	w.seg.Start = append(w.seg.Start[:0], 0)
	w.seg.Prefix = w.seg.Prefix[:0]
	row := 0
	for _, p := range b.Prefixes {
		for t, tok := range p {
			w.tok[row], w.pos[row] = int32(tok), int32(t)
			row++
		}
		w.seg.Start = append(w.seg.Start, row)
		w.seg.Prefix = append(w.seg.Prefix, -1)
	}
	k := 0
	for i, s := range b.Tokens {
		p := b.prefixOf(i)
		off, last := 0, -1 // position offset, row of the prefix's last token
		if p >= 0 {
			off, last = len(b.Prefixes[p]), w.seg.Start[p+1]-1
		}
		a := row
		for t, tok := range s {
			w.tok[row], w.pos[row] = int32(tok), int32(off+t)
			row++
			if b.selected(i, t) {
				w.selRow[k] = int32(a + t - 1)
				if t == 0 {
					w.selRow[k] = int32(last)
				}
				w.selSeq[k], w.selPos[k], w.target[k] = int32(i), int32(t), int32(tok)
				k++
			}
		}
		w.seg.Start = append(w.seg.Start, row)
		w.seg.Prefix = append(w.seg.Prefix, p)
	}

	d, qd, _, qkvd, f, v := m.dims()
	c := m.cfg
	kern := m.kern
	x := w.xs[0]
	for r := 0; r < n; r++ {
		copy(x[r*d:(r+1)*d], m.p.embed[int(w.tok[r])*d:])
		if c.EmbedScale != 0 {
			simd.Scale(c.EmbedScale, x[r*d:(r+1)*d])
		}
	}
	w.nlayers, w.nfinal = m.normWeights(m.p.layers, &w.nlayers, &w.nbuf)
	for l := range c.Layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, nw := &m.p.layers[l], &w.nlayers[l]
		x := w.xs[l]
		cos, sin := m.rope(l)
		// Attention: x → RMSNorm → QKV (+bias) → [q/k norms] → RoPE(Q,K) → causal attention → ·Wo
		// → [RMSNorm] → residual.
		kern.RMSNorm(w.xn1[l], w.rstd1[l], x, nw.attnNorm, n, d, c.NormEps)
		linear(kern, w.qkv[l], w.xn1[l], p.wqkv, p.bqkv, n, d, qkvd, false)
		if lo != nil {
			lo.forward(kern, l, groupQKV, w.qkv[l], w.xn1[l], w.loraU[l][groupQKV], n)
		}
		if c.QKNorm {
			m.qkNormForward(l, nw, n)
		}
		kern.RoPE(w.qkv[l], n, qkvd, 0, c.Heads+c.KVHeads, c.HeadDim(), w.pos, cos, sin, false)
		kern.Attention(w.att[l], qd, w.lse[l], w.qkv[l], qkvd, w.seg, m.attnSpec(l))
		if c.SandwichNorm {
			linear(kern, w.ao[l], w.att[l], p.wo, nil, n, qd, d, false)
			if lo != nil {
				lo.forward(kern, l, groupO, w.ao[l], w.att[l], w.loraU[l][groupO], n)
			}
			kern.RMSNorm(w.xmid[l], w.rstdAO[l], w.ao[l], nw.attnPost, n, d, c.NormEps)
			addRows(w.xmid[l], x, n, d)
		} else {
			copy(w.xmid[l][:n*d], x)
			linear(kern, w.xmid[l], w.att[l], p.wo, nil, n, qd, d, true)
			if lo != nil {
				lo.forward(kern, l, groupO, w.xmid[l], w.att[l], w.loraU[l][groupO], n)
			}
		}
		// MLP: RMSNorm → [gate|up] → act(gate)·up → ·Wdown → [RMSNorm] → residual.
		kern.RMSNorm(w.xn2[l], w.rstd2[l], w.xmid[l], nw.mlpNorm, n, d, c.NormEps)
		linear(kern, w.gu[l], w.xn2[l], p.wgu, nil, n, d, 2*f, false)
		if lo != nil {
			lo.forward(kern, l, groupGU, w.gu[l], w.xn2[l], w.loraU[l][groupGU], n)
		}
		if c.gelu() {
			kern.GeGLU(w.act[l], w.gu[l], n, f)
		} else {
			kern.SwiGLU(w.act[l], w.gu[l], n, f)
		}
		if c.SandwichNorm {
			linear(kern, w.mo[l], w.act[l], p.wdown, nil, n, f, d, false)
			if lo != nil {
				lo.forward(kern, l, groupDown, w.mo[l], w.act[l], w.loraU[l][groupDown], n)
			}
			kern.RMSNorm(w.xs[l+1], w.rstdMO[l], w.mo[l], nw.mlpPost, n, d, c.NormEps)
			addRows(w.xs[l+1], w.xmid[l], n, d)
		} else {
			copy(w.xs[l+1][:n*d], w.xmid[l])
			linear(kern, w.xs[l+1], w.act[l], p.wdown, nil, n, f, d, true)
			if lo != nil {
				lo.forward(kern, l, groupDown, w.xs[l+1], w.act[l], w.loraU[l][groupDown], n)
			}
		}
	}
	kern.RMSNorm(w.xf, w.rstdF, w.xs[c.Layers], w.nfinal, n, d, c.NormEps)

	// Head, only at the selected positions.
	for i := 0; i < sel; i++ {
		r := int(w.selRow[i])
		copy(w.hsel[i*d:(i+1)*d], w.xf[r*d:(r+1)*d])
	}
	linear(kern, w.logits, w.hsel, m.head(), nil, sel, d, v, false)
	kern.TokenLogProbs(w.logits, sel, v, w.target, w.logp, w.ent, w.hlse)
	if c.ValueHead {
		for i := 0; i < sel; i++ {
			w.val[i] = simd.Dot(w.hsel[i*d:(i+1)*d], m.p.valueW) + m.p.valueB[0]
		}
	}

	clear(w.outLogp[:n])
	clear(w.outEnt[:n])
	clear(w.outVal[:n])
	first := len(b.Prefixes) // segment of sequence 0
	for i := 0; i < sel; i++ {
		r := w.seg.Start[first+int(w.selSeq[i])] + int(w.selPos[i])
		w.outLogp[r] = w.logp[i]
		w.outEnt[r] = w.ent[i]
		if c.ValueHead {
			w.outVal[r] = w.val[i]
		}
	}
	out := &Outputs{LogProb: w.hdrLogp, Entropy: w.hdrEnt}
	for i := range b.Tokens {
		a, e := w.seg.Start[first+i], w.seg.Start[first+i+1]
		w.hdrLogp[i] = w.outLogp[a:e:e]
		w.hdrEnt[i] = w.outEnt[a:e:e]
		w.hdrVal[i] = w.outVal[a:e:e]
	}
	if c.ValueHead {
		out.Value = w.hdrVal
	}
	return out, nil
}

// attnSpec returns the attention of layer l.
func (m *Model) attnSpec(l int) AttnSpec {
	c := m.cfg
	return AttnSpec{Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim(), Scale: c.attnScale(), Window: c.window(l)}
}

// qkNormForward applies layer l's query and key norms (scales nw.qNorm,
// nw.kNorm) to the n rows of the workspace's QKV projection in place,
// keeping their inputs and rstd for the backward. Each head is a row of
// the norm: the heads are gathered into contiguous rows, normed, and
// scattered back.
func (m *Model) qkNormForward(l int, nw *layer, n int) {
	w := &m.ws
	c := m.cfg
	_, qd, kvd, qkvd, _, _ := m.dims()
	hd := c.HeadDim()
	qkv := w.qkv[l]
	gatherCols(w.qraw[l], qkv, n, qkvd, 0, qd)
	gatherCols(w.kraw[l], qkv, n, qkvd, qd, kvd)
	tmp := w.dqk[:n*(qd+kvd)] // backward scratch, free during the forward
	m.kern.RMSNorm(tmp[:n*qd], w.qrstd[l], w.qraw[l], nw.qNorm, n*c.Heads, hd, c.NormEps)
	m.kern.RMSNorm(tmp[n*qd:], w.krstd[l], w.kraw[l], nw.kNorm, n*c.KVHeads, hd, c.NormEps)
	scatterCols(qkv, tmp[:n*qd], n, qkvd, 0, qd)
	scatterCols(qkv, tmp[n*qd:], n, qkvd, qd, kvd)
}

// gatherCols copies columns [col0, col0+width) of the n rows of x (row
// stride ld) into the contiguous dst [n, width].
func gatherCols(dst, x []float32, n, ld, col0, width int) {
	for r := 0; r < n; r++ {
		copy(dst[r*width:(r+1)*width], x[r*ld+col0:])
	}
}

// scatterCols is the inverse of gatherCols.
func scatterCols(x, src []float32, n, ld, col0, width int) {
	for r := 0; r < n; r++ {
		copy(x[r*ld+col0:r*ld+col0+width], src[r*width:])
	}
}

// addRows adds x into y, both [n, d].
func addRows(y, x []float32, n, d int) {
	parallelRows(n, d, func(lo, hi int) {
		simd.Add(y[lo*d:hi*d], x[lo*d:hi*d])
	})
}

// normWeights returns src, a model's layer weights, as its RMSNorms scale
// by them, and the final norm's scale: src and the final norm's weights
// themselves, or with NormPlusOne copies (into *dst and *buf, grown as
// needed) whose norm weights are 1+w, computed in float32 as Gemma's
// RMSNorm computes 1.0 + weight.float().
func (m *Model) normWeights(src []layer, dst *[]layer, buf *[]float32) ([]layer, []float32) {
	if !m.cfg.NormPlusOne {
		return src, m.p.finalNorm
	}
	size := len(m.p.finalNorm)
	for _, p := range src {
		size += len(p.attnNorm) + len(p.qNorm) + len(p.kNorm) + len(p.attnPost) + len(p.mlpNorm) + len(p.mlpPost)
	}
	*buf = grow(*buf, size)
	b := *buf
	plus := func(w []float32) []float32 {
		if w == nil {
			return nil
		}
		out := b[:len(w):len(w)]
		b = b[len(w):]
		for i, x := range w {
			out[i] = 1 + x
		}
		return out
	}
	if cap(*dst) < len(src) {
		*dst = make([]layer, len(src))
	}
	out := (*dst)[:len(src)]
	for l, p := range src {
		p.attnNorm, p.qNorm, p.kNorm = plus(p.attnNorm), plus(p.qNorm), plus(p.kNorm)
		p.attnPost, p.mlpNorm, p.mlpPost = plus(p.attnPost), plus(p.mlpNorm), plus(p.mlpPost)
		out[l] = p
	}
	return out, plus(m.p.finalNorm)
}
