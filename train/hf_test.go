package train_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
)

// TestTrainFromHFDir trains a tiny Hugging Face model (model.init), checks
// that the checkpoint is a Hugging Face directory again that loads as a
// policy, and that a run resumed from it continues on the uninterrupted
// run's curve. The warm start is skipped: it is on in the config, and no
// demonstration is generated.
func TestTrainFromHFDir(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{GenerationEOS: []string{"<|im_end|>", "<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sets []string
		want string
	}{
		{"GRPO", nil, "actor/pg_loss"},
		// A critic of the actor's shape and a frozen reference beside the
		// Hugging Face actor in the checkpoint.
		{"PPO with KL", []string{"algo.preset=PPO", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.05"}, "critic/vf_loss"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkResume(t, append([]string{"model.init=" + src.Path, "rollout.max_turns=2", "rollout.sampling.max_tokens=12"}, c.sets...), c.want)
		})
	}

	// checkResume ran in a temporary directory of its own; run once more
	// to look at the checkpoint.
	out := filepath.Join(t.TempDir(), "run")
	tr, err := train.New(traintest.TinyConfig(t, out, 1, "model.init="+src.Path, "rollout.max_turns=2", "rollout.sampling.max_tokens=12"), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "cache")); err == nil {
		t.Error("the warm start ran (its cache exists)")
	}
	ck := filepath.Join(out, train.CheckpointsDir, train.LatestCheckpoint)
	if !local.IsHFDir(ck) {
		t.Fatal("the checkpoint of a run from a Hugging Face model is not a Hugging Face directory")
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "optimizer.safetensors", train.StateFile} {
		if _, err := os.Stat(filepath.Join(ck, name)); err != nil {
			t.Errorf("checkpoint lacks %s", name)
		}
	}
	p, err := local.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint keeps the source's context; the run used model.max_seq.
	if p.Info().MaxContext != src.Config.MaxSeq || len(p.Info().StopTokens) != 2 {
		t.Errorf("checkpoint policy %+v", p.Info())
	}

	// One more step resumes from that checkpoint rather than starting over.
	var log strings.Builder
	opts := traintest.QuietOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	tr, err = train.New(traintest.TinyConfig(t, out, 2, "model.init="+src.Path, "rollout.max_turns=2", "rollout.sampling.max_tokens=12"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "msg=resuming") || !strings.Contains(log.String(), "step=1") {
		t.Errorf("the second run did not resume:\n%s", log.String())
	}
}
