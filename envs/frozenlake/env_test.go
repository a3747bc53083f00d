package frozenlake

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

const classic = "SFFF\nFHFH\nFFFH\nHFFG"

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
	e := newEnv(t, nil)
	if _, err := e.Step("Left"); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Fatalf("Advise before Reset: %v", err)
	}
	if e.Render() != "" {
		t.Fatalf("Render before Reset = %q", e.Render())
	}
	if _, err := e.LoadLevel(classic); err != nil {
		t.Fatal(err)
	}
	res := mustStep(t, e, "Right")
	res = mustStep(t, e, "Down") // (1, 1) is a hole
	if !res.Done || res.Reward != 0 || res.Info.Success || res.Info.Metrics["in_hole"] != 1 {
		t.Fatalf("falling into a hole: %+v", res)
	}
	for _, a := range []string{"Left", "nonsense"} {
		if _, err := e.Step(a); !errors.Is(err, envs.ErrEpisodeDone) {
			t.Fatalf("Step(%q) after done: %v", a, err)
		}
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Fatalf("Advise after done: %v", err)
	}
	// Reset starts over.
	if _, err := e.Reset(3); err != nil || e.Done() || e.Steps() != 0 {
		t.Fatalf("Reset after done: %v done=%v steps=%d", err, e.Done(), e.Steps())
	}
}

func TestRewardOnGoal(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.LoadLevel(classic); err != nil {
		t.Fatal(err)
	}
	for i, a := range []string{"Down", "Down", "Right", "Down", "Right", "Right"} {
		res := mustStep(t, e, a)
		last := i == 5
		if res.Done != last || res.Info.Success != last || (res.Reward == 1) != last {
			t.Fatalf("step %d %s: %+v", i, a, res)
		}
		if !res.Info.ActionValid || !res.Info.ActionEffective || res.Info.Metrics["slipped"] != 0 {
			t.Fatalf("step %d info %+v", i, res.Info)
		}
	}
	if e.Position() != (Pos{3, 3}) || e.Steps() != 6 {
		t.Fatalf("position %v steps %d", e.Position(), e.Steps())
	}
}

func TestInvalidActionChangesNothing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SuccessRate = 0.5; c.MaxSteps = 3 })
	obs, _ := e.Reset(7)
	ref := newEnv(t, func(c *Config) { c.SuccessRate = 0.5; c.MaxSteps = 3 })
	ref.Reset(7)
	for _, a := range []string{"", "jump", "1", "Left Right", "<answer>Left</answer>", "le ft", "\x00"} {
		res := mustStep(t, e, a)
		if res.Info.ActionValid || res.Info.ActionEffective || res.Reward != 0 || res.Done ||
			res.Observation != obs || e.Steps() != 0 || res.Info.Metrics != nil {
			t.Fatalf("invalid action %q: %+v steps=%d", a, res, e.Steps())
		}
	}
	// Invalid steps consume no randomness: the slips that follow are those
	// of an environment that never saw them.
	for _, a := range []string{"Up", "Left", "Down"} {
		got, want := mustStep(t, e, " "+strings.ToLower(a)+"\n"), mustStep(t, ref, a)
		if got.Observation != want.Observation || got.Info.Metrics["slipped"] != want.Info.Metrics["slipped"] {
			t.Fatalf("after invalid steps the trajectory diverged: %+v vs %+v", got, want)
		}
		if got.Done {
			break
		}
	}
}

func TestMoveOffGridStays(t *testing.T) {
	e := newEnv(t, nil)
	e.LoadLevel(classic)
	for _, a := range []string{"Left", "Up"} {
		res := mustStep(t, e, a)
		if !res.Info.ActionValid || res.Info.ActionEffective || e.Position() != (Pos{0, 0}) || res.Done {
			t.Fatalf("%s at the corner: %+v at %v", a, res, e.Position())
		}
	}
	if e.Steps() != 2 {
		t.Fatalf("blocked moves must count as steps, got %d", e.Steps())
	}
}

func TestMaxSteps(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSteps = 3 })
	e.LoadLevel(classic)
	for i := range 3 {
		res := mustStep(t, e, "Left")
		if res.Done != (i == 2) || res.Info.Success || res.Reward != 0 {
			t.Fatalf("step %d: %+v", i, res)
		}
	}
	e = newEnv(t, func(c *Config) { c.MaxSteps = 0 })
	e.LoadLevel(classic)
	for range 500 {
		if res := mustStep(t, e, "Up"); res.Done {
			t.Fatal("max_steps 0 must not end the episode")
		}
	}
}

func TestSameSeedSameTrajectory(t *testing.T) {
	actions := []string{"Right", "Down", "Left", "Up", "Down", "Right", "Right", "Down"}
	run := func(seed uint64) []string {
		e := newEnv(t, func(c *Config) { c.SuccessRate = 0.6; c.Size = 6; c.P = 0.95 })
		obs, _ := e.Reset(seed)
		out := []string{obs}
		for _, a := range actions {
			res := mustStep(t, e, a)
			out = append(out, res.Observation, strings.Repeat("s", int(res.Info.Metrics["slipped"])))
			if res.Done {
				break
			}
		}
		return out
	}
	differs := false
	for seed := range uint64(40) {
		a, b := run(seed), run(seed)
		if strings.Join(a, "|") != strings.Join(b, "|") {
			t.Fatalf("seed %d: trajectories differ", seed)
		}
		if strings.Join(a, "|") != strings.Join(run(seed+1000), "|") {
			differs = true
		}
	}
	if !differs {
		t.Fatal("all seeds gave the same trajectory")
	}
}

func TestMapIndependentOfActionsAndSlip(t *testing.T) {
	for seed := range uint64(30) {
		det := newEnv(t, nil)
		det.Reset(seed)
		key := det.Map().Key()
		slippy := newEnv(t, func(c *Config) { c.SuccessRate = 0.3; c.MaxSteps = 0 })
		slippy.Reset(seed)
		if slippy.Map().Key() != key {
			t.Fatalf("seed %d: success_rate changed the map", seed)
		}
		for _, a := range []string{"Down", "Right", "Up", "Left"} {
			if res, _ := slippy.Step(a); res.Done {
				break
			}
		}
		slippy.Reset(seed)
		if slippy.Map().Key() != key {
			t.Fatalf("seed %d: actions changed the map", seed)
		}
	}
}

// chiSquare is the chi-square statistic of counts against probabilities,
// skipping zero-probability cells (which must then have zero counts).
func chiSquare(t *testing.T, counts []int, probs []float64) float64 {
	t.Helper()
	n := 0
	for _, c := range counts {
		n += c
	}
	x := 0.0
	for i, c := range counts {
		exp := probs[i] * float64(n)
		if exp == 0 {
			if c != 0 {
				t.Fatalf("outcome %d has probability 0 but occurred %d times", i, c)
			}
			continue
		}
		x += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	return x
}

func TestSlipFrequencies(t *testing.T) {
	rng := envs.NewRand(12345, streamSlip)
	const n = 60000
	for _, s := range []float64{1, 0.8, 0.5, 1.0 / 3, 0.1, 0} {
		for a := range Action(numActions) {
			counts := make([]int, 3) // (a-1)%4, a, (a+1)%4
			for range n {
				switch slipAction(a, s, rng) {
				case (a + 3) % 4:
					counts[0]++
				case a:
					counts[1]++
				case (a + 1) % 4:
					counts[2]++
				default:
					t.Fatalf("s=%v a=%v: slipped backwards", s, a)
				}
			}
			f := (1 - s) / 2
			// 99.9th percentile of chi-square with 2 degrees of freedom.
			if x := chiSquare(t, counts, []float64{f, s, f}); x > 13.8 {
				t.Errorf("s=%v a=%v: counts %v, chi-square %.1f", s, a, counts, x)
			}
		}
	}
}

func TestSlipMetricThroughEnv(t *testing.T) {
	const s = 0.7
	e := newEnv(t, func(c *Config) { c.SuccessRate = s; c.MaxSteps = 0; c.P = 1 })
	slips, steps := 0.0, 0
	for seed := uint64(0); steps < 20000; seed++ {
		e.Reset(seed)
		for i := 0; ; i++ {
			res := mustStep(t, e, Action(i%4).String())
			steps++
			slips += res.Info.Metrics["slipped"]
			if res.Done {
				break
			}
		}
	}
	rate := slips / float64(steps)
	// Binomial standard deviation is about 0.0032; allow 5 sigma.
	if math.Abs(rate-(1-s)) > 0.016 {
		t.Fatalf("slip rate %.4f over %d steps, want %.2f", rate, steps, 1-s)
	}
}

func TestLoadLevelErrorKeepsState(t *testing.T) {
	e := newEnv(t, nil)
	e.Reset(5)
	before, pos := e.Render(), e.Position()
	if _, err := e.LoadLevel("SFF\nFG"); err == nil {
		t.Fatal("ragged level accepted")
	}
	if e.Render() != before || e.Position() != pos {
		t.Fatal("failed LoadLevel changed the environment")
	}
}

func TestRegistry(t *testing.T) {
	f, err := envs.NewFactoryYAML("frozenlake", []byte("size: 6\nsuccess_rate: 0.8\nplacement: corners\nobservation_format: coord\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config().(Config)
	if cfg.Size != 6 || cfg.SuccessRate != 0.8 || cfg.P != 0.9 || cfg.MaxSteps != 100 || cfg.Placement != PlacementCorners {
		t.Fatalf("resolved config %+v", cfg)
	}
	env, err := f.New()
	if err != nil {
		t.Fatal(err)
	}
	obs, err := env.Reset(1)
	if err != nil || !strings.HasPrefix(obs, "Board size: 6 rows x 6 cols") {
		t.Fatalf("obs %q, %v", obs, err)
	}
	if _, ok := env.(envs.Expert); !ok {
		t.Fatal("not an Expert")
	}
	if _, ok := env.(envs.LevelLoader); !ok {
		t.Fatal("not a LevelLoader")
	}
	for _, tc := range []struct{ yaml, want string }{
		{"size: 1", "size: must be an integer in [2, 32]"},
		{"size: 33", "size:"},
		{"p: 0", "p: must be in (0, 1]"},
		{"p: 1.2", "p:"},
		{"placement: center", `placement: must be "random" or "corners"`},
		{"success_rate: -0.1", "success_rate: must be in [0, 1]"},
		{"success_rate: 2", "success_rate:"},
		{"max_steps: -1", "max_steps: must be >= 0"},
		{"observation_format: image", `observation_format: must be "grid", "coord" or "grid_coord"`},
		{"is_slippery: true", `unknown key "is_slippery"`},
		{"size: 8\np: 0.01\nplacement: corners", "no solvable"},
	} {
		_, err := envs.NewFactoryYAML("frozenlake", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestInstruction(t *testing.T) {
	det := newEnv(t, nil).Instruction()
	for _, want := range []string{"Left, Down, Right, Up", "(3, 3)", "P you", "O hole", "√", "X you in a hole", "at most 100 moves"} {
		if !strings.Contains(det, want) {
			t.Errorf("instruction lacks %q:\n%s", want, det)
		}
	}
	if strings.Contains(det, "slippery") || strings.Contains(det, "(5, 5)") {
		t.Errorf("deterministic 4x4 instruction mentions slipping or (5, 5):\n%s", det)
	}
	slip := newEnv(t, func(c *Config) { c.Size = 6; c.SuccessRate = 0.8; c.ObservationFormat = FormatCoord }).Instruction()
	for _, want := range []string{"(5, 5)", "slippery", "80%", "10% each"} {
		if !strings.Contains(slip, want) {
			t.Errorf("instruction lacks %q:\n%s", want, slip)
		}
	}
	if strings.Contains(slip, "Grid symbols") {
		t.Errorf("coord-only instruction has a grid legend:\n%s", slip)
	}
	// A loaded level's own size wins over the configured one.
	e := newEnv(t, nil)
	e.LoadLevel("SFH\nFFG")
	if ins := e.Instruction(); !strings.Contains(ins, "(1, 2)") {
		t.Errorf("instruction after loading a 2x3 level:\n%s", ins)
	}
	if got := strings.Join(e.Actions(), " "); got != "Left Down Right Up" {
		t.Errorf("Actions() = %q", got)
	}
}
