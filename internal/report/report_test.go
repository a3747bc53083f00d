package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRun writes a finished run directory: its settings, a summary and
// val-env/success at steps 0, 10, 20, …
func fakeRun(t *testing.T, config map[string]string, curve []float64, extra map[string][]float64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o755)
	id, _ := json.Marshal(map[string]any{"format": 1, "config": config})
	os.WriteFile(filepath.Join(dir, "run.json"), id, 0o644)
	sum, _ := json.Marshal(map[string]any{"status": "finished", "steps": 10 * (len(curve) - 1), "wall_time_s": 60.0,
		"warm_start_time_s": 20.0, "validation_levels": 256, "validation_samples": 1})
	os.WriteFile(filepath.Join(dir, "summary.json"), sum, 0o644)
	var b strings.Builder
	for i, v := range curve {
		row := map[string]float64{"step": float64(10 * i), "val-env/success": v}
		for k, xs := range extra {
			row[k] = xs[i]
		}
		line, _ := json.Marshal(row)
		b.Write(line)
		b.WriteByte('\n')
	}
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644)
	return dir
}

func cfg(preset, seed string) map[string]string {
	return map[string]string{"algo.preset": preset, "run.seed": seed, "env.name": "sokoban"}
}

func TestArmsAndTable(t *testing.T) {
	dirs := []string{
		fakeRun(t, cfg("GRPO", "1"), []float64{0.7, 0.8, 0.86}, nil),
		fakeRun(t, cfg("CAST", "1"), []float64{0.7, 0.9, 0.9}, nil),
		fakeRun(t, cfg("GRPO", "2"), []float64{0.7, 0.75, 0.8}, nil),
		fakeRun(t, cfg("CAST", "2"), []float64{0.7, 0.86, 0.92}, nil),
	}
	runs, err := LoadAll(dirs)
	if err != nil {
		t.Fatal(err)
	}
	arms := Arms(runs)
	if len(arms) != 2 || arms[0].Label != "algo.preset=GRPO" || arms[1].Label != "algo.preset=CAST" || len(arms[0].Runs) != 2 {
		t.Fatalf("arms %+v", arms)
	}
	if got := runs[0].StepsTo("val-env/success", 0.85); got != 20 {
		t.Errorf("StepsTo = %d, want 20", got)
	}
	if got := runs[2].StepsTo("val-env/success", 0.85); got != -1 {
		t.Errorf("StepsTo = %d, want -1", got)
	}
	if got := runs[1].CurveMean("val-env/success"); math.Abs(got-0.9) > 1e-12 {
		t.Errorf("CurveMean = %v, want 0.9 (step 0 excluded)", got)
	}
	if got := runs[0].SecondsPerStep(); got != 2 {
		t.Errorf("SecondsPerStep = %v, want (60 − 20)/20", got)
	}
	table := Table(arms, "val-env/success", 0.85)
	// GRPO final: 0.86 and 0.80: mean 0.83, s = 0.0424, t(1) = 12.706.
	want := "| algo.preset=GRPO | 2 | 0.700 | **" + FmtCI(0.83, 12.706*0.06/math.Sqrt2/math.Sqrt2) + "** | 0.860, 0.800 |"
	for _, w := range []string{want, "| 20, — | 2.00 |", "| algo.preset=CAST | 2 | 0.700 |", "| 10, 10 |"} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	curve := CurveTable(arms, "val-env/success", 10)
	if !strings.Contains(curve, "| 10 | "+FmtCI(0.775, 12.706*0.05/math.Sqrt2/math.Sqrt2)+" |") {
		t.Errorf("curve table:\n%s", curve)
	}
	if err := Plot(arms, "val-env/success", "test", filepath.Join(t.TempDir(), "p.png")); err != nil {
		t.Error(err)
	}
	one := Arms(runs[:1])
	if one[0].Label != "all" {
		t.Errorf("a single arm is labelled %q", one[0].Label)
	}
}

func TestSpearman(t *testing.T) {
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}); r != 1 {
		t.Errorf("monotone: %v", r)
	}
	if r := Spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}); r != -1 {
		t.Errorf("reversed: %v", r)
	}
	// Ties get average ranks: x ranks 1, 2.5, 2.5, 4; y ranks 1..4.
	// Pearson of (1, 2.5, 2.5, 4) and (1, 2, 3, 4) = 4.5/sqrt(4.5·5).
	if r := Spearman([]float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}); math.Abs(r-4.5/math.Sqrt(22.5)) > 1e-12 {
		t.Errorf("ties: %v", r)
	}
	if r := Spearman([]float64{1, 1, 1}, []float64{1, 2, 3}); !math.IsNaN(r) {
		t.Errorf("constant side: %v", r)
	}
}

func TestCorrelationsAndLoadErrors(t *testing.T) {
	var dirs []string
	for i := range 4 {
		s := float64(i) / 10
		dirs = append(dirs, fakeRun(t, cfg("GRPO", fmt.Sprint(i)), []float64{0.5, 0.6 + s, 0.6 + s},
			map[string][]float64{"collapse_first_turn_sample/retrieval_accuracy": {0.5, 0.9 - s, 0.5 + s}}))
	}
	runs, err := LoadAll(dirs)
	if err != nil {
		t.Fatal(err)
	}
	// Late = the last quarter (one value of three): 0.5 + s, rising with success.
	got := Correlations(runs, "val-env/success", DefaultDiagnostics)
	if !strings.Contains(got, "| collapse_first_turn_sample/retrieval_accuracy | +1.00 | 4 |") || strings.Contains(got, "actor/entropy") {
		t.Errorf("correlations:\n%s", got)
	}
	bad := fakeRun(t, cfg("GRPO", "9"), []float64{0.5}, nil)
	os.WriteFile(filepath.Join(bad, "summary.json"), []byte(`{"status":"interrupted"}`), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("an interrupted run: %v", err)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "finished run directory") {
		t.Errorf("an empty directory: %v", err)
	}
}

func TestGradientTable(t *testing.T) {
	dir := fakeRun(t, cfg("PPO", "1"), []float64{0.5, 0.6}, map[string][]float64{
		"grad/reward_std/q1": {0, 0.2}, "grad/task_norm/q1": {0, 0.1}, "grad/entropy_norm/q1": {0.05, 0.05}, "grad/kl_norm/q1": {0.01, 0.03},
		"grad/reward_std/q2": {2, 4}, "grad/task_norm/q2": {1, 3}, "grad/entropy_norm/q2": {0.05, 0.07}, "grad/kl_norm/q2": {0.01, 0.01},
	})
	runs, err := LoadAll([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	got := GradientTable(Arms(runs))
	for _, want := range []string{"| all | q1 | 0.100 | 0.0500 | 0.0500 | 0.0200 | 2 |", "| all | q2 | 3.000 | 2.0000 | 0.0600 | 0.0100 | 2 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("gradient table lacks %q:\n%s", want, got)
		}
	}
	if GradientTable(Arms(runs[:0])) != "" {
		t.Error("a table without measurements")
	}
}
