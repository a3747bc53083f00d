package train

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/model/native"
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
		tr, err := New(tinyConfig(t, filepath.Join(dir, out), 4, sets...), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		runErr := tr.Run(ctx)
		ms, err := ReadMetrics(filepath.Join(dir, out))
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
			testHookUpdate = func(step int) {
				if step == 2 {
					cancel()
				}
			}
		}, 1},
		{"between two optimizer steps", func(cancel func()) {
			at := 0
			testHookUpdate = func(step int) { at = step }
			testHookMiniBatch = func(done, all int) {
				if at == 3 && done == 1 && all > 1 {
					cancel()
				}
			}
		}, 3},
		// The step is complete; its validation starts interrupted.
		{"after the last optimizer step, before the validation", func(cancel func()) {
			at := 0
			testHookUpdate = func(step int) { at = step }
			testHookMiniBatch = func(done, all int) {
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
			testHookUpdate, testHookMiniBatch = nil, nil
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run returned %v, want context.Canceled", err)
			}
			tr, err := New(tinyConfig(t, filepath.Join(dir, out), 4, sets...), quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			st, err := tr.loadState(filepath.Join(dir, out, checkpointsDir, latestCheckpoint))
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
				if !sameMetrics(full[i], resumed[i]) {
					t.Errorf("step %v differs:\nuninterrupted %v\nresumed       %v", full[i]["step"], full[i], resumed[i])
				}
			}
		})
	}
}

// TestInterruptedWarmStartContinues interrupts the warm start part-way,
// reruns the command, and requires the cached warm-start model to equal,
// byte for byte, the one an uninterrupted warm start writes, and the
// interrupted one's saved progress to be gone after it.
func TestInterruptedWarmStartContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	run := func(ctx context.Context, parent string) error {
		tr, err := New(tinyConfig(t, filepath.Join(dir, parent, "run"), 1), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		return tr.Run(ctx)
	}
	cached := func(parent string) []byte {
		t.Helper()
		entries, err := filepath.Glob(filepath.Join(dir, parent, "cache", "warmstart-*"))
		if err != nil || len(entries) != 1 {
			t.Fatalf("cache of %s holds %v (%v), want one warm start", parent, entries, err)
		}
		raw, err := os.ReadFile(filepath.Join(entries[0], native.WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if err := run(context.Background(), "whole"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookWarmStep = func(step int) {
		if step == 60 {
			cancel()
		}
	}
	err := run(ctx, "split")
	testHookWarmStep = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v, want context.Canceled", err)
	}
	partial, _ := filepath.Glob(filepath.Join(dir, "split", "cache", "warmstart-*.partial"))
	if len(partial) != 1 {
		t.Fatalf("interrupted warm start left %v, want its saved progress", partial)
	}
	var resumedAt []int
	testHookWarmStep = func(step int) { resumedAt = append(resumedAt, step) }
	err = run(context.Background(), "split")
	testHookWarmStep = nil
	if err != nil {
		t.Fatal(err)
	}
	if len(resumedAt) == 0 || resumedAt[0] != 60 {
		t.Errorf("the rerun's warm start began at step %v, want 60", resumedAt[:min(len(resumedAt), 1)])
	}
	if !bytes.Equal(cached("whole"), cached("split")) {
		t.Error("the continued warm start's model differs from the uninterrupted one's")
	}
}
