package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// TestSuiteRunsAndTimesEachExperiment runs two experiments of the suite,
// cut to two arms of one tiny step, through the suite's own loop, and
// checks their sections and the timing table.
func TestSuiteRunsAndTimesEachExperiment(t *testing.T) {
	if testing.Short() {
		t.Skip("trains tiny models")
	}
	tmp := t.TempDir()
	var suite []study.Study
	for _, s := range []study.Study{ragen2.MIProxy(), ragen2.Slip()} {
		s.Arms, s.Seeds, s.Sets = s.Arms[:2], 1, study.SmokeSets
		s.Out = filepath.Join(tmp, s.Name)
		suite = append(suite, s)
	}
	results := filepath.Join(tmp, "results.md")
	t.Chdir("../..")
	var out bytes.Buffer
	if err := run(context.Background(), suite, options{cache: filepath.Join(tmp, "cache"), results: results}, &out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!-- miproxy:begin", "<!-- slip:begin", "| M16 | 1 |", "| s1.0-filter | 1 |",
		"<!-- ragen2:begin", "| miproxy | `go run ./scripts/miproxy` | 2 |", "| slip | `go run ./scripts/slip` | 2 |", "| **all** |", "| end to end (builds, reports and cached runs included) | `go run ./scripts/ragen2` |"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("results lack %q:\n%s", want, data)
		}
	}
	// Both experiments warmed up in the one shared cache.
	if entries, err := os.ReadDir(filepath.Join(tmp, "cache")); err != nil || len(entries) < 2 {
		t.Errorf("shared cache: %v entries, err %v", len(entries), err)
	}
	if err := run(context.Background(), suite, options{only: []string{"nosuch"}}, &out); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("-only nosuch: err %v", err)
	}
}
