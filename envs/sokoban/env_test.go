package sokoban

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

func TestRenderGolden(t *testing.T) {
	coord := "Board size: 5 rows x 7 cols (zero-indexed).\n" +
		"Targets: (1, 2), (2, 4), (3, 3)\n" +
		"Boxes: (1, 4), (2, 2)\n" +
		"Boxes on target: (2, 4)\n" +
		"Player on target: (3, 3)"
	cases := map[Format]string{
		FormatGrid:      golden,
		FormatCoord:     coord,
		FormatGridCoord: "Coordinates: \n" + coord + "\nGrid Map: \n" + golden,
	}
	for f, want := range cases {
		e := newEnv(t, func(c *Config) { c.ObservationFormat = f })
		obs, err := e.LoadLevel(golden)
		if err != nil {
			t.Fatal(err)
		}
		if obs != want || e.Render() != want {
			t.Errorf("%s render:\n%s\nwant:\n%s", f, obs, want)
		}
	}
	// After stepping off the target the player is P and the target O.
	e := newEnv(t, nil)
	if _, err := e.LoadLevel(golden); err != nil {
		t.Fatal(err)
	}
	res, err := e.Step("Up")
	if err != nil {
		t.Fatal(err)
	}
	want := "Coordinates: \nBoard size: 5 rows x 7 cols (zero-indexed).\n" +
		"Targets: (1, 2), (2, 4), (3, 3)\nBoxes: (1, 4), (2, 2)\nBoxes on target: (2, 4)\nPlayer: (2, 3)\n" +
		"Grid Map: \n#######\n#_O_X_#\n#_XP√_#\n#__O__#\n#######"
	if res.Observation != want {
		t.Errorf("after Up:\n%s\nwant:\n%s", res.Observation, want)
	}
}

func TestInstruction(t *testing.T) {
	for _, f := range []Format{FormatGrid, FormatCoord, FormatGridCoord} {
		e := newEnv(t, func(c *Config) { c.ObservationFormat = f; c.DimX, c.DimY = 8, 7 })
		ins := e.Instruction()
		for _, want := range []string{"Sokoban", "Up, Down, Left, Right"} {
			if !strings.Contains(ins, want) {
				t.Errorf("%s instruction lacks %q:\n%s", f, want, ins)
			}
		}
		if hasLegend := strings.Contains(ins, legend); hasLegend != (f != FormatCoord) {
			t.Errorf("%s instruction: legend present = %v:\n%s", f, hasLegend, ins)
		}
		if hasRange := strings.Contains(ins, "to (7, 6)"); hasRange != (f != FormatGrid) {
			t.Errorf("%s instruction: coordinate range present = %v:\n%s", f, hasRange, ins)
		}
	}
	e := newEnv(t, nil)
	if _, err := e.LoadLevel(golden); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Instruction(), "to (4, 6)") {
		t.Errorf("instruction ignores the loaded level's size:\n%s", e.Instruction())
	}
}

func TestStepRewardsAndEnd(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.Step("Up"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Advise before Reset: %v", err)
	}
	if _, err := e.LoadLevel("#######\n#P_X_O#\n#######"); err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for i, a := range []string{"Right", " right\n", "RIGHT"} {
		res, err := e.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		total += res.Reward
		if !res.Info.ActionValid || !res.Info.ActionEffective || res.Done != (i == 2) || res.Info.Success != (i == 2) {
			t.Errorf("step %d: %+v", i, res)
		}
	}
	if k := 3.0; math.Abs(total-(10+1-0.1*k)) > 1e-9 {
		t.Errorf("return %v, want 10 + 1 - 0.1*%v", total, k)
	}
	if _, err := e.Step("Left"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Step after the end: %v", err)
	}

	// Pushing a box off its target costs 1, bumping a wall still counts.
	if _, err := e.LoadLevel("########\n#P√_XO_#\n#______#\n########"); err != nil {
		t.Fatal(err)
	}
	res, _ := e.Step("Right")
	if math.Abs(res.Reward-(-1.1)) > 1e-9 || res.Info.Metrics["boxes_on_target"] != 0 {
		t.Errorf("push off target: %+v", res)
	}
	res, _ = e.Step("Up")
	if res.Reward != -0.1 || res.Info.ActionEffective || !res.Info.ActionValid || e.Steps() != 2 {
		t.Errorf("bump into wall: %+v", res)
	}
	// A box cannot be pushed into another box.
	res, _ = e.Step("Right")
	if res.Info.ActionEffective || e.Player() != (Pos{1, 2}) {
		t.Errorf("pushed two boxes: %+v", res)
	}

	// max_steps ends the episode without success.
	e = newEnv(t, func(c *Config) { c.MaxSteps = 2 })
	if _, err := e.LoadLevel("#######\n#P_X_O#\n#######"); err != nil {
		t.Fatal(err)
	}
	e.Step("Left")
	res, _ = e.Step("Left")
	if !res.Done || res.Info.Success {
		t.Errorf("max_steps: %+v", res)
	}
}

func TestInvalidActionsChangeNothing(t *testing.T) {
	e := newEnv(t, nil)
	obs, err := e.Reset(7)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"", "up!", "U", "jump", "Up Up", "<answer>Up</answer>", "1", "Upp", "\x00"} {
		res, err := e.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		if res.Info.ActionValid || res.Reward != 0 || res.Done || res.Observation != obs || e.Steps() != 0 {
			t.Errorf("invalid action %q changed something: %+v", a, res)
		}
	}
}

func TestSameSeedSameEpisode(t *testing.T) {
	actions := []string{"Up", "Left", "Down", "Right", "Right", "Up", "Down", "Left"}
	run := func() []string {
		e := newEnv(t, func(c *Config) { c.DimX, c.DimY, c.NumBoxes = 8, 8, 2 })
		obs, err := e.Reset(12345)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{obs}
		for _, a := range actions {
			res, err := e.Step(a)
			if err != nil {
				break
			}
			out = append(out, res.Observation)
		}
		return out
	}
	a, b := run(), run()
	if strings.Join(a, "|") != strings.Join(b, "|") {
		t.Error("same seed gave different episodes")
	}
	e := newEnv(t, nil)
	o1, _ := e.Reset(1)
	o2, _ := e.Reset(2)
	o1b, _ := e.Reset(1)
	if o1 != o1b || o1 == o2 {
		t.Errorf("seeds 1, 2, 1 gave\n%s\n\n%s\n\n%s", o1, o2, o1b)
	}
}

func TestConfig(t *testing.T) {
	f, err := envs.NewFactoryYAML("sokoban", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Config().(Config) != DefaultConfig() {
		t.Errorf("default config %+v", f.Config())
	}
	cases := map[string]string{
		"dim_x: 3\n":                         "dim_x: must be an integer in [5, 32]",
		"dim_y: 40\n":                        "dim_y: must be an integer in [5, 32]",
		"num_boxes: 0\n":                     "num_boxes: must be an integer in [1, 7]",
		"num_boxes: 8\n":                     "num_boxes: must be an integer in [1, 7]",
		"dim_x: 5\ndim_y: 5\nnum_boxes: 8\n": "num_boxes",
		"dim_x: 5\ndim_y: 5\nnum_boxes: 7\n": "no level for seed 0 after 1000 regenerations",
		"max_steps: 0\n":                     "max_steps: must be an integer >= 1",
		"search_depth: 2\n":                  "search_depth: must be an integer in [3, 10000]",
		"observation_format: image\n":        `observation_format: must be "grid", "coord" or "grid_coord", got "image"`,
		"dim_z: 3\n":                         `unknown key "dim_z"`,
	}
	for yaml, want := range cases {
		if _, err := envs.NewFactoryYAML("sokoban", []byte(yaml)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", yaml, err, want)
		}
	}
	f, err = envs.NewFactoryYAML("sokoban", []byte("dim_x: 7\ndim_y: 9\nnum_boxes: 2\nobservation_format: grid\n"))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := f.New()
	obs, err := env.Reset(3)
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Split(obs, "\n"); len(rows) != 7 || len([]rune(rows[0])) != 9 {
		t.Errorf("7x9 grid observation:\n%s", obs)
	}
}
