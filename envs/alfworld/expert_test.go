package alfworld

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// playExpert plays an episode with the expert taking up to perTurn of its
// planned actions at a time, and returns the steps taken and the success.
func playExpert(t testing.TB, e *Env, perTurn int) (int, bool) {
	t.Helper()
	success := false
	for !e.Done() {
		adv, err := e.Advise(perTurn, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range adv.Actions {
			if e.Done() {
				break
			}
			res := mustStep(t, e, a)
			if !res.Info.ActionValid {
				t.Fatalf("task %q: expert action %q is invalid:\n%s", e.Task().Goal, a, e.Render())
			}
			success = res.Info.Success
		}
	}
	return e.Steps(), success
}

// TestExpertSolvesEveryTaskType: the expert completes generated tasks of
// all six types within ALFWorld's 50 steps, in full and small scenes and
// both splits, and a plan of several actions a turn does as well as one
// action a turn.
func TestExpertSolvesEveryTaskType(t *testing.T) {
	seeds := uint64(100)
	if testing.Short() {
		seeds = 30
	}
	for tt := range numTaskTypes {
		for _, scene := range []string{SceneFull, SceneSmall} {
			for _, split := range []string{SplitSeen, SplitUnseen} {
				e := newEnv(t, func(c *Config) {
					c.TaskTypes, c.Scene, c.Split = []string{tt.String()}, scene, split
				})
				steps, optimal := 0, 0
				for seed := range seeds {
					e.Reset(seed)
					c, _, _ := e.CostToGo()
					optimal += c
					n, ok := playExpert(t, e, 1+int(seed%3))
					if !ok {
						t.Fatalf("%s %s %s seed %d: not solved in %d steps (%q)", tt, scene, split, seed, n, e.Task().Goal)
					}
					steps += n
				}
				t.Logf("%-31s %-5s %-6s: %d/%d solved, %.1f steps (omniscient optimum %.1f)",
					tt, scene, split, seeds, seeds, float64(steps)/float64(seeds), float64(optimal)/float64(seeds))
			}
		}
	}
}

// TestExpertUsesOnlyObservations: moving objects between receptacles the
// agent has not searched never changes the expert's choice, anywhere
// along random play.
func TestExpertUsesOnlyObservations(t *testing.T) {
	for seed := range uint64(60) {
		e := newEnv(t, nil)
		e.Reset(seed)
		rng := envs.NewRand(seed, 11)
		for i := 0; i < 30 && !e.Done(); i++ {
			want := e.w.expertStep()
			var unsearched []int
			for r := range e.w.recs {
				if !e.w.searched[r] {
					unsearched = append(unsearched, r)
				}
			}
			if len(unsearched) > 1 {
				for trial := range 5 {
					c := e.w.clone()
					for o := range c.objs {
						if l := c.objs[o].loc; l >= 0 && !c.searched[l] {
							c.objs[o].loc = unsearched[rng.IntN(len(unsearched))]
						}
					}
					if got := c.expertStep(); got.cmd != want.cmd || got.why != want.why {
						t.Fatalf("seed %d step %d trial %d: hidden objects changed the expert's step %v to %v", seed, i, trial, want.cmd, got.cmd)
					}
				}
			}
			// Mostly expert moves, some random ones to reach odd states.
			a := want.cmd.String()
			if rng.IntN(3) == 0 {
				a, _ = e.RandomAction(rng)
			}
			mustStep(t, e, a)
		}
	}
}

// TestExpertRecovers: after random actions (objects moved, the hand full,
// receptacles opened) the expert still completes the task.
func TestExpertRecovers(t *testing.T) {
	for seed := range uint64(120) {
		e := newEnv(t, func(c *Config) { c.MaxSteps = 200; c.Scene = SceneSmall })
		e.Reset(seed)
		rng := envs.NewRand(seed, 3)
		for range 15 {
			a, _ := e.RandomAction(rng)
			mustStep(t, e, a)
			if e.Done() {
				break
			}
		}
		if e.Done() {
			continue
		}
		if _, ok := playExpert(t, e, 2); !ok {
			t.Fatalf("seed %d: the expert did not recover (%q)", seed, e.Task().Goal)
		}
	}
}

func TestAdvise(t *testing.T) {
	w := scene(t, Task{Type: HeatAndPlace, Room: "kitchen", Object: "apple", Target: "diningtable"}, kitchen,
		"apple 1@fridge 1", "egg 1@countertop 1")
	e := envOn(t, w, nil)
	key := e.StateKey()
	adv, err := e.Advise(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Apples are found on countertops and dining tables (one action each)
	// before fridges (two): the plan stops at the first place that shows
	// something new.
	if strings.Join(adv.Actions, "|") != "go to countertop 1" || adv.Brief != "find apple: countertop 1" {
		t.Fatalf("advice %+v", adv)
	}
	if e.StateKey() != key {
		t.Fatal("Advise changed the state")
	}
	for _, a := range []string{"go to countertop 1", "go to diningtable 1"} {
		mustStep(t, e, a)
	}
	adv, _ = e.Advise(5, nil)
	if strings.Join(adv.Actions, "|") != "go to fridge 1|open fridge 1" || adv.Brief != "find apple: fridge 1" {
		t.Fatalf("advice %+v", adv)
	}
	mustStep(t, e, "go to fridge 1")
	mustStep(t, e, "open fridge 1")
	adv, _ = e.Advise(0, nil)
	want := "take apple 1 from fridge 1|go to microwave 1|heat apple 1 with microwave 1|go to diningtable 1|put apple 1 in/on diningtable 1"
	if strings.Join(adv.Actions, "|") != want || adv.Brief != "apple 1 at fridge 1" {
		t.Fatalf("advice %+v", adv)
	}
	briefs := []string{"apple 1 at fridge 1", "heat apple 1: microwave 1", "heat apple 1: microwave 1", "apple 1 to diningtable 1", "apple 1 to diningtable 1"}
	rng := envs.NewRand(1, 1)
	for i, a := range adv.Actions {
		got, _ := e.Advise(1, rng)
		if got.Actions[0] != a || got.Brief != briefs[i] || !strings.Contains(got.Rationale, "apple 1") {
			t.Fatalf("step %d: %+v", i, got)
		}
		mustStep(t, e, a)
	}
	if !e.Done() {
		t.Fatal("plan did not finish the task")
	}

	// The phrasings vary and all name the state.
	e = envOn(t, scene(t, Task{Type: PickAndPlace, Room: "kitchen", Object: "mug", Target: "cabinet"}, kitchen, "mug 1@countertop 1"), nil)
	seen := map[string]bool{}
	for range 40 {
		a, _ := e.Advise(1, rng)
		if !strings.Contains(a.Rationale, "mug") || !strings.Contains(a.Rationale, "countertop 1") {
			t.Fatalf("rationale %q", a.Rationale)
		}
		seen[a.Rationale] = true
	}
	if len(seen) != 2 {
		t.Fatalf("%d phrasings", len(seen))
	}
}

func TestAdviseLampAndDrop(t *testing.T) {
	bedroom := []string{"bed 1", "desk 1", "drawer 1", "sidetable 1"}
	w := scene(t, Task{Type: LookInLight, Room: "bedroom", Object: "book", Target: "desklamp"}, bedroom,
		"book 1@bed 1", "desklamp 1@sidetable 1", "pen 1@desk 1")
	e := envOn(t, w, nil)
	for _, a := range []string{"go to desk 1", "take pen 1 from desk 1"} {
		mustStep(t, e, a)
	}
	var got []string
	for !e.Done() {
		adv, _ := e.Advise(1, nil)
		got = append(got, adv.Actions[0]+" ("+adv.Brief+")")
		mustStep(t, e, adv.Actions[0])
	}
	want := []string{
		"put pen 1 in/on desk 1 (drop pen 1)",
		"go to bed 1 (find book: bed 1)",
		"take book 1 from bed 1 (book 1 at bed 1)",
		"go to sidetable 1 (find desklamp: sidetable 1)",
		"use desklamp 1 (use desklamp 1)",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("expert played\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
