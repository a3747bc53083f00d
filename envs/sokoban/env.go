package sokoban

import (
	"fmt"
	"slices"
	"sync"

	"github.com/agentrl/agentrl/envs"
)

// Limits of the configuration.
const (
	// MinDim is the smallest dim_x or dim_y: a 3x3 interior, the least
	// that leaves room for a box, its target and the player to move.
	MinDim = 5
	// MaxGenDim is the largest dim_x or dim_y.
	MaxGenDim = 32
	// MinSearchDepth is the smallest search_depth that can pull a box off
	// its target (the root uses one level of the depth budget).
	MinSearchDepth = 3
	// MaxSearchDepth bounds the recursion of the reverse-play search.
	MaxSearchDepth = 10_000
)

// Rewards of gym-sokoban.
const (
	rewardStep      = -0.1
	rewardBoxOn     = 1.0
	rewardBoxOff    = -1.0
	rewardAllOnGoal = 10.0
)

// Config is the YAML configuration of the "sokoban" environment. The
// defaults are RAGEN's CoordSokoban tag.
type Config struct {
	// DimX is the number of rows of generated rooms, including the
	// border walls (RAGEN's dim_room[0]; default 6).
	DimX int `yaml:"dim_x"`
	// DimY is the number of columns (default 6).
	DimY int `yaml:"dim_y"`
	// NumBoxes is the number of boxes of generated levels (default 1).
	NumBoxes int `yaml:"num_boxes"`
	// MaxSteps ends an episode after this many valid moves (default 100).
	MaxSteps int `yaml:"max_steps"`
	// SearchDepth is the reverse-play depth of the generator (default 300):
	// deeper searches can pull the boxes further from their targets.
	SearchDepth int `yaml:"search_depth"`
	// ObservationFormat is "grid", "coord" or "grid_coord" (default).
	ObservationFormat Format `yaml:"observation_format"`
}

// DefaultConfig is RAGEN's CoordSokoban: a 6x6 room with one box, 100
// steps, search depth 300, coordinates plus grid.
func DefaultConfig() Config {
	return Config{DimX: 6, DimY: 6, NumBoxes: 1, MaxSteps: 100, SearchDepth: 300, ObservationFormat: FormatGridCoord}
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if c.DimX < MinDim || c.DimX > MaxGenDim {
		return fmt.Errorf("dim_x: must be an integer in [%d, %d] (rows, border walls included), got %d", MinDim, MaxGenDim, c.DimX)
	}
	if c.DimY < MinDim || c.DimY > MaxGenDim {
		return fmt.Errorf("dim_y: must be an integer in [%d, %d] (columns, border walls included), got %d", MinDim, MaxGenDim, c.DimY)
	}
	if c.NumBoxes < 1 || c.NumBoxes > MaxBoxes {
		return fmt.Errorf("num_boxes: must be an integer in [1, %d], got %d", MaxBoxes, c.NumBoxes)
	}
	if c.MaxSteps < 1 {
		return fmt.Errorf("max_steps: must be an integer >= 1, got %d", c.MaxSteps)
	}
	if c.SearchDepth < MinSearchDepth || c.SearchDepth > MaxSearchDepth {
		return fmt.Errorf("search_depth: must be an integer in [%d, %d], got %d", MinSearchDepth, MaxSearchDepth, c.SearchDepth)
	}
	switch c.ObservationFormat {
	case FormatGrid, FormatCoord, FormatGridCoord:
	default:
		return fmt.Errorf("observation_format: must be %q, %q or %q, got %q", FormatGrid, FormatCoord, FormatGridCoord, c.ObservationFormat)
	}
	return nil
}

func init() {
	envs.MustRegister("sokoban", envs.Registration[Config]{
		Description: "Sokoban: push every box onto a target in random solvable rooms (RAGEN/gym-sokoban)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// Env is one Sokoban episode at a time. It implements envs.Env, envs.Expert
// and envs.LevelLoader. It is not safe for concurrent use.
type Env struct {
	cfg Config
	gen *Generator

	level   *Level
	player  int
	boxAt   []bool
	onGoal  int // boxes on targets
	steps   int
	started bool
	done    bool

	expert expertCache
}

var (
	_ envs.Env         = (*Env)(nil)
	_ envs.Expert      = (*Env)(nil)
	_ envs.LevelLoader = (*Env)(nil)
)

// feasible caches, per configuration, the outcome of one trial generation.
var feasible sync.Map // Config -> error

// New builds an environment. It validates cfg and, the first time a
// configuration is seen in this process, generates one level, so that a
// room too small for its boxes (say 5x5 with 7 boxes) fails here, at
// configuration time, rather than at the first Reset of a rollout.
func New(cfg Config) (*Env, error) {
	gen, err := NewGenerator(cfg)
	if err != nil {
		return nil, err
	}
	res, ok := feasible.Load(cfg)
	if !ok {
		_, err := gen.Generate(0)
		res, _ = feasible.LoadOrStore(cfg, err)
	}
	if err, _ := res.(error); err != nil {
		return nil, err
	}
	return &Env{cfg: cfg, gen: gen}, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Reset generates the level of seed and starts an episode on it.
func (e *Env) Reset(seed uint64) (string, error) {
	l, err := e.gen.Generate(seed)
	if err != nil {
		return "", err
	}
	return e.ResetLevel(l), nil
}

// LoadLevel implements envs.LevelLoader: it parses text with ParseLevel and
// starts an episode on it. On error the environment is unchanged.
func (e *Env) LoadLevel(text string) (string, error) {
	l, err := ParseLevel(text)
	if err != nil {
		return "", err
	}
	return e.ResetLevel(l), nil
}

// ResetLevel starts an episode on l (from Generate or ParseLevel) and
// returns the initial observation.
func (e *Env) ResetLevel(l *Level) string {
	e.level = l
	e.player = l.player
	e.boxAt = boxSet(l.board, l.boxes)
	e.onGoal = 0
	for _, c := range l.boxes {
		if l.target[c] {
			e.onGoal++
		}
	}
	e.steps, e.started, e.done = 0, true, false
	e.expert.reset()
	return e.Render()
}

// Level returns the level of the current episode (its initial state), nil
// before the first Reset.
func (e *Env) Level() *Level { return e.level }

// Player returns the player's current position ((0, 0) before the first
// Reset).
func (e *Env) Player() Pos {
	if e.level == nil {
		return Pos{}
	}
	return e.level.pos(e.player)
}

// Boxes returns the current box positions in row-major order (nil before
// the first Reset).
func (e *Env) Boxes() []Pos {
	if e.level == nil {
		return nil
	}
	return e.level.positions(e.boxes())
}

func (e *Env) boxes() []int {
	out := make([]int, 0, len(e.level.boxes))
	for i, ok := range e.boxAt {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// Steps returns the number of valid moves taken in this episode.
func (e *Env) Steps() int { return e.steps }

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.done }

// Actions returns the action names in RAGEN's order.
func (e *Env) Actions() []string { return slices.Clone(actionNames[:]) }

// Instruction describes the task, the observation format with its symbol
// legend, the coordinate range of the current board (of the configured
// size before the first Reset) and the actions.
func (e *Env) Instruction() string {
	rows, cols := e.cfg.DimX, e.cfg.DimY
	if e.level != nil {
		rows, cols = e.level.rows, e.level.cols
	}
	return instruction(e.cfg.ObservationFormat, rows, cols)
}

// Render returns the current observation in the configured format, or ""
// before the first Reset.
func (e *Env) Render() string {
	if e.level == nil {
		return ""
	}
	return render(e.level.board, e.player, e.boxAt, e.cfg.ObservationFormat)
}

// Step applies one move. An action that is not one of Up, Down, Left,
// Right (case-insensitive, surrounding whitespace ignored) is an invalid
// step: nothing changes, the reward is 0 and it does not count against
// max_steps. A valid move that bumps into a wall or an immovable box
// counts as a step with ActionEffective false, as in gym-sokoban.
//
// Rewards are gym-sokoban's: -0.1 per step, +1 when a box goes onto a
// target, -1 when one leaves a target, +10 when all are on targets. The
// episode ends when every box is on a target or after max_steps moves.
// Info.Metrics["boxes_on_target"] is the number of boxes on targets.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	a, ok := ParseAction(action)
	if !ok {
		return envs.StepResult{Observation: e.Render(), Info: envs.Info{Metrics: e.metrics()}}, nil
	}
	b := e.level.board
	e.steps++
	reward := rewardStep
	moved := false
	d := b.delta[a]
	q := e.player + d
	switch {
	case b.wall[q]:
	case e.boxAt[q]:
		if r := q + d; !b.wall[r] && !e.boxAt[r] {
			e.boxAt[q], e.boxAt[r] = false, true
			e.player, moved = q, true
			if b.target[q] && !b.target[r] {
				e.onGoal--
				reward += rewardBoxOff
			} else if !b.target[q] && b.target[r] {
				e.onGoal++
				reward += rewardBoxOn
			}
		}
	default:
		e.player, moved = q, true
	}
	success := e.onGoal == len(e.level.boxes)
	if success {
		reward += rewardAllOnGoal
	}
	e.done = success || e.steps >= e.cfg.MaxSteps
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        e.done,
		Info: envs.Info{
			Success:         success,
			ActionValid:     true,
			ActionEffective: moved,
			Metrics:         e.metrics(),
		},
	}, nil
}

func (e *Env) metrics() map[string]float64 {
	return map[string]float64{"boxes_on_target": float64(e.onGoal)}
}
