package native_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/model/native"
)

// Example shows the life of the policy: sample with a KV cache, recompute
// log-probs under the current weights, take a PPO step with the loss from
// package algos, and checkpoint.
func Example() {
	ctx := context.Background()
	cfg := native.Config{Vocab: 32, DModel: 32, Layers: 2, Heads: 4, KVHeads: 2, DFF: 64, MaxSeq: 64,
		TieEmbeddings: true, ValueHead: true}
	m, err := native.New(cfg, 42)
	if err != nil {
		log.Fatal(err)
	}

	// Rollout: two requests, each with its own seed.
	reqs := []native.SampleRequest{
		{Prompt: []int{1, 5, 7}, MaxNewTokens: 8, Temperature: 1, Seed: 1},
		{Prompt: []int{1, 9}, MaxNewTokens: 8, Temperature: 1, TopP: 0.9, StopTokens: []int{0}, Seed: 2},
	}
	res, err := m.Sample(ctx, reqs)
	if err != nil {
		log.Fatal(err)
	}

	// Learner: token-aligned batch, loss mask on the generated tokens; the
	// loss and its per-token gradients come from package algos.
	var batch native.Batch
	var mask [][]bool
	var old, adv [][]float64
	for i, r := range res {
		seq := append(append([]int{}, reqs[i].Prompt...), r.Tokens...)
		mask = append(mask, make([]bool, len(seq)))
		old = append(old, make([]float64, len(seq)))
		adv = append(adv, make([]float64, len(seq)))
		for k := range r.Tokens {
			t := len(reqs[i].Prompt) + k
			mask[i][t], old[i][t], adv[i][t] = true, float64(r.LogProbs[k]), float64(1-2*i)
		}
		batch.Tokens = append(batch.Tokens, seq)
	}
	batch.Mask = mask
	opt := native.NewAdamW(m, 0.9, 0.95, 1e-8, 0.01)
	sched := native.Schedule{Peak: 1e-3, Warmup: 10}

	out, err := m.Forward(ctx, batch)
	if err != nil {
		log.Fatal(err)
	}
	loss, err := algos.PresetGRPO().ActorLoss(algos.ActorBatch{
		LogProb: native.Float64s(out.LogProb), OldLogProb: old, Advantages: adv, Entropy: native.Float64s(out.Entropy), Mask: mask,
	})
	if err != nil {
		log.Fatal(err)
	}
	m.ZeroGrad()
	if err := m.Backward(ctx, native.OutputGrads{LogProb: native.Float32s(loss.DLogProb), Entropy: native.Float32s(loss.DEntropy)}); err != nil {
		log.Fatal(err)
	}
	native.ClipGradNorm(m, 1.0)
	if err := opt.Update(m, float32(sched.LR(0))); err != nil {
		log.Fatal(err)
	}
	// Sampling reported the same log-probs the learner recomputed, so the
	// first PPO step starts at ratio 1 and nothing is clipped.
	fmt.Printf("ratio 1 on every sampled token: %v, clipped: %.0f\n", math.Abs(loss.PPOKL) < 1e-6, loss.PGClipFrac)

	dir, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "step-1")
	if err := native.SaveCheckpoint(path, m, opt, map[string][]byte{"tokenizer.json": []byte("{}")}); err != nil {
		log.Fatal(err)
	}
	ck, err := native.LoadCheckpoint(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("restored step:", ck.Optimizer.Steps(), "extra files:", len(ck.Extra))
	// Output:
	// ratio 1 on every sampled token: true, clipped: 0
	// restored step: 1 extra files: 1
}
