package train_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"
)

// TestInterruptAnywhereResumesOnTheSameCurve interrupts a run at points
// inside a step (before its update, between two optimizer steps, before
// its validation), resumes it with the same
// command, and requires every metric of every step to equal an
// uninterrupted run's, and the interrupt to have saved the last step
// that completed. Checkpoints are written only at the end and on
// interrupt, so the resumed run starts from what the interrupt saved.
func TestInterruptAnywhereResumesOnTheSameCurve(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	sets := []string{"checkpoint.every=0", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.05"}
	run := func(ctx context.Context, out string) ([]map[string]float64, error) {
		tr, err := train.New(traintest.TinyConfig(t, filepath.Join(dir, out), 4, sets...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		runErr := tr.Run(ctx)
		ms, err := train.ReadMetrics(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return ms, runErr
	}
	full, err := run(context.Background(), "full")
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 5 {
		t.Fatalf("uninterrupted run: %d metrics lines, want 5", len(full))
	}

	cases := []struct {
		name  string
		arm   func(cancel func())
		saved int // the step the interrupt's checkpoint holds
	}{
		// Its rollouts have fed the collapse EMA and the regime tracker;
		// the step fails in its first forward pass and is redone.
		{"before the update of a step with collapse metrics", func(cancel func()) {
			*train.HookUpdate = func(step int) {
				if step == 2 {
					cancel()
				}
			}
		}, 1},
		{"between two optimizer steps", func(cancel func()) {
			at := 0
			*train.HookUpdate = func(step int) { at = step }
			*train.HookMiniBatch = func(done, all int) {
				if at == 3 && done == 1 && all > 1 {
					cancel()
				}
			}
		}, 3},
		// The step is complete; its validation starts interrupted.
		{"after the last optimizer step, before the validation", func(cancel func()) {
			at := 0
			*train.HookUpdate = func(step int) { at = step }
			*train.HookMiniBatch = func(done, all int) {
				if at == 2 && done == all {
					cancel()
				}
			}
		}, 2},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join("split", string(rune('a'+i)))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c.arm(cancel)
			_, err := run(ctx, out)
			*train.HookUpdate, *train.HookMiniBatch = nil, nil
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run returned %v, want context.Canceled", err)
			}
			tr, err := train.New(traintest.TinyConfig(t, filepath.Join(dir, out), 4, sets...), traintest.QuietOptions())
			if err != nil {
				t.Fatal(err)
			}
			st, err := train.LoadState(tr, filepath.Join(dir, out, train.CheckpointsDir, train.LatestCheckpoint))
			if err != nil {
				t.Fatalf("no checkpoint after the interrupt: %v", err)
			}
			if st.Step != c.saved {
				t.Errorf("the interrupt saved step %d, want %d", st.Step, c.saved)
			}
			resumed, err := run(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			if len(resumed) != len(full) {
				t.Fatalf("resumed run: %d metrics lines, want %d", len(resumed), len(full))
			}
			for i := range full {
				if !traintest.SameMetrics(full[i], resumed[i]) {
					t.Errorf("step %v differs:\nuninterrupted %v\nresumed       %v", full[i]["step"], full[i], resumed[i])
				}
			}
		})
	}
}
