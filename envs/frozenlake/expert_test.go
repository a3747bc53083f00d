package frozenlake

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestShortestPathClassic(t *testing.T) {
	m, _ := ParseMap(classic)
	path, ok := m.ShortestPath(m.Start())
	if !ok {
		t.Fatal("no path")
	}
	// Left < Down < Right < Up tie-break: prefer Down over Right at (0, 0).
	if got := routeText(path); got != "Down x2, Right, Down, Right x2" {
		t.Fatalf("path %s", got)
	}
	if p, ok := m.ShortestPath(m.Goal()); !ok || len(p) != 0 {
		t.Fatalf("path from the goal: %v %v", p, ok)
	}
	if _, ok := m.ShortestPath(Pos{1, 1}); ok {
		t.Fatal("path from a hole")
	}
	if _, ok := m.ShortestPath(Pos{9, 9}); ok {
		t.Fatal("path from off the board")
	}
}

func TestAdvise(t *testing.T) {
	e := newEnv(t, nil)
	e.LoadLevel(classic)
	obs := e.Render()
	all, err := e.Advise(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(all.Actions, " "); got != "Down Down Right Down Right Right" {
		t.Fatalf("actions %q", got)
	}
	two, _ := e.Advise(2, nil)
	if len(two.Actions) != 2 || two.Rationale != all.Rationale {
		t.Fatalf("maxActions 2: %+v", two)
	}
	if e.Render() != obs || e.Steps() != 0 {
		t.Fatal("Advise changed the state")
	}
	want := "I am at (0, 0) and the goal is at (3, 3). The shortest safe route is Down x2, Right, Down, Right x2 (6 moves); " +
		"holes at (1, 1), (2, 3), (3, 0) border it."
	if all.Rationale != want {
		t.Fatalf("rationale:\n%s\nwant:\n%s", all.Rationale, want)
	}

	// Several phrasings, all naming the state.
	rng := envs.NewRand(1, 99)
	seen := map[string]bool{}
	for range 200 {
		adv, err := e.Advise(3, rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"(0, 0)", "(3, 3)", "(1, 1)", "Down x2", "6 moves"} {
			if !strings.Contains(adv.Rationale, s) {
				t.Fatalf("rationale %q lacks %q", adv.Rationale, s)
			}
		}
		seen[adv.Rationale] = true
	}
	if len(seen) < 4 {
		t.Fatalf("only %d phrasings", len(seen))
	}

	// The rationale follows the state.
	mustStep(t, e, "Down")
	adv, _ := e.Advise(1, nil)
	if adv.Actions[0] != "Down" || !strings.Contains(adv.Rationale, "(1, 0)") || !strings.Contains(adv.Rationale, "5 moves") {
		t.Fatalf("after one move: %+v", adv)
	}
}

func TestAdviseSlippery(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SuccessRate = 0.8 })
	e.LoadLevel("SG")
	adv, err := e.Advise(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(adv.Actions) != 1 || adv.Actions[0] != "Right" ||
		!strings.Contains(adv.Rationale, "(1 move)") || !strings.Contains(adv.Rationale, "no hole borders") ||
		!strings.Contains(adv.Rationale, "re-plan") {
		t.Fatalf("%+v", adv)
	}
	// Following the advice on slippery ice still reaches the goal often.
	wins := 0
	for seed := range uint64(300) {
		e.Reset(seed)
		for !e.Done() {
			a, err := e.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res := mustStep(t, e, a.Actions[0]); res.Info.Success {
				wins++
			}
		}
	}
	if wins < 150 {
		t.Fatalf("expert won %d of 300 slippery episodes", wins)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatal(err)
	}
}

func TestAdviseBrief(t *testing.T) {
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.LoadLevel("SFF\nFHF\nFFG\n"); err != nil {
		t.Fatal(err)
	}
	adv, err := e.Advise(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if adv.Brief != "P0,0 G2,2" {
		t.Errorf("Brief = %q, want %q", adv.Brief, "P0,0 G2,2")
	}
}
