package frozenlake

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseMap: ParseMap never panics, and whatever it accepts is a
// consistent, solvable map whose String and Key read back to the same map.
func FuzzParseMap(f *testing.F) {
	for _, s := range []string{classic, "P___\n_O_O\n___O\nO__G", "SG", "SFFF/FHFH/FFFH/HFFG",
		"SFF\nFG", "S_\n_G", "SHG", "", "√X\nPG", "S\r\nG", "GS//", "\xff\xfeS"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ParseMap(text)
		if err != nil {
			if m != nil {
				t.Fatal("map returned with an error")
			}
			return
		}
		if m.Rows()*m.Cols() != len(m.hole) || m.IsHole(m.Start()) || m.IsHole(m.Goal()) || m.Start() == m.Goal() {
			t.Fatalf("inconsistent map from %q", text)
		}
		if _, ok := m.ShortestPath(m.Start()); !ok {
			t.Fatalf("accepted an unsolvable map %q", text)
		}
		for _, again := range []string{m.String(), m.Key()} {
			m2, err := ParseMap(again)
			if err != nil || m2.Key() != m.Key() {
				t.Fatalf("round trip of %q via %q: %v", text, again, err)
			}
		}
	})
}

// FuzzStep: any sequence of action strings on any seed never panics, keeps
// the player on the board and rewards exactly the steps that reach the goal.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), 0.8, "Left|Down|Right|Up")
	f.Add(uint64(42), 1.0, "down| DOWN |right|jump||up")
	f.Add(uint64(7), 0.0, "\x00|\xff|Up Up|")
	f.Fuzz(func(t *testing.T, seed uint64, s float64, actions string) {
		cfg := DefaultConfig()
		cfg.MaxSteps = 20
		if s >= 0 && s <= 1 {
			cfg.SuccessRate = s
		}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Reset(seed); err != nil {
			t.Fatal(err)
		}
		for _, a := range strings.Split(actions, "|") {
			if e.Done() {
				if _, err := e.Step(a); err == nil {
					t.Fatal("step after done accepted")
				}
				return
			}
			res, err := e.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			m := e.Map()
			if !m.InBounds(e.Position()) || !utf8.ValidString(res.Observation) {
				t.Fatalf("bad state after %q", a)
			}
			if (res.Reward == 1) != res.Info.Success || res.Info.Success != (e.Position() == m.Goal()) {
				t.Fatalf("reward %v success %v at %v", res.Reward, res.Info.Success, e.Position())
			}
			if res.Info.Success || m.IsHole(e.Position()) {
				if !res.Done {
					t.Fatal("terminal tile without done")
				}
			}
			if _, err := e.Advise(2, nil); err != nil && !res.Done {
				t.Fatalf("Advise: %v", err)
			}
		}
	})
}
