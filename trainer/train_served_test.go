package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/train"
)

// TestTrainOnTrainerServe runs the documented laptop loop through the CLI:
// `trainer serve -checkpoint HF_DIR -lora-dir RUN/adapters`, and `trainer
// train -config configs/sokoban-vllm.yaml` sampling on it (shrunk to two
// steps of a tiny model): each version's adapter is loaded and the old one
// unloaded, and the mismatch between served and learner log-probs is the
// in-process one.
func TestTrainOnTrainerServe(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(filepath.Join(out, "adapters"), 0o755); err != nil {
		t.Fatal(err)
	}
	rs := startServe(t, src.Path, "-lora-dir", filepath.Join(out, "adapters"))
	t.Setenv("AGENTRL_API_KEY", "k")
	args := []string{"train", "-config", "../configs/sokoban-vllm.yaml", "-out", out}
	// The filter keeps every group: the random model's samples tend to
	// score alike, and each step must update.
	for _, set := range []string{"model.init=" + src.Path, "server.url=" + rs.base, "run.steps=2", "run.groups=2", "run.group_size=2",
		"rollout.max_turns=2", "rollout.sampling.max_tokens=8", "validation.levels=2", "validation.every=1",
		"collapse.samples=4", "model.lora.rank=4", "algo.ppo_mini_batch_size=4",
		"filter.value=1", "filter.include_zero=true"} {
		args = append(args, "-set", set)
	}
	code, _, errOut := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	ms, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("%d metrics rows, want 3", len(ms))
	}
	for i, m := range ms[1:] {
		t.Logf("step %d: mismatch/mean_abs_logprob_diff %.3g, max %.3g, k3_kl %.3g over %v tokens", i+1,
			m["mismatch/mean_abs_logprob_diff"], m["mismatch/max_abs_logprob_diff"], m["mismatch/k3_kl"], m["mismatch/tokens"])
		if m["rollout/policy_version"] != float64(i) || !(m["mismatch/max_abs_logprob_diff"] < 1e-4) || m["mismatch/tokens"] == 0 {
			t.Errorf("step %d: policy version %v, mismatch %v over %v tokens", i+1, m["rollout/policy_version"],
				m["mismatch/max_abs_logprob_diff"], m["mismatch/tokens"])
		}
	}
	log := rs.errOut.String()
	if n, m := strings.Count(log, "loaded LoRA adapter"), strings.Count(log, "removed LoRA adapter"); n != 3 || m != 3 {
		t.Errorf("the server loaded %d adapters and removed %d, want 3 and 3:\n%s", n, m, log)
	}
	if !strings.Contains(errOut, "sampling on a server") {
		t.Errorf("the trainer did not log the server:\n%s", errOut)
	}
	rs.stop(t)
}
