package native

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/simd"
)

// benchConfig is the size the project trains by default
// (reference/warm-start-feasibility.md) with a 512-token vocabulary.
func benchConfig() Config {
	c := DefaultConfig(512)
	return c
}

// gemmCall records the shape of one GEMM.
type gemmCall struct {
	ta, tb        bool
	m, n, k       int
	lda, ldb, ldc int
	alpha, beta   float32
}

func (g gemmCall) flops() float64 { return 2 * float64(g.m) * float64(g.n) * float64(g.k) }

// recordGemms records the shape of every GEMM run until stop is called.
func recordGemms() (stop func() []gemmCall) {
	var mu sync.Mutex
	var calls []gemmCall
	gemmObserver = func(ta, tb bool, m, n, k, lda, ldb, ldc int, alpha, beta float32) {
		mu.Lock()
		calls = append(calls, gemmCall{ta, tb, m, n, k, lda, ldb, ldc, alpha, beta})
		mu.Unlock()
	}
	return func() []gemmCall {
		gemmObserver = nil
		return calls
	}
}

// trainBatch is 8 random sequences of 256 tokens with the loss on every
// position.
func trainBatch(cfg Config, batch, seq int) Batch {
	rng := rand.New(rand.NewPCG(1, 1))
	var b Batch
	for range batch {
		b.Tokens = append(b.Tokens, randTokens(rng, seq, cfg.Vocab))
	}
	return b
}

// BenchmarkTrainStep measures forward + loss + backward + AdamW on
// d128/L2/H4/seq256/batch8 and, in the same run, the same sequence of GEMM
// shapes called back to back. It reports:
//
//	step-GFLOP/s  GEMM FLOPs of the step / step time
//	step-%peak    step-GFLOP/s as a share of this machine's measured FP32
//	              FMA peak on GOMAXPROCS threads (simd.PeakGFLOPS)
//	gemm-%peak    the replayed GEMMs' rate as a share of the same peak
//	gemm-%        step-GFLOP/s as a percentage of the replayed GEMMs' rate
//	gemm-in-step-%peak  the GEMMs' rate inside the step, per core they
//	              occupy, as a share of the per-core peak
//	gemm-core-%   the share of the step's core time (time × GOMAXPROCS)
//	              spent in GEMMs; step-%peak is, to timing noise, the
//	              product of the two (see gemmsInStep)
//	med-ms/step, med-step-%peak  the same at the median step's time,
//	              which leaves out the few steps a shared virtual machine
//	              interrupts
//	maxrss-MiB    peak resident memory of the process (getrusage)
//
// scripts/bench-kernels.sh runs it beside the gonum-backed kernels this
// package had before, the OpenBLAS build and PyTorch, for ratios.
func BenchmarkTrainStep(b *testing.B) {
	cfg := benchConfig()
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.01)
	batch := trainBatch(cfg, 8, 256)
	step := sftStep(b, m, opt, batch, 1e-3)
	stop := recordGemms()
	step() // warm the workspace and record the GEMM shapes
	calls := stop()
	var flops float64
	for _, c := range calls {
		flops += c.flops()
	}
	peak := simd.PeakGFLOPS(runtime.GOMAXPROCS(0))
	times := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		step()
		times[i] = time.Since(t0)
	}
	stepTime := time.Since(start).Seconds() / float64(b.N)
	b.StopTimer()
	medStep := medianDuration(times).Seconds()

	gemmTime := replayGemms(calls, b.N)
	inStep, coreShare := gemmsInStep(step, b.N, flops, peak)
	b.ReportMetric(inStep, "gemm-in-step-%peak")
	b.ReportMetric(coreShare, "gemm-core-%")
	b.ReportMetric(flops/stepTime/1e9, "step-GFLOP/s")
	b.ReportMetric(100*flops/stepTime/1e9/peak, "step-%peak")
	b.ReportMetric(100*flops/gemmTime/1e9/peak, "gemm-%peak")
	b.ReportMetric(100*gemmTime/stepTime, "gemm-%")
	b.ReportMetric(stepTime*1e3, "ms/step")
	b.ReportMetric(100*flops/medStep/1e9/peak, "med-step-%peak")
	b.ReportMetric(medStep*1e3, "med-ms/step")
	b.ReportMetric(maxRSSMiB(), "maxrss-MiB")
}

// medianDuration is the median of times (the mean of the middle two for
// an even count). On a shared virtual machine a few steps in a hundred
// take much longer than the rest; the median leaves them out.
func medianDuration(times []time.Duration) time.Duration {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 0 {
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return sorted[n/2]
}

// gemmsInStep runs step reps more times with every GEMM timed and splits
// the step's share of peak in two: the rate of its GEMMs where they run,
// and the share of the step's core time they take. A parallel product
// occupies all GOMAXPROCS cores for its duration (a small one runs on one
// and leaves the others idle, which counts against it); a serial one, run
// inside a parallel section (attention), occupies one. Comparing the
// first figure with BenchmarkGemm's on the same shapes shows what the
// products lose to the step around them (operands and C not in cache),
// the second what the step spends outside them.
func gemmsInStep(step func(), reps int, flops, peak float64) (inStepPct, corePct float64) {
	procs := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	var coreSec float64
	gemmTimer = func(parallel bool, d time.Duration) {
		occupied := 1
		if parallel {
			occupied = procs
		}
		mu.Lock()
		coreSec += d.Seconds() * float64(occupied)
		mu.Unlock()
	}
	start := time.Now()
	for range reps {
		step()
	}
	elapsed := time.Since(start).Seconds()
	gemmTimer = nil
	perCore := peak / float64(procs)
	inStepPct = 100 * flops * float64(reps) / coreSec / 1e9 / perCore
	corePct = 100 * coreSec / (elapsed * float64(procs))
	return inStepPct, corePct
}

// replayGemms runs the recorded GEMMs back to back on buffers of the right
// sizes, reps times, through the same driver as the model (parallel above
// the size the attention's serial products have), and returns the mean
// time per replay. The attention GEMMs, which the model runs concurrently
// across (sequence, head) tasks, run here one after another.
func replayGemms(calls []gemmCall, reps int) float64 {
	var maxA, maxB, maxC int
	for _, c := range calls {
		ra, rb := c.m, c.k
		if c.ta {
			ra = c.k
		}
		if c.tb {
			rb = c.n
		}
		maxA = max(maxA, ra*c.lda)
		maxB = max(maxB, rb*c.ldb)
		maxC = max(maxC, c.m*c.ldc)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	a, bb, cc := fill(maxA), fill(maxB), make([]float32, maxC)
	run := func() {
		for _, c := range calls {
			gemm(true, c.ta, c.tb, c.m, c.n, c.k, c.alpha, a, c.lda, bb, c.ldb, c.beta, cc, c.ldc)
		}
	}
	run()
	start := time.Now()
	for range reps {
		run()
	}
	return time.Since(start).Seconds() / float64(reps)
}

func maxRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // Linux reports KiB
}

// BenchmarkSample measures generation of 256 new tokens after a 16-token
// prompt at temperature 1, with the KV cache, at batch 1 and 64.
func BenchmarkSample(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(map[int]string{1: "batch1", 64: "batch64"}[batch], func(b *testing.B) {
			m, err := New(benchConfig(), 1)
			if err != nil {
				b.Fatal(err)
			}
			m.SetPrefixCache(0) // every iteration starts cold
			rng := rand.New(rand.NewPCG(3, 3))
			reqs := make([]SampleRequest, batch)
			for i := range reqs {
				reqs[i] = SampleRequest{Prompt: randTokens(rng, 16, 512), MaxNewTokens: 256, Temperature: 1, Seed: uint64(i)}
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if _, err := m.Sample(context.Background(), reqs); err != nil {
					b.Fatal(err)
				}
			}
			sec := time.Since(start).Seconds() / float64(b.N)
			b.ReportMetric(float64(batch*256)/sec, "tok/s")
			b.ReportMetric(maxRSSMiB(), "maxrss-MiB")
		})
	}
}

// BenchmarkSampleUncached generates 256 tokens at batch 1 by re-running the
// whole sequence for every new token (no KV cache), the baseline the cache is
// measured against, and in the same run the same generation with the cache.
// It reports both rates and cached-speedup = cached tok/s / uncached tok/s.
func BenchmarkSampleUncached(b *testing.B) {
	m, err := New(benchConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	m.SetPrefixCache(0) // every iteration starts cold
	rng := rand.New(rand.NewPCG(3, 3))
	prompt := randTokens(rng, 16, 512)
	req := SampleRequest{Prompt: prompt, Temperature: 1, MaxNewTokens: 256, Seed: 1}
	b.ResetTimer()
	var uncached, cached time.Duration
	for range b.N {
		start := time.Now()
		seq := append([]int(nil), prompt...)
		st := m.newInferState()
		s := &sampler{req: &req, rng: rand.New(rand.NewPCG(1, 1)), idx: make([]int32, 512), weight: make([]float64, 512), probs: make([]float32, 512)}
		for range 256 {
			kc := newKVCache(m, len(seq), kvRef{})
			caches := make([]*kvCache, len(seq))
			toks := make([]int32, len(seq))
			for i, t := range seq {
				caches[i], toks[i] = kc, int32(t)
			}
			st.step(caches, toks)
			tok, _ := s.pick(st.logitsFor([]int{len(seq) - 1}))
			seq = append(seq, tok)
		}
		uncached += time.Since(start)
		start = time.Now()
		if _, err := m.Sample(context.Background(), []SampleRequest{req}); err != nil {
			b.Fatal(err)
		}
		cached += time.Since(start)
	}
	b.ReportMetric(256*float64(b.N)/uncached.Seconds(), "uncached-tok/s")
	b.ReportMetric(256*float64(b.N)/cached.Seconds(), "cached-tok/s")
	b.ReportMetric(uncached.Seconds()/cached.Seconds(), "cached-speedup")
}

// BenchmarkScore scores 16 continuations of 64 tokens against each of 16
// prompts of 64 tokens (the chain-versus-prompt matrix of the MI metrics).
func BenchmarkScore(b *testing.B) {
	m, err := New(benchConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	m.SetPrefixCache(0) // every iteration starts cold
	rng := rand.New(rand.NewPCG(4, 4))
	var conts [][]int
	for range 16 {
		conts = append(conts, randTokens(rng, 64, 512))
	}
	var reqs []ScoreRequest
	for range 16 {
		reqs = append(reqs, ScoreRequest{Prompt: randTokens(rng, 64, 512), Continuations: conts})
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := m.Score(context.Background(), reqs); err != nil {
			b.Fatal(err)
		}
	}
	sec := time.Since(start).Seconds() / float64(b.N)
	b.ReportMetric(16*16*64/sec, "scored-tok/s")
}

// BenchmarkTrainStepSharedPrompt measures a GRPO-shaped training step, 8
// replies of 64 tokens to one 192-token prompt (loss on the replies), with
// the prompt shared through Batch.Prefixes and, in the same run, with the
// prompt copied into every sequence. speedup = flat time / shared time.
func BenchmarkTrainStepSharedPrompt(b *testing.B) {
	cfg := benchConfig()
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	prompt := randTokens(rng, 192, cfg.Vocab)
	var shared, flat Batch
	shared.Prefixes = [][]int{prompt}
	for range 8 {
		reply := randTokens(rng, 64, cfg.Vocab)
		shared.Tokens = append(shared.Tokens, reply)
		shared.Prefix = append(shared.Prefix, 0)
		flat.Tokens = append(flat.Tokens, append(append([]int(nil), prompt...), reply...))
		flat.PromptLen = append(flat.PromptLen, len(prompt))
	}
	masks := func(bt Batch, from int) [][]bool {
		ms := make([][]bool, len(bt.Tokens))
		for i, s := range bt.Tokens {
			ms[i] = make([]bool, len(s))
			for t := from; t < len(s); t++ {
				ms[i][t] = true
			}
		}
		return ms
	}
	shared.Mask, flat.Mask = masks(shared, 0), masks(flat, len(prompt))
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.01)
	var g OutputGrads
	step := func(bt Batch) {
		m.ZeroGrad()
		out, err := m.Forward(context.Background(), bt)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sftGrads(out, bt.Mask, &g); err != nil {
			b.Fatal(err)
		}
		if err := m.Backward(context.Background(), g); err != nil {
			b.Fatal(err)
		}
		if err := opt.Update(m, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
	step(flat) // size the workspace for the larger layout
	b.ResetTimer()
	var ts, tf time.Duration
	for range b.N {
		start := time.Now()
		step(shared)
		ts += time.Since(start)
		start = time.Now()
		step(flat)
		tf += time.Since(start)
	}
	b.ReportMetric(ts.Seconds()*1e3/float64(b.N), "shared-ms/step")
	b.ReportMetric(tf.Seconds()*1e3/float64(b.N), "flat-ms/step")
	b.ReportMetric(tf.Seconds()/ts.Seconds(), "speedup")
}

// BenchmarkSampleMultiTurn runs 32 four-turn conversations (a 200-token
// first prompt, 30-token replies, 50-token observations between turns) with
// the prefix cache and, in the same run, without it. speedup = uncached time
// / cached time for the whole rollout.
func BenchmarkSampleMultiTurn(b *testing.B) {
	cached, err := New(benchConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	uncached := cached.Clone()
	uncached.SetPrefixCache(0)
	rollout := func(m *Model) {
		rng := rand.New(rand.NewPCG(7, 7))
		reqs := make([]SampleRequest, 32)
		for i := range reqs {
			reqs[i] = SampleRequest{Prompt: randTokens(rng, 200, 512), MaxNewTokens: 30, Temperature: 1, Seed: uint64(i)}
		}
		for turn := range 4 {
			res, err := m.Sample(context.Background(), reqs)
			if err != nil {
				b.Fatal(err)
			}
			for i := range reqs {
				reqs[i].Prompt = append(append(reqs[i].Prompt, res[i].Tokens...), randTokens(rng, 50, 512)...)
				reqs[i].Seed += uint64(100 * (turn + 1))
			}
		}
	}
	b.ResetTimer()
	var tc, tu time.Duration
	for range b.N {
		start := time.Now()
		rollout(cached)
		tc += time.Since(start)
		start = time.Now()
		rollout(uncached)
		tu += time.Since(start)
	}
	b.ReportMetric(tc.Seconds()/float64(b.N), "cached-s/rollout")
	b.ReportMetric(tu.Seconds()/float64(b.N), "uncached-s/rollout")
	b.ReportMetric(tu.Seconds()/tc.Seconds(), "speedup")
}

// sftStep returns one supervised optimizer step on batch (every token after
// the first of each sequence trained), as the training-step benchmarks time
// it: forward, the SFT loss's output gradients, backward, clipping, AdamW.
func sftStep(b *testing.B, m *Model, opt *AdamW, batch Batch, lr float32) func() {
	mask := make([][]bool, len(batch.Tokens))
	for i, s := range batch.Tokens {
		mask[i] = make([]bool, len(s))
		for t := 1; t < len(s); t++ {
			mask[i][t] = true
		}
	}
	ctx := context.Background()
	var g OutputGrads
	return func() {
		m.ZeroGrad()
		out, err := m.Forward(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sftGrads(out, mask, &g); err != nil {
			b.Fatal(err)
		}
		if err := m.Backward(ctx, g); err != nil {
			b.Fatal(err)
		}
		ClipGradNorm(m, 1)
		if err := opt.Update(m, lr); err != nil {
			b.Fatal(err)
		}
	}
}
