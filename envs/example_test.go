package envs_test

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// lineConfig is the YAML configuration of the example environment.
type lineConfig struct {
	Length   int `yaml:"length"`
	MaxSteps int `yaml:"max_steps"`
}

// Validate names the offending key and the allowed values.
func (c *lineConfig) Validate() error {
	if c.Length < 2 {
		return fmt.Errorf("length: must be at least 2, got %d", c.Length)
	}
	return nil
}

// lineEnv: walk along a line of cells to the goal.
type lineEnv struct {
	cfg               lineConfig
	pos, goal, steps  int
	started, finished bool
}

func (e *lineEnv) Reset(seed uint64) (string, error) {
	rng := envs.NewRand(seed, 1)
	e.goal = rng.IntN(e.cfg.Length)
	e.pos = (e.goal + 1 + rng.IntN(e.cfg.Length-1)) % e.cfg.Length
	e.steps, e.started, e.finished = 0, true, false
	return e.Render(), nil
}

func (e *lineEnv) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.finished {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	delta := map[string]int{"left": -1, "right": 1}[strings.ToLower(strings.TrimSpace(action))]
	if delta == 0 { // not an action: an invalid step that changes nothing
		return envs.StepResult{Observation: e.Render()}, nil
	}
	old := e.pos
	e.pos = min(max(e.pos+delta, 0), e.cfg.Length-1)
	e.steps++
	success := e.pos == e.goal
	e.finished = success || e.steps >= e.cfg.MaxSteps
	reward := -0.1
	if success {
		reward = 1
	}
	return envs.StepResult{Observation: e.Render(), Reward: reward, Done: e.finished,
		Info: envs.Info{Success: success, ActionValid: true, ActionEffective: e.pos != old}}, nil
}

func (e *lineEnv) Render() string {
	cells := []byte(strings.Repeat("_", e.cfg.Length))
	cells[e.goal] = 'G'
	cells[e.pos] = 'P'
	return string(cells)
}

func (e *lineEnv) Instruction() string {
	return "You are P on a line of cells. Reach G. Actions: Left, Right."
}

func (e *lineEnv) Actions() []string { return []string{"Left", "Right"} }

// Example_newEnvironment implements and registers a new environment: a config
// type, the five Env methods and one Register call. Nothing else in agentrl
// changes; the trainer finds it by name.
func Example_newEnvironment() {
	envs.MustRegister("line", envs.Registration[lineConfig]{
		Description: "walk along a line to the goal",
		Default:     func() lineConfig { return lineConfig{Length: 5, MaxSteps: 10} },
		New:         func(c lineConfig) (envs.Env, error) { return &lineEnv{cfg: c}, nil },
	})

	factory, err := envs.NewFactoryYAML("line", []byte("length: 7\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	env, _ := factory.New()
	obs, _ := env.Reset(42)
	fmt.Println(obs)
	res, _ := env.Step("LEFT")
	fmt.Println(res.Observation, res.Reward, res.Info.ActionValid, res.Info.ActionEffective)
	res, _ = env.Step("jump")
	fmt.Println(res.Observation, res.Reward, res.Info.ActionValid, res.Info.ActionEffective)

	_, err = envs.NewFactoryYAML("line", []byte("length: 7\nspeed: 2\n"))
	fmt.Println(err)
	_, err = envs.NewFactoryYAML("line", []byte("length: 1\n"))
	fmt.Println(err)
	// Output:
	// ___G__P
	// ___G_P_ -0.1 true true
	// ___G_P_ 0 false false
	// env "line" config: line 2: unknown key "speed"
	// env "line" config: length: must be at least 2, got 1
}
