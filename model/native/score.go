package native

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/internal/simd"
)

// ScoreRequest asks for the teacher-forced log-probabilities of several
// continuations of one prompt.
type ScoreRequest struct {
	Prompt        []int   // 1..MaxSeq token ids, shared by all continuations
	Continuations [][]int // len(Prompt)+len(c) ≤ MaxSeq each; may be empty
}

// TopToken is one entry of a TopLogprobs list: a token and its
// log-probability under softmax of the raw logits (temperature 1).
type TopToken struct {
	Token   int
	LogProb float32
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
	out := make([][][]float32, len(reqs))
	err := m.walkScore(ctx, reqs,
		func(i int, z []float32) {
			lse := simd.LogSumExp(z)
			out[i] = make([][]float32, len(reqs[i].Continuations))
			for j, c := range reqs[i].Continuations {
				out[i][j] = make([]float32, len(c))
				if len(c) > 0 {
					out[i][j][0] = z[c[0]] - lse
				}
			}
		},
		func(i, j, t int, z []float32) {
			out[i][j][t] = z[reqs[i].Continuations[j][t]] - simd.LogSumExp(z)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ScoreRanks returns Score's log-probabilities together with each token's
// rank in the distribution it is read from: ranks[i][j][t] is the number of
// vocabulary tokens whose log-probability there is at least that of c[t], so
// 1 for the most likely token, and a token tied with others counts them as
// ranked before it. That is vLLM's rank of a prompt_logprobs token (its
// sampler counts the entries of the log-softmax row that are >= the token's
// own). The rank is counted on the same row of logits the log-probability
// comes from: ScoreRanks runs exactly the forward passes of Score and gives
// the same log-probabilities. It returns ctx.Err() when ctx is cancelled.
func (m *Model) ScoreRanks(ctx context.Context, reqs []ScoreRequest) ([][][]float32, [][][]int, error) {
	lps := make([][][]float32, len(reqs))
	ranks := make([][][]int, len(reqs))
	err := m.walkScore(ctx, reqs,
		func(i int, z []float32) {
			lse := simd.LogSumExp(z)
			lps[i] = make([][]float32, len(reqs[i].Continuations))
			ranks[i] = make([][]int, len(reqs[i].Continuations))
			for j, c := range reqs[i].Continuations {
				lps[i][j] = make([]float32, len(c))
				ranks[i][j] = make([]int, len(c))
				if len(c) > 0 {
					lps[i][j][0], ranks[i][j][0] = rankOf(z, lse, c[0])
				}
			}
		},
		func(i, j, t int, z []float32) {
			lps[i][j][t], ranks[i][j][t] = rankOf(z, simd.LogSumExp(z), reqs[i].Continuations[j][t])
		})
	if err != nil {
		return nil, nil, err
	}
	return lps, ranks, nil
}

// rankOf returns the log-probability z[tok]−lse of tok and its rank: the
// number of entries of the log-softmax row z−lse that are at least tok's
// (tok included), as vLLM counts.
func rankOf(z []float32, lse float32, tok int) (float32, int) {
	own := z[tok] - lse
	n := 0
	for _, x := range z {
		if x-lse >= own {
			n++
		}
	}
	return own, n
}

// TopLogprobs returns, for every request i, continuation j and position t,
// the k most likely next tokens after Prompt+c[:t] (the distribution Score
// reads c[t] from), with their log-probabilities under softmax of the raw
// logits (temperature 1, the convention of Score): out[i][j][t] has
// min(k, Vocab) entries, most likely first, ties broken by the lower token
// id. A token's entry holds exactly the value Score gives it at that
// position. k must be at least 0. It runs the same forward passes as Score
// (sharing each prompt's cache and using the prefix cache alike) and
// returns ctx.Err() when ctx is cancelled.
func (m *Model) TopLogprobs(ctx context.Context, reqs []ScoreRequest, k int) ([][][][]TopToken, error) {
	if k < 0 {
		return nil, fmt.Errorf("native: top logprobs: k is %d, want at least 0", k)
	}
	k = min(k, m.cfg.Vocab)
	out := make([][][][]TopToken, len(reqs))
	err := m.walkScore(ctx, reqs,
		func(i int, z []float32) {
			out[i] = make([][][]TopToken, len(reqs[i].Continuations))
			var top []TopToken
			for j, c := range reqs[i].Continuations {
				out[i][j] = make([][]TopToken, len(c))
				if len(c) > 0 {
					if top == nil {
						top = topTokens(z, k, simd.LogSumExp(z))
						out[i][j][0] = top
					} else {
						out[i][j][0] = slices.Clone(top)
					}
				}
			}
		},
		func(i, j, t int, z []float32) {
			out[i][j][t] = topTokens(z, k, simd.LogSumExp(z))
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// topTokens returns the k largest logits of z, largest first and ties by
// the lower id, as log-probabilities z[v] − lse.
func topTokens(z []float32, k int, lse float32) []TopToken {
	top := make([]TopToken, 0, k)
	if k == 0 {
		return top
	}
	if k > 64 {
		// Many entries: sort the whole row rather than insert.
		ids := make([]int, len(z))
		for v := range ids {
			ids[v] = v
		}
		slices.SortStableFunc(ids, func(a, b int) int {
			switch {
			case z[a] > z[b]:
				return -1
			case z[a] < z[b]:
				return 1
			}
			return 0
		})
		for _, v := range ids[:k] {
			top = append(top, TopToken{Token: v, LogProb: z[v] - lse})
		}
		return top
	}
	// Insertion into a list kept sorted; ids ascend, so an equal logit
	// goes after the entries already there.
	for v, x := range z {
		if len(top) == k {
			if !(x > top[k-1].LogProb) {
				continue
			}
			top = top[:k-1]
		}
		p := len(top)
		for p > 0 && x > top[p-1].LogProb {
			p--
		}
		top = slices.Insert(top, p, TopToken{Token: v, LogProb: x})
	}
	for r := range top {
		top[r].LogProb -= lse
	}
	return top
}

// walkScore runs the forward passes of Score and TopLogprobs. For each
// request i it calls prompt(i, z) with the logits z after the whole prompt
// (the distribution of every continuation's first token), then, for each
// continuation j and position t ≥ 1, cont(i, j, t, z) with the logits after
// Prompt+c[:t]. prompt(i, ·) is called before any cont(i, ·); both are called
// from the inference goroutines, concurrently for different rows, and must
// not keep z.
func (m *Model) walkScore(ctx context.Context, reqs []ScoreRequest, prompt func(i int, z []float32), cont func(i, j, t int, z []float32)) error {
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return fmt.Errorf("native: score request %d: empty prompt", i)
		}
		if err := m.checkTokens(fmt.Sprintf("score request %d prompt", i), r.Prompt); err != nil {
			return err
		}
		for j, c := range r.Continuations {
			if len(r.Prompt)+len(c) > m.cfg.MaxSeq {
				return fmt.Errorf("native: score request %d continuation %d: length %d+%d exceeds MaxSeq %d",
					i, j, len(r.Prompt), len(c), m.cfg.MaxSeq)
			}
			if err := m.checkTokens(fmt.Sprintf("score request %d continuation %d", i, j), c); err != nil {
				return err
			}
		}
	}
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
			return err
		}
		first := lo
		st.forward(caches, toks, rows, func(k int, z []float32) { prompt(first+k, z) })
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
	type dest struct{ i, j, t int32 }
	var dests []dest
	for lo := 0; lo < len(items); {
		caches, toks, rows, dests = caches[:0], toks[:0], rows[:0], dests[:0]
		hi := lo
		for hi < len(items) && (hi == lo || len(toks)+len(reqs[items[hi].i].Continuations[items[hi].j])-1 <= maxChunkRows) {
			it := items[hi]
			c := reqs[it.i].Continuations[it.j]
			kc := newKVCache(m, len(c)-1, prompts[it.i].ref())
			for t := 0; t < len(c)-1; t++ {
				caches = append(caches, kc)
				toks = append(toks, int32(c[t]))
				rows = append(rows, len(toks)-1)
				dests = append(dests, dest{int32(it.i), int32(it.j), int32(t + 1)})
			}
			hi++
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		st.forward(caches, toks, rows, func(r int, z []float32) {
			d := dests[r]
			cont(int(d.i), int(d.j), int(d.t), z)
		})
		lo = hi
	}
	return nil
}
