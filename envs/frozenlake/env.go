package frozenlake

import (
	"fmt"
	"math/rand/v2"

	"github.com/agentrl/agentrl/envs"
)

// Config is the YAML configuration of the "frozenlake" environment.
//
// Slipping has a single knob, success_rate, the probability that a move goes
// where intended; each perpendicular direction gets (1-success_rate)/2.
// success_rate 1 is deterministic (RAGEN's main-table setting and the
// default), RAGEN's envs.yaml uses 0.8, and Gymnasium's is_slippery=true is
// success_rate 1/3. There is no separate is_slippery flag, so the two cannot
// disagree.
type Config struct {
	// Size is the side of generated square maps (default 4, RAGEN).
	Size int `yaml:"size"`
	// P is the probability that a generated tile is frozen rather than a
	// hole (default 0.9, RAGEN; Gymnasium's default is 0.8).
	P float64 `yaml:"p"`
	// Placement puts start and goal at random distinct tiles ("random",
	// RAGEN, the default) or in the top-left and bottom-right corners
	// ("corners", Gymnasium).
	Placement Placement `yaml:"placement"`
	// SuccessRate is the probability that a move goes in the intended
	// direction (default 1: deterministic).
	SuccessRate float64 `yaml:"success_rate"`
	// MaxSteps ends the episode after this many valid moves; 0 means no
	// limit. RAGEN relies on the rollout's turn limit instead; the default
	// of 100 (Gymnasium's 4x4 time limit) is a safety net.
	MaxSteps int `yaml:"max_steps"`
	// ObservationFormat is "grid", "coord" or "grid_coord" (default,
	// RAGEN's CoordFrozenLake).
	ObservationFormat Format `yaml:"observation_format"`
}

// DefaultConfig is the configuration used for keys a YAML config leaves
// out: RAGEN's deterministic 4x4 CoordFrozenLake with p = 0.9.
func DefaultConfig() Config {
	return Config{
		Size:              4,
		P:                 0.9,
		Placement:         PlacementRandom,
		SuccessRate:       1,
		MaxSteps:          100,
		ObservationFormat: FormatGridCoord,
	}
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if c.Size < MinSize || c.Size > MaxSize {
		return fmt.Errorf("size: must be an integer in [%d, %d], got %d", MinSize, MaxSize, c.Size)
	}
	if !(c.P > 0 && c.P <= 1) {
		return fmt.Errorf("p: must be in (0, 1] (probability a tile is frozen), got %v", c.P)
	}
	if c.Placement != PlacementRandom && c.Placement != PlacementCorners {
		return fmt.Errorf("placement: must be %q or %q, got %q", PlacementRandom, PlacementCorners, c.Placement)
	}
	if !(c.SuccessRate >= 0 && c.SuccessRate <= 1) {
		return fmt.Errorf("success_rate: must be in [0, 1] (1 = deterministic), got %v", c.SuccessRate)
	}
	if c.MaxSteps < 0 {
		return fmt.Errorf("max_steps: must be >= 0 (0 = no limit), got %d", c.MaxSteps)
	}
	switch c.ObservationFormat {
	case FormatGrid, FormatCoord, FormatGridCoord:
	default:
		return fmt.Errorf("observation_format: must be %q, %q or %q, got %q",
			FormatGrid, FormatCoord, FormatGridCoord, c.ObservationFormat)
	}
	return nil
}

func init() {
	envs.MustRegister("frozenlake", envs.Registration[Config]{
		Description: "FrozenLake: walk to the goal on random solvable maps without falling into a hole (RAGEN/Gymnasium)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// Random stream labels for envs.NewRand. Maps and slips use separate streams
// so that the map of a seed does not depend on the actions taken, and the
// slips do not depend on how many boards the generator had to redraw.
const (
	streamMap  = 0x666c2d6d6170   // "fl-map"
	streamSlip = 0x666c2d736c6970 // "fl-slip"
)

// Env is one FrozenLake episode at a time. It implements envs.Env,
// envs.Expert and envs.LevelLoader. It is not safe for concurrent use.
type Env struct {
	cfg Config
	gen generator

	m       *Map
	pos     Pos
	seed    uint64
	slip    *rand.Rand
	steps   int
	started bool
	done    bool
}

var (
	_ envs.Env         = (*Env)(nil)
	_ envs.Expert      = (*Env)(nil)
	_ envs.LevelLoader = (*Env)(nil)
)

// New builds an environment. It validates cfg and draws one map so that a
// p too small to yield solvable maps fails here, at configuration time,
// rather than in the middle of a rollout.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg}
	if _, err := e.gen.generate(cfg.Size, cfg.P, cfg.Placement, envs.NewRand(0, streamMap)); err != nil {
		return nil, err
	}
	return e, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Reset draws the map of seed and starts an episode on it. The map depends
// only on seed and the map settings (size, p, placement); the slips depend
// only on seed, success_rate and the actions taken.
func (e *Env) Reset(seed uint64) (string, error) {
	m, err := e.gen.generate(e.cfg.Size, e.cfg.P, e.cfg.Placement, envs.NewRand(seed, streamMap))
	if err != nil {
		return "", err
	}
	return e.ResetMap(m, seed), nil
}

// ResetMap starts an episode on m, with the slips drawn from seed's stream,
// and returns the initial observation. m must come from Generate or
// ParseMap.
func (e *Env) ResetMap(m *Map, seed uint64) string {
	e.m, e.pos, e.seed = m, m.start, seed
	e.slip = envs.NewRand(seed, streamSlip)
	e.steps, e.started, e.done = 0, true, false
	return e.Render()
}

// LoadLevel implements envs.LevelLoader: it parses text with ParseMap and
// starts an episode on it. The slips come from the seed of the last Reset
// (0 if there was none), since a level carries no seed of its own.
func (e *Env) LoadLevel(text string) (string, error) {
	m, err := ParseMap(text)
	if err != nil {
		return "", err
	}
	return e.ResetMap(m, e.seed), nil
}

// Map returns the current map, nil before the first Reset.
func (e *Env) Map() *Map { return e.m }

// Position returns the player's position.
func (e *Env) Position() Pos { return e.pos }

// Steps returns the number of valid moves taken in this episode.
func (e *Env) Steps() int { return e.steps }

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.done }

// Actions returns the action names, in Gymnasium order.
func (e *Env) Actions() []string {
	return []string{Left.String(), Down.String(), Right.String(), Up.String()}
}

// Instruction describes the task, the symbols, the coordinate range of the
// current map (of the configured size before the first Reset) and, when
// success_rate < 1, the slip probabilities.
func (e *Env) Instruction() string {
	rows, cols := e.cfg.Size, e.cfg.Size
	if e.m != nil {
		rows, cols = e.m.rows, e.m.cols
	}
	return instruction(e.cfg, rows, cols)
}

// Render returns the current observation in the configured format, or ""
// before the first Reset.
func (e *Env) Render() string {
	if e.m == nil {
		return ""
	}
	return render(e.m, e.pos, e.cfg.ObservationFormat)
}

// Step applies one move. An action that is not one of Left, Down, Right, Up
// (case-insensitive, surrounding whitespace ignored) is an invalid step:
// nothing changes and it does not count against max_steps. A valid move may
// slip (see Config); Info.Metrics["slipped"] is 1 when it did.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	a, ok := ParseAction(action)
	if !ok {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	executed := slipAction(a, e.cfg.SuccessRate, e.slip)
	old := e.pos
	e.pos = e.m.move(e.pos, executed)
	e.steps++

	success := e.pos == e.m.goal
	inHole := e.m.IsHole(e.pos)
	e.done = success || inHole || (e.cfg.MaxSteps > 0 && e.steps >= e.cfg.MaxSteps)
	reward := 0.0
	if success {
		reward = 1
	}
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        e.done,
		Info: envs.Info{
			Success:         success,
			ActionValid:     true,
			ActionEffective: e.pos != old,
			Metrics: map[string]float64{
				"slipped": b2f(executed != a),
				"in_hole": b2f(inHole),
			},
		},
	}, nil
}

// slipAction is Gymnasium's slippery transition: the executed move is
// (a-1)%4, a or (a+1)%4 with probabilities (1-s)/2, s, (1-s)/2, sampled as
// Gymnasium's categorical_sample does (the first outcome whose cumulative
// probability exceeds a uniform draw). The last cumulative value is pinned
// to 1 so that rounding in (1-s)/2+s+(1-s)/2 can never leave a draw
// unmatched. With s = 1 no number is drawn: the outcome is certain, and
// skipping the draw keeps deterministic episodes cheap.
func slipAction(a Action, s float64, rng *rand.Rand) Action {
	if s >= 1 {
		return a
	}
	fail := (1 - s) / 2
	u := rng.Float64()
	switch {
	case u < fail:
		return (a + numActions - 1) % numActions
	case u < fail+s:
		return a
	default:
		return (a + 1) % numActions
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
