package frozenlake

import (
	"errors"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestCostToGo(t *testing.T) {
	e := newEnv(t, nil)
	if _, _, err := e.CostToGo(); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("CostToGo before Reset: %v", err)
	}
	// S F F F / F H F H / F F F H / H F F G: the goal is 6 moves away.
	if _, err := e.LoadLevel(classic); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := e.CostToGo(); n != 6 || !ok || err != nil {
		t.Fatalf("CostToGo at the start = %d, %v, %v; want 6", n, ok, err)
	}
	if e.StateKey() != "0,0" {
		t.Errorf("StateKey = %q, want 0,0", e.StateKey())
	}
	// Down, Down: (2, 0), 4 moves left; Right then to (2, 1): 3.
	for i, c := range []struct {
		action string
		want   int
	}{{"Down", 5}, {"Down", 4}, {"Right", 3}, {"Left", 4}} {
		if _, err := e.Step(c.action); err != nil {
			t.Fatal(err)
		}
		if n, ok, err := e.CostToGo(); n != c.want || !ok || err != nil {
			t.Fatalf("move %d (%s): CostToGo = %d, %v, %v; want %d", i, c.action, n, ok, err, c.want)
		}
	}
	// Back up and into the hole at (1, 1).
	for _, a := range []string{"Up", "Right"} {
		if _, err := e.Step(a); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := e.CostToGo(); ok || err != nil {
		t.Errorf("in a hole: solvable %v, err %v", ok, err)
	}
	if e.StateKey() != "1,1" {
		t.Errorf("StateKey in the hole = %q, want 1,1", e.StateKey())
	}
}

// TestCostToGoFollowsTheExpert checks on generated maps that following
// the shortest route lowers the cost by one per move, to 0 at the goal.
func TestCostToGoFollowsTheExpert(t *testing.T) {
	e := newEnv(t, nil)
	for seed := range uint64(200) {
		if _, err := e.Reset(seed); err != nil {
			t.Fatal(err)
		}
		n, ok, err := e.CostToGo()
		if err != nil || !ok {
			t.Fatalf("seed %d: generated map unsolvable: %v %v", seed, ok, err)
		}
		for !e.Done() {
			adv, err := e.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Step(adv.Actions[0]); err != nil {
				t.Fatal(err)
			}
			m, _, _ := e.CostToGo()
			if m != n-1 {
				t.Fatalf("seed %d: cost %d after a move from %d", seed, m, n)
			}
			n = m
		}
		if n != 0 {
			t.Fatalf("seed %d: episode ended %d moves from the goal", seed, n)
		}
	}
}

func TestCheckRationale(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.LoadLevel(classic); err != nil {
		t.Fatal(err)
	}
	adv, err := e.Advise(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.CheckRationale(adv.Brief); !got["player"] || !got["goal"] || len(got) != 2 {
		t.Errorf("the expert's brief %q: %v", adv.Brief, got)
	}
	if got := e.CheckRationale("P0,0 G3,2"); !got["player"] || got["goal"] {
		t.Errorf("wrong goal: %v", got)
	}
}
