package native

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func testModel(t testing.TB, cfg Config, seed uint64) *Model {
	t.Helper()
	m, err := New(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	// Sharpen the random init so distributions are far from uniform and
	// cached/uncached disagreements would show.
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := range m.Params() {
		m.Params()[i] += float32(rng.NormFloat64() * 0.1)
	}
	return m
}

// logProbsMatch compares inference log-probs computed in different batches.
// With the pure-Go BLAS they must be bit-identical (see gemm.go); OpenBLAS
// (-tags netlib) picks kernels by matrix size, so there they need only agree
// to rounding.
func logProbsMatch(a, b []float32) bool {
	if !netlibGemm {
		return slices.Equal(a, b)
	}
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Abs(float64(x-y)) < 1e-5 })
}

func sampleConfig() Config {
	return Config{Vocab: 37, DModel: 32, Layers: 2, Heads: 4, KVHeads: 2, DFF: 48, MaxSeq: 64,
		QKVBias: true, TieEmbeddings: true}
}

func randTokens(rng *rand.Rand, n, vocab int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = rng.IntN(vocab)
	}
	return s
}

// TestKVCacheMatchesForward compares the logits of cached decoding (prefill a
// prompt, then one token at a time) with the training forward over the whole
// sequence.
func TestKVCacheMatchesForward(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := sampleConfig()
		cfg.TieEmbeddings = tied
		m := testModel(t, cfg, 3)
		rng := rand.New(rand.NewPCG(1, 1))
		seq := randTokens(rng, 40, cfg.Vocab)
		const prompt = 7
		if _, err := m.Forward(context.Background(), Batch{Tokens: [][]int{seq}}); err != nil {
			t.Fatal(err)
		}
		full := m.ws.logits // rows predict tokens 1..len-1
		v := cfg.Vocab

		st := m.newInferState()
		kc := newKVCache(m, len(seq), kvRef{})
		caches := make([]*kvCache, prompt)
		toks := make([]int32, prompt)
		for i := range caches {
			caches[i], toks[i] = kc, int32(seq[i])
		}
		st.step(caches, toks)
		rows := make([]int, prompt)
		for i := range rows {
			rows[i] = i
		}
		var worst float64
		cmpRows := func(got []float32, first int) {
			for r := 0; r < len(got)/v; r++ {
				for j := 0; j < v; j++ {
					worst = math.Max(worst, math.Abs(float64(got[r*v+j]-full[(first+r)*v+j])))
				}
			}
		}
		cmpRows(st.logitsFor(rows), 0)
		for p := prompt; p < len(seq)-1; p++ {
			st.step([]*kvCache{kc}, []int32{int32(seq[p])})
			cmpRows(st.logitsFor([]int{0}), p)
		}
		if worst > 1e-4 {
			t.Errorf("tied=%v: cached vs full logits differ by %g", tied, worst)
		}
	}
}

func TestSampleReproducibleAndBatchIndependent(t *testing.T) {
	m := testModel(t, sampleConfig(), 4)
	rng := rand.New(rand.NewPCG(2, 2))
	ctx := context.Background()
	req := func(n int, seed uint64) SampleRequest {
		return SampleRequest{Prompt: randTokens(rng, n, 37), MaxNewTokens: 20, Temperature: 1, TopP: 0.95, TopK: 30, Seed: seed}
	}
	a := req(5, 11)
	others := []SampleRequest{req(9, 12), req(3, 13), a, req(17, 14)}
	others[1].Temperature = 0.7
	others[3].StopTokens = []int{0, 1, 2, 3, 4, 5}

	alone, err := m.Sample(ctx, []SampleRequest{a})
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Sample(ctx, []SampleRequest{a})
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := m.Sample(ctx, others)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(alone[0].Tokens, again[0].Tokens) || !slices.Equal(alone[0].LogProbs, again[0].LogProbs) {
		t.Fatalf("same seed, different output:\n%v\n%v", alone[0].Tokens, again[0].Tokens)
	}
	if !slices.Equal(alone[0].Tokens, mixed[2].Tokens) || !logProbsMatch(alone[0].LogProbs, mixed[2].LogProbs) {
		t.Fatalf("batch composition changed the output:\nalone %v %v\nmixed %v %v",
			alone[0].Tokens, alone[0].LogProbs, mixed[2].Tokens, mixed[2].LogProbs)
	}
	b := a
	b.Seed = 99
	other, err := m.Sample(ctx, []SampleRequest{b})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(other[0].Tokens, alone[0].Tokens) {
		t.Errorf("different seeds gave the same %d tokens", len(other[0].Tokens))
	}
	if len(alone[0].Tokens) != 20 || alone[0].FinishReason != FinishLength {
		t.Errorf("got %d tokens, finish %q; want 20, %q", len(alone[0].Tokens), alone[0].FinishReason, FinishLength)
	}
	r := mixed[3]
	if r.FinishReason == FinishStop && !slices.Contains(others[3].StopTokens, r.Tokens[len(r.Tokens)-1]) {
		t.Errorf("stopped on %d, not a stop token", r.Tokens[len(r.Tokens)-1])
	}
	for i, tok := range r.Tokens[:len(r.Tokens)-1] {
		if slices.Contains(others[3].StopTokens, tok) {
			t.Errorf("continued past stop token %d at %d", tok, i)
		}
	}
}

// TestSampleLogProbsMatchForwardAndScore checks the log-prob convention end
// to end: what Sample reports equals what Score and the training Forward
// recompute for the same tokens, whatever temperature was used to sample.
func TestSampleLogProbsMatchForwardAndScore(t *testing.T) {
	m := testModel(t, sampleConfig(), 5)
	rng := rand.New(rand.NewPCG(3, 3))
	ctx := context.Background()
	var reqs []SampleRequest
	for i := range 6 {
		reqs = append(reqs, SampleRequest{Prompt: randTokens(rng, 3+5*i, 37), MaxNewTokens: 15,
			Temperature: []float32{1, 0.6, 0, 1.3, 1, 1}[i], TopK: []int{0, 5, 0, 0, 1, 0}[i], Seed: uint64(i)})
	}
	res, err := m.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	var sreq []ScoreRequest
	for i, r := range res {
		b.Tokens = append(b.Tokens, append(slices.Clone(reqs[i].Prompt), r.Tokens...))
		b.PromptLen = append(b.PromptLen, len(reqs[i].Prompt))
		// Score every continuation against its own prompt, twice, to
		// exercise the shared prompt cache.
		sreq = append(sreq, ScoreRequest{Prompt: reqs[i].Prompt, Continuations: [][]int{r.Tokens, res[(i+1)%len(res)].Tokens, r.Tokens}})
	}
	scores, err := m.Score(ctx, sreq)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		p := len(reqs[i].Prompt)
		for k, lp := range r.LogProbs {
			if d := math.Abs(float64(lp - out.LogProb[i][p+k])); d > 1e-4 {
				t.Errorf("request %d token %d: sample logp %g, forward %g", i, k, lp, out.LogProb[i][p+k])
			}
			if !logProbsMatch([]float32{lp, lp}, []float32{scores[i][0][k], scores[i][2][k]}) {
				t.Errorf("request %d token %d: sample logp %g, score %g / %g", i, k, lp, scores[i][0][k], scores[i][2][k])
			}
		}
	}
}

func TestSampleErrorsAndCancel(t *testing.T) {
	m := testModel(t, sampleConfig(), 6)
	ctx := context.Background()
	bad := []SampleRequest{
		{Prompt: nil, MaxNewTokens: 1},
		{Prompt: []int{1, 37}, MaxNewTokens: 1},
		{Prompt: []int{-1}, MaxNewTokens: 1},
		{Prompt: []int{1}, MaxNewTokens: 64},
		{Prompt: []int{1}, MaxNewTokens: 1, TopP: 1.5},
		{Prompt: []int{1}, MaxNewTokens: 1, Temperature: -1},
	}
	for i, r := range bad {
		if _, err := m.Sample(ctx, []SampleRequest{r}); err == nil {
			t.Errorf("bad request %d: no error", i)
		}
	}
	if _, err := m.Score(ctx, []ScoreRequest{{Prompt: []int{1}, Continuations: [][]int{{40}}}}); err == nil {
		t.Error("score with bad token: no error")
	}
	if _, err := m.Forward(ctx, Batch{Tokens: [][]int{make([]int, 65)}}); err == nil {
		t.Error("forward longer than MaxSeq: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Sample(cctx, []SampleRequest{{Prompt: []int{1}, MaxNewTokens: 5}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sample: err %v", err)
	}
	if _, err := m.Score(cctx, []ScoreRequest{{Prompt: []int{1}, Continuations: [][]int{{1, 2}}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled score: err %v", err)
	}
}

func TestSampleTruncation(t *testing.T) {
	m := testModel(t, sampleConfig(), 7)
	ctx := context.Background()
	prompt := []int{1, 2, 3}
	greedy, err := m.Sample(ctx, []SampleRequest{{Prompt: prompt, MaxNewTokens: 10}})
	if err != nil {
		t.Fatal(err)
	}
	top1, err := m.Sample(ctx, []SampleRequest{{Prompt: prompt, MaxNewTokens: 10, Temperature: 1, TopK: 1, Seed: 5}})
	if err != nil {
		t.Fatal(err)
	}
	tinyP, err := m.Sample(ctx, []SampleRequest{{Prompt: prompt, MaxNewTokens: 10, Temperature: 1, TopP: 1e-6, Seed: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(greedy[0].Tokens, top1[0].Tokens) || !slices.Equal(greedy[0].Tokens, tinyP[0].Tokens) {
		t.Errorf("greedy %v, top-k 1 %v, top-p 1e-6 %v: want equal", greedy[0].Tokens, top1[0].Tokens, tinyP[0].Tokens)
	}
	// Top-k 3 never leaves the 3 most likely tokens: check the first step.
	out, err := m.Score(ctx, []ScoreRequest{{Prompt: prompt, Continuations: [][]int{nil}}})
	if err != nil || len(out[0][0]) != 0 {
		t.Fatalf("empty continuation: %v %v", out, err)
	}
	st := m.newInferState()
	kc := newKVCache(m, 3, kvRef{})
	st.step([]*kvCache{kc, kc, kc}, []int32{1, 2, 3})
	z := slices.Clone(st.logitsFor([]int{2}))
	order := make([]int, len(z))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(math.Copysign(1, float64(z[b]-z[a]))) })
	for s := range uint64(50) {
		r, err := m.Sample(ctx, []SampleRequest{{Prompt: prompt, MaxNewTokens: 1, Temperature: 2, TopK: 3, Seed: s}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(order[:3], r[0].Tokens[0]) {
			t.Fatalf("top-k 3 sampled token %d outside %v", r[0].Tokens[0], order[:3])
		}
	}
}

// TestSampleSharedPromptGroup: requests with identical prompts share one
// prefill, and each still gets exactly what it would get alone.
func TestSampleSharedPromptGroup(t *testing.T) {
	m := testModel(t, sampleConfig(), 9)
	rng := rand.New(rand.NewPCG(4, 4))
	ctx := context.Background()
	prompt := randTokens(rng, 11, 37)
	var group []SampleRequest
	for s := range uint64(4) {
		group = append(group, SampleRequest{Prompt: prompt, MaxNewTokens: 12 + int(s), Temperature: 1, Seed: s})
	}
	group = append(group, SampleRequest{Prompt: randTokens(rng, 5, 37), MaxNewTokens: 9, Temperature: 1, Seed: 7})
	together, err := m.Sample(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	distinct := 0
	for i, r := range group {
		alone, err := m.Sample(ctx, []SampleRequest{r})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(alone[0].Tokens, together[i].Tokens) || !logProbsMatch(alone[0].LogProbs, together[i].LogProbs) {
			t.Errorf("request %d: grouped %v, alone %v", i, together[i].Tokens, alone[0].Tokens)
		}
		if i > 0 && i < 4 && !slices.Equal(together[i].Tokens, together[0].Tokens) {
			distinct++
		}
	}
	if distinct == 0 {
		t.Error("all samples of the group are identical; seeds are not independent")
	}
}
