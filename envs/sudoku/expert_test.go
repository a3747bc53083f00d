package sudoku

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestAdvise(t *testing.T) {
	e := loaded(t, nil)
	obs := e.Render()
	adv, err := e.Advise(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(adv.Actions) != 1 || adv.Actions[0] != "place 2 at row 1 col 2" || adv.Brief != "(1,2)=2" {
		t.Fatalf("advice %+v", adv)
	}
	if want := "Row 1 has 1, column 2 has 3, 4 and the box has 1, 4, so only 2 fits at (1,2)."; adv.Rationale != want {
		t.Fatalf("rationale %q, want %q", adv.Rationale, want)
	}
	if e.Render() != obs || e.Steps() != 0 {
		t.Fatal("Advise changed the state")
	}
	all, _ := e.Advise(0, nil)
	if len(all.Actions) != 9 || strings.Count(all.Brief, "=") != 9 {
		t.Fatalf("whole plan %+v", all)
	}
	total := 0.0
	for _, a := range all.Actions {
		total += mustStep(t, e, a).Reward
	}
	if !e.Done() || total != 9+10 {
		t.Fatalf("plan solved %v with return %v", e.Done(), total)
	}

	e = loaded(t, nil)
	rng := envs.NewRand(3, 4)
	seen := map[string]bool{}
	for range 60 {
		a, _ := e.Advise(1, rng)
		if !strings.Contains(a.Rationale, "(1,2)") || !strings.Contains(a.Rationale, "2") {
			t.Fatalf("rationale %q", a.Rationale)
		}
		seen[a.Rationale] = true
	}
	if len(seen) != 3 {
		t.Fatalf("%d phrasings", len(seen))
	}

	// After a wrong digit the expert still names a legal placement.
	mustStep(t, e, "place 4 at row 1 col 3")
	adv, err = e.Advise(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(adv.Rationale, "cannot be solved") || !mustStep(t, e, adv.Actions[0]).Info.ActionValid {
		t.Fatalf("off-track advice %+v", adv)
	}
}

// TestExpertSolves: the expert solves generated puzzles of every size and
// difficulty with a correct digit at every step, and on 9×9 it needs
// hidden singles and, on hard puzzles, the solution at the most
// constrained cell.
func TestExpertSolves(t *testing.T) {
	kinds := map[deductionKind]int{}
	for _, tc := range []struct {
		size  int
		diff  string
		seeds uint64
	}{{4, Easy, 100}, {4, Medium, 100}, {4, Hard, 100}, {9, Easy, 10}, {9, Medium, 10}, {9, Hard, 10}} {
		e := newEnv(t, func(c *Config) { c.Size = tc.size; c.Difficulty = tc.diff; c.MaxSteps = 0 })
		for seed := range tc.seeds {
			e.Reset(seed)
			for !e.Done() {
				g := e.grid
				d, _ := deduce(&g, &e.solution, true)
				kinds[d.kind]++
				adv, err := e.Advise(1, nil)
				if err != nil {
					t.Fatal(err)
				}
				res := mustStep(t, e, adv.Actions[0])
				if res.Reward < 1 {
					t.Fatalf("%dx%d %s seed %d: %q earned %v", tc.size, tc.size, tc.diff, seed, adv.Actions[0], res.Reward)
				}
				if res.Done && !res.Info.Success {
					t.Fatalf("%dx%d %s seed %d: ended unsolved", tc.size, tc.size, tc.diff, seed)
				}
			}
		}
	}
	if kinds[nakedSingle] == 0 || kinds[hiddenSingle] == 0 || kinds[search] == 0 {
		t.Fatalf("deductions by kind: %v", kinds)
	}
}

func TestRandomAction(t *testing.T) {
	e := loaded(t, nil)
	rng := envs.NewRand(1, 2)
	seen := map[string]bool{}
	for range 200 {
		a, err := e.RandomAction(rng)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := ParseAction(a)
		if !ok || !e.legal(p) {
			t.Fatalf("random action %q is not legal", a)
		}
		seen[a] = true
	}
	// Legal placements on the puzzle: 1+2+2+2+2+1+1+2+1.
	if len(seen) != 14 {
		t.Fatalf("%d distinct random actions, want 14", len(seen))
	}
}
