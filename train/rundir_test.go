package train_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	_ "github.com/agentrl/agentrl/envs/frozenlake"
	"github.com/agentrl/agentrl/internal/runlock"
	"github.com/agentrl/agentrl/internal/tfevents"
)

// dirDigest hashes every file under dir (path and content).
func dirDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSecondConfigLeavesOtherRunUntouched: a FrozenLake run pointed at a
// Sokoban run's directory is refused before it writes anything, with an
// error that names what differs and the ways out; by default the two
// configs get directories of their own.
func TestSecondConfigLeavesOtherRunUntouched(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	sokoban := filepath.Join(dir, "sokoban")
	tr, err := train.New(traintest.TinyConfig(t, sokoban, 2), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, sokoban)

	lake := traintest.TinyConfig(t, sokoban, 2, "env.name=frozenlake", "rollout.history_window=0")
	tr, err = train.New(lake, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background())
	if !errors.Is(err, train.ErrRunMismatch) {
		t.Fatalf("FrozenLake in the Sokoban run's directory: %v, want ErrRunMismatch", err)
	}
	for _, want := range []string{"env.name: sokoban there, frozenlake here", "rollout.history_window: 1 there, 0 here", "-out DIR", "checkpoint.resume=false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if after := dirDigest(t, sokoban); !maps.Equal(before, after) {
		t.Errorf("the refused run changed the directory:\nbefore %v\nafter  %v", before, after)
	}

	// Without run.out each config file gets its own directory.
	for file, want := range map[string]string{"sokoban.yaml": "runs/sokoban", "frozenlake.yaml": "runs/frozenlake", "my-lake.yml": "runs/my-lake"} {
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, []byte("env:\n  name: frozenlake\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := train.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Run.Out != filepath.FromSlash(want) {
			t.Errorf("%s: run.out %q, want %q", file, cfg.Run.Out, want)
		}
	}
	if cfg, _ := train.Parse([]byte("env:\n  name: frozenlake\n"), nil); cfg.Run.Out != filepath.Join("runs", "frozenlake") {
		t.Errorf("Parse without run.out: %q", cfg.Run.Out)
	}

	// checkpoint.resume=false replaces the run, leaving no file of the old one.
	lake.Checkpoint.Resume = false
	tr, err = train.New(lake, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	id, _, err := train.ReadIdentity(filepath.Join(sokoban, train.IdentityFile))
	if err != nil || id.Env != "frozenlake" {
		t.Errorf("after replacing: identity %+v, %v", id, err)
	}
	ms, _ := train.ReadMetrics(sokoban)
	if len(ms) != 3 {
		t.Errorf("replaced run has %d metrics rows, want 3 (steps 0-2)", len(ms))
	}
	if ck, _, _ := train.ReadIdentity(filepath.Join(sokoban, train.CheckpointsDir, train.LatestCheckpoint, train.IdentityFile)); ck.Env != "frozenlake" {
		t.Errorf("checkpoint identity %q", ck.Env)
	}
}

func sameScalars(a, b map[string]float32) bool {
	a64, b64 := map[string]float64{}, map[string]float64{}
	for k, v := range a {
		a64[k] = float64(v)
	}
	for k, v := range b {
		b64[k] = float64(v)
	}
	return traintest.SameMetrics(a64, b64)
}

// readEvents decodes the run's single event file.
func readEvents(t *testing.T, run string) []tfevents.Event {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(run, train.EventsDir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("%s: %d event files, want 1", run, len(files))
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := tfevents.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestBusyRunDirIsRefused: a second trainer on a directory in use fails at
// once instead of interleaving files with the first.
func TestBusyRunDirIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	lock, err := runlock.Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	tr, err := train.New(traintest.TinyConfig(t, dir, 1), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); !errors.Is(err, runlock.ErrLocked) || !strings.Contains(err.Error(), "-out DIR") {
		t.Fatalf("Run on a locked directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refused run wrote files: %v", entries)
	}
}
