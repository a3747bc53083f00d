package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotWritesPNGs(t *testing.T) {
	dir := t.TempDir()
	lines := `{"step":0,"val-env/success":0.4,"val-env/random_success":0.18}
{"step":1,"train/success":0.45,"train/score":3.1,"actor/entropy":0.9,"rollout/filter_kept_ratio":0.5,"collapse_first_turn_sample/mi_estimate":0.7,"collapse_first_turn_sample/retrieval_accuracy":0.6,"collapse_first_turn_sample/retrieval_chance_level":0.125}
{"step":2,"train/success":0.5,"train/score":null,"actor/entropy":0.85,"rollout/filter_kept_ratio":0.62,"val-env/success":0.47}
`
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "plot", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	files := strings.Fields(out)
	if len(files) != len(figures) {
		t.Fatalf("wrote %v, want %d figures", files, len(figures))
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
			t.Errorf("%s: %v too small", f, b)
		}
	}
	if code, _, errOut := runCLI(t, "", "plot", t.TempDir()); code == 0 || !strings.Contains(errOut, "metrics.jsonl") {
		t.Errorf("empty run dir: exit %d, %q", code, errOut)
	}
}
