package tinkerlearner

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	_ "github.com/agentrl/agentrl/envs/sokoban"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
	"github.com/agentrl/agentrl/train/traintest"
)

// startOf is the Start a new run of cfg gives its learner.
func startOf(t *testing.T, cfg train.Config) *train.Start {
	t.Helper()
	tr, err := train.New(cfg, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.Start()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tinkerBatch samples a batch from p: random prompts, sampled replies
// (the trained tokens, with the sampler's log-probs) and random
// advantages.
func tinkerBatch(t *testing.T, p policy.Policy, n int) *train.Sequences {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 0))
	reqs := make([]policy.Request, n)
	for i := range reqs {
		prompt := make([]int, 3+rng.IntN(6))
		for j := range prompt {
			prompt[j] = 10 + rng.IntN(200)
		}
		reqs[i] = policy.Request{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 4 + rng.IntN(8), Seed: uint64(i), StopTokens: []int{}}}
	}
	out, err := p.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	s := &train.Sequences{}
	for i, smp := range out {
		if smp.Err != nil {
			t.Fatal(smp.Err)
		}
		toks := append(append([]int{}, reqs[i].Prompt...), smp.Tokens...)
		mask := make([]bool, len(toks))
		old := make([]float64, len(toks))
		adv := make([]float64, len(toks))
		a := rng.NormFloat64()
		for k, lp := range smp.LogProbs {
			j := len(reqs[i].Prompt) + k
			mask[j], old[j], adv[j] = true, lp, a
		}
		s.Episode = append(s.Episode, i)
		s.Tokens, s.Mask, s.OldLogProb, s.Advantages = append(s.Tokens, toks), append(s.Mask, mask), append(s.OldLogProb, old), append(s.Advantages, adv)
	}
	return s
}

func maxAbsDiff(a, b [][]float64) float64 {
	var d float64
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(a[i][j]-b[i][j]))
		}
	}
	return d
}

// TestTinkerUpdateEqualsInProcess trains one batch with the in-process
// learner and with the Tinker learner on the offline server (over loopback
// HTTP), from the same starting model, and compares the models after:
// the linearised loss (forward, per-token weights −∂L/∂log π,
// forward_backward, optim_step) is the in-process step.
func TestTinkerUpdateEqualsInProcess(t *testing.T) {
	// The entropy bonus is left out (entropy_coeff 0): it goes through its
	// score-function estimate, which is not the exact gradient.
	for _, c := range []struct {
		name string
		sets []string
		tol  float64
	}{
		{"full weights, GRPO", nil, 1e-5},
		{"KL loss to the base, recomputed old log-probs", []string{"algo.use_kl_loss=true", "algo.kl_loss_coef=0.1", "algo.recompute_old_log_prob=true"}, 1e-5},
		{"LoRA", []string{"model.lora.rank=4", "model.lora.alpha=8"}, 1e-5},
		{"server ppo loss", []string{"algo.clip_ratio_c=0", "tinker.loss=ppo"}, 1e-5},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			sets := append([]string{"algo.entropy_coeff=0", "warm_start.enabled=false", "algo.ppo_mini_batch_size=6", "algo.ppo_epochs=2"}, c.sets...)
			nativeCfg := traintest.TinyConfig(t, filepath.Join(dir, "native"), 1, sets...)
			nativeCfg.Tinker.Loss = train.TinkerLossLinearised
			tinkerCfg := traintest.TinyConfig(t, filepath.Join(dir, "tinker"), 1, append(sets, "tinker.url=local")...)
			// The starting model (no warm start: a fresh model, the same
			// on every call), for the learners and for reference.
			ws, err := inprocess.StartingModel(ctx, startOf(t, tinkerCfg))
			if err != nil {
				t.Fatal(err)
			}
			nl, err := inprocess.New(ctx, startOf(t, nativeCfg))
			if err != nil {
				t.Fatal(err)
			}
			tl, err := New(ctx, startOf(t, tinkerCfg))
			if err != nil {
				t.Fatal(err)
			}
			defer tl.(io.Closer).Close()

			batch := tinkerBatch(t, nl.Policy(), 16)
			copyOf := func(s *train.Sequences) *train.Sequences { return s.Subset(s.Episode) }
			nb, tb := copyOf(batch), copyOf(batch)
			if err := nl.Prepare(ctx, nb); err != nil {
				t.Fatal(err)
			}
			if err := tl.Prepare(ctx, tb); err != nil {
				t.Fatal(err)
			}
			for _, m := range []struct {
				name string
				a, b [][]float64
			}{{"old log-probs", nb.OldLogProb, tb.OldLogProb}, {"reference log-probs", nb.RefLogProb, tb.RefLogProb}} {
				if (m.a == nil) != (m.b == nil) {
					t.Fatalf("%s: in process %v, Tinker %v", m.name, m.a != nil, m.b != nil)
				}
				if d := maxAbsDiff(m.a, m.b); d > 1e-6 {
					t.Errorf("%s differ by %g", m.name, d)
				}
			}
			opts := train.UpdateOptions{LR: 0.01, Seed: 3}
			ns, err := nl.Update(ctx, nb, opts)
			if err != nil {
				t.Fatal(err)
			}
			ts, err := tl.Update(ctx, tb, opts)
			if err != nil {
				t.Fatal(err)
			}
			if ns.MiniBatches != ts.MiniBatches || ts.Skipped != 0 {
				t.Fatalf("mini-batches: in process %d, Tinker %d (%d skipped)", ns.MiniBatches, ts.MiniBatches, ts.Skipped)
			}
			if a, b := ns.Metrics["actor/pg_loss"], ts.Metrics["actor/pg_loss"]; math.Abs(a-b) > 1e-5*(1+math.Abs(a)) {
				t.Errorf("actor/pg_loss: in process %v, Tinker %v", a, b)
			}
			// The trained models score the batch alike; the step moved them.
			reqs := make([]policy.ScoreRequest, len(batch.Tokens))
			for i, toks := range batch.Tokens {
				reqs[i] = policy.ScoreRequest{Prompt: toks[:1], Continuation: toks[1:]}
			}
			after, err := nl.Policy().Score(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			served, err := tl.Policy().Score(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			startPol, err := ws.Policy("start")
			if err != nil {
				t.Fatal(err)
			}
			before, err := startPol.Score(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			moved, diff := maxAbsDiff(before, after), maxAbsDiff(after, served)
			t.Logf("the step moved log-probs by up to %.3g; Tinker and in-process differ by %.3g", moved, diff)
			if moved < 1e-3 {
				t.Fatalf("the update barely moved the model (%g): the comparison would prove nothing", moved)
			}
			if diff > c.tol {
				t.Errorf("after one update the models' log-probs differ by %g (tolerance %g)", diff, c.tol)
			}
		})
	}
}
