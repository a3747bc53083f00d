package train

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/tinkerapi"
)

// tinkerBatch samples a batch from p: random prompts, sampled replies
// (the trained tokens, with the sampler's log-probs) and random
// advantages.
func tinkerBatch(t *testing.T, p policy.Policy, n int) *Sequences {
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
	s := &Sequences{}
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
			nativeCfg := tinyConfig(t, filepath.Join(dir, "native"), 1, sets...)
			nativeCfg.Tinker.Loss = TinkerLossLinearised
			tinkerCfg := tinyConfig(t, filepath.Join(dir, "tinker"), 1, append(sets, "tinker.url=local")...)
			tr, err := New(tinkerCfg, quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			ws, err := tr.warmStart(ctx)
			if err != nil {
				t.Fatal(err)
			}
			start := ws.model.Clone()
			nl, err := newNativeLearner(nativeCfg, ws.model, ws.tok, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			tl, err := tr.tinkerLearner(ctx, &warmStartResult{tok: ws.tok, model: start}, "")
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()

			batch := tinkerBatch(t, nl.Policy(), 16)
			copyOf := func(s *Sequences) *Sequences { return s.Subset(s.Episode) }
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
			opts := UpdateOptions{LR: 0.01, Seed: 3}
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
			startPol, err := local.New("start", start, ws.tok)
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

func maxAbsDiff(a, b [][]float64) float64 {
	var d float64
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(a[i][j]-b[i][j]))
		}
	}
	return d
}

// TestTinkerRunResumes: a run on the offline server, interrupted and
// resumed (a new server loading the checkpoint's saved state), follows the
// uninterrupted run's curve exactly.
func TestTinkerRunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	checkResume(t, []string{"tinker.url=local"}, "actor/pg_loss")
}

// TestTinkerServerRestartMidRun: the server restarts during a run (a new
// process on the same state directory, which knows neither the run's model
// nor its requests). The run stops with an error that says so, losing
// nothing saved; resumed against the new server it loads its last
// checkpoint and finishes.
func TestTinkerServerRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	ctx := context.Background()
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	sets := []string{"checkpoint.every=1", "validation.every=0"}
	probe := tinyConfig(t, out, 3, append(sets, "tinker.url=local")...)
	tr, err := New(probe, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tr.warmStart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.New("sokoban", ws.model, ws.tok)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	newServer := func() *tinkerapi.Server {
		s, err := tinkerapi.New(p, tinkerapi.Options{Dir: state, Logger: quietOptions().Logger})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	var current atomic.Pointer[tinkerapi.Server]
	current.Store(newServer())
	var optimSteps atomic.Int32
	restartAfter := int32(3) // mid-run: after the third optimizer step
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/optim_step") && optimSteps.Add(1) == restartAfter+1 {
			old := current.Swap(newServer())
			old.Close()
		}
		current.Load().ServeHTTP(w, r)
	}))
	defer ts.Close()

	cfg := tinyConfig(t, out, 3, append(sets, "tinker.url="+ts.URL)...)
	tr, err = New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(ctx)
	if err == nil {
		t.Fatal("the run survived a server that forgot its model")
	}
	if !strings.Contains(err.Error(), "model") {
		t.Errorf("error %q does not say the server lost the model", err)
	}
	ms, rerr := ReadMetrics(out)
	if rerr != nil {
		t.Fatal(rerr)
	}
	done := len(ms)
	t.Logf("stopped after %d metrics rows: %v", done, err)

	tr, err = New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(ctx); err != nil {
		t.Fatalf("resume against the restarted server: %v", err)
	}
	if ms, err = ReadMetrics(out); err != nil {
		t.Fatal(err)
	}
	if last := ms[len(ms)-1]["step"]; last != 3 {
		t.Errorf("the resumed run ended at step %v, want 3", last)
	}
}

func TestTinkerConfigErrorsNameTheKey(t *testing.T) {
	for sets, want := range map[string]string{
		"tinker.url=ftp://x":                         "tinker.url",
		"tinker.url=local,tinker.loss=dpo":           "tinker.loss",
		"tinker.url=local,tinker.loss=ppo":           "algo.clip_ratio_c",
		"tinker.url=local,algo.preset=PPO":           "critic",
		"tinker.url=local,analysis.gradient_every=5": "analysis.gradient_every",
		"tinker.base_model=Qwen/Qwen3-8B":            "only applies with tinker.url",
		"tinker.url=local,tinker.future_timeout_s=0": "tinker.future_timeout_s",
		"tinker.url=local,tinker.base_model=x":       "tinker.base_model",
	} {
		_, err := Parse(nil, strings.Split(sets, ","))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", sets, err, want)
		}
	}
	if _, err := Parse(nil, []string{"tinker.url=local", "tinker.loss=ppo", "algo.clip_ratio_c=0", "algo.entropy_coeff=0"}); err != nil {
		t.Errorf("the server's ppo for a plain clipped objective: %v", err)
	}
}

// TestTinkerServerMissing: a URL that does not serve the Tinker API fails
// the run before any step with an error naming the key, and nothing is
// left half-open.
func TestTinkerServerMissing(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	cfg := tinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, "tinker.url="+ts.URL, "warm_start.enabled=false")
	tr, err := New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "tinker.url") {
		t.Fatalf("Run = %v, want an error naming tinker.url", err)
	}
}
