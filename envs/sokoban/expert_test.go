package sokoban

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// TestExpertSolvesOptimally follows the expert's advice on generated levels
// and checks that it solves each in the optimal number of moves.
func TestExpertSolvesOptimally(t *testing.T) {
	for _, c := range []struct{ rows, cols, boxes, n int }{{6, 6, 1, 300}, {7, 7, 2, 60}, {8, 8, 3, 20}} {
		e := newEnv(t, func(cfg *Config) { cfg.DimX, cfg.DimY, cfg.NumBoxes = c.rows, c.cols, c.boxes })
		rng := rand.New(rand.NewPCG(1, 2))
		for seed := range uint64(c.n) {
			if _, err := e.Reset(seed); err != nil {
				t.Fatal(err)
			}
			opt, err := Solve(e.Level(), DefaultMaxStates)
			if err != nil {
				t.Fatal(err)
			}
			for !e.Done() {
				before := e.Render()
				adv, err := e.Advise(2, rng)
				if err != nil {
					t.Fatal(err)
				}
				if e.Render() != before {
					t.Fatal("Advise changed the state")
				}
				if len(adv.Actions) == 0 || len(adv.Actions) > 2 || !strings.Contains(adv.Rationale, e.Player().String()) {
					t.Fatalf("seed %d: advice %+v at\n%s", seed, adv, before)
				}
				for _, a := range adv.Actions {
					if _, err := e.Step(a); err != nil {
						t.Fatal(err)
					}
				}
			}
			res := e.Render()
			if e.Steps() != len(opt) || strings.ContainsAny(res, "X") {
				t.Errorf("%dx%d/%d seed %d: expert took %d moves, optimum %d, final\n%s", c.rows, c.cols, c.boxes, seed, e.Steps(), len(opt), res)
			}
		}
	}
}

func TestAdviceRationale(t *testing.T) {
	e := newEnv(t, nil)
	cases := []struct{ level, actions, rationale string }{
		{"#######\n#P_X_O#\n#######", "Right Right Right",
			"The player is at (1, 1), the box is at (1, 3) and the target is at (1, 5). Plan: walk to (1, 2), then push the box at (1, 3) right two steps onto the target at (1, 5)."},
		{"######\n#___O#\n#_X__#\n#_P__#\n######", "Up Left Up Right Right",
			"The player is at (3, 2), the box is at (2, 2) and the target is at (1, 4). Plan: push the box at (2, 2) up one step toward the target at (1, 4)."},
	}
	for _, c := range cases {
		if _, err := e.LoadLevel(c.level); err != nil {
			t.Fatal(err)
		}
		adv, err := e.Advise(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(adv.Actions, " "); got != c.actions {
			t.Errorf("actions %q, want %q", got, c.actions)
		}
		if adv.Rationale != c.rationale {
			t.Errorf("rationale\n%q\nwant\n%q", adv.Rationale, c.rationale)
		}
		if adv1, _ := e.Advise(1, nil); len(adv1.Actions) != 1 || adv1.Actions[0] != adv.Actions[0] || adv1.Rationale != adv.Rationale {
			t.Errorf("Advise(1) = %+v", adv1)
		}
		// Several phrasings, all naming the state.
		seen := map[string]bool{}
		rng := rand.New(rand.NewPCG(3, 4))
		for range 200 {
			a, _ := e.Advise(1, rng)
			seen[a.Rationale] = true
			if !strings.Contains(a.Rationale, e.Player().String()) || !strings.Contains(a.Rationale, e.Level().Targets()[0].String()) {
				t.Errorf("rationale lacks the state: %q", a.Rationale)
			}
		}
		if len(seen) < 4 {
			t.Errorf("only %d phrasings: %v", len(seen), seen)
		}
	}
}

func TestAdviceSolvedAndDeadlocked(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.LoadLevel("#######\n#P_X_O#\n#######"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.Step("Right")
	}
	adv, err := e.Advise(2, nil)
	if err != nil || len(adv.Actions) != 0 || !strings.Contains(adv.Rationale, "solved") {
		t.Errorf("solved: %+v %v", adv, err)
	}
	// Push the box into a dead end: it can never reach the target.
	if _, err := e.LoadLevel("######\n#P___#\n#_X__#\n#O___#\n######"); err != nil {
		t.Fatal(err)
	}
	e.Step("Down")
	e.Step("Right")
	res, _ := e.Step("Right")
	if !strings.Contains(res.Observation, "Boxes: (2, 4)") {
		t.Fatalf("box not pushed against the wall:\n%s", res.Observation)
	}
	adv, err = e.Advise(2, nil)
	if err != nil || len(adv.Actions) != 0 || !strings.Contains(adv.Rationale, "no sequence of moves") {
		t.Errorf("deadlock: %+v %v\n%s", adv, err, e.Render())
	}
	// Multi-box plans are cached and reused along the plan.
	if _, err := e.LoadLevel(golden); err != nil {
		t.Fatal(err)
	}
	first, err := e.Advise(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Step(first.Actions[0])
	second, _ := e.Advise(0, nil)
	if strings.Join(second.Actions, " ") != strings.Join(first.Actions[1:], " ") {
		t.Errorf("plan changed after following it: %v then %v", first.Actions, second.Actions)
	}
	var _ envs.Expert = e
}

func TestAdviseBrief(t *testing.T) {
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadLevel("######\n#@ $.#\n######\n"); err != nil {
		t.Fatal(err)
	}
	adv, err := e.Advise(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if adv.Brief != "P1,1 X1,3 O1,4" {
		t.Errorf("Brief = %q, want %q", adv.Brief, "P1,1 X1,3 O1,4")
	}
}
