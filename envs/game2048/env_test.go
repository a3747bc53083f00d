package game2048

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

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

func TestStepBeforeResetAndAfterDone(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Target = 8; c.MaxSteps = 2 })
	if _, err := e.Step("Up"); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Advise before Reset: %v", err)
	}
	if e.Render() != "" || e.StateKey() != "" {
		t.Fatal("Render or StateKey before Reset")
	}
	if _, err := e.LoadLevel("4 4 . .\n. . . .\n. . . .\n. . . ."); err != nil {
		t.Fatal(err)
	}
	res := mustStep(t, e, "left")
	if res.Done || !res.Info.Success || res.Info.Metrics["max_tile"] != 8 {
		t.Fatalf("making the target: %+v", res)
	}
	// Play goes on after the target; the episode stays a success.
	res = mustStep(t, e, "right")
	if !res.Done || !res.Info.Success {
		t.Fatalf("the last step: %+v", res)
	}
	if _, err := e.Step("Left"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatalf("Step after done: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatalf("Advise after done: %v", err)
	}
}

func TestInvalidStepsChangeNothing(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.LoadLevel("2 4 8 16\n. . . .\n. . . .\n. . . ."); err != nil {
		t.Fatal(err)
	}
	before := e.Render()
	// Left and Right move nothing in the top row and the rest is empty.
	for _, a := range []string{"Left", "right", "", "0", "Up || Left", "upp", "\x00"} {
		res := mustStep(t, e, a)
		if res.Info.ActionValid || res.Reward != 0 || res.Done || res.Observation != before || e.Steps() != 0 {
			t.Fatalf("%q: %+v", a, res)
		}
	}
	res := mustStep(t, e, " DOWN ")
	if !res.Info.ActionValid || !res.Info.ActionEffective || e.Steps() != 1 || res.Observation == before {
		t.Fatalf("Down: %+v", res)
	}
}

func TestRewardModes(t *testing.T) {
	const level = "2 2 4 4\n. . . .\n. . . .\n. . . ."
	for _, tc := range []struct {
		mode RewardMode
		want float64
	}{{RewardLog, 0.1 * math.Log2(13)}, {RewardRaw, 12}} {
		e := newEnv(t, func(c *Config) { c.Reward = tc.mode })
		e.LoadLevel(level)
		res := mustStep(t, e, "Left")
		if math.Abs(res.Reward-tc.want) > 1e-12 || res.Info.Metrics["merged"] != 12 || e.Score() != 12 {
			t.Fatalf("%s: reward %v metrics %v, want %v", tc.mode, res.Reward, res.Info.Metrics, tc.want)
		}
		// A slide without a merge pays nothing.
		res = mustStep(t, e, "Right")
		if res.Reward != 0 || res.Info.Metrics["merged"] != 0 {
			t.Fatalf("%s: slide without merge paid %v", tc.mode, res.Reward)
		}
	}
}

func TestGameOverAndStepLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.TwoProb = 1 })
	// Left merges the 2s and the new 2 fills the only hole;
	// every neighbour then differs.
	if _, err := e.LoadLevel("2 2 8 16\n8 16 32 64\n16 32 64 128\n32 64 128 256"); err != nil {
		t.Fatal(err)
	}
	res := mustStep(t, e, "Left")
	if !res.Done || res.Info.Success || res.Info.Metrics["game_over"] != 1 {
		b := e.Board()
		t.Fatalf("game over: %+v\n%s", res, b.String())
	}

	e = newEnv(t, func(c *Config) { c.MaxSteps = 3 })
	e.Reset(1)
	for i := 0; !e.Done(); i++ {
		moves := e.board.ValidMoves()
		res := mustStep(t, e, moves[0].String())
		if res.Done != (i == 2) {
			t.Fatalf("step %d: done %v", i+1, res.Done)
		}
	}
	if e.Steps() != 3 {
		t.Fatalf("%d steps", e.Steps())
	}
}

// TestDeterministic: a seed and a sequence of moves give the same game;
// different seeds give different games.
func TestDeterministic(t *testing.T) {
	play := func(seed uint64) string {
		e := newEnv(t, nil)
		obs, _ := e.Reset(seed)
		var sb strings.Builder
		sb.WriteString(obs)
		for i := 0; i < 60 && !e.Done(); i++ {
			res := mustStep(t, e, []string{"Up", "Left", "Down", "Right"}[i%4])
			sb.WriteString(res.Observation)
		}
		return sb.String()
	}
	if first, again := play(7), play(7); first != again {
		t.Fatal("seed 7 played twice differs")
	}
	starts := map[string]bool{}
	for seed := range uint64(50) {
		e := newEnv(t, nil)
		obs, _ := e.Reset(seed)
		starts[obs] = true
		if b := e.Board(); b.Empty() != 14 {
			t.Fatalf("seed %d starts with %d empty cells", seed, b.Empty())
		}
	}
	if len(starts) < 30 {
		t.Fatalf("only %d distinct starts in 50 seeds", len(starts))
	}
}

func TestSpawnDistribution(t *testing.T) {
	e := newEnv(t, nil)
	fours, tiles := 0, 0
	for seed := range uint64(2000) {
		e.Reset(seed)
		b := e.Board()
		for r := range 4 {
			for c := range 4 {
				switch b.Tile(r, c) {
				case 4:
					fours++
					tiles++
				case 2:
					tiles++
				}
			}
		}
	}
	if p := float64(fours) / float64(tiles); tiles != 4000 || p < 0.08 || p > 0.12 {
		t.Fatalf("%d tiles, share of 4s %.3f (want about 0.1)", tiles, p)
	}
}

func TestRender(t *testing.T) {
	const level = "2 . . 4\n. . . .\n. . 8 .\n. . . ."
	e := newEnv(t, nil)
	obs, _ := e.LoadLevel(level)
	want := "Current 2048 Grid:\nRow 1: [2, 0, 0, 4]\nRow 2: [0, 0, 0, 0]\nRow 3: [0, 0, 8, 0]\nRow 4: [0, 0, 0, 0]\n\n" +
		"Valid Actions: Up, Right, Down, Left.\nGoal: Merge same numbers to reach 2048.\nCurrent Score: 0\nWhat is your next move?"
	if obs != want {
		t.Fatalf("ragen render:\n%s\nwant:\n%s", obs, want)
	}
	e = newEnv(t, func(c *Config) { c.ObservationFormat = FormatGrid })
	if _, err := e.LoadLevel("2 4\n. 8"); err == nil {
		t.Fatal("a 2x2 board loaded into a 4x4 environment")
	}
	obs, _ = e.LoadLevel(level)
	if want := "Score 0. Moves: Up, Right, Down, Left.\n" + level; obs != want {
		t.Fatalf("grid render:\n%s\nwant:\n%s", obs, want)
	}
	for _, f := range []Format{FormatGrid, FormatRAGEN} {
		e := newEnv(t, func(c *Config) { c.ObservationFormat = f; c.Target = 256; c.MaxSteps = 40 })
		ins := e.Instruction()
		for _, s := range []string{"4x4", "256", "after 40 moves", "log2"} {
			if !strings.Contains(ins, s) {
				t.Errorf("%s instruction lacks %q: %s", f, s, ins)
			}
		}
	}
}

func TestLoadLevelErrors(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Target = 64 })
	for _, bad := range []string{"2 4\n4 2", "64 . . .\n. . . .\n. . . .\n. . . .",
		"2 4 2 4\n4 2 4 2\n2 4 2 4\n4 2 4 2", "x"} {
		if _, err := e.LoadLevel(bad); err == nil {
			t.Errorf("LoadLevel(%q) accepted", bad)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		yaml, key string
	}{
		{"size: 1", "size"},
		{"size: 7", "size"},
		{"two_prob: 1.5", "two_prob"},
		{"target: 100", "target"},
		{"target: 2", "target"},
		{"size: 2\ntarget: 64", "target"},
		{"max_steps: -1", "max_steps"},
		{"reward: linear", "reward"},
		{"observation_format: image", "observation_format"},
		{"bogus: 1", "bogus"},
	}
	for _, tc := range cases {
		_, err := envs.NewFactoryYAML("2048", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: error %v does not name %q", tc.yaml, err, tc.key)
		}
	}
	f, err := envs.NewFactoryYAML("2048", []byte("size: 3\ntarget: 256\nobservation_format: grid\nreward: raw"))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := f.New()
	obs, _ := env.Reset(1)
	if rows := strings.Count(obs, "\n"); rows != 3 {
		t.Fatalf("3x3 grid observation:\n%s", obs)
	}
}
