package study

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseArm(t *testing.T) {
	a, err := ParseArm("CAST-nofilter=CAST+filter.value=1+filter.include_zero=true")
	if err != nil || a.Label != "CAST-nofilter" || a.Preset != "CAST" || strings.Join(a.Sets, " ") != "filter.value=1 filter.include_zero=true" {
		t.Errorf("ParseArm = %+v %v", a, err)
	}
	if a.String() != "CAST-nofilter=CAST+filter.value=1+filter.include_zero=true" {
		t.Errorf("String = %q", a.String())
	}
	if a, err := ParseArm("GiGPO"); err != nil || a.Label != "GiGPO" || a.Preset != "GiGPO" || a.Sets != nil || a.String() != "GiGPO" {
		t.Errorf("ParseArm(GiGPO) = %+v %v", a, err)
	}
	for _, bad := range []string{"x=CAST+novalue", "=CAST", "a/b=CAST", "x="} {
		if _, err := ParseArm(bad); err == nil {
			t.Errorf("ParseArm(%q) accepted", bad)
		}
	}
}

func TestReplaceSection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.md")
	if err := os.WriteFile(file, []byte("# Results\n\nintro"), 0o644); err != nil {
		t.Fatal(err)
	}
	section := func(body string) string {
		return BeginMarker("k", "go run ./x") + "\n" + body + "\n" + EndMarker("k")
	}
	if err := ReplaceSection(file, "k", "go run ./x", section("first")); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	if err := os.WriteFile(file, append(raw, "\n## After\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another study's section is left alone.
	if err := ReplaceSection(file, "other", "go run ./y", BeginMarker("other", "go run ./y")+"\nO\n"+EndMarker("other")); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceSection(file, "k", "go run ./x", section("second")); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(file)
	want := "# Results\n\nintro\n\n" + section("second") + "\n\n## After\n\n" + BeginMarker("other", "go run ./y") + "\nO\n" + EndMarker("other") + "\n"
	if string(raw) != want {
		t.Errorf("file is\n%q\nwant\n%q", raw, want)
	}
	if err := os.WriteFile(file, []byte(BeginMarker("k", "go run ./x")+"\nno end"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceSection(file, "k", "go run ./x", section("x")); err == nil {
		t.Error("unbalanced markers accepted")
	}
}

func TestRunDirsAndKeys(t *testing.T) {
	one := Study{Name: "credit", Configs: []string{"configs/sokoban.yaml"}, Out: "runs/credit"}
	two := Study{Name: "filtering", Configs: []string{"configs/sokoban.yaml", "configs/frozenlake.yaml"}, Out: "runs/filtering"}
	a := Arm{Label: "GRPO", Preset: "GRPO"}
	if d := one.runDir(one.Configs[0], a, 2); d != filepath.Join("runs/credit", "GRPO-seed2") {
		t.Errorf("one config: %s", d)
	}
	if d := two.runDir(two.Configs[1], a, 1); d != filepath.Join("runs/filtering", "frozenlake", "GRPO-seed1") {
		t.Errorf("two configs: %s", d)
	}
	if one.key(one.Configs[0]) != "credit" || two.key(two.Configs[1]) != "filtering:frozenlake" {
		t.Errorf("keys %q %q", one.key(one.Configs[0]), two.key(two.Configs[1]))
	}
	if err := (&Study{Seeds: 0}).Run(context.Background()); err == nil {
		t.Error("zero seeds accepted")
	}
	if err := (&Study{Seeds: 1, Fresh: true, ReportOnly: true}).Run(context.Background()); err == nil {
		t.Error("-fresh with -report accepted")
	}
}

// TestQuickSectionsAreTheirOwn checks that a quick version writes
// sections of its own rather than over the full results.
func TestQuickSectionsAreTheirOwn(t *testing.T) {
	s := Study{Name: "f", Command: "go run ./scripts/f", Configs: []string{"configs/a.yaml", "configs/b.yaml"}}
	if k := s.key("configs/a.yaml"); k != "f:a" {
		t.Errorf("full key %q", k)
	}
	s.Quick = true
	if k, c := s.key("configs/a.yaml"), s.markerCommand(); k != "f-quick:a" || c != "go run ./scripts/f -quick" {
		t.Errorf("quick key %q, command %q", k, c)
	}
}

// TestArmLimitedToConfigs checks that an arm limited to some configs runs,
// and is reported and reproduced, on those alone.
func TestArmLimitedToConfigs(t *testing.T) {
	s := Study{Name: "f", Command: "go run ./scripts/f", Configs: []string{"configs/a.yaml", "configs/b.yaml"}, Seeds: 1,
		Arms: []Arm{{Label: "GRPO", Preset: "GRPO"}, {Label: "PPO", Preset: "PPO", Configs: []string{"configs/a.yaml"}}}}
	if got := s.armsFor("configs/a.yaml"); len(got) != 2 {
		t.Errorf("config a: %d arms, want 2", len(got))
	}
	if got := s.armsFor("configs/b.yaml"); len(got) != 1 || got[0].Label != "GRPO" {
		t.Errorf("config b: arms %v, want GRPO alone", got)
	}
	// The string form carries the limit, so the printed command
	// reproduces the study exactly.
	c := s.commandLine()
	if !strings.Contains(c, "-arms 'GRPO,PPO=PPO+configs=configs/a.yaml'") {
		t.Errorf("command %q", c)
	}
	back, err := parseArms(joinArms(s.Arms))
	if err != nil || !slices.EqualFunc(back, s.Arms, func(x, y Arm) bool {
		return x.String() == y.String() && slices.Equal(x.Configs, y.Configs) && slices.Equal(x.Sets, y.Sets)
	}) {
		t.Errorf("arms %v do not survive their string form: %v, %v", s.Arms, back, err)
	}
	two, err := ParseArm("X=PPO+algo.lr=1+configs=configs/a.yaml;configs/b.yaml")
	if err != nil || !slices.Equal(two.Configs, []string{"configs/a.yaml", "configs/b.yaml"}) || !slices.Equal(two.Sets, []string{"algo.lr=1"}) {
		t.Errorf("ParseArm: %+v, %v", two, err)
	}
}
