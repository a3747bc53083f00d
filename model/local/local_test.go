package local

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/frozenlake"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/text/tokenizer"
)

func tinyPolicy(t *testing.T) *Policy {
	t.Helper()
	tok := tokenizer.New()
	cfg := native.Config{Vocab: tok.VocabSize(), DModel: 32, Layers: 1, Heads: 2, DFF: 64, MaxSeq: 1024, TieEmbeddings: true}
	m, err := native.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New("tiny", m, tok)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSampleThenScoreAgree(t *testing.T) {
	p := tinyPolicy(t)
	if pre := p.TextPrefix(); len(pre) != 1 || pre[0] != tokenizer.BOSID {
		t.Errorf("TextPrefix = %v, want <|bos|>", pre)
	}
	prompt, _ := p.RenderChat(context.Background(), []policy.Message{{Role: "user", Content: "Turn 1:\n#P_O#"}}, true)
	checkSampleThenScore(t, p, prompt)
}

// checkSampleThenScore samples two continuations of prompt and checks that
// Score gives the log-probs Sample reported, and that bad requests are
// refused.
func checkSampleThenScore(t *testing.T, p *Policy, prompt []int) {
	t.Helper()
	ctx := context.Background()
	reqs := []policy.Request{
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 24, Seed: 1}},
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 24, Seed: 2}},
		{Prompt: []int{-3}, Sampling: policy.Sampling{MaxTokens: 4}},
	}
	got, err := p.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if got[2].Err == nil {
		t.Error("out-of-vocabulary prompt accepted")
	}
	var sreqs []policy.ScoreRequest
	for _, s := range got[:2] {
		if s.Err != nil || len(s.Tokens) == 0 || len(s.Tokens) != len(s.LogProbs) {
			t.Fatalf("sample %+v", s)
		}
		sreqs = append(sreqs, policy.ScoreRequest{Prompt: prompt, Continuation: s.Tokens})
	}
	scores, err := p.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range got[:2] {
		for j := range s.LogProbs {
			if math.Abs(s.LogProbs[j]-scores[i][j]) > 1e-4 {
				t.Fatalf("sample %d token %d: sampled log-prob %v, scored %v", i, j, s.LogProbs[j], scores[i][j])
			}
		}
	}
	if _, err := p.Score(ctx, []policy.ScoreRequest{{Prompt: nil, Continuation: []int{1}}}); err == nil {
		t.Error("empty prompt accepted")
	}
}

// TestTopLogprobs checks the policy's top-k lists against Score: each list
// is sorted, the actual token's entry (with k = VocabSize, always present)
// holds Score's log-prob, and the list is the k most likely tokens of a
// brute-force Score of every vocabulary token.
func TestTopLogprobs(t *testing.T) {
	p := tinyPolicy(t)
	ctx := context.Background()
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "Turn 1:\n#P_O#"}}, true)
	got, err := p.Sample(ctx, []policy.Request{
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 6, Seed: 1}},
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 6, Seed: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sreqs := []policy.ScoreRequest{
		{Prompt: prompt, Continuation: got[0].Tokens},
		{Prompt: prompt, Continuation: got[1].Tokens},
		{Prompt: prompt[:3], Continuation: prompt[3:6]},
		{Prompt: prompt[:3], Continuation: nil},
	}
	scores, err := p.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	v := p.VocabSize()
	all, err := p.TopLogprobs(ctx, sreqs, v)
	if err != nil {
		t.Fatal(err)
	}
	top5, err := p.TopLogprobs(ctx, sreqs, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range sreqs {
		if len(all[i]) != len(r.Continuation) || len(top5[i]) != len(r.Continuation) {
			t.Fatalf("request %d: %d and %d positions for %d tokens", i, len(all[i]), len(top5[i]), len(r.Continuation))
		}
		for pos, tok := range r.Continuation {
			list := all[i][pos]
			if len(list) != v {
				t.Fatalf("request %d position %d: %d entries, want %d", i, pos, len(list), v)
			}
			found := false
			for e, tl := range list {
				if e > 0 && (tl.LogProb > list[e-1].LogProb || tl.LogProb == list[e-1].LogProb && tl.Token < list[e-1].Token) {
					t.Fatalf("request %d position %d: entries %d and %d out of order", i, pos, e-1, e)
				}
				if tl.Token == tok {
					found = true
					if tl.LogProb != scores[i][pos] {
						t.Errorf("request %d position %d: actual token has %v, Score %v", i, pos, tl.LogProb, scores[i][pos])
					}
				}
			}
			if !found {
				t.Errorf("request %d position %d: actual token %d not listed", i, pos, tok)
			}
			for e := range top5[i][pos] {
				if top5[i][pos][e] != list[e] {
					t.Errorf("request %d position %d: top-5 entry %d is %+v, full list %+v", i, pos, e, top5[i][pos][e], list[e])
				}
			}
		}
	}
	// The most likely token at one position, by brute force.
	bf := make([]policy.ScoreRequest, v)
	for tok := range bf {
		bf[tok] = policy.ScoreRequest{Prompt: prompt, Continuation: []int{tok}}
	}
	sc, err := p.Score(ctx, bf)
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for tok := range sc {
		if sc[tok][0] > sc[best][0] {
			best = tok
		}
	}
	if e := top5[0][0][0]; e.Token != best || math.Abs(e.LogProb-sc[best][0]) > 1e-6 {
		t.Errorf("most likely first token %+v, brute force %d with %v", e, best, sc[best][0])
	}
	if _, err := p.TopLogprobs(ctx, sreqs, -1); err == nil {
		t.Error("k = -1 accepted")
	}
	if _, err := p.TopLogprobs(ctx, []policy.ScoreRequest{{Prompt: prompt, Continuation: []int{v}}}, 1); err == nil {
		t.Error("out-of-vocabulary continuation accepted")
	}
}

// TestScoreRanks checks ScoreRanks against Score and the full ranked list
// of TopLogprobs: the same log-probabilities, and each token's rank is the
// number of tokens at least as likely (vLLM's count).
func TestScoreRanks(t *testing.T) {
	p := tinyPolicy(t)
	ctx := context.Background()
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "Turn 1:\n#P_O#"}}, true)
	sreqs := []policy.ScoreRequest{
		{Prompt: prompt[:2], Continuation: prompt[2:]},
		{Prompt: prompt[:2], Continuation: nil},
		{Prompt: prompt[:4], Continuation: []int{'a', 'b', 'c'}},
	}
	scores, err := p.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	lps, ranks, err := p.ScoreRanks(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.TopLogprobs(ctx, sreqs, p.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range sreqs {
		if !slices.Equal(lps[i], scores[i]) || len(ranks[i]) != len(r.Continuation) {
			t.Fatalf("request %d: log-probs %v ranks %v, Score %v", i, lps[i], ranks[i], scores[i])
		}
		for pos := range r.Continuation {
			want := 0
			for _, e := range all[i][pos] {
				if e.LogProb >= scores[i][pos] {
					want++
				}
			}
			if ranks[i][pos] != want {
				t.Errorf("request %d position %d: rank %d, want %d", i, pos, ranks[i][pos], want)
			}
		}
	}
	if _, _, err := p.ScoreRanks(ctx, []policy.ScoreRequest{{Prompt: prompt, Continuation: []int{p.VocabSize()}}}); err == nil {
		t.Error("out-of-vocabulary continuation accepted")
	}
}

func TestEngineRunsOnNativePolicy(t *testing.T) {
	checkEngineRuns(t, tinyPolicy(t))
}

// checkEngineRuns plays frozenlake episodes through the rollout engine
// twice and checks that nothing fails and the same seeds replay the same.
func checkEngineRuns(t *testing.T, p policy.Policy) {
	t.Helper()
	f, err := envs.NewFactory("frozenlake", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rollout.DefaultConfig()
	cfg.PromptStyle = rollout.PromptCompact
	cfg.Sampling.MaxTokens = 16
	e, err := rollout.New(context.Background(), cfg, p, f)
	if err != nil {
		t.Fatal(err)
	}
	run := func() []rollout.Trajectory {
		trajs, err := e.Run(context.Background(), []uint64{1, 2}, 2, 5)
		if err != nil {
			t.Fatal(err)
		}
		return trajs
	}
	a, b := run(), run()
	for i := range a {
		if a[i].Err != "" {
			t.Fatalf("trajectory error: %s", a[i].Err)
		}
		if len(a[i].Tokens) != len(b[i].Tokens) || a[i].Score != b[i].Score {
			t.Fatalf("same seeds gave different trajectories")
		}
		for j := range a[i].Tokens {
			if a[i].Tokens[j] != b[i].Tokens[j] {
				t.Fatalf("same seeds gave different tokens")
			}
		}
	}
}
