package native

import (
	"math"

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
// Keys are stored transposed, [kvHead][headDim][cap], so the scores of one
// query against all cached keys are headDim long axpys over positions;
// values are stored [cap][kvDim]. See attendRow for why.
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

// inferState is the scratch of one inference call (Sample or Score). Its
// buffers grow to the largest step and are reused, so decoding allocates
// almost nothing per token.
//
// Every projection goes through linear and the tiled GEMM driver (gemm.go),
// which computes each output element as the same fixed sequence of dot
// products whatever the number of rows; together with attendRow this makes a
// row's result independent of the batch it is in.
type inferState struct {
	m               *Model
	x, xn, qkv, att []float32
	gu, act, rstd   []float32
	pos             []int32
	scores          [][]float32 // per worker: MaxSeq scores, then headDim scaled query
	hsel, logits    []float32
}

func (m *Model) newInferState() *inferState {
	s := &inferState{m: m}
	s.scores = make([][]float32, workers(math.MaxInt32))
	for i := range s.scores {
		s.scores[i] = make([]float32, m.cfg.MaxSeq+m.cfg.HeadDim())
	}
	return s
}

// step runs new tokens through the model. Row r holds token toks[r] of the
// sequence whose cache is caches[r], at position caches[r].length() plus the
// number of earlier rows of the same cache; rows of one cache must be
// consecutive and in order. It appends the keys and values to the caches and
// leaves the final-normed hidden states in s.x[:rows·D].
func (s *inferState) step(caches []*kvCache, toks []int32) {
	m := s.m
	c := m.cfg
	d, qd, kvd, qkvd, f, _ := m.dims()
	n := len(toks)
	hd := c.HeadDim()
	group := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	s.x = grow(s.x, n*d)
	s.xn = grow(s.xn, n*d)
	s.qkv = grow(s.qkv, n*qkvd)
	s.att = grow(s.att, n*qd)
	s.gu = grow(s.gu, n*2*f)
	s.act = grow(s.act, n*f)
	s.rstd = grow(s.rstd, n)
	s.pos = growInt32(s.pos, n)
	// Positions and cache slots for each row.
	keys := 0 // attention work: keys visible to all rows
	for r := 0; r < n; r++ {
		off := 0
		if r > 0 && caches[r-1] == caches[r] {
			off = int(s.pos[r-1]) + 1 - caches[r].length()
		}
		s.pos[r] = int32(caches[r].length() + off)
		keys += int(s.pos[r]) + 1
		copy(s.x[r*d:(r+1)*d], m.p.embed[int(toks[r])*d:])
	}
	kern := m.kern
	for l := 0; l < c.Layers; l++ {
		p := &m.p.layers[l]
		kern.RMSNorm(s.xn, s.rstd, s.x, p.attnNorm, n, d, c.NormEps)
		linear(kern, s.qkv, s.xn, p.wqkv, p.bqkv, n, d, qkvd, false)
		kern.RoPE(s.qkv, n, qkvd, 0, c.Heads+c.KVHeads, hd, s.pos, m.ropeCos, m.ropeSin, false)
		for r := 0; r < n; r++ {
			kc := caches[r]
			i := int(s.pos[r]) - kc.start
			kr := s.qkv[r*qkvd+qd : r*qkvd+qd+kvd]
			for j, x := range kr {
				kc.k[l][j*kc.cap+i] = x
			}
			copy(kc.v[l][i*kvd:(i+1)*kvd], s.qkv[r*qkvd+qd+kvd:])
		}
		// One task per (row, head), so that even a single decoding sequence
		// with a long context uses every core; short work stays inline.
		attend := func(w, task int) {
			r, h := task/c.Heads, task%c.Heads
			kc := caches[r]
			own := int(s.pos[r]) + 1 - kc.start
			q := s.qkv[r*qkvd+h*hd : r*qkvd+(h+1)*hd]
			attendRow(s.att[r*qd+h*hd:r*qd+(h+1)*hd], q, kc, own, l, h/group, kvd, scale, s.scores[w])
		}
		if keys*c.Heads*hd < 1<<16 {
			for task := 0; task < n*c.Heads; task++ {
				attend(0, task)
			}
		} else {
			parallelFor(n*c.Heads, attend)
		}
		linear(kern, s.x, s.att, p.wo, nil, n, qd, d, true)
		kern.RMSNorm(s.xn, s.rstd, s.x, p.mlpNorm, n, d, c.NormEps)
		linear(kern, s.gu, s.xn, p.wgu, nil, n, d, 2*f, false)
		kern.SwiGLU(s.act, s.gu, n, f)
		linear(kern, s.x, s.act, p.wdown, nil, n, f, d, true)
	}
	for r := 0; r < n; r++ {
		kc := caches[r]
		if r == n-1 || caches[r+1] != kc {
			kc.n = int(s.pos[r]) + 1 - kc.start
		}
	}
	kern.RMSNorm(s.xn, s.rstd, s.x, m.p.finalNorm, n, d, c.NormEps)
	s.x, s.xn = s.xn, s.x
}

// attendRow computes causal attention for one query of KV head g in layer
// l over the positions of kc's ancestors followed by its first own
// positions, and writes headDim outputs into out. scratch must hold
// MaxSeq+headDim floats.
//
// Every operation is elementwise per key (scores as headDim axpys over
// positions, values as one axpy per position in order), so the result does
// not depend on batch composition or on how the positions are split between
// caches. That is what makes sampling reproducible per request, lets cached
// prompts be reused, and makes Score agree bit for bit with Sample.
func attendRow(out, q []float32, kc *kvCache, own, l, g, kvd int, scale float32, scratch []float32) {
	hd := len(q)
	n := kc.start + own
	scores := scratch[:n]
	qs := scratch[len(scratch)-hd:]
	for c, x := range q {
		qs[c] = x * scale
	}
	clear(scores)
	off := 0
	for i := 0; i <= len(kc.chain); i++ {
		c, cnt := kc.spanAt(i, own)
		kT := c.k[l][g*hd*c.cap:]
		for d := 0; d < hd && cnt > 0; d++ {
			simd.Axpy(qs[d], kT[d*c.cap:d*c.cap+cnt], scores[off:off+cnt])
		}
		off += cnt
	}
	simd.Softmax(scores)
	clear(out)
	off = 0
	for i := 0; i <= len(kc.chain); i++ {
		c, cnt := kc.spanAt(i, own)
		v := c.v[l][g*hd:]
		for j := 0; j < cnt; j++ {
			simd.Axpy(scores[off+j], v[j*kvd:j*kvd+hd], out)
		}
		off += cnt
	}
}

// spanAt returns span i of the positions visible from kc: its ancestors in
// order, then (i = len(chain)) its own first own positions.
func (kc *kvCache) spanAt(i, own int) (*kvCache, int) {
	if i < len(kc.chain) {
		return kc.chain[i].c, kc.chain[i].n
	}
	return kc, own
}

// logitsFor computes LM-head logits for the given rows of the last step's
// hidden states into s.logits[:len(rows)·V].
func (s *inferState) logitsFor(rows []int) []float32 {
	d, v := s.m.cfg.DModel, s.m.cfg.Vocab
	s.hsel = grow(s.hsel, len(rows)*d)
	s.logits = grow(s.logits, len(rows)*v)
	for i, r := range rows {
		copy(s.hsel[i*d:(i+1)*d], s.x[r*d:(r+1)*d])
	}
	linear(s.m.kern, s.logits, s.hsel, s.m.head(), nil, len(rows), d, v, false)
	return s.logits[:len(rows)*v]
}
