package native

import (
	"context"
	"fmt"
	"github.com/agentrl/agentrl/internal/simd"
)

// ScoreRequest asks for the teacher-forced log-probabilities of several
// continuations of one prompt.
type ScoreRequest struct {
	Prompt        []int   // 1..MaxSeq token ids, shared by all continuations
	Continuations [][]int // len(Prompt)+len(c) ≤ MaxSeq each; may be empty
}

// Score returns, for every request i and continuation j, the log-probability
// of each continuation token given the prompt and the earlier continuation
// tokens: out[i][j][t] = log p(c[t] | Prompt, c[:t]), under softmax of the raw
// logits (temperature 1), the same convention as SampleResult.LogProbs.
//
// Each prompt is run once and its KV cache is shared, read-only, by all of its
// continuations, so scoring K chains against one prompt costs one prompt
// forward plus the K continuations (the N×N chain-versus-prompt scoring of the
// mutual-information metrics relies on this); prompts already in the prefix
// cache (sampled earlier with the same weights) are not recomputed at all. Work is packed into steps of at
// most a few thousand rows. It returns ctx.Err() when ctx is cancelled.
func (m *Model) Score(ctx context.Context, reqs []ScoreRequest) ([][][]float32, error) {
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return nil, fmt.Errorf("native: score request %d: empty prompt", i)
		}
		if err := m.checkTokens(fmt.Sprintf("score request %d prompt", i), r.Prompt); err != nil {
			return nil, err
		}
		for j, c := range r.Continuations {
			if len(r.Prompt)+len(c) > m.cfg.MaxSeq {
				return nil, fmt.Errorf("native: score request %d continuation %d: length %d+%d exceeds MaxSeq %d",
					i, j, len(r.Prompt), len(c), m.cfg.MaxSeq)
			}
			if err := m.checkTokens(fmt.Sprintf("score request %d continuation %d", i, j), c); err != nil {
				return nil, err
			}
		}
	}
	out := make([][][]float32, len(reqs))
	prompts := make([]*kvCache, len(reqs))
	var caches []*kvCache
	var toks []int32
	var rows []int

	// Prompts: prefill (reusing what the prefix cache holds, e.g. the
	// prompts of the rollouts being scored), then score each continuation's
	// first token from the prompt's last position.
	sig := m.paramSignature()
	st := m.newInferStateSig(sig)
	tails := make([][]int, len(reqs))
	for i, r := range reqs {
		ref, reused := m.pcache.lookup(sig, r.Prompt)
		tails[i] = r.Prompt[reused:]
		prompts[i] = newKVCache(m, len(tails[i]), ref)
	}
	for lo := 0; lo < len(reqs); {
		caches, toks, rows = caches[:0], toks[:0], rows[:0]
		hi := lo
		for hi < len(reqs) && (hi == lo || len(toks)+len(tails[hi]) <= maxChunkRows) {
			for _, t := range tails[hi] {
				caches = append(caches, prompts[hi])
				toks = append(toks, int32(t))
			}
			rows = append(rows, len(toks)-1)
			hi++
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		first := lo
		st.forward(caches, toks, rows, func(k int, z []float32) {
			i := first + k
			lse := simd.LogSumExp(z)
			out[i] = make([][]float32, len(reqs[i].Continuations))
			for j, c := range reqs[i].Continuations {
				out[i][j] = make([]float32, len(c))
				if len(c) > 0 {
					out[i][j][0] = z[c[0]] - lse
				}
			}
		})
		lo = hi
	}

	// Continuations: rows are c[0..n-2]; row t predicts c[t+1].
	type item struct{ i, j int }
	var items []item
	for i, r := range reqs {
		for j, c := range r.Continuations {
			if len(c) > 1 {
				items = append(items, item{i, j})
			}
		}
	}
	var targets []int32
	var dest []*float32
	for lo := 0; lo < len(items); {
		caches, toks, rows, targets, dest = caches[:0], toks[:0], rows[:0], targets[:0], dest[:0]
		hi := lo
		for hi < len(items) && (hi == lo || len(toks)+len(reqs[items[hi].i].Continuations[items[hi].j])-1 <= maxChunkRows) {
			it := items[hi]
			c := reqs[it.i].Continuations[it.j]
			kc := newKVCache(m, len(c)-1, prompts[it.i].ref())
			for t := 0; t < len(c)-1; t++ {
				caches = append(caches, kc)
				toks = append(toks, int32(c[t]))
				rows = append(rows, len(toks)-1)
				targets = append(targets, int32(c[t+1]))
				dest = append(dest, &out[it.i][it.j][t+1])
			}
			hi++
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st.forward(caches, toks, rows, func(r int, z []float32) {
			*dest[r] = z[targets[r]] - simd.LogSumExp(z)
		})
		lo = hi
	}
	return out, nil
}
