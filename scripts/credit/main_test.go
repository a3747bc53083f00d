package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
