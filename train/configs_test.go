package train_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	_ "github.com/agentrl/agentrl/envs/builtin"
	"github.com/agentrl/agentrl/internal/stats"
)

// TestShippedConfigsRun starts every config in configs/ for two steps, shrunk
// to a tiny model and budget, and fails on any error, on a non-finite
// metric and on a summary without its validation results. The served-model
// configs (*-vllm.yaml) are played against a served model instead, by
// TestServedModelConfigsEvaluate in trainer/.
func TestShippedConfigsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains small models")
	}
	files, err := filepath.Glob("../configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs: %v", err)
	}
	cache := filepath.Join(t.TempDir(), "cache")
	for _, file := range files {
		if strings.HasSuffix(file, "-vllm.yaml") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			cfg, err := train.Load(file, []string{"run.out=" + out, "run.steps=2", "run.groups=2", "run.group_size=2",
				"model.d_model=32", "model.heads=2", "model.kv_heads=2", "model.d_ff=64", "model.vocab_size=300",
				"warm_start.episodes=30", "warm_start.steps=10", "warm_start.cache_dir=" + cache,
				"collapse.samples=8", "validation.every=1", "checkpoint.every=1"})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Validation.Levels > 8 {
				cfg.Validation.Levels = 8
			}
			cfg.Validation.Samples = min(cfg.Validation.Samples, 2)
			tr, err := train.New(cfg, traintest.QuietOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			ms, err := train.ReadMetrics(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 3 {
				t.Errorf("%d metrics rows, want 3", len(ms))
			}
			for _, row := range ms {
				for k, v := range row {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("step %v: %s is %v", row["step"], k, v)
					}
				}
			}
			raw, err := os.ReadFile(filepath.Join(out, train.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			var sum train.Summary
			if err := json.Unmarshal(raw, &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Steps != 2 || sum.Final.Success == nil || sum.WarmStart.Success == nil {
				t.Errorf("summary %s", raw)
			}
			// The random baseline plays as many episodes as validation.
			if r := sum.Random; r.Success != nil {
				n := sum.ValidationLevels * sum.ValidationSamples
				if lo, hi := stats.Wilson(*r.Success, n); lo != *r.Low || hi != *r.High {
					t.Errorf("random baseline interval [%v, %v], want [%v, %v] over %d episodes", *r.Low, *r.High, lo, hi, n)
				}
				if k := *r.Success * float64(n); math.Abs(k-math.Round(k)) > 1e-9 {
					t.Errorf("random success %v is not a count over %d episodes", *r.Success, n)
				}
			}
		})
	}
}
