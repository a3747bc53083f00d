package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/internal/simd"
)

// inferConfigs cover the attention paths: grouped-query attention, plain
// multi-head attention (whose decoding attends all heads at once), and
// head dimensions that are not a multiple of a vector; and the
// architectures (archConfigs): Qwen3's query/key norms with a head wider
// than d_model/heads, Llama 3.1's RoPE scaling, and Gemma 3's layout with
// sliding windows shorter than the sequences, in multi-head and
// multi-query attention.
func inferConfigs() map[string]Config {
	gqa := sampleConfig()
	gqa.MaxSeq = 160
	mha := gqa
	mha.KVHeads = 4
	mha.QKVBias = false
	odd := Config{Vocab: 29, DModel: 24, Layers: 2, Heads: 4, KVHeads: 4, DFF: 40, MaxSeq: 160, TieEmbeddings: false}
	wide := Config{Vocab: 31, DModel: 80, Layers: 1, Heads: 2, KVHeads: 1, DFF: 48, MaxSeq: 160, QKVBias: true}
	cfgs := map[string]Config{"gqa": gqa, "mha": mha, "hd6": odd, "hd40": wide}
	for name, c := range archConfigs() {
		c.MaxSeq = 160
		cfgs[name] = c
	}
	return cfgs
}

// simdLevels returns the levels this machine runs.
func simdLevels() []simd.Level {
	var ls []simd.Level
	for l := simd.Portable; l <= simd.Hardware(); l++ {
		ls = append(ls, l)
	}
	return ls
}

func atSimdLevel(l simd.Level, f func()) {
	prev := simd.SetLevel(l)
	defer simd.SetLevel(prev)
	f()
}

// stepLogits runs rows of toks through caches (one step) and returns the
// logits of every row.
func stepLogits(st *inferState, caches []*kvCache, toks []int) []float32 {
	t32 := make([]int32, len(toks))
	rows := make([]int, len(toks))
	for i, t := range toks {
		t32[i], rows[i] = int32(t), i
	}
	st.step(caches, t32)
	return slices.Clone(st.logitsFor(rows))
}

func repeat(c *kvCache, n int) []*kvCache {
	s := make([]*kvCache, n)
	for i := range s {
		s[i] = c
	}
	return s
}

// TestContextSplitAcrossCaches: a sequence gives bit-identical logits
// whether its context is one cache prefilled at once, a chain of three
// caches prefilled one after another, or decoded a token at a time after
// a prompt, with other sequences in the same steps or not, on every SIMD
// level.
func TestContextSplitAcrossCaches(t *testing.T) {
	for name, cfg := range inferConfigs() {
		m := testModel(t, cfg, 21)
		v := cfg.Vocab
		rng := rand.New(rand.NewPCG(22, 23))
		seq := randTokens(rng, 41, v)
		other := randTokens(rng, 9, v)
		for _, l := range simdLevels() {
			atSimdLevel(l, func() {
				st := m.newInferState()
				one := newKVCache(m, len(seq), kvRef{})
				want := stepLogits(st, repeat(one, len(seq)), seq)

				// Three caches, the middle one prefilled beside another sequence.
				a, b := 7, 24
				c1 := newKVCache(m, a, kvRef{})
				got := stepLogits(st, repeat(c1, a), seq[:a])
				c2 := newKVCache(m, b-a, c1.ref())
				oc := newKVCache(m, len(other), kvRef{})
				mixed := stepLogits(st, append(repeat(oc, len(other)), repeat(c2, b-a)...), append(slices.Clone(other), seq[a:b]...))
				got = append(got, mixed[len(other)*v:]...)
				c3 := newKVCache(m, len(seq)-b, c2.ref())
				got = append(got, stepLogits(st, repeat(c3, len(seq)-b), seq[b:])...)
				if !slices.Equal(got, want) {
					t.Fatalf("%s %v: logits over three caches differ from one cache", name, l)
				}

				// Decoding after a shared prompt, beside a second sequence.
				p := newKVCache(m, a, kvRef{})
				got = stepLogits(st, repeat(p, a), seq[:a])
				own := newKVCache(m, len(seq)-a, p.ref())
				side := newKVCache(m, len(seq)-a, p.ref())
				for i := a; i < len(seq); i++ {
					z := stepLogits(st, []*kvCache{side, own}, []int{other[i%len(other)], seq[i]})
					got = append(got, z[v:]...)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s %v: decoded logits differ from the prefill", name, l)
				}
			})
		}
	}
}

// TestInferModesAgree: the serial, unit-parallel and layer-by-layer
// execution of a step give the same bits.
func TestInferModesAgree(t *testing.T) {
	for name, cfg := range inferConfigs() {
		if cfg.MaxSeq < 100 {
			continue
		}
		m := testModel(t, cfg, 24)
		rng := rand.New(rand.NewPCG(25, 26))
		long := randTokens(rng, 150, cfg.Vocab)
		var shorts [][]int
		for i := 0; i < 9; i++ {
			shorts = append(shorts, randTokens(rng, 3+7*i, cfg.Vocab))
		}
		run := func(nw int, seqs [][]int) [][]float32 {
			st := m.newInferState()
			for len(st.ws) < nw {
				st.ws = append(st.ws, &inferWorker{scores: make([]float32, len(st.ws[0].scores)), lds: st.ws[0].lds})
			}
			st.nw = nw
			var caches []*kvCache
			var toks []int
			for _, s := range seqs {
				c := newKVCache(m, len(s), kvRef{})
				caches = append(caches, repeat(c, len(s))...)
				toks = append(toks, s...)
			}
			z := stepLogits(st, caches, toks)
			var out [][]float32
			off := 0
			for _, s := range seqs {
				out = append(out, z[off*cfg.Vocab:(off+len(s))*cfg.Vocab])
				off += len(s)
			}
			return out
		}
		// One long sequence: serial, then layer by layer.
		serial := run(1, [][]int{long})
		if got := run(2, [][]int{long}); !slices.Equal(got[0], serial[0]) {
			t.Errorf("%s: layer-by-layer step differs from the serial one", name)
		}
		// Many short ones: serial, then in units.
		serial = run(1, shorts)
		got := run(3, shorts)
		for i := range shorts {
			if !slices.Equal(got[i], serial[i]) {
				t.Errorf("%s: sequence %d differs between the unit-parallel and the serial step", name, i)
			}
		}
	}
}

// TestSampleEveryLevel checks the contracts of Sample and Score at each
// SIMD level: a request's result does not depend on its batch or on
// GOMAXPROCS, Score reproduces the log-probs, and the AVX2 and AVX-512
// levels agree bit for bit.
func TestSampleEveryLevel(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range inferConfigs() {
		m := testModel(t, cfg, 27)
		m.SetPrefixCache(0)
		rng := rand.New(rand.NewPCG(28, 29))
		var reqs []SampleRequest
		for i := 0; i < 11; i++ {
			reqs = append(reqs, SampleRequest{Prompt: randTokens(rng, 2+3*i, cfg.Vocab), MaxNewTokens: 5 + 2*i,
				Temperature: []float32{1, 0.7, 0, 1.2}[i%4], TopK: []int{0, 0, 0, 5}[i%4], Seed: uint64(i)})
		}
		reqs[3].Prompt = reqs[2].Prompt // a shared prompt
		var asm []SampleResult
		for _, l := range simdLevels() {
			atSimdLevel(l, func() {
				all, err := m.Sample(ctx, reqs)
				if err != nil {
					t.Fatal(err)
				}
				prev := runtime.GOMAXPROCS(1)
				one, err := m.Sample(ctx, reqs[4:7])
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range one {
					if !slices.Equal(r.Tokens, all[4+i].Tokens) || !slices.Equal(r.LogProbs, all[4+i].LogProbs) {
						t.Fatalf("%s %v: request %d differs alone on one goroutine", name, l, 4+i)
					}
				}
				for _, i := range []int{0, 5, 10} { // alone: decoded by a team
					r, err := m.Sample(ctx, reqs[i:i+1])
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(r[0].Tokens, all[i].Tokens) || !slices.Equal(r[0].LogProbs, all[i].LogProbs) {
						t.Fatalf("%s %v: request %d differs alone", name, l, i)
					}
				}
				var sreqs []ScoreRequest
				for i, r := range all {
					sreqs = append(sreqs, ScoreRequest{Prompt: reqs[i].Prompt, Continuations: [][]int{r.Tokens}})
				}
				sc, err := m.Score(ctx, sreqs)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range all {
					if !slices.Equal(sc[i][0], r.LogProbs) {
						t.Fatalf("%s %v: request %d: score %v, sample %v", name, l, i, sc[i][0], r.LogProbs)
					}
				}
				if l == simd.Portable {
					return
				}
				if asm == nil {
					asm = all
					return
				}
				for i := range all {
					if !slices.Equal(all[i].Tokens, asm[i].Tokens) || !slices.Equal(all[i].LogProbs, asm[i].LogProbs) {
						t.Fatalf("%s: request %d differs between AVX2 and %v", name, i, l)
					}
				}
			})
		}
	}
}

// TestDecodeAllocations: decoding allocates nothing per token.
func TestDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	cfg := sampleConfig()
	m := testModel(t, cfg, 30)
	m.SetPrefixCache(0)
	rng := rand.New(rand.NewPCG(31, 32))
	prompts := make([][]int, 8)
	for i := range prompts {
		prompts[i] = randTokens(rng, 5, cfg.Vocab)
	}
	// One request decodes in a team, eight in units.
	for _, batch := range []int{1, 8} {
		allocs := func(n int) float64 {
			reqs := make([]SampleRequest, batch)
			for i := range reqs {
				reqs[i] = SampleRequest{Prompt: prompts[i], MaxNewTokens: n, Temperature: 1, Seed: uint64(i)}
			}
			return testing.AllocsPerRun(20, func() {
				if _, err := m.Sample(context.Background(), reqs); err != nil {
					t.Fatal(err)
				}
			})
		}
		short, long := allocs(4), allocs(50)
		if long > short+1 {
			t.Errorf("batch %d: Sample allocates %g times for 4 new tokens per request, %g for 50", batch, short, long)
		}
	}
}

// cancelAfter is a context whose Err turns to Canceled after n calls.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

func TestSampleCancelledWhileDecoding(t *testing.T) {
	m := testModel(t, sampleConfig(), 33)
	reqs := []SampleRequest{{Prompt: []int{1, 2}, MaxNewTokens: 40, Temperature: 1}, {Prompt: []int{3}, MaxNewTokens: 40}}
	for _, n := range []int{1, 2, 5, 20} {
		ctx := &cancelAfter{Context: context.Background(), n: n}
		if _, err := m.Sample(ctx, reqs); err != context.Canceled {
			t.Errorf("cancelled after %d checks: err %v", n, err)
		}
	}
}

// BenchmarkSampleBatches measures generation of 128 new tokens after a
// 16-token prompt at temperature 1 for batches decoded by a team (up to 16
// requests) and in units.
func BenchmarkSampleBatches(b *testing.B) {
	for _, batch := range []int{2, 4, 8, 16, 32} {
		b.Run(fmt.Sprint(batch), func(b *testing.B) {
			m, err := New(benchConfig(), 1)
			if err != nil {
				b.Fatal(err)
			}
			m.SetPrefixCache(0)
			rng := rand.New(rand.NewPCG(3, 3))
			reqs := make([]SampleRequest, batch)
			for i := range reqs {
				reqs[i] = SampleRequest{Prompt: randTokens(rng, 16, 512), MaxNewTokens: 128, Temperature: 1, Seed: uint64(i)}
			}
			b.ResetTimer()
			for range b.N {
				if _, err := m.Sample(context.Background(), reqs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(batch*128*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
