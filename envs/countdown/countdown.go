// Package countdown is the Countdown numbers game: combine the given numbers
// with + - * / and parentheses to reach a target.
//
// Instances are generated from the seed the way the reference data set is
// filtered: the numbers are drawn uniformly and the target is reachable by
// adding and subtracting all of them, so every instance has a solution.
// The answer is an equation such as "(44 + 19) - 35". Rewards follow RAGEN:
// 1 when the equation uses exactly the given numbers (each once, no others)
// and equals the target; 0.1 when it uses exactly the given numbers but the
// value is wrong (or undefined, as with a division by zero); 0 when it uses
// other numbers. Text that does not parse as an equation is an invalid step.
// The game is single-turn: any parsed equation ends the episode.
package countdown

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Config configures Countdown.
type Config struct {
	// MinNumbers and MaxNumbers bound how many numbers an instance has.
	MinNumbers int `yaml:"min_numbers"`
	MaxNumbers int `yaml:"max_numbers"`
	// MaxNumber is the largest number drawn (numbers are 1..MaxNumber).
	MaxNumber int `yaml:"max_number"`
	// MaxTarget is the largest target (targets are 1..MaxTarget).
	MaxTarget int `yaml:"max_target"`
	// RequireAllNumbers makes an equation that leaves a number out count
	// as using the wrong numbers (the reference's rule). When false, each
	// number may be used at most once.
	RequireAllNumbers bool `yaml:"require_all_numbers"`
	// FormatScore is the reward for a well-formed equation with the right
	// numbers and the wrong value.
	FormatScore float64 `yaml:"format_score"`
}

// DefaultConfig is the reference setting: 3 or 4 numbers up to 99, targets
// up to 99, all numbers used, format score 0.1.
func DefaultConfig() Config {
	return Config{MinNumbers: 3, MaxNumbers: 4, MaxNumber: 99, MaxTarget: 99, RequireAllNumbers: true, FormatScore: 0.1}
}

// Validate checks the ranges.
func (c *Config) Validate() error {
	switch {
	case c.MinNumbers < 2 || c.MinNumbers > 6:
		return fmt.Errorf("min_numbers: must be in 2..6, got %d", c.MinNumbers)
	case c.MaxNumbers < c.MinNumbers || c.MaxNumbers > 6:
		return fmt.Errorf("max_numbers: must be in min_numbers..6, got %d", c.MaxNumbers)
	case c.MaxNumber < 1 || c.MaxNumber > maxLiteral:
		return fmt.Errorf("max_number: must be in 1..%d, got %d", maxLiteral, c.MaxNumber)
	case c.MaxTarget < 1:
		return fmt.Errorf("max_target: must be at least 1, got %d", c.MaxTarget)
	case c.FormatScore < 0 || c.FormatScore > 1:
		return fmt.Errorf("format_score: must be in [0, 1], got %v", c.FormatScore)
	}
	return nil
}

func init() {
	envs.MustRegister("countdown", envs.Registration[Config]{
		Description: "reach a target number with + - * / over given numbers",
		Default:     DefaultConfig,
		New:         func(c Config) (envs.Env, error) { return New(c), nil },
	})
}

// Instance is one Countdown puzzle.
type Instance struct {
	Target  int64
	Numbers []int64
}

// Generate draws the puzzle for seed. Retries are bounded; a config whose
// ranges make a reachable target unlikely fails with an error rather than
// looping forever.
func Generate(cfg Config, seed uint64) (Instance, error) {
	rng := envs.NewRand(seed, 0xc0)
	for range 10_000 {
		n := cfg.MinNumbers + rng.IntN(cfg.MaxNumbers-cfg.MinNumbers+1)
		nums := make([]int64, n)
		target := int64(0)
		for i := range nums {
			nums[i] = 1 + rng.Int64N(int64(cfg.MaxNumber))
			if i == 0 || rng.IntN(2) == 0 {
				target += nums[i]
			} else {
				target -= nums[i]
			}
		}
		if target >= 1 && target <= int64(cfg.MaxTarget) {
			return Instance{Target: target, Numbers: nums}, nil
		}
	}
	return Instance{}, fmt.Errorf("countdown: no instance with a target in 1..%d after 10000 draws; raise max_target", cfg.MaxTarget)
}

// Env is the Countdown environment.
type Env struct {
	cfg      Config
	inst     Instance
	started  bool
	finished bool
	answer   string
	reward   float64
}

// New returns a Countdown environment; call Reset before Step.
func New(cfg Config) *Env { return &Env{cfg: cfg} }

// Reset draws the puzzle for seed.
func (e *Env) Reset(seed uint64) (string, error) {
	inst, err := Generate(e.cfg, seed)
	if err != nil {
		return "", err
	}
	e.inst, e.started, e.finished, e.answer, e.reward = inst, true, false, "", 0
	return e.Render(), nil
}

// Instance returns the current puzzle.
func (e *Env) Instance() Instance { return e.inst }

// Step scores an equation. See the package doc for the rewards.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.finished {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	reward, success, err := Score(e.cfg, e.inst, action)
	if err != nil {
		return envs.StepResult{Observation: e.Render(), Info: envs.Info{Metrics: map[string]float64{"malformed": 1}}}, nil
	}
	e.finished, e.answer, e.reward = true, strings.TrimSpace(action), reward
	numbersOK := 0.0
	if reward > 0 {
		numbersOK = 1
	}
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        true,
		Info: envs.Info{Success: success, ActionValid: true, ActionEffective: true,
			Metrics: map[string]float64{"malformed": 0, "numbers_ok": numbersOK}},
	}, nil
}

// Score returns the reward of an answer for inst, whether it reaches the
// target, and an error when the answer is not an equation at all.
func Score(cfg Config, inst Instance, answer string) (reward float64, success bool, err error) {
	e, literals, err := parseEquation(strings.TrimSpace(answer))
	if err != nil {
		return 0, false, err
	}
	if !usesNumbers(literals, inst.Numbers, cfg.RequireAllNumbers) {
		return 0, false, nil
	}
	v, err := e.eval()
	if err != nil || v.Cmp(new(big.Rat).SetInt64(inst.Target)) != 0 {
		return cfg.FormatScore, false, nil
	}
	return 1, true, nil
}

// usesNumbers reports whether used draws only on given, each given number at
// most once (exactly once when all is set).
func usesNumbers(used, given []int64, all bool) bool {
	if len(used) > len(given) || (all && len(used) != len(given)) {
		return false
	}
	remaining := slices.Clone(given)
	for _, u := range used {
		i := slices.Index(remaining, u)
		if i < 0 {
			return false
		}
		remaining = slices.Delete(remaining, i, i+1)
	}
	return true
}

// Render shows the puzzle as the reference does ("Target: T, nums: [..]"),
// and the submitted answer once there is one.
func (e *Env) Render() string {
	nums := make([]string, len(e.inst.Numbers))
	for i, n := range e.inst.Numbers {
		nums[i] = fmt.Sprint(n)
	}
	s := fmt.Sprintf("Target: %d, nums: [%s]", e.inst.Target, strings.Join(nums, ", "))
	if e.finished {
		s += fmt.Sprintf("\nAnswer: %s (reward %.1f)", e.answer, e.reward)
	}
	return s
}

// Instruction describes the task and the answer format.
func (e *Env) Instruction() string {
	use := "each given number exactly once"
	if !e.cfg.RequireAllNumbers {
		use = "each given number at most once"
	}
	return "You are solving the Countdown numbers game. Using the numbers given, " + use +
		", and the operations + - * / with parentheses, write an equation whose value is the target. " +
		"Answer with the equation only, for example (44 + 19) - 35. Division is exact (6 / 4 is 1.5), and no other numbers may appear."
}

// Actions returns nil: the action is a free-form equation.
func (e *Env) Actions() []string { return nil }

// Advise returns a solving equation and a worked rationale. maxActions is
// ignored: the answer is one action.
func (e *Env) Advise(_ int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	sol, ok := Solve(e.inst, e.cfg.RequireAllNumbers)
	if !ok {
		return envs.Advice{}, fmt.Errorf("countdown: no solution for target %d with %v", e.inst.Target, e.inst.Numbers)
	}
	return envs.Advice{Actions: []string{sol.Expression}, Rationale: rationale(e.inst, sol, rng), Brief: strings.Join(sol.Steps, ", ")}, nil
}
