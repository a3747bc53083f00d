package native

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// qwen05BConfig is Qwen2.5-0.5B's architecture (hidden 896, 24 layers, 14
// heads, 2 KV heads, intermediate 4864, vocabulary 151936, tied
// embeddings, QKV biases) with a context of maxSeq.
func qwen05BConfig(layers, maxSeq int) Config {
	return Config{Vocab: 151936, DModel: 896, Layers: layers, Heads: 14, KVHeads: 2, DFF: 4864, MaxSeq: maxSeq,
		RopeTheta: 1e6, NormEps: 1e-6, QKVBias: true, TieEmbeddings: true}
}

// benchEnv reads a positive integer from the environment, or def.
func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkLoRATrainStep measures a supervised training step (forward,
// loss, backward, clipping, AdamW) of a random Qwen2.5-0.5B-shaped model on
// sequences of 256 tokens with the loss on every position, training rank-8
// adapters on all seven projections (lora-r8) and, in the same run on the
// same weights, every weight (full). Each sub-benchmark warms up with one
// untimed step. It reports
//
//	tok/s           trained tokens per second
//	ms/step         time per step
//	trainable-M     trained parameters, millions
//	state-MiB       what training keeps besides the weights: gradients and
//	                the two AdamW moments (and, with adapters, the adapters)
//	workspace-MiB   Forward's saved activations and Backward's scratch
//	                (WorkspaceBytes)
//	maxrss-MiB      peak resident memory of the process so far (lora-r8
//	                runs first, so full's includes both)
//
// The whole model takes about 2 GiB for its weights and, trained in full,
// 8 GiB more; AGENTRL_BENCH_LAYERS (default 24) and AGENTRL_BENCH_BATCH
// (sequences, default 1) shrink or grow it.
func BenchmarkLoRATrainStep(b *testing.B) {
	const seq = 256
	layers, nseq := benchEnv("AGENTRL_BENCH_LAYERS", 24), benchEnv("AGENTRL_BENCH_BATCH", 1)
	cfg := qwen05BConfig(layers, seq)
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	batch := trainBatch(cfg, nseq, seq)
	run := func(b *testing.B) {
		step := sftStep(b, m, NewAdamW(m, 0.9, 0.999, 1e-8, 0), batch, 1e-4)
		step()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			step()
		}
		sec := time.Since(start).Seconds() / float64(b.N)
		b.StopTimer()
		state := 3 * m.NumTrainable() // gradient and two moments
		if m.LoRA() != nil {
			state += m.LoRA().NumParams()
		}
		b.ReportMetric(float64(nseq*seq)/sec, "tok/s")
		b.ReportMetric(sec*1e3, "ms/step")
		b.ReportMetric(float64(m.NumTrainable())/1e6, "trainable-M")
		b.ReportMetric(float64(4*state)/(1<<20), "state-MiB")
		b.ReportMetric(float64(m.WorkspaceBytes(nseq*seq, nseq*(seq-1)))/(1<<20), "workspace-MiB")
		b.ReportMetric(maxRSSMiB(), "maxrss-MiB")
	}
	b.Run("lora-r8", func(b *testing.B) {
		if m.LoRA() == nil {
			if err := m.EnableLoRA(LoRAConfig{Rank: 8, Alpha: 16, Targets: LoRATargets(), Seed: 1}); err != nil {
				b.Fatal(err)
			}
		}
		run(b)
	})
	b.Run("full", func(b *testing.B) {
		if m.LoRA() != nil {
			if err := m.MergeLoRA(); err != nil {
				b.Fatal(err)
			}
		}
		run(b)
	})
}
