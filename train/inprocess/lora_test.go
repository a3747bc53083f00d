package inprocess

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
)

// TestLoRACheckpoint looks at a LoRA run's checkpoint: the adapters in
// PEFT's layout naming the base model's directory, their optimizer state,
// the base model's record, no weights and no reference; the base model
// untouched; and the checkpoint loads as a policy (the base model with the
// adapters), as trainer eval and serve load it.
func TestLoRACheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := local.ReadHF(src.Path, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	tr, err := train.New(traintest.TinyConfig(t, out, 2, "model.init="+src.Path, "rollout.max_turns=2", "rollout.sampling.max_tokens=12",
		"model.lora.rank=2", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.05"), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(out, "checkpoints", "latest")
	for _, name := range []string{filepath.Join(adapterDir, native.PEFTConfigFile), filepath.Join(adapterDir, native.PEFTWeightsFile),
		native.OptimizerFile, baseFile, "trainer_state.json", "run.json"} {
		if _, err := os.Stat(filepath.Join(ck, name)); err != nil {
			t.Errorf("checkpoint lacks %s", name)
		}
	}
	for _, name := range []string{native.WeightsFile, "config.json", referenceDir} {
		if _, err := os.Stat(filepath.Join(ck, name)); err == nil {
			t.Errorf("checkpoint of a LoRA run has %s", name)
		}
	}
	cfg, baseDir, err := native.ReadPEFTConfig(filepath.Join(ck, adapterDir))
	if err != nil {
		t.Fatal(err)
	}
	if abs, _ := filepath.Abs(src.Path); baseDir != abs || cfg.Rank != 2 || cfg.Alpha != 16 || len(cfg.Targets) != 7 {
		t.Errorf("adapter config %+v, base %q", cfg, baseDir)
	}
	after, _, err := local.ReadHF(src.Path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before.Params(), after.Params()) {
		t.Error("the base model's directory changed")
	}
	raw, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var id struct {
		Config map[string]string `json:"config"`
		Model  *train.ModelInfo  `json:"model"`
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		t.Fatal(err)
	}
	if id.Config["model.lora.rank"] != "2" || id.Model == nil || id.Model.LoRA == nil || id.Model.LoRA.TrainableParams == 0 {
		t.Errorf("run identity without the adapters: %v %+v", id.Config, id.Model)
	}

	p, err := local.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Lock()
	lo := m.LoRA()
	if lo == nil {
		t.Fatal("the checkpoint's policy has no adapters")
	}
	trained := false // B starts at zero
	for _, ti := range lo.Tensors() {
		if strings.HasSuffix(ti.Name, ".lora_B.weight") && slices.ContainsFunc(lo.Params()[ti.Offset:ti.Offset+ti.Size], func(x float32) bool { return x != 0 }) {
			trained = true
		}
	}
	p.Unlock()
	if !trained {
		t.Fatal("the checkpoint's policy has no trained adapters")
	}
	prompt, err := p.RenderChat(context.Background(), []policy.Message{{Role: "user", Content: "hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Sample(context.Background(), []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 4}}}); err != nil {
		t.Fatal(err)
	}

	resume := func(rank string, opts train.Options) error {
		tr, err := train.New(traintest.TinyConfig(t, out, 3, "model.init="+src.Path, "rollout.max_turns=2", "rollout.sampling.max_tokens=12",
			"model.lora.rank="+rank, "algo.use_kl_loss=true", "algo.kl_loss_coef=0.05"), opts)
		if err != nil {
			t.Fatal(err)
		}
		return tr.Run(context.Background())
	}
	// Resuming with another rank is another run.
	if err := resume("3", traintest.QuietOptions()); err == nil || !strings.Contains(err.Error(), "model.lora.rank: 2 there, 3 here") {
		t.Errorf("resume with another rank: %v", err)
	}
	// A changed base model is refused.
	files, err := os.ReadFile(filepath.Join(src.Path, native.WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	changed, hf, err := local.ReadHF(src.Path, 0)
	if err != nil {
		t.Fatal(err)
	}
	changed.Params()[0] += 0.5
	if err := local.WriteHF(src.Path, changed, hf); err != nil {
		t.Fatal(err)
	}
	if err := resume("2", traintest.QuietOptions()); err == nil || !strings.Contains(err.Error(), "is not the one the adapters were trained on") {
		t.Errorf("resume over a changed base model: %v", err)
	}
	if err := os.WriteFile(filepath.Join(src.Path, native.WeightsFile), files, 0o644); err != nil {
		t.Fatal(err)
	}
	// With the base model back, the run resumes from its checkpoint.
	var log strings.Builder
	opts := traintest.QuietOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	if err := resume("2", opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "msg=resuming") || !strings.Contains(log.String(), "step=2") {
		t.Errorf("the run did not resume:\n%s", log.String())
	}
}

// TestLoRADoesNotChangeTheWarmStart: the warm start trains every weight
// and adapters come after it, so model.lora's settings leave its cache key
// alone: runs with and without adapters start from one model.
func TestLoRADoesNotChangeTheWarmStart(t *testing.T) {
	keys := map[string]string{}
	for _, sets := range [][]string{nil, {"model.lora.alpha=32"}, {"model.lora.rank=8"}, {"model.lora.rank=8", "model.lora.alpha=32"}} {
		k, err := warmStarterOf(t, traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, sets...)).key(nil)
		if err != nil {
			t.Fatal(err)
		}
		keys[strings.Join(sets, " ")] = k
	}
	for name, k := range keys {
		if k != keys[""] {
			t.Errorf("%q changed the warm-start key", name)
		}
	}
}
