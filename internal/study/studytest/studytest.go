// Package studytest runs a study's smoke version in a script's tests: one
// tiny step of every arm (study.SmokeSets), so the scripts cannot rot.
package studytest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/study"
)

// Smoke runs s with one seed and the smoke settings from the repository
// root (tests run in scripts/NAME), then checks that the results name
// every arm, and every extra string in want. extra settings go after each
// arm's own, so they win.
func Smoke(t *testing.T, s study.Study, extra []string, want ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("trains tiny models")
	}
	// The study's own settings stay, so a broken one fails here; the
	// smoke settings come after them and win.
	s.Seeds, s.Out, s.Sets = 1, filepath.Join(t.TempDir(), "runs"), append(append([]string{}, s.Sets...), study.SmokeSets...)
	for i := range s.Arms {
		s.Arms[i].Sets = append(append([]string{}, s.Arms[i].Sets...), extra...)
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
	for _, a := range s.Arms {
		want = append(want, "| "+a.Label+" | 1 |")
	}
	for _, w := range want {
		if !strings.Contains(string(data), w) {
			t.Errorf("results lack %q:\n%s", w, data)
		}
	}
}
