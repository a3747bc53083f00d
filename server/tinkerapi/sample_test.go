package tinkerapi

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// direct samples p in process as asample documents it: sample i with
// seed+i.
func direct(t testing.TB, p *local.Policy, prompt []int, n int, sp policy.Sampling) []policy.Sample {
	t.Helper()
	reqs := make([]policy.Request, n)
	for i := range reqs {
		s := sp
		s.Seed += uint64(i)
		reqs[i] = policy.Request{Prompt: prompt, Sampling: s}
	}
	out, err := p.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameSamples requires asample's sequences to be the direct samples.
func sameSamples(t testing.TB, got []wire.SampledSequence, want []policy.Sample) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d sequences, want %d", len(got), len(want))
	}
	for i := range got {
		reason := wire.StopReasonLength
		if want[i].Finish == policy.FinishStop {
			reason = wire.StopReasonStop
		}
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.Equal(got[i].Logprobs, want[i].LogProbs) || got[i].StopReason != reason {
			t.Errorf("sample %d: got %v %v %s, want %v %v %s", i, got[i].Tokens, got[i].Logprobs, got[i].StopReason,
				want[i].Tokens, want[i].LogProbs, reason)
		}
	}
}

// TestSampleEqualsLocal checks that asample gives what model/local's
// Sample gives for the same weights and seeds: the base model, and the
// weights of a trained model (full and adapters) saved for the sampler.
func TestSampleEqualsLocal(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	prompt := []int{tokenizer.BOSID, 'h', 'e', 'l', 'l', 'o'}
	sp := wire.SamplingParams{MaxTokens: 12, Seed: i64(7), Temperature: 1, TopK: -1, TopP: 1}
	want := policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 12, Seed: 7}

	var sr wire.SampleResponse
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 3, Prompt: wire.TokensInput(prompt), SamplingParams: sp, BaseModel: strp("tiny")}, &sr)
	sameSamples(t, sr.Sequences, direct(t, base, prompt, 3, want))
	if slices.Equal(sr.Sequences[0].Tokens, sr.Sequences[1].Tokens) {
		t.Error("samples 0 and 1 are the same: the seeds do not differ")
	}

	// Truncated sampling, the same way.
	sp2 := wire.SamplingParams{MaxTokens: 8, Seed: i64(-3), Temperature: 0.7, TopK: 5, TopP: 0.9}
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 2, Prompt: wire.TokensInput(prompt), SamplingParams: sp2, BaseModel: strp("tiny")}, &sr)
	var seed int64 = -3
	sameSamples(t, sr.Sequences, direct(t, base, prompt, 2, policy.Sampling{Temperature: 0.7, TopK: 5, TopP: 0.9, MaxTokens: 8, Seed: uint64(seed)}))

	for _, lc := range []*wire.LoraConfig{fullConfig(), loraConfig()} {
		t.Run(fmt.Sprintf("rank%d", lc.Rank), func(t *testing.T) {
			id := ts.newModel(t, lc)
			exs := examples(2, 3, 16, base.VocabSize())
			ts.run(t, "forward_backward", fbRequest(id, nil, exs), nil)
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)
			var ss wire.SaveWeightsForSamplerResponse
			ts.run(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp("s1")}, &ss)
			// Training on does not change the snapshot.
			ts.run(t, "forward_backward", fbRequest(id, nil, exs), nil)
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)

			r := newRef(t, base, lc)
			r.step(t, exs, adam)
			trained, err := local.New("trained", r.m, base.Tokenizer())
			if err != nil {
				t.Fatal(err)
			}
			var sr wire.SampleResponse
			ts.run(t, "asample", wire.SampleRequest{NumSamples: 2, Prompt: wire.TokensInput(prompt), SamplingParams: sp, ModelPath: &ss.Path}, &sr)
			sameSamples(t, sr.Sequences, direct(t, trained, prompt, 2, want))
			var bs wire.SampleResponse
			ts.run(t, "asample", wire.SampleRequest{NumSamples: 2, Prompt: wire.TokensInput(prompt), SamplingParams: sp, BaseModel: strp("tiny")}, &bs)
			if slices.Equal(bs.Sequences[0].Logprobs, sr.Sequences[0].Logprobs) {
				t.Error("the trained weights sample as the base model does")
			}
		})
	}
}

// TestPromptLogprobs checks prompt_logprobs against Score and
// topk_prompt_logprobs against TopLogprobs.
func TestPromptLogprobs(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	prompt := []int{tokenizer.BOSID, 'a', 'b', 'c', 'd'}
	sp := wire.SamplingParams{MaxTokens: 2, Seed: i64(1), Temperature: 1, TopK: -1, TopP: 1}
	var sr wire.SampleResponse
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput(prompt), SamplingParams: sp, BaseModel: strp("tiny"),
		PromptLogprobs: boolp(true), TopKPromptLogprobs: 3}, &sr)
	ctx := context.Background()
	req := []policy.ScoreRequest{{Prompt: prompt[:1], Continuation: prompt[1:]}}
	score, err := base.Score(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	top, err := base.TopLogprobs(ctx, req, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.PromptLogprobs) != len(prompt) || sr.PromptLogprobs[0] != nil {
		t.Fatalf("prompt_logprobs %v", sr.PromptLogprobs)
	}
	if len(sr.TopKPromptLogprobs) != len(prompt) || sr.TopKPromptLogprobs[0] != nil {
		t.Fatalf("topk_prompt_logprobs %v", sr.TopKPromptLogprobs)
	}
	for i := 1; i < len(prompt); i++ {
		if lp := sr.PromptLogprobs[i]; lp == nil || *lp != score[0][i-1] {
			t.Errorf("prompt logprob %d: %v, want %v", i, lp, score[0][i-1])
		}
		row := sr.TopKPromptLogprobs[i]
		if len(row) != 3 {
			t.Fatalf("position %d: %d top entries", i, len(row))
		}
		for k, e := range row {
			if w := top[0][i-1][k]; e.Token != w.Token || e.Logprob != w.LogProb {
				t.Errorf("position %d, rank %d: %+v, want %+v", i, k, e, w)
			}
		}
	}
	// Not asked for, not sent.
	sr = wire.SampleResponse{}
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput(prompt), SamplingParams: sp, BaseModel: strp("tiny")}, &sr)
	if sr.PromptLogprobs != nil || sr.TopKPromptLogprobs != nil {
		t.Errorf("prompt logprobs not asked for: %v %v", sr.PromptLogprobs, sr.TopKPromptLogprobs)
	}
	// A one-token prompt has one entry, null.
	sr = wire.SampleResponse{}
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput(prompt[:1]), SamplingParams: sp, BaseModel: strp("tiny"),
		PromptLogprobs: boolp(true)}, &sr)
	if len(sr.PromptLogprobs) != 1 || sr.PromptLogprobs[0] != nil {
		t.Errorf("one-token prompt: %v", sr.PromptLogprobs)
	}
}

// TestStops checks stop token ids and stop strings.
func TestStops(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	prompt := wire.TokensInput([]int{tokenizer.BOSID, 'x'})
	sp := wire.SamplingParams{MaxTokens: 20, Seed: i64(5), Temperature: 1, TopK: -1, TopP: 1}
	var full wire.SampleResponse
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: prompt, SamplingParams: sp, BaseModel: strp("tiny")}, &full)
	toks := full.Sequences[0].Tokens
	if len(toks) < 6 {
		t.Fatalf("baseline of %d tokens", len(toks))
	}

	// A stop id: sampling ends at its first occurrence, the token kept.
	stopID := toks[4]
	first := slices.Index(toks, stopID)
	withID := sp
	withID.Stop = []int{stopID}
	var sr wire.SampleResponse
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: prompt, SamplingParams: withID, BaseModel: strp("tiny")}, &sr)
	if got := sr.Sequences[0]; !slices.Equal(got.Tokens, toks[:first+1]) || got.StopReason != wire.StopReasonStop {
		t.Errorf("stop id %d: %v %s, want %v stop", stopID, got.Tokens, got.StopReason, toks[:first+1])
	}

	// A stop string: cut after the token that completes it.
	text, err := base.Decode(context.Background(), slices.DeleteFunc(slices.Clone(toks), base.IsSpecialToken))
	if err != nil {
		t.Fatal(err)
	}
	runes := []rune(text)
	stop := string(runes[len(runes)/2])
	withStr := sp
	withStr.Stop = []string{stop}
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: prompt, SamplingParams: withStr, BaseModel: strp("tiny")}, &sr)
	got := sr.Sequences[0]
	dec := func(ids []int) string {
		s, err := base.Decode(context.Background(), slices.DeleteFunc(slices.Clone(ids), base.IsSpecialToken))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	n := len(got.Tokens)
	if got.StopReason != wire.StopReasonStop || n == 0 || !slices.Equal(got.Tokens, toks[:n]) ||
		!strings.Contains(dec(got.Tokens), stop) || strings.Contains(dec(got.Tokens[:n-1]), stop) || len(got.Logprobs) != n {
		t.Errorf("stop string %q: %v %s (baseline %v)", stop, got.Tokens, got.StopReason, toks)
	}
}

// TestConcurrentSampling checks that requests sampled together get their
// own results.
func TestConcurrentSampling(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	prompt := []int{tokenizer.BOSID, 'q'}
	var wg sync.WaitGroup
	results := make([]wire.SampleResponse, 6)
	for i := range results {
		wg.Go(func() {
			sp := wire.SamplingParams{MaxTokens: 6 + i, Seed: i64(int64(100 * i)), Temperature: 1, TopK: -1, TopP: 1}
			ts.run(t, "asample", wire.SampleRequest{NumSamples: 1 + i%3, Prompt: wire.TokensInput(prompt), SamplingParams: sp, BaseModel: strp("tiny")}, &results[i])
		})
	}
	wg.Wait()
	for i, r := range results {
		sameSamples(t, r.Sequences, direct(t, base, prompt, 1+i%3, policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 6 + i, Seed: uint64(100 * i)}))
	}
	for _, r := range results {
		for _, s := range r.Sequences {
			for _, lp := range s.Logprobs {
				if math.IsNaN(lp) || lp > 0 {
					t.Fatalf("log-prob %v", lp)
				}
			}
		}
	}
}

// TestScoreFullContext: a prompt that fills the context is scored when
// its prompt log-probs are asked for (a client scoring a whole sequence),
// and rejected when it is to be sampled.
func TestScoreFullContext(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	n := base.Info().MaxContext
	prompt := make([]int, n)
	for i := range prompt {
		prompt[i] = 'a' + i%20
	}
	req := wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput(prompt), BaseModel: strp("tiny"),
		SamplingParams: wire.SamplingParams{MaxTokens: 1, Temperature: 1, TopK: -1, TopP: 1}, PromptLogprobs: boolp(true)}
	var res wire.SampleResponse
	ts.run(t, "asample", req, &res)
	if len(res.PromptLogprobs) != n || len(res.Sequences) != 1 || len(res.Sequences[0].Tokens) != 0 || res.Sequences[0].StopReason != wire.StopReasonLength {
		t.Fatalf("full-context scoring: %d prompt logprobs, sequences %+v", len(res.PromptLogprobs), res.Sequences)
	}
	req.PromptLogprobs = nil
	if d := ts.detail(t, "asample", req, 400); !strings.Contains(d, "no room") {
		t.Errorf("sampling after a full context: %q", d)
	}
}
