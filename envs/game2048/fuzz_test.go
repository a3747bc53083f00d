package game2048

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseAction: the parser never panics and accepts exactly the four
// names, in any case, with surrounding whitespace.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"Up", " down ", "LEFT", "Right\n", "0", "", "Up || Left", "upp", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseAction(s)
		if !ok {
			return
		}
		if !strings.EqualFold(strings.TrimSpace(s), a.String()) {
			t.Fatalf("ParseAction(%q) = %v", s, a)
		}
		if b, ok := ParseAction(a.String()); !ok || b != a {
			t.Fatalf("%v does not read back", a)
		}
	})
}

// FuzzParseBoard: ParseBoard never panics, and what it accepts is square,
// holds powers of two and reads back from its String.
func FuzzParseBoard(f *testing.F) {
	for _, s := range []string{"2 .\n. 4", "[0, 2]\n[4, 8]", "2 2 2/4 4 4/. . .", "", "2", "3 .\n. .", "2,,2\n2 2", "1024 . . .\n. . . .\n. . . .\n. . . 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBoard(s)
		if err != nil {
			return
		}
		if b.Size() < MinSize || b.Size() > MaxSize {
			t.Fatalf("size %d from %q", b.Size(), s)
		}
		again, err := ParseBoard(b.String())
		if err != nil || again != b {
			t.Fatalf("%q read back as %v (%v)", b.String(), again.String(), err)
		}
		// Any move keeps the tile sum.
		for a := range numActions {
			next, merged, moved := b.Move(a)
			if sum(&next) != sum(&b) || (!moved && merged != 0) {
				t.Fatalf("%v on %q: sum %d -> %d, merged %d", a, b.String(), sum(&b), sum(&next), merged)
			}
		}
	})
}

func sum(b *Board) uint64 {
	var s uint64
	for r := range b.n {
		for c := range b.n {
			s += b.Tile(r, c)
		}
	}
	return s
}

// FuzzStep: any action lines on any seed never panic; invalid steps
// change nothing, valid ones add exactly one new tile of 2 or 4, and
// errors come only after the end.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), "Up|Left|Down|Right")
	f.Add(uint64(9), "up|UP| left |x||Right|right|0|3")
	f.Add(uint64(3), "\x00|\xff|Up Up")
	f.Fuzz(func(t *testing.T, seed uint64, script string) {
		e := newEnv(t, func(c *Config) { c.MaxSteps = 30; c.Target = 64 })
		e.Reset(seed)
		for _, a := range strings.Split(script, "|") {
			before, steps := e.Board(), e.Steps()
			res, err := e.Step(a)
			if e.Done() && err == nil && !res.Done {
				t.Fatal("done without a final step")
			}
			if err != nil {
				if !e.Done() {
					t.Fatalf("Step(%q): %v", a, err)
				}
				return
			}
			after := e.Board()
			if !utf8.ValidString(res.Observation) || res.Observation != e.Render() {
				t.Fatal("observation differs from Render")
			}
			if !res.Info.ActionValid {
				if after != before || e.Steps() != steps || res.Reward != 0 {
					t.Fatalf("invalid %q changed the state", a)
				}
				continue
			}
			if d := sum(&after) - sum(&before); d != 2 && d != 4 {
				t.Fatalf("%q added %d", a, d)
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
