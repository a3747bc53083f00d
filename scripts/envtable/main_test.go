package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeTableKeepsOtherRows: measuring one config again replaces its
// row and keeps the others, sorted by name, and the text around the
// markers is left alone.
func TestReadmeTableKeepsOtherRows(t *testing.T) {
	file := filepath.Join(t.TempDir(), "README.md")
	before := "intro\n" + tableText(3, []string{
		"| [bandit](configs/bandit.yaml) | 0.5 | 0.0 | 0.0 | 400 × 16 | 58s | 50s |",
		"| [webshop](configs/webshop.yaml) | 0.0 | 0.1 | 0.1 | 100 × 256 | 4m | 5m |",
	}) + "\noutro\n"
	if err := os.WriteFile(file, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := readTable(file)
	if err != nil || len(old) != 2 {
		t.Fatalf("rows %q, %v", old, err)
	}
	fresh := []string{
		"| [codeexec](configs/codeexec.yaml) | n/a | 0.867 | 0.871 | 400 × 256 | 2m | 1m |",
		"| [webshop](configs/webshop.yaml) | 0.0 | 0.2 | 0.3 | 100 × 256 | 4m | 5m |",
	}
	if err := replaceTable(file, tableText(3, mergeRows(old, fresh))); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	got := string(b)
	rows, _ := readTable(file)
	var names []string
	for _, r := range rows {
		names = append(names, rowName(r))
	}
	if strings.Join(names, ",") != "bandit,codeexec,webshop" || !strings.Contains(got, "| 0.2 | 0.3 |") ||
		strings.Contains(got, "| 0.1 | 0.1 |") || !strings.HasPrefix(got, "intro\n") || !strings.HasSuffix(got, "\noutro\n") {
		t.Errorf("table after merging:\n%s", got)
	}
	if err := replaceTable(filepath.Join(t.TempDir(), "none.md"), ""); err == nil {
		t.Error("a missing file was not an error")
	}
	os.WriteFile(file, []byte("no markers"), 0o644)
	if _, err := readTable(file); err == nil {
		t.Error("a file without markers was not an error")
	}
}
