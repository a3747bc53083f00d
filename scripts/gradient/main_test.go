package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/study"
)

// TestSmoke runs every arm for one tiny step and checks that the gradient
// table reaches the results.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains tiny models")
	}
	s := Default()
	s.Seeds, s.Out = 1, filepath.Join(t.TempDir(), "runs")
	s.Sets = study.SmokeSets
	for i := range s.Arms { // the arm's own settings come last: measure at the one step
		s.Arms[i].Sets = append(s.Arms[i].Sets, "analysis.gradient_every=1", "analysis.gradient_buckets=2")
	}
	s.Results = filepath.Join(t.TempDir(), "results.md")
	t.Chdir("../..")
	if err := s.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.Results)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| PPO | 1 |", "| GRPO | 1 |", "| PPO | q1 |", "| GRPO | q2 |"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("results lack %q:\n%s", want, data)
		}
	}
}
