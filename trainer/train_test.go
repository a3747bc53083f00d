package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

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
