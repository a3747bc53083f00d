package native

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"github.com/agentrl/agentrl/internal/simd"
	"math"
	"math/rand/v2"
	"slices"
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

	// Decode: one token per unfinished request per step.
	active := make([]*sampler, 0, len(ss))
	emit := func(i int, z []float32) { active[i].emit(z) }
	for {
		active = active[:0]
		for _, s := range ss {
			if !s.done {
				active = append(active, s)
			}
		}
		if len(active) == 0 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		caches, toks, rows = caches[:0], toks[:0], rows[:0]
		for i, s := range active {
			caches = append(caches, s.cache)
			toks = append(toks, int32(s.out.Tokens[len(s.out.Tokens)-1]))
			rows = append(rows, i)
		}
		st.forward(caches, toks, rows, emit)
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
	tok, lse := s.pick(z)
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
