//go:build unix

package train_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"
)

// The child process of TestKilledRunResumesWithOneRowPerStep: it trains
// and SIGKILLs itself right after writing step 3's metrics, between the
// checkpoints of steps 2 and 4.
func TestMain(m *testing.M) {
	if out := os.Getenv("AGENTRL_TRAIN_KILL_AT_3"); out != "" {
		cfg, err := traintest.TinyConfigFor(out, 6)
		if err == nil {
			var tr *train.Trainer
			if tr, err = train.New(cfg, traintest.QuietOptions()); err == nil {
				*train.HookRecorded = func(step int) {
					if step == 3 {
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
					}
				}
				err = tr.Run(context.Background())
			}
		}
		fmt.Fprintln(os.Stderr, "child was not killed:", err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestKilledRunResumesWithOneRowPerStep: SIGKILL after step 3 (checkpoint
// at step 2), then the same run again. The resumed run's metrics, events
// and transcripts equal an uninterrupted run's, timing aside, with each
// step once.
func TestKilledRunResumesWithOneRowPerStep(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	tr, err := train.New(traintest.TinyConfig(t, full, 6), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	killed := filepath.Join(dir, "killed")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTRL_TRAIN_KILL_AT_3="+killed)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v (want killed by SIGKILL)\n%s", err, stderr.String())
	}
	ms, err := train.ReadMetrics(killed)
	if err != nil || len(ms) != 4 || ms[3]["step"] != 3 {
		t.Fatalf("killed run's metrics: %d rows, %v; want steps 0-3", len(ms), err)
	}
	ck, err := train.LoadState(tr, filepath.Join(killed, train.CheckpointsDir, train.LatestCheckpoint))
	if err != nil || ck.Step != 2 {
		t.Fatalf("killed run's checkpoint at step %d (%v), want 2", ck.Step, err)
	}

	tr, err = train.New(traintest.TinyConfig(t, killed, 6), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	a, err := train.ReadMetrics(full)
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.ReadMetrics(killed)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 7 || len(b) != 7 {
		t.Fatalf("metrics rows: uninterrupted %d, resumed %d; want 7 (steps 0-6, each once)", len(a), len(b))
	}
	for i := range a {
		if a[i]["step"] != float64(i) || b[i]["step"] != float64(i) {
			t.Fatalf("row %d: steps %v and %v", i, a[i]["step"], b[i]["step"])
		}
		if !traintest.SameMetrics(a[i], b[i]) {
			t.Errorf("step %d differs after the resume:\n%v\n%v", i, a[i], b[i])
		}
	}
	ea, eb := readEvents(t, full), readEvents(t, killed)
	if len(ea) != len(eb) {
		t.Fatalf("events: %d uninterrupted, %d resumed", len(ea), len(eb))
	}
	for i := range ea {
		if ea[i].Step != eb[i].Step || !sameScalars(ea[i].Scalars, eb[i].Scalars) {
			t.Errorf("event %d: step %d vs %d, scalars differ", i, ea[i].Step, eb[i].Step)
		}
	}
	ta, tb := dirDigest(t, filepath.Join(full, train.TranscriptsDir)), dirDigest(t, filepath.Join(killed, train.TranscriptsDir))
	if !maps.Equal(ta, tb) {
		t.Errorf("transcripts differ:\n%v\n%v", slices.Sorted(maps.Keys(ta)), slices.Sorted(maps.Keys(tb)))
	}
}
