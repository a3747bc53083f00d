package native

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/hugemem"
)

// TestTrainingHugePagesIdentical: where the weights, optimizer state and
// workspace are placed (huge pages or not, package hugemem) does not change
// a bit of training. The model is large enough for its buffers to reach
// hugemem.MinBytes.
func TestTrainingHugePagesIdentical(t *testing.T) {
	run := func(huge bool) []float32 {
		defer hugemem.SetEnabled(hugemem.SetEnabled(huge))
		cfg := DefaultConfig(512)
		m, err := New(cfg, 5)
		if err != nil {
			t.Fatal(err)
		}
		if 4*len(m.Params()) < hugemem.MinBytes {
			t.Fatalf("%d parameters: too few to test huge pages", len(m.Params()))
		}
		opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.1)
		rng := rand.New(rand.NewPCG(6, 6))
		for range 2 {
			sftUpdate(t, m, opt, randomBatch(rng, cfg.Vocab, 400, 3, 350), 1e-2, nil)
		}
		return m.Params()
	}
	if !bitsEqual(run(false), run(true)) {
		t.Error("training on huge pages differs from training on ordinary pages")
	}
}

// BenchmarkTrainStepHugePages compares BenchmarkTrainStep's step with its
// buffers on ordinary pages and on huge pages (package hugemem): two models
// in one process step in turn, alternating which goes first, so that both
// see the same host load. It reports each one's median step and the share
// of pairs in which the huge-page model was the faster.
func BenchmarkTrainStepHugePages(b *testing.B) {
	if !hugemem.Enabled() {
		b.Skip("huge pages are not offered here (not Linux, or AGENTRL_HUGEPAGES=off)")
	}
	cfg := benchConfig()
	newStep := func(huge bool) func() {
		defer hugemem.SetEnabled(hugemem.SetEnabled(huge))
		m, err := New(cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		step := sftStep(b, m, NewAdamW(m, 0.9, 0.95, 1e-8, 0.01), trainBatch(cfg, 8, 256), 1e-3)
		step() // size the workspace while huge is in force
		return step
	}
	steps := [2]func(){newStep(false), newStep(true)}
	var times [2][]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for j := range 2 {
			arm := (i + j) % 2
			t0 := time.Now()
			steps[arm]()
			times[arm] = append(times[arm], time.Since(t0))
		}
	}
	b.StopTimer()
	faster := 0
	for i := range times[0] {
		if times[1][i] < times[0][i] {
			faster++
		}
	}
	small, huge := medianDuration(times[0]), medianDuration(times[1])
	b.ReportMetric(small.Seconds()*1e3, "small-pages-med-ms")
	b.ReportMetric(huge.Seconds()*1e3, "huge-pages-med-ms")
	b.ReportMetric(100*(1-huge.Seconds()/small.Seconds()), "saved-%")
	b.ReportMetric(100*float64(faster)/float64(b.N), "huge-faster-%pairs")
	b.ReportMetric(0, "ns/op")
}
