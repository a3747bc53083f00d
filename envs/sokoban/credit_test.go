package sokoban

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// TestCostToGoFollowsTheExpert checks, on generated levels of one and two
// boxes, that the cost-to-go is the optimal solution length and falls by
// exactly one with every move of the expert's plan, down to 0 when solved.
func TestCostToGoFollowsTheExpert(t *testing.T) {
	for _, c := range []struct{ boxes, n int }{{1, 100}, {2, 20}} {
		e := newEnv(t, func(cfg *Config) { cfg.DimX, cfg.DimY, cfg.NumBoxes = 7, 7, c.boxes })
		for seed := range uint64(c.n) {
			if _, err := e.Reset(seed); err != nil {
				t.Fatal(err)
			}
			opt, err := Solve(e.Level(), DefaultMaxStates)
			if err != nil {
				t.Fatal(err)
			}
			n, ok, err := e.CostToGo()
			if err != nil || !ok || n != len(opt) {
				t.Fatalf("seed %d: CostToGo = %d, %v, %v; want %d", seed, n, ok, err, len(opt))
			}
			for _, a := range opt {
				before := e.StateKey()
				if _, err := e.Step(a.String()); err != nil {
					t.Fatal(err)
				}
				if e.StateKey() == before {
					t.Fatalf("seed %d: %v left the state key at %q", seed, a, before)
				}
				m, ok, err := e.CostToGo()
				if err != nil || !ok || m != n-1 {
					t.Fatalf("seed %d: after %v CostToGo = %d, %v, %v; want %d", seed, a, m, ok, err, n-1)
				}
				n = m
			}
			if !e.Done() || n != 0 {
				t.Fatalf("seed %d: plan ended with cost %d, done %v", seed, n, e.Done())
			}
		}
	}
}

func TestCostToGoDeadlockAndStateKey(t *testing.T) {
	e := newEnv(t, nil)
	if _, _, err := e.CostToGo(); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("CostToGo before Reset: %v", err)
	}
	if e.StateKey() != "" {
		t.Errorf("StateKey before Reset = %q", e.StateKey())
	}
	const room = "#######\n#O_PX_#\n#_____#\n#######"
	if _, err := e.LoadLevel(room); err != nil {
		t.Fatal(err)
	}
	start := e.StateKey()
	n, ok, err := e.CostToGo()
	opt, _ := Solve(e.Level(), DefaultMaxStates)
	if err != nil || !ok || n != len(opt) {
		t.Fatalf("CostToGo = %d, %v, %v; want %d", n, ok, err, len(opt))
	}
	// Down then Up returns to the same state: the same key.
	for _, a := range []string{"Down", "Up"} {
		if _, err := e.Step(a); err != nil {
			t.Fatal(err)
		}
	}
	if e.StateKey() != start {
		t.Errorf("key %q after Down, Up; want %q", e.StateKey(), start)
	}
	// Pushing the box against the right wall of the corridor: no move can
	// bring it back.
	if _, err := e.Step("Right"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.CostToGo(); ok || err != nil {
		t.Errorf("after the deadlock: solvable %v, err %v", ok, err)
	}
}

func TestCheckRationale(t *testing.T) {
	e := newEnv(t, nil)
	if e.CheckRationale("P1,1") != nil {
		t.Error("checked a rationale before Reset")
	}
	if _, err := e.LoadLevel("#######\n#O_PX_#\n#_____#\n#######"); err != nil {
		t.Fatal(err)
	}
	adv, err := e.Advise(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want map[string]bool
	}{
		{adv.Brief, map[string]bool{"player": true, "boxes": true, "targets": true}},
		{"P1,3 X1,4 O1,1", map[string]bool{"player": true, "boxes": true, "targets": true}},
		{"O1,1 X1,4 P1,3 then push left", map[string]bool{"player": true, "boxes": true, "targets": true}},
		// The failure mode of a collapsing policy: the box at the player's cell.
		{"P1,3 X1,3 O1", map[string]bool{"player": true, "boxes": false, "targets": false}},
		{"X1,4 X1,4 O1,1 P1,3", map[string]bool{"player": true, "boxes": false, "targets": true}},
		{"push the box left", map[string]bool{"player": false, "boxes": false, "targets": false}},
	} {
		got := e.CheckRationale(c.text)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
	}
}
