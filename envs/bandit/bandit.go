// Package bandit is RAGEN's two-armed bandit: one turn, two arms named by
// professions, one safe and one risky. The safe ("low") arm always pays
// LowReward; the risky ("high") arm pays HighReward with probability HighProb
// and 0 otherwise, so with the defaults (0.1; 1.0 at 0.25) the risky arm has
// the higher mean. The agent sees only the names and must reason about what
// they suggest. Success means choosing the risky arm.
//
// Which name is arm 1 and which arm 2 is drawn from the seed, as is the
// payout. Unlike the reference, which mixes a per-process counter into the
// seed so that samples of one group see different payouts, the payout here
// depends on the seed alone: an environment is reproducible from its seed,
// and samples in a group differ by what they choose.
package bandit

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Config configures the bandit.
type Config struct {
	// Split selects the name pairs: "train" (12 pairs) or "test" (8 unseen pairs).
	Split      string  `yaml:"split"`
	LowReward  float64 `yaml:"low_reward"`
	HighReward float64 `yaml:"high_reward"`
	HighProb   float64 `yaml:"high_prob"`
}

// DefaultConfig is the reference setting.
func DefaultConfig() Config {
	return Config{Split: "train", LowReward: 0.1, HighReward: 1.0, HighProb: 0.25}
}

// Validate checks the split and the payout probabilities.
func (c *Config) Validate() error {
	if _, ok := armNames[c.Split]; !ok {
		return fmt.Errorf("split: must be train or test, got %q", c.Split)
	}
	if c.HighProb < 0 || c.HighProb > 1 {
		return fmt.Errorf("high_prob: must be in [0, 1], got %v", c.HighProb)
	}
	return nil
}

// armNames are (safe, risky) profession pairs.
var armNames = map[string][][2]string{
	"train": {
		{"Teacher", "Trader"}, {"Librarian", "Investor"}, {"Accountant", "Gambler"},
		{"Nurse", "Entrepreneur"}, {"Clerk", "Speculator"}, {"Postman", "Prospector"},
		{"Banker", "Venturer"}, {"Farmer", "Adventurer"}, {"Archivist", "Stuntman"},
		{"Pharmacist", "Explorer"}, {"Civil servant", "Day trader"}, {"Bookkeeper", "Treasure hunter"},
	},
	"test": {
		{"Dentist", "Poker player"}, {"Auditor", "Startup founder"}, {"Cashier", "Daredevil"},
		{"Secretary", "Wildcatter"}, {"Actuary", "Race driver"}, {"Registrar", "Mountaineer"},
		{"Tax advisor", "Crypto miner"}, {"Janitor", "Storm chaser"},
	},
}

func init() {
	envs.MustRegister("bandit", envs.Registration[Config]{
		Description: "two-armed bandit whose arms are named by professions",
		Default:     DefaultConfig,
		New:         func(c Config) (envs.Env, error) { return New(c), nil },
	})
}

// Env is the bandit environment.
type Env struct {
	cfg      Config
	arms     [2]string // arms[0] is action 1
	highArm  int       // index into arms of the risky arm
	payout   float64   // the risky arm's payout this episode
	started  bool
	finished bool
	last     string
}

// New returns a bandit; call Reset before Step.
func New(cfg Config) *Env { return &Env{cfg: cfg} }

// Reset draws the name pair, which action gets which name, and the payout.
func (e *Env) Reset(seed uint64) (string, error) {
	rng := envs.NewRand(seed, 0xba)
	pairs := armNames[e.cfg.Split]
	pair := pairs[rng.IntN(len(pairs))]
	e.highArm = rng.IntN(2)
	e.arms[e.highArm], e.arms[1-e.highArm] = pair[1], pair[0]
	e.payout = 0
	if rng.Float64() < e.cfg.HighProb {
		e.payout = e.cfg.HighReward
	}
	e.started, e.finished, e.last = true, false, ""
	return e.Render(), nil
}

// Step pulls the arm named by action (case-insensitive; "1"/"2" also work).
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.finished {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	arm := -1
	a := strings.TrimSpace(action)
	for i, name := range e.arms {
		if strings.EqualFold(a, name) || a == fmt.Sprint(i+1) {
			arm = i
		}
	}
	if arm < 0 {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	reward := e.cfg.LowReward
	if arm == e.highArm {
		reward = e.payout
	}
	e.finished = true
	e.last = fmt.Sprintf("%s: %g points", e.arms[arm], reward)
	return envs.StepResult{
		Observation: e.Render(), Reward: reward, Done: true,
		Info: envs.Info{Success: arm == e.highArm, ActionValid: true, ActionEffective: true},
	}, nil
}

// Render shows the choice, or the outcome once made.
func (e *Env) Render() string {
	if e.finished {
		return e.last
	}
	return fmt.Sprintf("You are facing a slot machine with two arms: %s (1) and %s (2). "+
		"Each arm has its own reward distribution; think about what the names suggest. "+
		"Which arm will you pull?", e.arms[0], e.arms[1])
}

// Instruction explains the task and the answer format.
func (e *Env) Instruction() string {
	return "You are playing a two-armed bandit. Each arm is named after a profession, and the name hints at " +
		"how that arm pays: steady and small, or rare and large. Pick the arm with the higher expected reward. " +
		"Answer with the arm's name."
}

// Actions lists the two arm names of the current episode.
func (e *Env) Actions() []string { return []string{e.arms[0], e.arms[1]} }

var rationaleTemplates = []string{
	"%[1]s suggests a steady, small income while %[2]s suggests rare but large wins; the risky arm %[2]s has the higher expected reward.",
	"Between %[2]s and %[1]s, %[2]s is the risk-taker. Rare big payouts beat a small sure thing here, so pull %[2]s.",
	"%[1]s pays little but always; %[2]s pays a lot sometimes. Expected value favours %[2]s.",
	"The names hint at the payouts: %[1]s is safe and small, %[2]s is volatile with a higher mean. Choose %[2]s.",
}

// Advise recommends the risky arm.
func (e *Env) Advise(_ int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	tmpl := rationaleTemplates[0]
	if rng != nil {
		tmpl = rationaleTemplates[rng.IntN(len(rationaleTemplates))]
	}
	high, low := e.arms[e.highArm], e.arms[1-e.highArm]
	return envs.Advice{Actions: []string{high}, Rationale: fmt.Sprintf(tmpl, low, high), Brief: high + " is risky, " + low + " is safe"}, nil
}
