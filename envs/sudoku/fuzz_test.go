package sudoku

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseAction: the parser never panics, and what it accepts reads back
// from its canonical form and from RAGEN's "row,col,value".
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"place 3 at row 2 col 4", "2,4,3", "(2,4,3)", "3 at 2,4", "place 3 at (2,4)", "2 4 3",
		"", "place", "row 2 col 4", "place 99 at row 99 col 99", "PLACE 1 AT ROW 1, COLUMN 1", "\xff1,1,1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParseAction(s)
		if !ok {
			if p != (Placement{}) {
				t.Fatalf("failed parse returned %+v", p)
			}
			return
		}
		if p.Row < 0 || p.Row > 99 || p.Col < 0 || p.Col > 99 || p.Value < 0 || p.Value > 99 {
			t.Fatalf("ParseAction(%q) = %+v", s, p)
		}
		for _, again := range []string{p.String(), strings.Join([]string{itoa(p.Row), itoa(p.Col), itoa(p.Value)}, ",")} {
			if q, ok := ParseAction(again); !ok || q != p {
				t.Fatalf("%q: %+v does not read back from %q (%+v)", s, p, again, q)
			}
		}
	})
}

func itoa(v int) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return string(rune('0'+v/10)) + string(rune('0'+v%10))
}

// FuzzParseGrid: ParseGrid never panics, and an accepted grid has no
// repeated digit and reads back from its String.
func FuzzParseGrid(f *testing.F) {
	for _, s := range []string{puzzle, "1234/3412/2143/4321", "1 2 | . .\n--+--\n. . | . .\n....\n....", "", "1\n2", "11..\n....\n....\n...."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGrid(s)
		if err != nil {
			return
		}
		if !g.conflictFree() || (g.Size() != 4 && g.Size() != 9) {
			t.Fatalf("accepted %q", s)
		}
		again, err := ParseGrid(g.String())
		if err != nil || again != g {
			t.Fatalf("%q does not read back: %v", g.String(), err)
		}
	})
}

// FuzzStep: any action lines on any seed never panic; invalid steps change
// nothing; a valid one fills exactly one cell; errors come only after the
// end.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), "1,1,1|place 2 at row 1 col 2|2 2 2|(3,3,3)")
	f.Add(uint64(5), "4,4,4|4,4,4|1,2,3|x||9,9,9")
	f.Add(uint64(2), "\x00|\xff|place 0 at row 0 col 0")
	e := newEnv(f, func(c *Config) { c.Givens = 6 })
	f.Fuzz(func(t *testing.T, seed uint64, script string) {
		e.Reset(seed % 64)
		for _, a := range strings.Split(script, "|") {
			before, steps := e.grid, e.steps
			res, err := e.Step(a)
			if err != nil {
				t.Fatalf("Step(%q): %v", a, err)
			}
			if !utf8.ValidString(res.Observation) || res.Observation != e.Render() {
				t.Fatal("observation differs from Render")
			}
			if !res.Info.ActionValid {
				if e.grid != before || e.steps != steps || res.Reward != 0 {
					t.Fatalf("invalid %q changed the state", a)
				}
				continue
			}
			if before.Empty()-e.grid.Empty() != 1 || !e.grid.conflictFree() {
				t.Fatalf("%q did not fill one cell by the rules", a)
			}
			if res.Done {
				if _, err := e.Step(a); err == nil {
					t.Fatal("step after the end accepted")
				}
				return
			}
		}
	})
}
