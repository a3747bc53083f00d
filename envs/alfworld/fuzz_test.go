package alfworld

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseCommand: the parser never panics, and what it accepts reads
// back from its canonical form with names of a kind and a number.
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"go to fridge 1", "take apple 1 from countertop 2", "put apple 1 in/on fridge 1", "put a 1 on b 2",
		"clean mug 1 with sinkbasin 1", "use desklamp 1", "look", "inventory", "examine cd 1", "go to", "take 1 apple", "put x 1 in/on",
		"GO TO FRIDGE 1", "go\tto fridge\n1", "\xff", "open fridge 01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := ParseCommand(s)
		if !ok {
			if c != (Command{}) {
				t.Fatalf("failed parse returned %+v", c)
			}
			return
		}
		for _, name := range []string{c.Object, c.Target} {
			if name == "" {
				continue
			}
			kind, num, found := strings.Cut(name, " ")
			if !found || !isKind(kind) || !isNumber(num) {
				t.Fatalf("ParseCommand(%q) gave name %q", s, name)
			}
		}
		again, ok := ParseCommand(c.String())
		if !ok || again != c {
			t.Fatalf("%q: %+v does not read back from %q", s, c, c.String())
		}
	})
}

// FuzzStep: any action lines on any seed and configuration never panic;
// invalid steps change nothing, valid ones appear in the admissible list
// (in canonical form), and errors come only after the end.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), false, "go to countertop 1|take apple 1 from countertop 1|look|inventory")
	f.Add(uint64(3), true, "go to fridge 1|open fridge 1|close fridge 1|examine fridge 1|put x 1 in y 1")
	f.Add(uint64(8), true, "\x00|go to|use desklamp 1|go to desk 1|use desklamp 1")
	full := newEnv(f, nil)
	small := newEnv(f, func(c *Config) { c.Scene = SceneSmall; c.ObservationFormat = FormatCompact })
	f.Fuzz(func(t *testing.T, seed uint64, compact bool, script string) {
		e := full
		if compact {
			e = small
		}
		e.Reset(seed)
		for _, a := range strings.Split(script, "|") {
			before, key, steps := e.Render(), e.StateKey(), e.steps
			admissible := e.Admissible()
			res, err := e.Step(a)
			if err != nil {
				t.Fatalf("Step(%q): %v", a, err)
			}
			if !utf8.ValidString(res.Observation) || res.Observation != e.Render() {
				t.Fatal("observation differs from Render")
			}
			if !res.Info.ActionValid {
				if res.Observation != before || e.StateKey() != key || e.steps != steps || res.Reward != 0 {
					t.Fatalf("invalid %q changed the state", a)
				}
				continue
			}
			c, _ := ParseCommand(a)
			if !contains(admissible, c.String()) && !(c.Verb == Put && contains(admissible, "put "+c.Object+" in/on "+c.Target)) {
				t.Fatalf("%q was valid but not admissible: %v", a, admissible)
			}
			if res.Done {
				if _, err := e.Step("look"); err == nil {
					t.Fatal("step after the end accepted")
				}
				return
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
