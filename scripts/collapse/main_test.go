package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/study"
)

// TestSmoke runs every arm of the study for one tiny step, so the script
// cannot rot.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains tiny models")
	}
	s := Default()
	s.Seeds, s.Out, s.Sets = 1, filepath.Join(t.TempDir(), "runs"), study.SmokeSets
	s.Results = filepath.Join(t.TempDir(), "results.md")
	t.Chdir("../..")
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.Results)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.Arms {
		if !strings.Contains(string(data), "| "+a.Label+" | 1 |") {
			t.Errorf("results lack arm %s:\n%s", a.Label, data)
		}
	}
}
