package alfworld

import (
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// bfsCost is the length of a shortest sequence of admissible commands
// from w to the goal, by breadth-first search over every command (what
// the agent has searched does not change what commands do, so states
// that differ only there are one).
func bfsCost(w *world) int {
	dyn := func(w *world) string {
		c := w.clone()
		clear(c.searched)
		return c.key()
	}
	seen := map[string]bool{dyn(w): true}
	type node struct {
		w *world
		d int
	}
	queue := []node{{w, 0}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.w.satisfied() {
			return n.d
		}
		for _, a := range n.w.admissible() {
			c, _ := ParseCommand(a)
			next := n.w.clone()
			next.apply(c)
			if k := dyn(next); !seen[k] {
				seen[k] = true
				queue = append(queue, node{next, n.d + 1})
			}
		}
	}
	return -1
}

// TestCostToGoIsOptimal: on small scenes of every task type, CostToGo
// equals the breadth-first optimum from the start and from states along
// random play (objects moved, the hand full of the wrong thing,
// receptacles open).
func TestCostToGoIsOptimal(t *testing.T) {
	cases := []struct {
		task Task
		recs []string
		objs []string
	}{
		{Task{Type: PickAndPlace, Room: "kitchen", Object: "apple", Target: "cabinet"},
			[]string{"cabinet 1", "cabinet 2", "countertop 1", "fridge 1"}, []string{"apple 1@fridge 1", "apple 2@countertop 1", "mug 1@countertop 1"}},
		{Task{Type: CleanAndPlace, Room: "kitchen", Object: "mug", Target: "cabinet"},
			[]string{"cabinet 1", "countertop 1", "drawer 1", "sinkbasin 1"}, []string{"mug 1@drawer 1", "mug 2@countertop 1", "cup 1@sinkbasin 1"}},
		{Task{Type: HeatAndPlace, Room: "kitchen", Object: "egg", Target: "countertop"},
			[]string{"cabinet 1", "countertop 1", "fridge 1", "microwave 1"}, []string{"egg 1@fridge 1", "egg 2@cabinet 1", "bread 1@microwave 1"}},
		{Task{Type: CoolAndPlace, Room: "kitchen", Object: "pan", Target: "cabinet"},
			[]string{"cabinet 1", "countertop 1", "drawer 1", "fridge 1"}, []string{"pan 1@countertop 1", "pan 2@drawer 1", "pot 1@fridge 1"}},
		{Task{Type: PickTwoAndPlace, Room: "kitchen", Object: "cup", Target: "cabinet"},
			[]string{"cabinet 1", "cabinet 2", "countertop 1", "drawer 1"}, []string{"cup 1@countertop 1", "cup 2@drawer 1", "cup 3@cabinet 2"}},
		{Task{Type: LookInLight, Room: "bedroom", Object: "book", Target: "desklamp"},
			[]string{"bed 1", "desk 1", "drawer 1", "sidetable 1"}, []string{"book 1@drawer 1", "book 2@bed 1", "desklamp 1@desk 1"}},
	}
	for _, tc := range cases {
		t.Run(tc.task.Type.String(), func(t *testing.T) {
			rng := envs.NewRand(uint64(tc.task.Type), 7)
			checked := 0
			for walk := range 6 {
				w := scene(t, tc.task, tc.recs, tc.objs...)
				for step := 0; step < 12 && !w.satisfied(); step++ {
					if step%3 == walk%3 {
						if got, want := w.costToGo(), bfsCost(w); got != want {
							t.Fatalf("walk %d step %d: CostToGo %d, optimum %d (state %s)", walk, step, got, want, w.key())
						}
						checked++
					}
					acts := w.admissible()
					c, _ := ParseCommand(acts[rng.IntN(len(acts))])
					w.apply(c)
				}
			}
			if checked < 12 {
				t.Fatalf("only %d states checked", checked)
			}
		})
	}
}

// TestCostToGoAlongExpertPlay: on generated scenes the cost to go rises by
// at most one per expert action (a search that leaves a useful place
// behind) and is 0 exactly when the task is done.
func TestCostToGoAlongExpertPlay(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Scene = SceneSmall })
	for seed := range uint64(100) {
		e.Reset(seed)
		prev, _, _ := e.CostToGo()
		for !e.Done() {
			adv, _ := e.Advise(1, nil)
			res := mustStep(t, e, adv.Actions[0])
			c, ok, err := e.CostToGo()
			if err != nil || !ok || (c == 0) != res.Info.Success || c > prev+1 {
				t.Fatalf("seed %d: cost %d after %d (%q), success %v", seed, c, prev, adv.Actions[0], res.Info.Success)
			}
			prev = c
		}
	}
}
