package game2048

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrl/agentrl/envs"
)

// RewardMode chooses how a move's merges become its reward.
type RewardMode string

const (
	// RewardLog is RAGEN's default (use_log_reward): 0.1·log2(m+1) for a
	// move whose merges create tiles worth m in all, 0 when nothing merges.
	RewardLog RewardMode = "log"
	// RewardRaw is 2048's score increment m itself.
	RewardRaw RewardMode = "raw"
)

// Format selects how observations are written.
type Format string

const (
	// FormatRAGEN is RAGEN's render: "Row i: [..]" lines with 0 for empty
	// cells, the valid moves, the goal and the score.
	FormatRAGEN Format = "ragen"
	// FormatGrid is compact: the score and valid moves on one line, then
	// the board with '.' for empty cells.
	FormatGrid Format = "grid"
)

// Config is the YAML configuration of the "2048" environment.
type Config struct {
	// Size is the side of the board (default 4, RAGEN), 2 to 6.
	Size int `yaml:"size"`
	// TwoProb is the probability that a new tile is a 2 rather than a 4
	// (default 0.9, RAGEN and the original game).
	TwoProb float64 `yaml:"two_prob"`
	// Target is the tile that wins (default 2048): the episode is a
	// success once the board holds it. Play goes on until no move is left
	// or max_steps, as in RAGEN, so that ending early never costs the
	// rewards of the moves that would follow.
	Target uint64 `yaml:"target"`
	// MaxSteps ends the episode after this many valid moves; 0 means no
	// limit. The default of 700 is RAGEN's max_actions_per_traj.
	MaxSteps int `yaml:"max_steps"`
	// Reward is "log" (default, RAGEN) or "raw" (the merged value).
	Reward RewardMode `yaml:"reward"`
	// ObservationFormat is "ragen" (default) or "grid".
	ObservationFormat Format `yaml:"observation_format"`
}

// DefaultConfig is RAGEN's game_2048: 4x4, 90% twos, the log reward, 700
// moves, to 2048.
func DefaultConfig() Config {
	return Config{Size: 4, TwoProb: 0.9, Target: 2048, MaxSteps: 700, Reward: RewardLog, ObservationFormat: FormatRAGEN}
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if c.Size < MinSize || c.Size > MaxSize {
		return fmt.Errorf("size: must be an integer in [%d, %d], got %d", MinSize, MaxSize, c.Size)
	}
	if !(c.TwoProb >= 0 && c.TwoProb <= 1) {
		return fmt.Errorf("two_prob: must be in [0, 1] (the probability a new tile is a 2), got %v", c.TwoProb)
	}
	// A board of n² cells cannot hold a tile above 2^(n²+1).
	maxTarget := uint64(1) << (c.Size*c.Size + 1)
	if c.Target < 4 || c.Target&(c.Target-1) != 0 || c.Target > maxTarget {
		return fmt.Errorf("target: must be a power of two from 4 to %d on a %dx%d board, got %d", maxTarget, c.Size, c.Size, c.Target)
	}
	if c.MaxSteps < 0 {
		return fmt.Errorf("max_steps: must be >= 0 (0 = no limit), got %d", c.MaxSteps)
	}
	if c.Reward != RewardLog && c.Reward != RewardRaw {
		return fmt.Errorf("reward: must be %q (RAGEN's 0.1·log2(merged+1)) or %q (the merged value), got %q", RewardLog, RewardRaw, c.Reward)
	}
	if c.ObservationFormat != FormatRAGEN && c.ObservationFormat != FormatGrid {
		return fmt.Errorf("observation_format: must be %q or %q, got %q", FormatRAGEN, FormatGrid, c.ObservationFormat)
	}
	return nil
}

func init() {
	envs.MustRegister("2048", envs.Registration[Config]{
		Description: "2048: slide and merge tiles on a 4x4 board to reach the 2048 tile (RAGEN)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// streamTiles labels the random stream of tile spawns (envs.NewRand).
const streamTiles = 0x32303438 // "2048"

// Env is one 2048 game at a time. It implements envs.Env, envs.Expert,
// envs.StateKeyer and envs.LevelLoader. It is not safe for concurrent use.
type Env struct {
	cfg     Config
	board   Board
	rng     *rand.Rand
	seed    uint64
	score   uint64
	steps   int
	started bool
	done    bool
}

var (
	_ envs.Env         = (*Env)(nil)
	_ envs.Expert      = (*Env)(nil)
	_ envs.StateKeyer  = (*Env)(nil)
	_ envs.LevelLoader = (*Env)(nil)
)

// New validates cfg and returns an environment.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Env{cfg: cfg}, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Board returns the current board.
func (e *Env) Board() Board { return e.board }

// Score is the sum of the values of every tile made by a merge so far.
func (e *Env) Score() uint64 { return e.score }

// Steps returns the number of valid moves taken in this episode.
func (e *Env) Steps() int { return e.steps }

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.done }

// Reset starts a game on an empty board with two random tiles. The tiles,
// and every tile spawned later, come from seed's stream, so a seed and a
// sequence of moves always give the same game.
func (e *Env) Reset(seed uint64) (string, error) {
	e.rng = envs.NewRand(seed, streamTiles)
	e.seed = seed
	b := NewBoard(e.cfg.Size)
	b.spawn(e.rng, e.cfg.TwoProb)
	b.spawn(e.rng, e.cfg.TwoProb)
	return e.start(b), nil
}

// LoadLevel implements envs.LevelLoader: it starts a game on a board read
// by ParseBoard (of the configured size, not already won or lost). New
// tiles come from the stream of the last Reset's seed (0 if none).
func (e *Env) LoadLevel(text string) (string, error) {
	b, err := ParseBoard(text)
	if err != nil {
		return "", err
	}
	if b.Size() != e.cfg.Size {
		return "", fmt.Errorf("game2048: board is %dx%d; the environment plays %dx%d (size)", b.Size(), b.Size(), e.cfg.Size, e.cfg.Size)
	}
	if b.MaxTile() >= e.cfg.Target {
		return "", fmt.Errorf("game2048: board already holds the target tile %d", e.cfg.Target)
	}
	if !b.CanMove() {
		return "", fmt.Errorf("game2048: board has no move left")
	}
	e.rng = envs.NewRand(e.seed, streamTiles)
	return e.start(b), nil
}

func (e *Env) start(b Board) string {
	e.board = b
	e.score, e.steps, e.started, e.done = 0, 0, true, false
	return e.Render()
}

// Actions returns the four slides in RAGEN's order.
func (e *Env) Actions() []string {
	return []string{Up.String(), Right.String(), Down.String(), Left.String()}
}

// Render returns the current observation, "" before the first Reset.
func (e *Env) Render() string {
	if !e.started {
		return ""
	}
	return render(&e.board, e.score, e.cfg)
}

// Instruction describes the game, the moves and the reward.
func (e *Env) Instruction() string { return instruction(e.cfg) }

// StateKey implements envs.StateKeyer: the board, one character per cell.
// The score is not part of it: it does not change what can happen next.
func (e *Env) StateKey() string {
	if !e.started {
		return ""
	}
	return e.board.key()
}

// Step applies one slide. Text that is not Up, Right, Down or Left (any
// case) and a slide that moves no tile are invalid steps: nothing changes,
// the reward is 0 and the step does not count against max_steps. A valid
// slide merges, spawns a new tile and pays the merges (see RewardMode);
// the episode ends when no slide is left or after max_steps moves, and is
// a success from the move that makes the target tile on.
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
	next, merged, moved := e.board.Move(a)
	if !moved {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	next.spawn(e.rng, e.cfg.TwoProb)
	e.board = next
	e.score += merged
	e.steps++
	maxTile := e.board.MaxTile()
	success := maxTile >= e.cfg.Target
	over := !e.board.CanMove()
	e.done = over || (e.cfg.MaxSteps > 0 && e.steps >= e.cfg.MaxSteps)
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      e.reward(merged),
		Done:        e.done,
		Info: envs.Info{
			Success:         success,
			ActionValid:     true,
			ActionEffective: true,
			Metrics: map[string]float64{
				"merged":    float64(merged),
				"max_tile":  float64(maxTile),
				"score":     float64(e.score),
				"game_over": b2f(over),
			},
		},
	}, nil
}

// reward is a move's reward for merges worth merged.
func (e *Env) reward(merged uint64) float64 {
	if e.cfg.Reward == RewardRaw {
		return float64(merged)
	}
	if merged == 0 {
		return 0
	}
	return 0.1 * math.Log2(float64(merged)+1)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
