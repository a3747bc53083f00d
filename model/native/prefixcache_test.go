package native

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPrefixCacheMultiTurn: the second turn of a conversation reuses the
// first turn's keys and values and samples exactly what a fresh model
// would, and weight changes invalidate the cache.
func TestPrefixCacheMultiTurn(t *testing.T) {
	ctx := context.Background()
	m := testModel(t, sampleConfig(), 12)
	fresh := m.Clone()
	fresh.SetPrefixCache(0)
	rng := rand.New(rand.NewPCG(5, 5))
	var turn1 []SampleRequest
	for i := range 6 {
		// Two groups of three samples of one prompt each.
		p := randTokens(rand.New(rand.NewPCG(uint64(i/3), 0)), 7, 37)
		turn1 = append(turn1, SampleRequest{Prompt: p, MaxNewTokens: 6, Temperature: 1, Seed: uint64(i)})
	}
	r1, err := m.Sample(ctx, turn1)
	if err != nil {
		t.Fatal(err)
	}
	next := func(r1 []SampleResult) []SampleRequest {
		var reqs []SampleRequest
		for i, r := range r1 {
			p := append(append(slices.Clone(turn1[i].Prompt), r.Tokens...), randTokens(rng, 5, 37)...)
			reqs = append(reqs, SampleRequest{Prompt: p, MaxNewTokens: 6, Temperature: 1, Seed: uint64(100 + i)})
		}
		return reqs
	}
	turn2 := next(r1)
	before := m.PrefixCacheStats()
	got, err := m.Sample(ctx, turn2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Sample(ctx, turn2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !slices.Equal(got[i].Tokens, want[i].Tokens) || !logProbsMatch(got[i].LogProbs, want[i].LogProbs) {
			t.Errorf("request %d: cached %v %v, fresh %v %v", i, got[i].Tokens, got[i].LogProbs, want[i].Tokens, want[i].LogProbs)
		}
	}
	after := m.PrefixCacheStats()
	// Each turn-2 prompt starts with its turn-1 prompt and all but the last
	// generated token, which are cached.
	wantReused := int64(0)
	for i := range turn1 {
		wantReused += int64(len(turn1[i].Prompt) + len(r1[i].Tokens) - 1)
	}
	if reused := after.Reused - before.Reused; reused != wantReused {
		t.Errorf("reused %d positions, want %d", reused, wantReused)
	}

	// An update invalidates everything.
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0)
	if err := opt.Update(m, 0); err != nil { // lr 0: same weights, new version
		t.Fatal(err)
	}
	before = m.PrefixCacheStats()
	if _, err := m.Sample(ctx, turn2); err != nil {
		t.Fatal(err)
	}
	if r := m.PrefixCacheStats().Reused - before.Reused; r != 0 {
		t.Errorf("reused %d positions after an update", r)
	}
	// So does overwriting the parameters directly.
	if _, err := m.Sample(ctx, turn2); err != nil {
		t.Fatal(err)
	}
	copy(m.Params(), fresh.Params())
	for i := range m.Params() {
		m.Params()[i] *= 1.01
	}
	before = m.PrefixCacheStats()
	got, err = m.Sample(ctx, turn2)
	if err != nil {
		t.Fatal(err)
	}
	if r := m.PrefixCacheStats().Reused - before.Reused; r != 0 {
		t.Errorf("reused %d positions after the parameters changed", r)
	}
	fresh2 := m.Clone()
	fresh2.SetPrefixCache(0)
	want, _ = fresh2.Sample(ctx, turn2)
	for i := range got {
		if !slices.Equal(got[i].LogProbs, want[i].LogProbs) && !netlibGemm {
			t.Errorf("request %d after parameter change: %v, fresh %v", i, got[i].LogProbs, want[i].LogProbs)
		}
	}
}

func TestPrefixCacheBudget(t *testing.T) {
	ctx := context.Background()
	m := testModel(t, sampleConfig(), 13)
	m.SetPrefixCache(40 * m.pcache.posSize)
	rng := rand.New(rand.NewPCG(6, 6))
	var reqs []SampleRequest
	for i := range 8 {
		reqs = append(reqs, SampleRequest{Prompt: randTokens(rng, 10, 37), MaxNewTokens: 4, Temperature: 1, Seed: uint64(i)})
	}
	first, err := m.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if m.pcache.used > 40*m.pcache.posSize {
		t.Errorf("cache holds %d bytes, over its budget of 40 positions", m.pcache.used)
	}
	again, err := m.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if !slices.Equal(first[i].Tokens, again[i].Tokens) || !logProbsMatch(first[i].LogProbs, again[i].LogProbs) {
			t.Errorf("request %d changed with a partly evicted cache", i)
		}
	}
	m.SetPrefixCache(0)
	if len(m.pcache.entries) != 0 {
		t.Error("disabling the cache kept entries")
	}
	before := m.PrefixCacheStats()
	if _, err := m.Sample(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if m.PrefixCacheStats().Reused != before.Reused {
		t.Error("disabled cache was used")
	}
}

// TestConcurrentSampleAndScore runs Sample and Score from several goroutines
// on one model (run with -race); each must match its sequential result.
func TestConcurrentSampleAndScore(t *testing.T) {
	ctx := context.Background()
	m := testModel(t, sampleConfig(), 14)
	rng := rand.New(rand.NewPCG(7, 7))
	prompt := randTokens(rng, 9, 37)
	req := SampleRequest{Prompt: prompt, MaxNewTokens: 10, Temperature: 1, Seed: 3}
	want, err := m.Sample(ctx, []SampleRequest{req})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			if g%2 == 0 {
				got, err := m.Sample(ctx, []SampleRequest{req})
				if err == nil && !slices.Equal(got[0].Tokens, want[0].Tokens) {
					t.Errorf("goroutine %d sampled %v, want %v", g, got[0].Tokens, want[0].Tokens)
				}
				errs <- err
				return
			}
			sc, err := m.Score(ctx, []ScoreRequest{{Prompt: prompt, Continuations: [][]int{want[0].Tokens}}})
			if err == nil && !logProbsMatch(sc[0][0], want[0].LogProbs) {
				t.Errorf("goroutine %d scored %v, want %v", g, sc[0][0], want[0].LogProbs)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
