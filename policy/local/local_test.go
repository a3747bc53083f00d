package local

import (
	"context"
	"math"
	"testing"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/frozenlake"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/native"
	"github.com/agentrl/agentrl/policy/tokenizer"
	"github.com/agentrl/agentrl/rollout"
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
