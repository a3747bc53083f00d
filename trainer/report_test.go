package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommand(t *testing.T) {
	parent := t.TempDir()
	for i, preset := range []string{"GRPO", "GRPO", "CAST", "CAST"} {
		dir := filepath.Join(parent, fmt.Sprintf("%s-seed%d", preset, i))
		os.MkdirAll(dir, 0o755)
		id, _ := json.Marshal(map[string]any{"config": map[string]string{"algo.preset": preset, "run.seed": fmt.Sprint(i)}})
		os.WriteFile(filepath.Join(dir, "run.json"), id, 0o644)
		os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"status":"finished","steps":10,"wall_time_s":5,"validation_levels":8}`), 0o644)
		os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(fmt.Sprintf("{\"step\":0,\"val-env/success\":0.5}\n{\"step\":10,\"val-env/success\":%v,\"actor/entropy\":%v}\n", 0.6+0.1*float64(i), 1-0.1*float64(i))), 0o644)
	}
	png := filepath.Join(parent, "curves.png")
	code, out, errOut := runCLI(t, "", "report", "-plot", png, filepath.Join(parent, "*-seed*"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"4 runs in 2 arms", "| algo.preset=GRPO | 2 | 0.500 |", "| algo.preset=CAST | 2 |", "| actor/entropy | -1.00 | 4 |", "plot: " + png} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(png); err != nil {
		t.Error(err)
	}
	if code, _, _ := runCLI(t, "", "report"); code != 2 {
		t.Errorf("no directories: exit %d, want 2", code)
	}
	if code, _, errOut := runCLI(t, "", "report", t.TempDir()); code != 1 || !strings.Contains(errOut, "finished run directory") {
		t.Errorf("not a run directory: exit %d: %s", code, errOut)
	}
}
