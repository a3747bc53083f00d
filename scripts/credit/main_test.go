package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMeanCI(t *testing.T) {
	m, h := meanCI([]float64{0.7, 0.8, 0.9})
	// sd = 0.1, n = 3: 4.303 · 0.1/√3.
	if math.Abs(m-0.8) > 1e-12 || math.Abs(h-4.303*0.1/math.Sqrt(3)) > 1e-12 {
		t.Errorf("meanCI = %v ± %v", m, h)
	}
	if m, h := meanCI([]float64{0.5}); m != 0.5 || !math.IsNaN(h) {
		t.Errorf("one seed: %v ± %v, want 0.5 and no interval", m, h)
	}
}

func fakeArm(name string, curves ...[]float64) arm {
	a := arm{name: name}
	for _, c := range curves {
		r := runResult{wall: 60, rlTime: 40, rlSteps: 20, episodes: 256}
		for i, v := range c {
			r.steps = append(r.steps, 10*i)
			r.success = append(r.success, v)
		}
		a.runs = append(a.runs, r)
	}
	return a
}

func TestReport(t *testing.T) {
	arms := []arm{
		fakeArm("GRPO", []float64{0.7, 0.8, 0.86}, []float64{0.7, 0.75, 0.8}),
		fakeArm("CAST", []float64{0.7, 0.9, 0.9}, []float64{0.7, 0.86, 0.92}),
	}
	if got := arms[0].runs[0].stepsTo(0.85); got != 20 {
		t.Errorf("stepsTo = %d, want 20", got)
	}
	if got := arms[0].runs[1].stepsTo(0.85); got != -1 {
		t.Errorf("stepsTo = %d, want -1 (never)", got)
	}
	if got := arms[1].runs[0].areaMean(); math.Abs(got-0.9) > 1e-12 {
		t.Errorf("areaMean = %v, want 0.9 (step 0 excluded)", got)
	}
	o := options{config: "configs/sokoban.yaml", arms: []string{"GRPO", "CAST"}, seeds: 2, threshold: 0.85}
	text := report(arms, o, "go run ./scripts/credit -seeds 2", "docs/results/credit-sokoban.png", "docs/results.md")
	m, h := meanCI([]float64{0.86, 0.8})
	for _, want := range []string{
		beginMarker, endMarker, "`go run ./scripts/credit -seeds 2`", "256 episodes per point", "took 4m0s in all",
		"| GRPO | 0.700 | **" + fmtCI(m, h) + "** | 0.860, 0.800 |", "| 20, — | 2.00 |",
		"| CAST | 0.700 |", "| 10, 10 |", "](results/credit-sokoban.png)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.md")
	if err := os.WriteFile(file, []byte("# Results\n\nintro"), 0o644); err != nil {
		t.Fatal(err)
	}
	one := beginMarker + "\nfirst\n" + endMarker
	if err := replaceSection(file, one); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(must(os.ReadFile(file)), "\n## After\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(file, beginMarker+"\nsecond\n"+endMarker); err != nil {
		t.Fatal(err)
	}
	got := string(must(os.ReadFile(file)))
	if want := "# Results\n\nintro\n\n" + beginMarker + "\nsecond\n" + endMarker + "\n\n## After\n"; got != want {
		t.Errorf("file is\n%q\nwant\n%q", got, want)
	}
	if err := os.WriteFile(file, []byte(beginMarker+"\nno end"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(file, one); err == nil {
		t.Error("unbalanced markers accepted")
	}
}

func TestReadRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("summary.json", `{"status":"running"}`)
	write("metrics.jsonl", "")
	if _, err := readRun(dir); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("unfinished run: %v", err)
	}
	write("summary.json", `{"status":"finished","steps":2,"wall_time_s":30,"warm_start_time_s":10,"validation_levels":4,"validation_samples":1}`)
	write("metrics.jsonl", `{"step":0,"val-env/success":0.5}
{"step":1,"train/success":0.2}
{"step":2,"val-env/success":0.75}
`)
	r, err := readRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.steps) != 2 || r.steps[1] != 2 || r.success[1] != 0.75 || r.rlTime != 20 || r.episodes != 4 {
		t.Errorf("readRun = %+v", r)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestParseArm(t *testing.T) {
	label, preset, sets, err := parseArm("CAST-nofilter=CAST+filter.value=1+filter.include_zero=true")
	if err != nil || label != "CAST-nofilter" || preset != "CAST" || strings.Join(sets, " ") != "filter.value=1 filter.include_zero=true" {
		t.Errorf("parseArm = %q %q %q %v", label, preset, sets, err)
	}
	if label, preset, sets, err := parseArm("GiGPO"); err != nil || label != "GiGPO" || preset != "GiGPO" || sets != nil {
		t.Errorf("parseArm(GiGPO) = %q %q %q %v", label, preset, sets, err)
	}
	for _, bad := range []string{"x=CAST+novalue", "=CAST", "a/b=CAST", "x="} {
		if _, _, _, err := parseArm(bad); err == nil {
			t.Errorf("parseArm(%q) accepted", bad)
		}
	}
}
