package native

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/internal/simd"
)

// kvCache holds keys and values for every layer of a run of consecutive
// positions of one sequence. It extends a chain of read-only ancestor views
// (a shared prompt, an earlier turn of the conversation): positions
// 0..start-1 live in the ancestors, positions start.. in this cache's own
// storage. An ancestor's visible length is fixed when the child is created,
// so an ancestor may be shared by many children and may even be longer than
// the part a child sees.
//
// Keys are stored transposed, [kvHead][headDim][cap], so that the scores of
// a query against a run of positions are vertical fused multiply-adds
// (simd.AttnScores); values are stored [kvHead][cap][headDim], so that a
// head's values are one contiguous run (simd.AttnAccum).
type kvCache struct {
	k, v  [][]float32 // [layer][KVDim·cap]
	cap   int
	n     int     // own positions filled
	chain []kvRef // ancestors, oldest first
	start int     // positions held by the ancestors
}

// kvRef is a read-only view of the first n own positions of a cache.
type kvRef struct {
	c *kvCache
	n int
}

// newKVCache allocates a cache for capacity positions that follows the
// first parent.n positions of parent.c (and its ancestors), or starts a
// sequence when parent.c is nil.
func newKVCache(m *Model, capacity int, parent kvRef) *kvCache {
	_, _, kvd, _, _, _ := m.dims()
	c := &kvCache{k: make([][]float32, m.cfg.Layers), v: make([][]float32, m.cfg.Layers), cap: capacity}
	if parent.c != nil {
		c.chain = append(append(c.chain, parent.c.chain...), parent)
		c.start = parent.c.start + parent.n
	}
	size := capacity * kvd
	slab := make([]float32, 2*m.cfg.Layers*size)
	for l := range c.k {
		c.k[l], slab = slab[:size:size], slab[size:]
		c.v[l], slab = slab[:size:size], slab[size:]
	}
	return c
}

// length is the number of positions visible to the next token.
func (c *kvCache) length() int { return c.start + c.n }

// ref returns a view of everything this cache holds now.
func (c *kvCache) ref() kvRef { return kvRef{c, c.n} }

// spanAt returns span i of the positions visible from kc: its ancestors in
// order, then (i = len(chain)) its own first own positions.
func (kc *kvCache) spanAt(i, own int) (*kvCache, int) {
	if i < len(kc.chain) {
		return kc.chain[i].c, kc.chain[i].n
	}
	return kc, own
}

// inferWeights holds the weights packed for simd.GemmPackedB, so that the
// small products of decoding do not repack a transposed weight on every
// call. A packing is immutable and tied to the parameter signature it was
// made from (see paramSignature): Sample and Score, which may run
// concurrently, share it, and the first call after the weights change
// makes a new one.
type inferWeights struct {
	mu  sync.Mutex
	cur atomic.Pointer[packedWeights]
}

type packedWeights struct {
	sig    uint64
	fast   bool          // packed for the CPU kernels
	layers []packedLayer // with fast
	head   simd.PackedB  // with fast
	// lw are the layers' weights as inference computes with them: the
	// model's own, or, with adapters and other kernels than the CPU's,
	// copies with the adapters merged (the packings hold merged weights
	// themselves); with NormPlusOne, their norms' weights are the 1+w the
	// norms scale by (normWeights), as is finalNorm.
	lw        []layer
	finalNorm []float32
	normBuf   []float32
}

type packedLayer struct {
	qkv, o, gu, down simd.PackedB
}

// packedFor returns the weights for signature sig: packed when fast (the
// CPU kernels), and the layer weights, with any adapters merged into both
// (W + (Alpha/Rank)·B·A).
func (m *Model) packedFor(sig uint64, fast bool) *packedWeights {
	if w := m.infer.cur.Load(); w != nil && w.sig == sig && w.fast == fast {
		return w
	}
	m.infer.mu.Lock()
	defer m.infer.mu.Unlock()
	if w := m.infer.cur.Load(); w != nil && w.sig == sig && w.fast == fast {
		return w
	}
	d, _, _, _, _, v := m.dims()
	w := &packedWeights{sig: sig, fast: fast, lw: m.p.layers}
	lo := m.lora
	if !fast && lo != nil {
		w.lw = make([]layer, m.cfg.Layers)
		for l := range w.lw {
			w.lw[l] = m.p.layers[l]
			for g := 0; g < numGroups; g++ {
				if len(lo.layers[l].groups[g].blocks) > 0 {
					merged := slices.Clone(m.baseMatrix(l, g))
					lo.mergeInto(m.kern, merged, l, g)
					w.lw[l].setMatrix(g, merged)
				}
			}
		}
	}
	var nl []layer // a new slice: w.lw may be the model's own
	w.lw, w.finalNorm = m.normWeights(w.lw, &nl, &w.normBuf)
	if !fast {
		m.infer.cur.Store(w)
		return w
	}
	// Merged weights go through one scratch matrix, packed at once.
	var scratch []float32
	pack := func(pb *simd.PackedB, l, g, in, out int) {
		src := m.baseMatrix(l, g)
		if lo != nil && len(lo.layers[l].groups[g].blocks) > 0 {
			scratch = grow(scratch, len(src))
			copy(scratch, src)
			lo.mergeInto(m.kern, scratch, l, g)
			src = scratch
		}
		pb.Pack(true, in, out, src, in)
	}
	_, qd, _, qkvd, f, _ := m.dims()
	w.layers = make([]packedLayer, m.cfg.Layers)
	for l := range w.layers {
		pl := &w.layers[l]
		pack(&pl.qkv, l, groupQKV, d, qkvd)
		pack(&pl.o, l, groupO, qd, d)
		pack(&pl.gu, l, groupGU, d, 2*f)
		pack(&pl.down, l, groupDown, f, d)
	}
	w.head.Pack(true, d, v, m.head(), d)
	m.infer.cur.Store(w)
	return w
}

// setMatrix replaces the weight that group g adapts.
func (p *layer) setMatrix(g int, w []float32) {
	switch g {
	case groupQKV:
		p.wqkv = w
	case groupO:
		p.wo = w
	case groupGU:
		p.wgu = w
	default:
		p.wdown = w
	}
}

// dropPacked forgets the packed weights.
func (m *Model) dropPacked() { m.infer.cur.Store(nil) }

// inferState is the scratch of one inference call (Sample or Score). Its
// buffers grow to the largest step and are reused, so decoding allocates
// nothing per token.
//
// A step runs new tokens of many sequences through the model. Everything
// but attention is computed row by row (GEMMs over packed weights, whose
// elements do not depend on the number of rows, and row kernels), and
// attention (attendBlock) computes every output element the same way
// whatever the rows around it and however the context is split into
// caches, so a row's result does not depend on the batch it is in.
//
// Parallelism: a step's rows are cut into units of whole caches, which run
// the whole model independently on the inference goroutines (serial GEMMs,
// no synchronisation between layers). A step whose rows are one long
// sequence, or too unevenly split, runs layer by layer instead, each phase
// parallel over chunks of rows or attention blocks. Decoding, a long
// series of small steps, schedules the same pieces itself (see decode in
// sample.go).
type inferState struct {
	m    *Model
	w    *packedWeights
	fast bool // CPU kernels: packed GEMMs; otherwise m.kern.Gemm
	nw   int  // goroutines (the size of ws)

	x, xn, qkv, att, gu, act []float32 // per row of the step
	ao                       []float32 // per row, with SandwichNorm: a projection's output before its norm
	pos                      []int32
	caches                   []*kvCache
	toks                     []int32
	dcaches                  []*kvCache // decode's caches and tokens
	dtoks                    []int32
	sel                      []int                    // rows whose logits are wanted, ascending
	consume                  func(i int, z []float32) // gets the logits of row sel[i]

	units  []inferUnit
	blocks []rowBlock // attention blocks of the layer-by-layer mode
	chunk  int        // rows per chunk of the layer-by-layer mode
	phase  int
	layer  int
	ws     []*inferWorker
	logits []float32 // logitsFor's output
}

// inferUnit is a range of rows holding whole caches, and the range of sel
// that falls in it.
type inferUnit struct{ lo, hi, s0, s1 int }

// rowBlock is up to attnRows consecutive rows of one cache.
type rowBlock struct{ lo, hi int }

// attnRows is the most query rows of one cache that attend together
// (simd.AttnAccum keeps that many rows' outputs in registers).
const attnRows = 4

// inferWorker is one goroutine's scratch.
type inferWorker struct {
	scores []float32 // attention probabilities, rows lds apart
	lds    int
	hsel   []float32 // gathered hidden states for the LM head
	xn     []float32 // normed rows of a team member
	logits []float32
}

// Phases of RunTask.
const (
	phaseUnits = iota
	phaseIn
	phaseAttn
	phaseOut
	phaseFinal
	phaseLogits
)

func (m *Model) newInferState() *inferState { return m.newInferStateSig(m.paramSignature()) }

// newInferStateSig makes the scratch of an inference call for weights
// with signature sig.
func (m *Model) newInferStateSig(sig uint64) *inferState {
	_, fast := m.kern.(*CPU)
	s := &inferState{m: m, fast: fast, nw: workers(math.MaxInt32)}
	s.w = m.packedFor(sig, fast)
	if !fast {
		s.nw = 1 // other kernels need not be safe for concurrent use
	}
	lds := (m.cfg.MaxSeq + 15) &^ 15
	rows := max(attnRows, m.cfg.Heads)
	s.ws = make([]*inferWorker, s.nw)
	for i := range s.ws {
		s.ws[i] = &inferWorker{scores: make([]float32, rows*lds), lds: lds}
	}
	return s
}

// Sizes of the units and chunks of a step.
const (
	// unitMinRows and unitMaxRows bound the rows of a unit (a unit may
	// exceed the maximum by the rows of one cache): enough rows for
	// efficient GEMMs, few enough for the unit's activations to stay in
	// the core's cache.
	unitMinRows = 16
	unitMaxRows = 128
	// serialRows is the largest step that runs on the calling goroutine
	// alone when it cannot be split into units.
	serialRows = 48
)

// step runs new tokens through the model. Row r holds token toks[r] of the
// sequence whose cache is caches[r], at position caches[r].length() plus the
// number of earlier rows of the same cache; rows of one cache must be
// consecutive and in order. It appends the keys and values to the caches and
// leaves the final-normed hidden states in s.xn[:rows·D].
func (s *inferState) step(caches []*kvCache, toks []int32) {
	s.forward(caches, toks, nil, nil)
}

// forward is step followed, for each selected row sel[i] (ascending), by
// consume(i, logits of the row); consume is called from the inference
// goroutines, concurrently for different rows, and must not keep z.
func (s *inferState) forward(caches []*kvCache, toks []int32, sel []int, consume func(i int, z []float32)) {
	m := s.m
	d := m.cfg.DModel
	n := len(toks)
	s.caches, s.toks, s.sel, s.consume = caches, toks, sel, consume
	s.reserve(n)
	for r := 0; r < n; r++ {
		off := 0
		if r > 0 && caches[r-1] == caches[r] {
			off = int(s.pos[r-1]) + 1 - caches[r].length()
		}
		s.pos[r] = int32(caches[r].length() + off)
		copy(s.x[r*d:(r+1)*d], m.p.embed[int(toks[r])*d:])
		if m.cfg.EmbedScale != 0 {
			simd.Scale(m.cfg.EmbedScale, s.x[r*d:(r+1)*d])
		}
	}
	// The caches hold the new positions once the step is done; consume
	// may already take views of them (attention reads s.pos, not n).
	for r := 0; r < n; r++ {
		kc := caches[r]
		if r == n-1 || caches[r+1] != kc {
			kc.n = int(s.pos[r]) + 1 - kc.start
		}
	}
	s.planUnits(n)
	biggest := 0
	for _, u := range s.units {
		biggest = max(biggest, u.hi-u.lo)
	}
	switch {
	case s.nw == 1 || n <= serialRows && len(s.units) == 1:
		s.phase = phaseUnits
		for i := range s.units {
			s.RunTask(0, i)
		}
	case len(s.units) > 1 && (biggest <= unitMaxRows || biggest*s.nw <= 2*n):
		s.phase = phaseUnits
		simd.ParallelTasks(s.nw, len(s.units), s)
	default:
		s.layerByLayer(n)
	}
	s.caches, s.toks, s.sel, s.consume = nil, nil, nil, nil
}

// reserve sizes the per-row buffers for n rows.
func (s *inferState) reserve(n int) {
	d, qd, _, qkvd, f, _ := s.m.dims()
	s.x = grow(s.x, n*d)
	s.xn = grow(s.xn, n*d)
	if s.m.cfg.SandwichNorm {
		s.ao = grow(s.ao, n*d)
	}
	s.qkv = grow(s.qkv, n*qkvd)
	s.att = grow(s.att, n*qd)
	s.gu = grow(s.gu, n*2*f)
	s.act = grow(s.act, n*f)
	s.pos = growInt32(s.pos, n)
}

// planUnits cuts the n rows into units of whole caches, aiming at two
// units per goroutine.
func (s *inferState) planUnits(n int) {
	target := min(max((n+2*s.nw-1)/(2*s.nw), unitMinRows), unitMaxRows)
	s.units = s.units[:0]
	si := 0
	for lo := 0; lo < n; {
		hi := lo
		for hi < n && (hi == lo || hi-lo < target) {
			c := s.caches[hi]
			for hi < n && s.caches[hi] == c {
				hi++
			}
		}
		s0 := si
		for si < len(s.sel) && s.sel[si] < hi {
			si++
		}
		s.units = append(s.units, inferUnit{lo, hi, s0, si})
		lo = hi
	}
}

// layerByLayer runs the step phase by phase, each phase parallel over
// chunks of rows (or attention blocks).
func (s *inferState) layerByLayer(n int) {
	s.chunk = max(32, (n+4*s.nw-1)/(4*s.nw))
	chunks := (n + s.chunk - 1) / s.chunk
	s.blocks = s.blocks[:0]
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && hi-lo < attnRows && s.caches[hi] == s.caches[lo] {
			hi++
		}
		s.blocks = append(s.blocks, rowBlock{lo, hi})
		lo = hi
	}
	kvh := s.m.cfg.KVHeads
	for l := 0; l < s.m.cfg.Layers; l++ {
		s.layer = l
		s.phase = phaseIn
		simd.ParallelTasks(s.nw, chunks, s)
		s.phase = phaseAttn
		simd.ParallelTasks(s.nw, len(s.blocks)*kvh, s)
		s.phase = phaseOut
		simd.ParallelTasks(s.nw, chunks, s)
	}
	s.phase = phaseFinal
	simd.ParallelTasks(s.nw, chunks, s)
}

// RunTask runs task i of the current phase on worker w.
func (s *inferState) RunTask(w, i int) {
	ws := s.ws[w]
	n := len(s.toks)
	switch s.phase {
	case phaseUnits:
		u := s.units[i]
		for l := 0; l < s.m.cfg.Layers; l++ {
			s.attnIn(l, u.lo, u.hi)
			for lo := u.lo; lo < u.hi; {
				hi := lo + 1
				for hi < u.hi && s.caches[hi] == s.caches[lo] {
					hi++
				}
				s.attendCache(ws, l, lo, hi)
				lo = hi
			}
			s.attnOut(l, u.lo, u.hi)
		}
		s.final(u.lo, u.hi)
		s.logitsRows(ws, u.s0, u.s1)
	case phaseIn:
		s.attnIn(s.layer, i*s.chunk, min((i+1)*s.chunk, n))
	case phaseAttn:
		kvh := s.m.cfg.KVHeads
		b := s.blocks[i/kvh]
		s.attendBlock(ws, s.layer, b.lo, b.hi, i%kvh)
	case phaseOut:
		s.attnOut(s.layer, i*s.chunk, min((i+1)*s.chunk, n))
	case phaseFinal:
		lo, hi := i*s.chunk, min((i+1)*s.chunk, n)
		s.final(lo, hi)
		s0, _ := slices.BinarySearch(s.sel, lo)
		s1, _ := slices.BinarySearch(s.sel, hi)
		s.logitsRows(ws, s0, s1)
	case phaseLogits:
		lo, hi := i*s.chunk, min((i+1)*s.chunk, len(s.sel))
		s.headRows(ws, lo, hi, s.logits[lo*s.m.cfg.Vocab:])
	}
}

// gemmW computes y = x·Wᵀ (+ y when accumulate) for rows of x [rows, in]
// and a weight W [out, in] through its packing pw.
func (s *inferState) gemmW(y, x []float32, rows, in, out int, w []float32, pw *simd.PackedB, accumulate bool) {
	s.gemmCols(y, x, rows, in, out, w, pw, 0, out, accumulate)
}

// gemmCols is gemmW for the columns [j0, j1) of y only (j0 a multiple of
// simd.PackedColAlign), which it computes with the same bits.
func (s *inferState) gemmCols(y, x []float32, rows, in, out int, w []float32, pw *simd.PackedB, j0, j1 int, accumulate bool) {
	if rows == 0 || j0 == j1 {
		return
	}
	beta := float32(0)
	if accumulate {
		beta = 1
	}
	switch {
	case s.fast && j0 == 0 && j1 == out:
		simd.GemmPackedB(1, false, rows, 1, x, in, pw, beta, y, out)
	case s.fast:
		v := pw.Cols(j0, j1)
		simd.GemmPackedB(1, false, rows, 1, x, in, &v, beta, y[j0:], out)
	default:
		s.m.kern.Gemm(false, true, rows, j1-j0, in, 1, x, in, w[j0*in:], in, beta, y[j0:], out)
	}
}

// attnIn computes, for rows [lo, hi) of layer l, the normed input, the
// projections, RoPE, the attention scale on the queries, and stores the
// keys and values in the caches.
func (s *inferState) attnIn(l, lo, hi int) {
	d, _, _, qkvd, _, _ := s.m.dims()
	p := &s.w.lw[l]
	for r := lo; r < hi; r++ {
		simd.RMSNorm(s.xn[r*d:(r+1)*d], s.x[r*d:(r+1)*d], p.attnNorm, s.m.cfg.NormEps)
	}
	s.qkvCols(l, lo, hi, s.xn[lo*d:], 0, qkvd)
	s.headsIn(l, lo, hi, 0, s.m.cfg.KVHeads)
}

// qkvCols computes columns [j0, j1) of the QKV projection (with the bias)
// of rows [lo, hi) from their normed inputs xn.
func (s *inferState) qkvCols(l, lo, hi int, xn []float32, j0, j1 int) {
	d, _, _, qkvd, _, _ := s.m.dims()
	p := &s.w.lw[l]
	if p.bqkv != nil {
		for r := lo; r < hi; r++ {
			copy(s.qkv[r*qkvd+j0:r*qkvd+j1], p.bqkv[j0:j1])
		}
	}
	var pw *simd.PackedB
	if s.fast {
		pw = &s.w.layers[l].qkv
	}
	s.gemmCols(s.qkv[lo*qkvd:], xn, hi-lo, d, qkvd, p.wqkv, pw, j0, j1, p.bqkv != nil)
}

// headsIn applies RoPE and the attention scale to the queries and keys of
// KV heads [g0, g1) (and their query heads) of rows [lo, hi) of layer l,
// and stores those keys and values in the caches.
func (s *inferState) headsIn(l, lo, hi, g0, g1 int) {
	m := s.m
	c := m.cfg
	_, qd, kvd, qkvd, _, _ := m.dims()
	hd := c.HeadDim()
	half := hd / 2
	group := c.Heads / c.KVHeads
	scale := c.attnScale()
	p := &s.w.lw[l]
	ropeCos, ropeSin := m.rope(l)
	for r := lo; r < hi; r++ {
		row := s.qkv[r*qkvd : (r+1)*qkvd]
		ps := int(s.pos[r])
		cos, sin := ropeCos[ps*half:(ps+1)*half], ropeSin[ps*half:(ps+1)*half]
		q := row[g0*group*hd : g1*group*hd]
		if c.QKNorm {
			headNorms(q, p.qNorm, c.NormEps)
			headNorms(row[qd+g0*hd:qd+g1*hd], p.kNorm, c.NormEps)
		}
		simd.RoPE(q, cos, sin)
		simd.Scale(scale, q)
		simd.RoPE(row[qd+g0*hd:qd+g1*hd], cos, sin)
		kc := s.caches[r]
		i := ps - kc.start
		kl, vl := kc.k[l], kc.v[l]
		for g := g0; g < g1; g++ {
			kh := row[qd+g*hd : qd+(g+1)*hd]
			kt := kl[g*hd*kc.cap+i:]
			for j, x := range kh {
				kt[j*kc.cap] = x
			}
			copy(vl[(g*kc.cap+i)*hd:(g*kc.cap+i+1)*hd], row[qd+kvd+g*hd:])
		}
	}
}

// attnOut computes, for rows [lo, hi) of layer l, the output projection
// into the residual stream and the MLP.
func (s *inferState) attnOut(l, lo, hi int) {
	m := s.m
	c := m.cfg
	d, qd, _, _, f, _ := m.dims()
	p := &s.w.lw[l]
	var po, pgu, pdown *simd.PackedB
	if s.fast {
		pl := &s.w.layers[l]
		po, pgu, pdown = &pl.o, &pl.gu, &pl.down
	}
	n := hi - lo
	if c.SandwichNorm {
		// The projection's output is normed before it joins the
		// residual: s.ao holds it, s.xn the normed rows.
		s.gemmW(s.ao[lo*d:], s.att[lo*qd:], n, qd, d, p.wo, po, false)
		s.postNorm(s.xn, s.ao, p.attnPost, lo, hi, 0, d)
	} else {
		s.gemmW(s.x[lo*d:], s.att[lo*qd:], n, qd, d, p.wo, po, true)
	}
	for r := lo; r < hi; r++ {
		simd.RMSNorm(s.xn[r*d:(r+1)*d], s.x[r*d:(r+1)*d], p.mlpNorm, c.NormEps)
	}
	s.gemmW(s.gu[lo*2*f:], s.xn[lo*d:], n, d, 2*f, p.wgu, pgu, false)
	for r := lo; r < hi; r++ {
		g := s.gu[r*2*f : (r+1)*2*f]
		s.gate(s.act[r*f:(r+1)*f], g[:f], g[f:])
	}
	if c.SandwichNorm {
		s.gemmW(s.ao[lo*d:], s.act[lo*f:], n, f, d, p.wdown, pdown, false)
		s.postNorm(s.xn, s.ao, p.mlpPost, lo, hi, 0, d)
	} else {
		s.gemmW(s.x[lo*d:], s.act[lo*f:], n, f, d, p.wdown, pdown, true)
	}
}

// gate computes the MLP's activation of one row: SwiGLU or GeGLU.
func (s *inferState) gate(out, g, u []float32) {
	if s.m.cfg.gelu() {
		gegluRow(out, g, u)
	} else {
		simd.SwiGLU(out, g, u)
	}
}

// postNorm norms rows [lo, hi) of y (a projection's output, [n, D]) into
// the same rows of the scratch buf with the weights w, and adds columns
// [c0, c1) of them into the residual stream s.x: the sandwich norm of
// Gemma.
func (s *inferState) postNorm(buf, y, w []float32, lo, hi, c0, c1 int) {
	d := s.m.cfg.DModel
	for r := lo; r < hi; r++ {
		z := buf[r*d : (r+1)*d]
		simd.RMSNorm(z, y[r*d:(r+1)*d], w, s.m.cfg.NormEps)
		simd.Add(s.x[r*d+c0:r*d+c1], z[c0:c1])
	}
}

// final writes the final-normed hidden states of rows [lo, hi) into xn.
func (s *inferState) final(lo, hi int) {
	d := s.m.cfg.DModel
	for r := lo; r < hi; r++ {
		simd.RMSNorm(s.xn[r*d:(r+1)*d], s.x[r*d:(r+1)*d], s.w.finalNorm, s.m.cfg.NormEps)
	}
}

// headNorms applies an RMSNorm with weights w over each head (len(w)
// values) of x in place: the query and key norms of Qwen3 and Gemma 3.
func headNorms(x, w []float32, eps float32) {
	hd := len(w)
	for h := 0; h+hd <= len(x); h += hd {
		simd.RMSNorm(x[h:h+hd], x[h:h+hd], w, eps)
	}
}

// logitsRows computes the logits of rows sel[s0:s1] and hands each to
// consume.
func (s *inferState) logitsRows(ws *inferWorker, s0, s1 int) {
	if s.consume == nil || s0 == s1 {
		return
	}
	v := s.m.cfg.Vocab
	ws.logits = grow(ws.logits, (s1-s0)*v)
	s.headRows(ws, s0, s1, ws.logits)
	for i := s0; i < s1; i++ {
		s.consume(i, ws.logits[(i-s0)*v:(i-s0+1)*v])
	}
}

// headRows writes the LM-head logits of rows sel[s0:s1] into z.
func (s *inferState) headRows(ws *inferWorker, s0, s1 int, z []float32) {
	d, v := s.m.cfg.DModel, s.m.cfg.Vocab
	n := s1 - s0
	if n == 0 {
		return
	}
	h := s.xn[s.sel[s0]*d:]
	if s.sel[s1-1]-s.sel[s0] != n-1 { // not consecutive: gather
		ws.hsel = grow(ws.hsel, n*d)
		for i, r := range s.sel[s0:s1] {
			copy(ws.hsel[i*d:(i+1)*d], s.xn[r*d:(r+1)*d])
		}
		h = ws.hsel
	}
	var ph *simd.PackedB
	if s.fast {
		ph = &s.w.head
	}
	s.gemmW(z, h, n, d, v, s.m.head(), ph, false)
}

// logitsRange computes the logits of the consecutive rows [lo, hi) into
// the worker's buffer.
func (s *inferState) logitsRange(ws *inferWorker, lo, hi int) []float32 {
	d, v := s.m.cfg.DModel, s.m.cfg.Vocab
	ws.logits = grow(ws.logits, (hi-lo)*v)
	var ph *simd.PackedB
	if s.fast {
		ph = &s.w.head
	}
	s.gemmW(ws.logits, s.xn[lo*d:], hi-lo, d, v, s.m.head(), ph, false)
	return ws.logits
}

// logitsFor computes LM-head logits for the given rows of the last step's
// hidden states into s.logits[:len(rows)·V].
func (s *inferState) logitsFor(rows []int) []float32 {
	v := s.m.cfg.Vocab
	s.logits = grow(s.logits, len(rows)*v)
	s.sel = rows
	s.chunk = max(32, (len(rows)+2*s.nw-1)/(2*s.nw))
	s.phase = phaseLogits
	simd.ParallelTasks(s.nw, (len(rows)+s.chunk-1)/s.chunk, s)
	s.sel = nil
	return s.logits[:len(rows)*v]
}

// attendCache computes the attention of rows [lo, hi), all of one cache,
// in layer l.
func (s *inferState) attendCache(ws *inferWorker, l, lo, hi int) {
	kvh := s.m.cfg.KVHeads
	if hi-lo == 1 {
		s.attendHeads(ws, l, lo, 0, kvh)
		return
	}
	for a := lo; a < hi; a += attnRows {
		for g := 0; g < kvh; g++ {
			s.attendBlock(ws, l, a, min(a+attnRows, hi), g)
		}
	}
}

// attendBlock computes causal attention in layer l for rows [lo, hi) (at
// most attnRows consecutive rows of one cache) and the query heads of KV
// head g, and writes the outputs into s.att.
//
// For each query, the scores against every visible position (the chain of
// ancestors, then the cache's own positions) are computed span by span
// into one row of probabilities indexed by position, softmaxed over the
// positions the query sees, and the values are accumulated span by span
// in position order (simd.AttnScores, simd.Softmax, simd.AttnAccum).
// Every output element is thus the same sequence of float32 operations
// whatever the split of the context into caches and whatever the other
// rows: what makes sampling reproducible per request, lets cached prompts
// be reused, and makes Score agree bit for bit with Sample.
func (s *inferState) attendBlock(ws *inferWorker, l, lo, hi, g int) {
	m := s.m
	c := m.cfg
	_, qd, _, qkvd, _, _ := m.dims()
	hd := c.HeadDim()
	group := c.Heads / c.KVHeads
	kc := s.caches[lo]
	lds := ws.lds
	sc := ws.scores
	if hi-lo == 1 {
		// GQA decoding: the rows of the kernels are the group's query heads.
		h := g * group
		s.attendRows(sc, lds, l, kc, lo, hi, g, s.qkv[lo*qkvd+h*hd:], hd, s.att[lo*qd+h*hd:], hd, group)
		return
	}
	// Several query rows: the rows of the kernels are the query rows, one
	// head at a time.
	for h := g * group; h < (g+1)*group; h++ {
		s.attendRows(sc, lds, l, kc, lo, hi, g, s.qkv[lo*qkvd+h*hd:], qkvd, s.att[lo*qd+h*hd:], qd, hi-lo)
	}
}

// attendHeads computes the attention of the single query row r of layer l
// for KV heads [g0, g1) and their query heads. Without GQA the rows of the
// kernels are the heads, each with its own keys and values.
func (s *inferState) attendHeads(ws *inferWorker, l, r, g0, g1 int) {
	c := s.m.cfg
	if c.KVHeads != c.Heads {
		for g := g0; g < g1; g++ {
			s.attendBlock(ws, l, r, r+1, g)
		}
		return
	}
	_, qd, _, qkvd, _, _ := s.m.dims()
	hd := c.HeadDim()
	kc := s.caches[r]
	lds, sc := ws.lds, ws.scores
	h := g1 - g0
	last := int(s.pos[r]) + 1
	spans := len(kc.chain) + 1
	ownLast := last - kc.start
	q := s.qkv[r*qkvd+g0*hd:]
	for i := 0; i < spans; i++ {
		cc, cnt := kc.spanAt(i, ownLast)
		simd.AttnScores(h, cnt, hd, q, hd, cc.k[l][g0*hd*cc.cap:], cc.cap, hd*cc.cap, sc[cc.start:], lds)
	}
	from := s.from(l, last)
	for k := 0; k < h; k++ {
		simd.Softmax(sc[k*lds+from : k*lds+last])
		clear(sc[k*lds : k*lds+from])
	}
	o := s.att[r*qd+g0*hd : r*qd+g1*hd]
	clear(o)
	for i := 0; i < spans; i++ {
		cc, cnt := kc.spanAt(i, ownLast)
		simd.AttnAccum(h, cnt, hd, sc[cc.start:], lds, cc.v[l][g0*cc.cap*hd:], hd, cc.cap*hd, o, hd)
	}
}

// attendRows is attendBlock for nrows kernel rows that share the keys and
// values of KV head g: either the query rows [lo, hi) of one head (nrows =
// hi-lo) or the heads of the single query row lo (hi = lo+1).
func (s *inferState) attendRows(sc []float32, lds, l int, kc *kvCache, lo, hi, g int, q []float32, ldq int, o []float32, ldo, nrows int) {
	hd := s.m.cfg.HeadDim()
	spans := len(kc.chain) + 1
	last := int(s.pos[hi-1]) + 1
	ownLast := last - kc.start
	for i := 0; i < spans; i++ {
		cc, cnt := kc.spanAt(i, ownLast)
		simd.AttnScores(nrows, cnt, hd, q, ldq, cc.k[l][g*hd*cc.cap:], cc.cap, 0, sc[cc.start:], lds)
	}
	// seen returns the positions kernel row r sees.
	seen := func(r int) int {
		if hi-lo == 1 {
			return last
		}
		return int(s.pos[lo+r]) + 1
	}
	for r := 0; r < nrows; r++ {
		from := s.from(l, seen(r))
		simd.Softmax(sc[r*lds+from : r*lds+seen(r)])
		clear(sc[r*lds : r*lds+from])
		clear(o[r*ldo : r*ldo+hd])
	}
	for i := 0; i < spans-1; i++ {
		cc, cnt := kc.spanAt(i, 0)
		simd.AttnAccum(nrows, cnt, hd, sc[cc.start:], lds, cc.v[l][g*cc.cap*hd:], hd, 0, o, ldo)
	}
	// The cache's own positions: row r sees seen(r) - start of them, so
	// the rows from r on accumulate the positions only they see, in order.
	v := kc.v[l][g*kc.cap*hd:]
	done := 0
	for r := 0; r < nrows; r++ {
		upto := seen(r) - kc.start
		if upto > done {
			simd.AttnAccum(nrows-r, upto-done, hd, sc[r*lds+kc.start+done:], lds, v[done*hd:], hd, 0, o[r*ldo:], ldo)
			done = upto
		}
	}
}

// from returns the first of the positions 0..seen-1 that a query of
// layer l attends to: 0, or the start of its sliding window. The scores
// before it are zeroed, so that they add nothing to the outputs.
func (s *inferState) from(l, seen int) int {
	if w := s.m.cfg.window(l); w > 0 && seen > w {
		return seen - w
	}
	return 0
}
