package sokoban

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// FuzzParseLevel checks that ParseLevel never panics and that whatever it
// accepts is a well-formed level that reads back from its own rendering.
func FuzzParseLevel(f *testing.F) {
	for _, s := range []string{
		golden,
		"#######\n#P_X_O#\n#######",
		"  #####\n###   #\n#.@$  #\n### $.#\n  #####",
		"#####\n#@$ #\n#####",
		"######\n#PXOP#\n######",
		"#####\n#P_XO\n#####",
		"#\n##\n#P",
		"",
		"√√√",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		l, err := ParseLevel(text)
		if err != nil {
			if l != nil {
				t.Fatal("level and error both returned")
			}
			return
		}
		if l.NumBoxes() < 1 || l.NumBoxes() > MaxBoxes || len(l.Targets()) != l.NumBoxes() {
			t.Fatalf("%d boxes, %d targets", l.NumBoxes(), len(l.Targets()))
		}
		if l.IsWall(l.Player()) {
			t.Fatal("player in a wall")
		}
		back, err := ParseLevel(l.Key())
		if err != nil || back.Key() != l.Key() {
			t.Fatalf("key does not read back (%v):\n%s", err, l.Key())
		}
		if xsb, err := ParseLevel(l.XSB()); err != nil || xsb.Key() != l.Key() {
			t.Fatalf("XSB does not read back (%v):\n%s", err, l.XSB())
		}
	})
}

// FuzzStep plays "|"-separated action strings on a generated level: an
// action that is not a move must be an invalid step that changes nothing;
// a move must count one step.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), "Up|down| LEFT |jump||Right|up up|\tright\n")
	f.Add(uint64(7), "Left|Left|Left|Up|Up|Right|Down|Down")
	f.Add(uint64(3), "\x00|<answer>Up</answer>|1|U|Upp")
	f.Fuzz(func(t *testing.T, seed uint64, script string) {
		e, err := New(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Reset(seed % 1000); err != nil {
			t.Fatal(err)
		}
		for _, a := range strings.Split(script, "|") {
			before, steps, done := e.Render(), e.Steps(), e.Done()
			res, err := e.Step(a)
			if done {
				if !errors.Is(err, envs.ErrEpisodeDone) {
					t.Fatalf("step after the end: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := ParseAction(a); !ok {
				if res.Info.ActionValid || res.Reward != 0 || res.Done || res.Observation != before || e.Steps() != steps {
					t.Fatalf("invalid action %q changed something: %+v", a, res)
				}
				continue
			}
			if !res.Info.ActionValid || e.Steps() != steps+1 || (res.Observation != before) != res.Info.ActionEffective {
				t.Fatalf("move %q: %+v", a, res)
			}
		}
	})
}
