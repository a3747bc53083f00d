package native

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopLogprobs checks TopLogprobs against Score: every list is the
// brute-force top k of the log-softmax over the vocabulary (Score of every
// token at the position), sorted, and the actual token's entry holds
// Score's value exactly.
func TestTopLogprobs(t *testing.T) {
	for _, vocab := range []int{37, 100} { // 100: k > 64 sorts the row
		cfg := sampleConfig()
		cfg.Vocab = vocab
		m := testModel(t, cfg, 11)
		rng := rand.New(rand.NewPCG(5, 5))
		ctx := context.Background()
		shared := randTokens(rng, 6, vocab)
		reqs := []ScoreRequest{
			{Prompt: randTokens(rng, 5, vocab), Continuations: [][]int{randTokens(rng, 7, vocab), nil, randTokens(rng, 1, vocab)}},
			{Prompt: randTokens(rng, 1, vocab), Continuations: [][]int{randTokens(rng, 4, vocab)}},
			{Prompt: shared, Continuations: [][]int{randTokens(rng, 3, vocab), randTokens(rng, 3, vocab)}},
			{Prompt: shared, Continuations: nil},
		}
		scores, err := m.Score(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{0, 1, 5, vocab, vocab + 3, 80} {
			tops, err := m.TopLogprobs(ctx, reqs, k)
			if err != nil {
				t.Fatal(err)
			}
			if len(tops) != len(reqs) {
				t.Fatalf("k %d: %d results for %d requests", k, len(tops), len(reqs))
			}
			want := min(k, vocab)
			for i, r := range reqs {
				if len(tops[i]) != len(r.Continuations) {
					t.Fatalf("k %d request %d: %d continuations, want %d", k, i, len(tops[i]), len(r.Continuations))
				}
				for j, c := range r.Continuations {
					if len(tops[i][j]) != len(c) {
						t.Fatalf("k %d request %d continuation %d: %d positions, want %d", k, i, j, len(tops[i][j]), len(c))
					}
					for pos := range c {
						got := tops[i][j][pos]
						all := bruteForce(t, m, r.Prompt, c[:pos])
						if len(got) != want {
							t.Fatalf("k %d (%d,%d,%d): %d entries, want %d", k, i, j, pos, len(got), want)
						}
						for e, tt := range got {
							if tt.Token != all[e].Token || !logProbsMatch([]float32{tt.LogProb}, []float32{all[e].LogProb}) {
								t.Fatalf("k %d (%d,%d,%d) entry %d: %+v, brute force %+v", k, i, j, pos, e, tt, all[e])
							}
							if e > 0 && cmpTop(got[e-1], tt) >= 0 {
								t.Fatalf("k %d (%d,%d,%d): entries %d, %d out of order: %v", k, i, j, pos, e-1, e, got)
							}
						}
						if e := slices.IndexFunc(got, func(tt TopToken) bool { return tt.Token == c[pos] }); e >= 0 && got[e].LogProb != scores[i][j][pos] {
							t.Errorf("k %d (%d,%d,%d): actual token %d has %v, Score %v", k, i, j, pos, c[pos], got[e].LogProb, scores[i][j][pos])
						} else if e < 0 && k >= vocab {
							t.Errorf("k %d (%d,%d,%d): actual token %d missing", k, i, j, pos, c[pos])
						}
					}
				}
			}
		}
	}
}

// bruteForce scores every vocabulary token after prompt+prefix and returns
// them sorted: most likely first, ties by the lower id.
func bruteForce(t *testing.T, m *Model, prompt, prefix []int) []TopToken {
	t.Helper()
	v := m.Config().Vocab
	req := ScoreRequest{Prompt: prompt}
	for tok := range v {
		req.Continuations = append(req.Continuations, append(slices.Clone(prefix), tok))
	}
	sc, err := m.Score(context.Background(), []ScoreRequest{req})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]TopToken, v)
	for tok := range v {
		out[tok] = TopToken{Token: tok, LogProb: sc[0][tok][len(prefix)]}
	}
	slices.SortFunc(out, cmpTop)
	return out
}

// cmpTop orders by descending log-prob, then ascending token id.
func cmpTop(a, b TopToken) int {
	if c := cmp.Compare(b.LogProb, a.LogProb); c != 0 {
		return c
	}
	return cmp.Compare(a.Token, b.Token)
}

// TestTopTokensTies checks the order of equal logits and both selection
// paths (insertion for small k, a sort for large k).
func TestTopTokensTies(t *testing.T) {
	z := make([]float32, 130)
	for v := range z {
		z[v] = float32(v % 7) // many ties
	}
	for _, k := range []int{0, 1, 3, 20, 64, 65, 130} {
		got := topTokens(z, k, 2)
		if len(got) != k {
			t.Fatalf("k %d: %d entries", k, len(got))
		}
		order := make([]int, len(z))
		for v := range order {
			order[v] = v
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(z[b], z[a]) })
		for e, tt := range got {
			if tt.Token != order[e] || tt.LogProb != z[order[e]]-2 {
				t.Fatalf("k %d entry %d: %+v, want token %d with %v", k, e, tt, order[e], z[order[e]]-2)
			}
		}
	}
}

func TestTopLogprobsErrors(t *testing.T) {
	m := testModel(t, sampleConfig(), 6)
	ctx := context.Background()
	if _, err := m.TopLogprobs(ctx, []ScoreRequest{{Prompt: []int{1}, Continuations: [][]int{{1}}}}, -1); err == nil {
		t.Error("k = -1: no error")
	}
	if _, err := m.TopLogprobs(ctx, []ScoreRequest{{Prompt: []int{1}, Continuations: [][]int{{40}}}}, 2); err == nil {
		t.Error("bad token: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.TopLogprobs(cctx, []ScoreRequest{{Prompt: []int{1}, Continuations: [][]int{{1, 2}}}}, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

// TestScoreRanks checks ScoreRanks against Score and a brute-force count:
// the log-probabilities are Score's exactly, and each rank is the number
// of vocabulary tokens at least as likely as the scored one (vLLM's count,
// the token itself included).
func TestScoreRanks(t *testing.T) {
	cfg := sampleConfig()
	m := testModel(t, cfg, 12)
	rng := rand.New(rand.NewPCG(7, 7))
	ctx := context.Background()
	v := cfg.Vocab
	shared := randTokens(rng, 4, v)
	reqs := []ScoreRequest{
		{Prompt: randTokens(rng, 5, v), Continuations: [][]int{randTokens(rng, 6, v), nil, randTokens(rng, 1, v)}},
		{Prompt: shared, Continuations: [][]int{randTokens(rng, 3, v), randTokens(rng, 3, v)}},
		{Prompt: shared},
	}
	scores, err := m.Score(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	lps, ranks, err := m.ScoreRanks(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(lps) != len(reqs) || len(ranks) != len(reqs) {
		t.Fatalf("%d and %d results for %d requests", len(lps), len(ranks), len(reqs))
	}
	seen := map[int]bool{}
	for i, r := range reqs {
		if len(lps[i]) != len(r.Continuations) || len(ranks[i]) != len(r.Continuations) {
			t.Fatalf("request %d: %d and %d continuations, want %d", i, len(lps[i]), len(ranks[i]), len(r.Continuations))
		}
		for j, c := range r.Continuations {
			if !slices.Equal(lps[i][j], scores[i][j]) {
				t.Errorf("(%d,%d): log-probs %v, Score %v", i, j, lps[i][j], scores[i][j])
			}
			if len(ranks[i][j]) != len(c) {
				t.Fatalf("(%d,%d): %d ranks for %d tokens", i, j, len(ranks[i][j]), len(c))
			}
			for pos := range c {
				all := bruteForce(t, m, r.Prompt, c[:pos])
				own := scores[i][j][pos]
				want := 0
				for _, e := range all {
					if e.LogProb >= own {
						want++
					}
				}
				if ranks[i][j][pos] != want {
					t.Errorf("(%d,%d,%d): rank %d, brute force %d", i, j, pos, ranks[i][j][pos], want)
				}
				seen[want] = true
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("ranks %v: too few distinct ranks to test anything", seen)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := m.ScoreRanks(cctx, reqs); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}

// TestRankOfTies checks vLLM's tie rule: tokens as likely as the scored
// one rank before it.
func TestRankOfTies(t *testing.T) {
	z := []float32{1, 3, 2, 3, 3, -1}
	for tok, want := range []int{5, 3, 4, 3, 3, 6} {
		if lp, r := rankOf(z, 0.5, tok); r != want || lp != z[tok]-0.5 {
			t.Errorf("token %d: rank %d log-prob %v, want %d and %v", tok, r, lp, want, z[tok]-0.5)
		}
	}
}
