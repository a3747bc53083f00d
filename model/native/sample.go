package native

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/internal/simd"
)

// SampleRequest is one generation request.
type SampleRequest struct {
	Prompt       []int   // 1..MaxSeq token ids
	MaxNewTokens int     // generation stops after this many tokens
	Temperature  float32 // 0 means greedy (argmax)
	TopK         int     // keep the K most likely tokens; 0 disables
	TopP         float32 // nucleus: keep the smallest set with mass ≥ TopP; 0 or 1 disables
	StopTokens   []int   // generation stops after emitting any of these
	Seed         uint64  // seeds this request's own PCG generator
	// Constraint, when set, restricts each token to those it allows
	// (guided decoding); the request's log-probs stay the policy's own
	// (raw logits, temperature 1).
	Constraint Constraint
}

// Constraint restricts the tokens of one generated sequence: Allow sets
// allowed[id] (one entry per token id, all false on entry) for each token
// that may follow generated, the tokens sampled so far. Its error ends the
// sequence (SampleResult.Err). policy.Constraint has the same method.
type Constraint interface {
	Allow(generated []int, allowed []bool) error
}

// Finish reasons reported in SampleResult.
const (
	FinishStop   = "stop"   // a stop token was generated (it is included in Tokens)
	FinishLength = "length" // MaxNewTokens reached
)

// SampleResult is the generation for one request.
type SampleResult struct {
	// Tokens are the generated ids, including the stop token if one ended
	// generation (it is an action of the policy and carries a log-prob).
	Tokens []int
	// LogProbs[i] = log softmax(raw logits)[Tokens[i]]: the policy's own
	// probability at temperature 1 before any truncation (see package doc).
	LogProbs []float32
	// FinishReason is FinishStop or FinishLength.
	FinishReason string
	// Err, when not nil, is the request's Constraint's error, which ended
	// it after Tokens.
	Err error
}

// sampler is the per-request decoding state. Each request owns its RNG and
// draws exactly one uniform number per sampled token (none when greedy), so
// its output does not depend on which other requests share the batch.
type sampler struct {
	req    *SampleRequest
	rng    *rand.Rand
	cache  *kvCache
	out    SampleResult
	done   bool
	idx    []int32   // candidate order scratch (truncated sampling)
	weight []float64 // candidate weights scratch (truncated sampling)
	probs  []float32 // exp weights over the vocabulary
	allow  []bool    // the constraint's mask (constrained requests only)
}

func (m *Model) checkSample(i int, r *SampleRequest) error {
	switch {
	case len(r.Prompt) == 0:
		return fmt.Errorf("native: sample request %d: empty prompt", i)
	case r.MaxNewTokens < 0:
		return fmt.Errorf("native: sample request %d: negative MaxNewTokens", i)
	case len(r.Prompt)+r.MaxNewTokens > m.cfg.MaxSeq:
		return fmt.Errorf("native: sample request %d: prompt %d + max new tokens %d exceeds MaxSeq %d",
			i, len(r.Prompt), r.MaxNewTokens, m.cfg.MaxSeq)
	case r.Temperature < 0 || math.IsNaN(float64(r.Temperature)):
		return fmt.Errorf("native: sample request %d: temperature %g", i, r.Temperature)
	case r.TopK < 0:
		return fmt.Errorf("native: sample request %d: negative TopK", i)
	case !(r.TopP >= 0 && r.TopP <= 1):
		return fmt.Errorf("native: sample request %d: TopP %g outside [0, 1]", i, r.TopP)
	}
	return m.checkTokens(fmt.Sprintf("sample request %d prompt", i), r.Prompt)
}

// Sample generates continuations for a batch of requests with a KV cache.
// All prompts are prefilled together (packed; identical prompts once, and
// only the part not already in the prefix cache), then every unfinished
// request advances by one token per step in a single batched forward. Each
// result depends only on its own request (see the package doc). It stops
// early, returning ctx.Err(), when ctx is cancelled.
func (m *Model) Sample(ctx context.Context, reqs []SampleRequest) ([]SampleResult, error) {
	for i := range reqs {
		if err := m.checkSample(i, &reqs[i]); err != nil {
			return nil, err
		}
	}
	ss := make([]*sampler, len(reqs))
	for i := range reqs {
		r := &reqs[i]
		ss[i] = &sampler{
			req:    r,
			rng:    rand.New(rand.NewPCG(r.Seed, r.Seed^0x5851f42d4c957f2d)),
			idx:    make([]int32, m.cfg.Vocab),
			weight: make([]float64, m.cfg.Vocab),
			probs:  make([]float32, m.cfg.Vocab),
			out: SampleResult{
				Tokens:   make([]int, 0, r.MaxNewTokens),
				LogProbs: make([]float32, 0, r.MaxNewTokens),
			},
		}
		if r.Constraint != nil {
			ss[i].allow = make([]bool, m.cfg.Vocab)
		}
		if r.MaxNewTokens == 0 {
			ss[i].done = true
			ss[i].out.FinishReason = FinishLength
		}
	}

	// Identical prompts (the K samples of a GRPO group) are prefilled once;
	// their cache becomes the read-only ancestor of each member's own cache.
	// A prompt that starts with a sequence seen by an earlier Sample (the
	// previous turns of a conversation) reuses its cache from the prefix
	// cache and prefills only the rest. Attention treats a chain of caches
	// exactly like one contiguous cache (see attendBlock), so none of this
	// changes a result.
	type prompt struct {
		cache   *kvCache
		tokens  []int // the part to prefill
		members []int
	}
	sig := m.paramSignature()
	st := m.newInferStateSig(sig)
	var prompts []*prompt
	byKey := map[string]*prompt{}
	for i := range reqs {
		key := tokenKey(reqs[i].Prompt)
		p := byKey[key]
		if p == nil {
			ref, reused := m.pcache.lookup(sig, reqs[i].Prompt)
			tail := reqs[i].Prompt[reused:]
			p = &prompt{cache: newKVCache(m, len(tail), ref), tokens: tail}
			byKey[key] = p
			prompts = append(prompts, p)
		}
		p.members = append(p.members, i)
	}

	// Prefill in chunks of whole prompts, then sample each request's first
	// token (on the inference goroutines, each request by one of them).
	var caches []*kvCache
	var toks []int32
	var rows []int
	for lo := 0; lo < len(prompts); {
		caches, toks, rows = caches[:0], toks[:0], rows[:0]
		hi := lo
		for hi < len(prompts) && (hi == lo || len(toks)+len(prompts[hi].tokens) <= maxChunkRows) {
			for _, t := range prompts[hi].tokens {
				caches = append(caches, prompts[hi].cache)
				toks = append(toks, int32(t))
			}
			rows = append(rows, len(toks)-1)
			hi++
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		chunk := prompts[lo:hi]
		st.forward(caches, toks, rows, func(k int, z []float32) {
			p := chunk[k]
			for _, i := range p.members {
				ss[i].cache = newKVCache(m, reqs[i].MaxNewTokens, p.cache.ref())
				if !ss[i].done {
					ss[i].emit(z)
				}
			}
		})
		lo = hi
	}

	// Decode.
	var live []*sampler
	for _, s := range ss {
		if !s.done {
			live = append(live, s)
		}
	}
	if err := st.decode(ctx, live); err != nil {
		return nil, err
	}
	res := make([]SampleResult, len(ss))
	for i, s := range ss {
		res[i] = s.out
		// Remember what was computed: the prompt and every generated token
		// but the last, whose keys and values were never needed.
		toks := append(append(make([]int, 0, s.cache.length()), reqs[i].Prompt...), s.out.Tokens...)
		m.pcache.put(sig, toks[:s.cache.length()], s.cache.ref())
	}
	return res, nil
}

// decoder runs the decoding of Sample: every unfinished request advances
// one token per round until it stops. The requests are cut into units
// that each run their rounds independently of the others, so that no
// goroutine waits for another at the end of a round. A round of a unit is
// a sequence of stages that alternate between computation (GEMMs and row
// kernels; the last one samples the unit's next tokens) and attention over
// the KV caches.
//
// Attention streams the caches from memory, and one core of a small
// machine already saturates memory bandwidth with it, while the
// computation runs from the weights, which fit in a core's cache, unless
// attention streams through that cache too. So the goroutines take roles:
// attention goroutines run the attention stages and computing goroutines
// the computation, each unit's stages passing from one to the other in
// a pipeline; a goroutine takes the other role's stages only when that
// role has no goroutine, or when it has waited for work of its own for a
// while.
//
// The rows of the inference state are shared out: unit u's active
// requests are rows [lo, lo+len(active)).
type decoder struct {
	st      *inferState
	ctx     context.Context
	units   []decodeUnit
	mu      sync.Mutex
	live    int    // units not finished
	joined  int    // goroutines that joined
	present [2]int // goroutines in RunTask, by role
	seq     int64  // stages finished
	changed atomic.Int64
	err     error
}

type decodeUnit struct {
	lo      int
	active  []*sampler
	stage   int   // next stage, see runStage
	ready   int64 // seq when the stage became ready
	running bool
	done    bool
}

// Roles of the decoding goroutines.
const (
	roleAttend = iota
	roleCompute
)

// decodeMinRows is the fewest requests a decoding unit is given when there
// are enough of them, decodeUnitsPer the number of units per goroutine.
const (
	decodeMinRows  = 4
	decodeUnitsPer = 2
)

// teamMaxRows is the largest batch decoded by a team (measured: up to 16
// requests a team is faster than units on two cores, from 32 on about as
// fast, and units use more cores).
const teamMaxRows = 16

// decodeRoleWait is how long a goroutine waits for a stage of its own
// role before it takes one of the other role.
const decodeRoleWait = 50 * time.Microsecond

// decode runs the decoding of the live requests, each of which has its
// first token and its own cache: a batch of up to teamMaxRows requests in
// a team (on two goroutines), a larger one in units (on all of them). It
// returns ctx.Err() if ctx is cancelled.
func (s *inferState) decode(ctx context.Context, live []*sampler) error {
	n := len(live)
	if n == 0 {
		return nil
	}
	s.reserve(n)
	if cap(s.dcaches) < n {
		s.dcaches, s.dtoks = make([]*kvCache, n), make([]int32, n)
	}
	s.caches, s.toks = s.dcaches[:n], s.dtoks[:n]
	dc := &decoder{st: s, ctx: ctx}
	per := max(decodeMinRows, (n+decodeUnitsPer*s.nw-1)/(decodeUnitsPer*s.nw))
	if n <= teamMaxRows && s.nw > 1 && s.teamable() {
		per = n
	}
	for lo := 0; lo < n; lo += per {
		dc.units = append(dc.units, decodeUnit{lo: lo, active: slices.Clone(live[lo:min(lo+per, n)])})
	}
	dc.live = len(dc.units)
	switch {
	case len(dc.units) == 1 && n <= teamMaxRows && s.nw > 1 && s.teamable():
		simd.ParallelTasks(2, 2, &team{dc: dc})
	case len(dc.units) == 1:
		dc.RunTask(0, 0)
	default:
		simd.ParallelTasks(s.nw, s.nw, dc)
	}
	s.caches, s.toks = nil, nil
	return dc.err
}

// attendWorkers is the number of the nw decoding goroutines that take the
// attention role: half of them, at least one.
func attendWorkers(nw int) int { return max(1, nw/2) }

// RunTask runs stages until every unit is finished.
func (dc *decoder) RunTask(w, _ int) {
	ws := dc.st.ws[w]
	stages := 2*dc.st.m.cfg.Layers + 1
	dc.mu.Lock()
	role := roleCompute
	if dc.joined < attendWorkers(dc.st.nw) {
		role = roleAttend
	}
	dc.joined++
	dc.present[role]++
	dc.mu.Unlock()
	var waiting time.Time
	for {
		dc.mu.Lock()
		if dc.live == 0 {
			dc.present[role]--
			dc.mu.Unlock()
			return
		}
		any := dc.present[1-role] == 0 || !waiting.IsZero() && time.Since(waiting) > decodeRoleWait
		pick := -1
		for i := range dc.units {
			u := &dc.units[i]
			if u.running || u.done || !any && (u.stage%2 == 1) != (role == roleAttend) {
				continue
			}
			if pick < 0 || u.ready < dc.units[pick].ready {
				pick = i
			}
		}
		if pick < 0 {
			if any && dc.live < dc.present[0]+dc.present[1] {
				// Every live unit is running on another goroutine, and
				// there are fewer of them than goroutines from now on.
				dc.present[role]--
				dc.mu.Unlock()
				return
			}
			seen := dc.changed.Load()
			dc.mu.Unlock()
			if waiting.IsZero() {
				waiting = time.Now()
			}
			for i := 0; dc.changed.Load() == seen; i++ {
				if i%64 == 63 && time.Since(waiting) > decodeRoleWait {
					break
				}
			}
			continue
		}
		waiting = time.Time{}
		u := &dc.units[pick]
		u.running = true
		dc.mu.Unlock()

		dc.runStage(ws, u)

		dc.mu.Lock()
		u.running = false
		u.stage = (u.stage + 1) % stages
		dc.seq++
		u.ready = dc.seq
		if u.done {
			dc.live--
		}
		dc.changed.Add(1)
		dc.mu.Unlock()
	}
}

// runStage runs the next stage of unit u: stage 0 feeds the requests' last
// tokens and computes the input of layer 0, stage 2l+1 is the attention of
// layer l, stage 2l (l ≥ 1) the rest of layer l-1 and the input of layer l
// or, after the last layer, the logits and the next tokens.
func (dc *decoder) runStage(ws *inferWorker, u *decodeUnit) {
	s := dc.st
	m := s.m
	lo, hi := u.lo, u.lo+len(u.active)
	switch k := u.stage; {
	case k == 0:
		if !dc.startRound(u) {
			return
		}
		s.attnIn(0, lo, hi)
	case k%2 == 1:
		for r := lo; r < hi; r++ {
			s.attendCache(ws, k/2, r, r+1)
		}
	default:
		l := k / 2
		s.attnOut(l-1, lo, hi)
		if l < m.cfg.Layers {
			s.attnIn(l, lo, hi)
			return
		}
		s.final(lo, hi)
		dc.endRound(u, s.logitsRange(ws, lo, hi))
	}
}

// startRound feeds unit u's last tokens into its rows, or finishes the
// unit if the context is cancelled; it reports whether the round runs.
func (dc *decoder) startRound(u *decodeUnit) bool {
	s := dc.st
	m := s.m
	d := m.cfg.DModel
	if err := dc.ctx.Err(); err != nil {
		dc.mu.Lock()
		dc.err = err
		dc.mu.Unlock()
		u.done = true
		return false
	}
	for i, sp := range u.active {
		r, kc := u.lo+i, sp.cache
		tok := sp.out.Tokens[len(sp.out.Tokens)-1]
		s.caches[r], s.toks[r], s.pos[r] = kc, int32(tok), int32(kc.length())
		copy(s.x[r*d:(r+1)*d], m.p.embed[tok*d:])
		if m.cfg.EmbedScale != 0 {
			simd.Scale(m.cfg.EmbedScale, s.x[r*d:(r+1)*d])
		}
		kc.n++
	}
	return true
}

// endRound samples the next token of each of unit u's requests from the
// logits z of its rows and drops the finished requests.
func (dc *decoder) endRound(u *decodeUnit, z []float32) {
	v := dc.st.m.cfg.Vocab
	keep := u.active[:0]
	for i, sp := range u.active {
		sp.emit(z[i*v : (i+1)*v])
		if !sp.done {
			keep = append(keep, sp)
		}
	}
	u.active = keep
	u.done = len(keep) == 0
}

// team decodes a single unit of requests (a batch of one to a few) on two
// goroutines in lockstep: each computes its share of the columns of every
// projection (one half of the packed weights, which then stays in its
// core's cache) and the attention of its share of the heads, meeting at a
// barrier wherever a result needs the other's share. The shares change
// only which goroutine computes an element, not how. The first goroutine
// decodes alone until the second arrives, which then joins at the start
// of the next round.
type team struct {
	dc    *decoder
	joins atomic.Int32
	state atomic.Int32
	bar   pairBarrier
	stop  bool // set by member 0 before a barrier: the unit is finished
}

// States of a team.
const (
	teamWaiting = iota // member 0 decodes alone
	teamJoined         // member 1 joined
	teamDone           // the unit was finished before member 1 joined
)

// teamable reports whether every projection can be split in two at
// multiples of simd.PackedColAlign.
func (s *inferState) teamable() bool {
	d, _, _, qkvd, f, v := s.m.dims()
	a := simd.PackedColAlign
	return s.fast && d >= 2*a && qkvd >= 2*a && v >= 2*a && f >= 2*a && f%a == 0
}

// share returns member c's share [j0, j1) of n columns (both members' when
// c is -1).
func share(n, c int) (int, int) {
	a := simd.PackedColAlign
	mid := min(n, (n/2+a-1)/a*a)
	switch c {
	case 0:
		return 0, mid
	case 1:
		return mid, n
	}
	return 0, n
}

// headShare returns member c's share of n heads (all of them when c is -1).
func headShare(n, c int) (int, int) {
	switch c {
	case 0:
		return 0, (n + 1) / 2
	case 1:
		return (n + 1) / 2, n
	}
	return 0, n
}

func (t *team) RunTask(w, _ int) {
	ws := t.dc.st.ws[w]
	u := &t.dc.units[0]
	if t.joins.Add(1) > 1 {
		if !t.state.CompareAndSwap(teamWaiting, teamJoined) {
			return
		}
		for {
			t.bar.wait(1)
			if t.stop {
				return
			}
			t.round(ws, u, 1)
		}
	}
	for {
		joined := t.state.Load() == teamJoined
		if len(u.active) == 0 || !t.dc.startRound(u) {
			if joined || !t.state.CompareAndSwap(teamWaiting, teamDone) {
				t.stop = true
				t.bar.wait(0)
			}
			return
		}
		c := -1
		if joined {
			t.bar.wait(0)
			c = 0
		}
		t.round(ws, u, c)
		t.dc.endRound(u, t.dc.st.logits)
	}
}

// round runs member c's part of a round of unit u (the whole round when c
// is -1), leaving the logits in s.logits.
func (t *team) round(ws *inferWorker, u *decodeUnit, c int) {
	s := t.dc.st
	m := s.m
	cfg := m.cfg
	d, qd, _, qkvd, f, v := m.dims()
	q0, q1 := share(qkvd, c)
	o0, o1 := share(d, c)
	f0, f1 := share(f, c)
	v0, v1 := share(v, c)
	g0, g1 := headShare(cfg.KVHeads, c)
	sync := func() {
		if c >= 0 {
			t.bar.wait(c)
		}
	}
	n := len(u.active)
	ws.xn = grow(ws.xn, n*d)
	if c <= 0 {
		s.logits = grow(s.logits, n*v)
	}
	for l := 0; l < cfg.Layers; l++ {
		p, pl := &s.w.lw[l], &s.w.layers[l]
		// Both members norm the input, each into its own buffer.
		for r := 0; r < n; r++ {
			simd.RMSNorm(ws.xn[r*d:(r+1)*d], s.x[r*d:(r+1)*d], p.attnNorm, cfg.NormEps)
		}
		s.qkvCols(l, 0, n, ws.xn, q0, q1)
		sync()
		s.headsIn(l, 0, n, g0, g1)
		for r := 0; r < n; r++ {
			s.attendHeads(ws, l, r, g0, g1)
		}
		sync()
		if cfg.SandwichNorm {
			// Each member norms the whole projection's output (the
			// same bits) and adds its share of the columns.
			s.gemmCols(s.ao, s.att, n, qd, d, p.wo, &pl.o, o0, o1, false)
			sync()
			s.postNorm(ws.xn, s.ao, p.attnPost, 0, n, o0, o1)
		} else {
			s.gemmCols(s.x, s.att, n, qd, d, p.wo, &pl.o, o0, o1, true)
		}
		sync()
		for r := 0; r < n; r++ {
			simd.RMSNorm(ws.xn[r*d:(r+1)*d], s.x[r*d:(r+1)*d], p.mlpNorm, cfg.NormEps)
		}
		s.gemmCols(s.gu, ws.xn, n, d, 2*f, p.wgu, &pl.gu, f0, f1, false)
		s.gemmCols(s.gu, ws.xn, n, d, 2*f, p.wgu, &pl.gu, f+f0, f+f1, false)
		for r := 0; r < n; r++ {
			g := s.gu[r*2*f : (r+1)*2*f]
			s.gate(s.act[r*f+f0:r*f+f1], g[f0:f1], g[f+f0:f+f1])
		}
		sync()
		if cfg.SandwichNorm {
			s.gemmCols(s.ao, s.act, n, f, d, p.wdown, &pl.down, o0, o1, false)
			sync()
			s.postNorm(ws.xn, s.ao, p.mlpPost, 0, n, o0, o1)
		} else {
			s.gemmCols(s.x, s.act, n, f, d, p.wdown, &pl.down, o0, o1, true)
		}
		sync()
	}
	for r := 0; r < n; r++ {
		simd.RMSNorm(ws.xn[r*d:(r+1)*d], s.x[r*d:(r+1)*d], s.w.finalNorm, cfg.NormEps)
	}
	s.gemmCols(s.logits, ws.xn, n, d, v, m.head(), &s.w.head, v0, v1, false)
	sync()
}

// pairBarrier is a barrier for the two members of a team, who spin while
// they wait (the wait is short and waking a parked goroutine is not),
// yielding the processor now and then in case the other is not running.
// Each member counts the barriers it reached on a cache line of its own
// and waits until the other's count has caught up.
type pairBarrier struct {
	reached [2]struct {
		n atomic.Int64
		_ [56]byte
	}
}

func (b *pairBarrier) wait(c int) {
	n := b.reached[c].n.Add(1)
	other := &b.reached[1-c].n
	for i := 1; other.Load() < n; i++ {
		if i%(1<<12) == 0 {
			runtime.Gosched()
		}
	}
}

// tokenKey returns a map key identifying a token sequence.
func tokenKey(toks []int) string {
	b := make([]byte, 0, 4*len(toks))
	for _, t := range toks {
		b = binary.AppendUvarint(b, uint64(t))
	}
	return string(b)
}

// maxChunkRows bounds the rows of one prefill or scoring step, and with it
// the size of the activation buffers.
const maxChunkRows = 4096

// emit samples the next token from raw logits and records it.
func (s *sampler) emit(z []float32) {
	var tok int
	var lse float32
	if s.req.Constraint != nil {
		var err error
		if tok, lse, err = s.pickAllowed(z); err != nil {
			s.done, s.out.FinishReason, s.out.Err = true, FinishStop, err
			return
		}
	} else {
		tok, lse = s.pick(z)
	}
	s.out.Tokens = append(s.out.Tokens, tok)
	s.out.LogProbs = append(s.out.LogProbs, z[tok]-lse)
	switch {
	case slices.Contains(s.req.StopTokens, tok):
		s.done, s.out.FinishReason = true, FinishStop
	case len(s.out.Tokens) >= s.req.MaxNewTokens:
		s.done, s.out.FinishReason = true, FinishLength
	}
}

// pick chooses a token and returns it with the log-sum-exp of the raw
// logits (for its log-prob at temperature 1): argmax at temperature 0,
// otherwise a draw from softmax(z/T) restricted to the top-K tokens and then
// to the top-P nucleus (the order vLLM and Hugging Face use). Ties are
// broken by lower id. Without truncation the draw is one fused pass over
// the vocabulary (simd.SoftmaxTemp, simd.SampleIndex) into the sampler's
// own buffer.
func (s *sampler) pick(z []float32) (int, float32) {
	r := s.req
	if r.Temperature == 0 {
		return simd.Argmax(z), simd.LogSumExp(z)
	}
	truncate := r.TopK > 0 && r.TopK < len(z) || r.TopP > 0 && r.TopP < 1
	if !truncate {
		p := s.probs[:len(z)]
		sum, lse := simd.SoftmaxTemp(p, z, 1/r.Temperature)
		if k := simd.SampleIndex(p, sum, s.rng.Float64()); k >= 0 {
			return k, lse
		}
		return simd.Argmax(z), lse // every weight underflowed: only possible with non-finite logits
	}
	idx := s.idx[:len(z)]
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmp.Compare(z[b], z[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if r.TopK > 0 && r.TopK < len(idx) {
		idx = idx[:r.TopK]
	}
	mx := z[idx[0]]
	invT := 1 / float64(r.Temperature)
	w := s.weight[:len(idx)]
	var total float64
	for i, t := range idx {
		w[i] = math.Exp((float64(z[t]) - float64(mx)) * invT)
		total += w[i]
	}
	if r.TopP > 0 && r.TopP < 1 {
		var cum float64
		for i := range w {
			cum += w[i]
			if cum >= float64(r.TopP)*total {
				idx, w, total = idx[:i+1], w[:i+1], cum
				break
			}
		}
	}
	u := s.rng.Float64() * total
	var cum float64
	for i := range w {
		cum += w[i]
		if u < cum {
			return int(idx[i]), simd.LogSumExp(z)
		}
	}
	return int(idx[len(idx)-1]), simd.LogSumExp(z)
}

// pickAllowed is pick restricted to the tokens the request's Constraint
// allows (the mask applied before top-k and top-p, as vLLM applies its
// guided-decoding bitmask): argmax among them at temperature 0, otherwise
// one draw from softmax(z/T) over them, truncated. The log-sum-exp is the
// raw logits', so the log-prob stays the policy's own.
func (s *sampler) pickAllowed(z []float32) (int, float32, error) {
	r := s.req
	allow := s.allow[:len(z)]
	clear(allow)
	if err := r.Constraint.Allow(s.out.Tokens, allow); err != nil {
		return 0, 0, err
	}
	idx := s.idx[:0]
	for i, ok := range allow {
		if ok {
			idx = append(idx, int32(i))
		}
	}
	if len(idx) == 0 {
		return 0, 0, fmt.Errorf("native: the constraint allows no token after %d generated", len(s.out.Tokens))
	}
	lse := simd.LogSumExp(z)
	if r.Temperature == 0 {
		best := idx[0]
		for _, t := range idx[1:] {
			if z[t] > z[best] {
				best = t
			}
		}
		return int(best), lse, nil
	}
	topP := r.TopP > 0 && r.TopP < 1
	if r.TopK > 0 && r.TopK < len(idx) || topP {
		slices.SortFunc(idx, func(a, b int32) int {
			if c := cmp.Compare(z[b], z[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		if r.TopK > 0 && r.TopK < len(idx) {
			idx = idx[:r.TopK]
		}
	}
	mx := z[idx[0]]
	for _, t := range idx[1:] {
		mx = max(mx, z[t])
	}
	invT := 1 / float64(r.Temperature)
	w := s.weight[:len(idx)]
	var total float64
	for i, t := range idx {
		w[i] = math.Exp((float64(z[t]) - float64(mx)) * invT)
		total += w[i]
	}
	if topP {
		var cum float64
		for i := range w {
			cum += w[i]
			if cum >= float64(r.TopP)*total {
				idx, w, total = idx[:i+1], w[:i+1], cum
				break
			}
		}
	}
	u := s.rng.Float64() * total
	var cum float64
	for i := range w {
		cum += w[i]
		if u < cum {
			return int(idx[i]), lse, nil
		}
	}
	return int(idx[len(idx)-1]), lse, nil
}
