package sudoku

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// puzzle has the unique solution 1234/3412/2143/4321.
const puzzle = "1...\n.4..\n...3\n4321"

func newEnv(t testing.TB, mutate func(*Config)) *Env {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustStep(t testing.TB, e *Env, action string) envs.StepResult {
	t.Helper()
	res, err := e.Step(action)
	if err != nil {
		t.Fatalf("Step(%q): %v", action, err)
	}
	return res
}

func loaded(t testing.TB, mutate func(*Config)) *Env {
	t.Helper()
	e := newEnv(t, mutate)
	if _, err := e.LoadLevel(puzzle); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStepBeforeResetAndAfterDone(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.Step("1,1,1"); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Advise before Reset: %v", err)
	}
	if _, err := e.RandomAction(envs.NewRand(1, 1)); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("RandomAction before Reset: %v", err)
	}
	if _, _, err := e.CostToGo(); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("CostToGo before Reset: %v", err)
	}
	if e.Render() != "" || e.StateKey() != "" {
		t.Fatal("Render or StateKey before Reset")
	}
	e.LoadLevel("1234\n3412\n2143\n432.")
	res := mustStep(t, e, "place 1 at row 4 col 4")
	if !res.Done || !res.Info.Success || res.Reward != 11 {
		t.Fatalf("the last cell: %+v", res)
	}
	if _, err := e.Step("1,1,1"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatalf("Step after done: %v", err)
	}
}

// TestRules: one row per kind of placement, from the same position.
func TestRules(t *testing.T) {
	cases := []struct {
		name, action string
		valid        bool
		reward       float64
		onTrack      bool
	}{
		{"correct digit", "place 3 at row 1 col 3", true, 1, true},
		{"another spelling", "1,3,3", true, 1, true},
		{"legal but wrong digit", "place 4 at row 1 col 3", true, 0.5, false},
		{"repeat in the row", "place 1 at row 1 col 3", false, 0, true},
		{"repeat in the column", "place 2 at row 1 col 3", false, 0, true},
		{"repeat in the box", "place 1 at row 3 col 3", false, 0, true},
		{"given cell", "place 1 at row 1 col 1", false, 0, true},
		{"row off the grid", "place 2 at row 5 col 1", false, 0, true},
		{"number too large", "place 5 at row 1 col 3", false, 0, true},
		{"zero", "place 0 at row 1 col 3", false, 0, true},
		{"not an action", "fill in row 1", false, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := loaded(t, nil)
			before := e.Render()
			res := mustStep(t, e, tc.action)
			if res.Info.ActionValid != tc.valid || res.Reward != tc.reward || res.Done {
				t.Fatalf("%q: %+v", tc.action, res)
			}
			if !tc.valid && (res.Observation != before || e.Steps() != 0) {
				t.Fatalf("invalid %q changed the state", tc.action)
			}
			if _, ok, _ := e.CostToGo(); ok != tc.onTrack {
				t.Fatalf("solvable %v after %q", ok, tc.action)
			}
		})
	}
	// A placed digit cannot be changed.
	e := loaded(t, nil)
	mustStep(t, e, "1,3,4")
	if res := mustStep(t, e, "1,3,3"); res.Info.ActionValid {
		t.Fatal("overwrote a placed digit")
	}
}

func TestSolveEpisode(t *testing.T) {
	e := loaded(t, nil)
	if n, ok, _ := e.CostToGo(); !ok || n != 9 {
		t.Fatalf("cost to go %d %v", n, ok)
	}
	total := 0.0
	sol := e.Solution()
	for r := range 4 {
		for c := range 4 {
			if e.grid.At(r, c) != 0 {
				continue
			}
			res := mustStep(t, e, Placement{r + 1, c + 1, sol.At(r, c)}.String())
			total += res.Reward
			if n, _, _ := e.CostToGo(); n != e.grid.Empty() {
				t.Fatalf("cost to go %d with %d empty", n, e.grid.Empty())
			}
		}
	}
	if !e.Done() || total != 9+10 {
		t.Fatalf("done %v, return %v", e.Done(), total)
	}
}

func TestStuckAndStepLimit(t *testing.T) {
	// Random legal placements often go wrong and then run out of legal
	// moves: such an episode must end then, without success.
	for seed := range uint64(30) {
		e := newEnv(t, func(c *Config) { c.MaxSteps = 0 })
		e.Reset(seed)
		rng := envs.NewRand(seed, 9)
		for !e.Done() {
			a, err := e.RandomAction(rng)
			if err != nil {
				t.Fatal(err)
			}
			res := mustStep(t, e, a)
			if !res.Info.ActionValid {
				t.Fatalf("random action %q invalid", a)
			}
			if res.Done && !res.Info.Success && (e.anyLegal() || res.Info.Metrics["stuck"] != 1) {
				t.Fatalf("seed %d ended without success with legal moves left", seed)
			}
		}
	}
	e := newEnv(t, func(c *Config) { c.Givens = 6; c.MaxSteps = 10 })
	e.Reset(3)
	for !e.Done() {
		adv, _ := e.Advise(1, nil)
		mustStep(t, e, adv.Actions[0])
	}
	if e.Steps() != 10 {
		t.Fatalf("expert used %d steps on 10 empty cells", e.Steps())
	}
}

func TestDeterministic(t *testing.T) {
	for _, size := range []int{4, 9} {
		a, b := newEnv(t, func(c *Config) { c.Size = size; c.MaxSteps = 0 }), newEnv(t, func(c *Config) { c.Size = size; c.MaxSteps = 0 })
		for seed := range uint64(10) {
			x, _ := a.Reset(seed)
			y, _ := b.Reset(seed)
			if x != y || a.Solution() != b.Solution() {
				t.Fatalf("%dx%d seed %d differs", size, size, seed)
			}
		}
		x, _ := a.Reset(1)
		y, _ := a.Reset(2)
		if x == y {
			t.Fatalf("%dx%d seeds 1 and 2 give the same puzzle", size, size)
		}
	}
}

func TestRender(t *testing.T) {
	e := loaded(t, nil)
	want := "Row 1: 1 . | . .\nRow 2: . 4 | . .\nRow 3: . . | . 3\nRow 4: 4 3 | 2 1\nEmpty: (1,2) (1,3) (1,4) (2,1) (2,3) (2,4) (3,1) (3,2) (3,3)"
	if got := e.Render(); got != want {
		t.Fatalf("render:\n%s\nwant:\n%s", got, want)
	}
	e = loaded(t, func(c *Config) { c.ShowCandidates = true })
	if got := e.Render(); !strings.HasSuffix(got, "Empty: (1,2):2 (1,3):3,4 (1,4):2,4 (2,1):2,3 (2,3):1,3 (2,4):2 (3,1):2 (3,2):1,2 (3,3):4") {
		t.Fatalf("render with candidates:\n%s", got)
	}
	e = newEnv(t, func(c *Config) { c.Size = 9; c.MaxSteps = 0 })
	obs, _ := e.Reset(1)
	if lines := strings.Split(obs, "\n"); len(lines) != 10 || strings.Count(lines[0], "|") != 2 {
		t.Fatalf("9x9 render:\n%s", obs)
	}
	ins := newEnv(t, func(c *Config) { c.ShowCandidates = true }).Instruction()
	for _, s := range []string{"2x2 box", "1-4", "place 5 at row 2 col 3", "2,3,5", "numbers that fit", "30 placements", "earns 1", "0.5", "10 more"} {
		if !strings.Contains(ins, s) {
			t.Errorf("instruction lacks %q: %s", s, ins)
		}
	}
}

func TestLoadLevelErrors(t *testing.T) {
	e := newEnv(t, nil)
	for _, bad := range []string{
		"1...\n....\n....\n....",                         // many solutions
		"12..\n..1.\n....\n....",                         // no solution: (2,?)... the 1s block row 2's box
		"1234\n3412\n2143\n4321",                         // nothing to do
		"53..7....\n" + strings.Repeat(".........\n", 8), // 9x9 on a 4x4 environment
		"x",
	} {
		if _, err := e.LoadLevel(bad); err == nil {
			t.Errorf("LoadLevel(%q) accepted", bad)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct{ yaml, key string }{
		{"size: 6", "size"},
		{"difficulty: extreme", "difficulty"},
		{"givens: 3", "givens"},
		{"givens: 16", "givens"},
		{"size: 9\ngivens: 20\nmax_steps: 0", "givens"},
		{"size: 9", "max_steps"},
		{"max_steps: 5", "max_steps"},
		{"correct_placement_score: -1", "correct_placement_score"},
		{"completion_bonus: -1", "completion_bonus"},
		{"board_size: 4", "board_size"},
	}
	for _, tc := range cases {
		_, err := envs.NewFactoryYAML("sudoku", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: error %v does not name %q", tc.yaml, err, tc.key)
		}
	}
	for _, ok := range []string{"", "size: 9\nmax_steps: 81\ndifficulty: hard", "givens: 4", "max_steps: 0\ngivens: 15"} {
		if _, err := envs.NewFactoryYAML("sudoku", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
