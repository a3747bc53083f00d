package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/study"
)

// TestTrainCPUProfile checks that -cpuprofile writes a profile of the run
// (gzip-compressed, as runtime/pprof writes it) and that a profile file
// that cannot be created fails the command before training.
func TestTrainCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	args := []string{"train", "-config", "../configs/sokoban.yaml", "-out", filepath.Join(dir, "run"), "-cpuprofile", prof,
		"-set", "warm_start.cache_dir=" + filepath.Join(dir, "cache")}
	const profArg = 6 // args[profArg] is -cpuprofile's value
	for _, kv := range study.SmokeSets {
		args = append(args, "-set", kv)
	}
	if code, _, errOut := runCLI(t, "", args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(prof)
	if err != nil || !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Fatalf("profile: %d bytes, err %v; want a gzip-compressed pprof profile", len(data), err)
	}
	args[profArg] = filepath.Join(dir, "no", "such", "dir", "cpu.prof")
	if code, _, errOut := runCLI(t, "", args...); code == 0 || !bytes.Contains([]byte(errOut), []byte("the CPU profile")) {
		t.Errorf("an uncreatable profile: exit %d: %s", code, errOut)
	}
}

// TestTrainInterruptedExitCode: a train command stopped by an interrupt
// saves its checkpoint, says it was interrupted and exits 130, not as a
// failure.
func TestTrainInterruptedExitCode(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	args := []string{"train", "-config", "../configs/sokoban.yaml", "-out", out,
		"-set", "warm_start.cache_dir=" + filepath.Join(dir, "cache")}
	for _, kv := range study.SmokeSets {
		args = append(args, "-set", kv)
	}
	args = append(args, "-set", "run.steps=1000")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the run has written its first RL step.
		for ctx.Err() == nil {
			if raw, err := os.ReadFile(filepath.Join(out, "metrics.jsonl")); err == nil && bytes.Count(raw, []byte("\n")) >= 2 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var stdout, stderr bytes.Buffer
	code := dispatch(ctx, args, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
	if code != exitInterrupted || !strings.Contains(stderr.String(), "trainer train: interrupted") {
		t.Fatalf("exit %d, stderr %q; want %d and the word interrupted", code, stderr.String(), exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoints", "latest")); err != nil {
		t.Errorf("no checkpoint after the interrupt: %v", err)
	}
}
