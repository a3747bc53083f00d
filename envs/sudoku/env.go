// Package sudoku is the Sudoku environment, registered as "sudoku": fill a
// 4×4 or 9×9 grid so that every row, column and box holds each digit once,
// placing one digit per action ("place 3 at row 2 col 4").
//
// Puzzles are generated from the seed with a unique solution and exactly
// the configured number of givens (difficulty: RAGEN's counts). Rewards are
// RAGEN's shaped ones: a placement that matches the solution earns
// correct_placement_score, one that breaks no rule but is wrong earns half
// of it, and solving adds completion_bonus. A placement on a filled cell
// or one that repeats a digit in its row, column or box is an invalid step
// (RAGEN charges −0.1 for it; here the rollout's format penalty does), and
// so is text in none of the accepted spellings (see ParseAction). Unlike
// RAGEN, a placed digit cannot be overwritten, so no reward can be earned
// twice for a cell; a wrong digit makes the puzzle unsolvable, and the
// episode goes on until max_steps or until no digit fits anywhere.
package sudoku

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Config is the YAML configuration of the "sudoku" environment.
type Config struct {
	// Size is the side of the grid: 4 (default, RAGEN's board_size) or 9.
	Size int `yaml:"size"`
	// Difficulty sets the givens when Givens is 0: "easy", "medium" or
	// "hard" (RAGEN's counts: 10, 9, 6 on 4×4; 36, 30, 24 on 9×9).
	Difficulty string `yaml:"difficulty"`
	// Givens is the number of filled cells a puzzle starts with (0: from
	// difficulty): 4 to 15 on 4×4, 22 to 80 on 9×9.
	Givens int `yaml:"givens"`
	// MaxSteps ends the episode after this many valid placements (default
	// 30, RAGEN); 0 means no limit. It must leave room for every empty
	// cell.
	MaxSteps int `yaml:"max_steps"`
	// CorrectPlacementScore is paid for a digit that matches the solution
	// (default 1, RAGEN); a rule-abiding wrong digit gets half of it.
	CorrectPlacementScore float64 `yaml:"correct_placement_score"`
	// CompletionBonus is added on the placement that solves the puzzle
	// (default 10, RAGEN).
	CompletionBonus float64 `yaml:"completion_bonus"`
	// ShowCandidates lists, after every empty cell, the digits that fit
	// it (RAGEN's show_valid_numbers). Default false.
	ShowCandidates bool `yaml:"show_candidates"`
}

// Difficulty names.
const (
	Easy   = "easy"
	Medium = "medium"
	Hard   = "hard"
)

// difficultyGivens is RAGEN's table of givens by size and difficulty.
var difficultyGivens = map[int]map[string]int{
	4: {Easy: 10, Medium: 9, Hard: 6},
	9: {Easy: 36, Medium: 30, Hard: 24},
}

// givensRange is the accepted range of givens by size. Below these
// minimums the generator rarely finds a puzzle (17 is the 9×9 minimum for
// a unique solution; random removal seldom gets under 22).
var givensRange = map[int][2]int{4: {4, 15}, 9: {22, 80}}

// DefaultConfig is RAGEN's Sudoku: 4×4, easy, 30 steps, shaped reward.
func DefaultConfig() Config {
	return Config{Size: 4, Difficulty: Easy, MaxSteps: 30, CorrectPlacementScore: 1, CompletionBonus: 10}
}

// NumGivens resolves givens and difficulty to the number of givens.
func (c *Config) NumGivens() int {
	if c.Givens > 0 {
		return c.Givens
	}
	return difficultyGivens[c.Size][c.Difficulty]
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if c.Size != 4 && c.Size != 9 {
		return fmt.Errorf("size: must be 4 or 9, got %d", c.Size)
	}
	if c.Difficulty != Easy && c.Difficulty != Medium && c.Difficulty != Hard {
		return fmt.Errorf("difficulty: must be %q, %q or %q, got %q", Easy, Medium, Hard, c.Difficulty)
	}
	lo, hi := givensRange[c.Size][0], givensRange[c.Size][1]
	if c.Givens != 0 && (c.Givens < lo || c.Givens > hi) {
		return fmt.Errorf("givens: must be 0 (from difficulty) or in [%d, %d] on %dx%d, got %d", lo, hi, c.Size, c.Size, c.Givens)
	}
	if blanks := c.Size*c.Size - c.NumGivens(); c.MaxSteps != 0 && c.MaxSteps < blanks {
		return fmt.Errorf("max_steps: must be 0 (no limit) or at least the %d empty cells of a puzzle, got %d", blanks, c.MaxSteps)
	}
	if c.CorrectPlacementScore < 0 {
		return fmt.Errorf("correct_placement_score: must be >= 0, got %v", c.CorrectPlacementScore)
	}
	if c.CompletionBonus < 0 {
		return fmt.Errorf("completion_bonus: must be >= 0, got %v", c.CompletionBonus)
	}
	return nil
}

func init() {
	envs.MustRegister("sudoku", envs.Registration[Config]{
		Description: "Sudoku: fill a 4x4 or 9x9 grid with unique-solution puzzles, one digit per action (RAGEN)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// streamPuzzle labels the random stream puzzles are drawn from.
const streamPuzzle = 0x7375646f6b75 // "sudoku"

// Env is one Sudoku episode at a time. It implements envs.Env,
// envs.Expert, envs.RandomActor, envs.Solver, envs.StateKeyer and
// envs.LevelLoader. It is not safe for concurrent use.
type Env struct {
	cfg      Config
	puzzle   Grid // the givens
	solution Grid
	grid     Grid // the current board
	steps    int
	started  bool
	done     bool
}

var (
	_ envs.Env         = (*Env)(nil)
	_ envs.Expert      = (*Env)(nil)
	_ envs.RandomActor = (*Env)(nil)
	_ envs.Solver      = (*Env)(nil)
	_ envs.StateKeyer  = (*Env)(nil)
	_ envs.LevelLoader = (*Env)(nil)
)

// New validates cfg and returns an environment. It draws one puzzle, so
// that a number of givens the generator cannot reach fails here rather
// than in a rollout.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, _, err := Generate(cfg.Size, cfg.NumGivens(), envs.NewRand(0, streamPuzzle)); err != nil {
		return nil, err
	}
	return &Env{cfg: cfg}, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Grid returns the current board.
func (e *Env) Grid() Grid { return e.grid }

// Solution returns the solution of the current puzzle.
func (e *Env) Solution() Grid { return e.solution }

// Steps returns the number of valid placements in this episode.
func (e *Env) Steps() int { return e.steps }

// Done reports whether the episode has ended.
func (e *Env) Done() bool { return e.done }

// Reset draws the puzzle of seed and starts an episode on it.
func (e *Env) Reset(seed uint64) (string, error) {
	puzzle, solution, err := Generate(e.cfg.Size, e.cfg.NumGivens(), envs.NewRand(seed, streamPuzzle))
	if err != nil {
		return "", err
	}
	return e.start(puzzle, solution), nil
}

// LoadLevel implements envs.LevelLoader: it reads a puzzle with ParseGrid
// (of the configured size, with a unique solution and at least one empty
// cell) and starts an episode on it.
func (e *Env) LoadLevel(text string) (string, error) {
	g, err := ParseGrid(text)
	if err != nil {
		return "", err
	}
	if g.Size() != e.cfg.Size {
		return "", fmt.Errorf("sudoku: the puzzle is %dx%d; the environment plays %dx%d (size)", g.Size(), g.Size(), e.cfg.Size, e.cfg.Size)
	}
	if g.Empty() == 0 {
		return "", fmt.Errorf("sudoku: the puzzle has no empty cell")
	}
	sol, unique := Solve(g)
	if !unique {
		if n := countSolutions(g, 2); n == 0 {
			return "", fmt.Errorf("sudoku: the puzzle has no solution")
		}
		return "", fmt.Errorf("sudoku: the puzzle has more than one solution")
	}
	return e.start(g, sol), nil
}

func (e *Env) start(puzzle, solution Grid) string {
	e.puzzle, e.solution, e.grid = puzzle, solution, puzzle
	e.steps, e.started, e.done = 0, true, false
	return e.Render()
}

// Actions returns nil: placements are free-form text (see ParseAction),
// and RandomAction draws a random legal one.
func (e *Env) Actions() []string { return nil }

// Render returns the current observation, "" before the first Reset: the
// rows (boxes separated by '|', '.' for empty) and the empty cells as
// (row,col), with their candidates when show_candidates is on.
func (e *Env) Render() string {
	if !e.started {
		return ""
	}
	g := &e.grid
	n, b := g.n, g.box()
	var sb strings.Builder
	for r := range n {
		sb.WriteString("Row ")
		sb.WriteString(strconv.Itoa(r + 1))
		sb.WriteByte(':')
		for c := range n {
			if c > 0 && c%b == 0 {
				sb.WriteString(" |")
			}
			sb.WriteByte(' ')
			if v := g.At(r, c); v == 0 {
				sb.WriteByte('.')
			} else {
				sb.WriteByte(byte('0' + v))
			}
		}
		sb.WriteByte('\n')
	}
	sb.WriteString("Empty:")
	rows, cols, boxes := g.used()
	k := 0
	for i, v := range g.cells[:n*n] {
		if v != 0 {
			continue
		}
		k++
		fmt.Fprintf(&sb, " (%d,%d)", i/n+1, i%n+1)
		if e.cfg.ShowCandidates {
			sb.WriteByte(':')
			sb.WriteString(digitList(g.candidates(i, &rows, &cols, &boxes), ","))
		}
	}
	if k == 0 {
		sb.WriteString(" none")
	}
	return sb.String()
}

// digitList writes the digits of mask m, ascending, joined by sep ("-"
// for none).
func digitList(m uint16, sep string) string {
	var parts []string
	for d := 1; d <= 9; d++ {
		if m&(1<<d) != 0 {
			parts = append(parts, strconv.Itoa(d))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, sep)
}

// Instruction explains the rules, the observation, the action spellings
// and the rewards.
func (e *Env) Instruction() string {
	n := e.cfg.Size
	b := 2
	if n == 9 {
		b = 3
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "You are solving a Sudoku puzzle. Fill in the grid so that every row, column, and %dx%d box contains the numbers 1-%d without repetition. ", b, b, n)
	sb.WriteString("The grid is shown row by row, boxes separated by |, empty cells as dots (.); the empty cells are then listed as (row,col)")
	if e.cfg.ShowCandidates {
		sb.WriteString(", each with the numbers that fit it")
	}
	fmt.Fprintf(&sb, ". Rows and columns are numbered 1 to %d from the top-left. ", n)
	sb.WriteString("Place numbers one at a time using the format: <answer>place 5 at row 2 col 3</answer> or <answer>2,3,5</answer> (row, column, number). ")
	sb.WriteString("A number on a filled cell, or one already in its row, column or box, is invalid and changes nothing; placed numbers cannot be changed. ")
	fmt.Fprintf(&sb, "A number that matches the solution earns %s, a rule-abiding wrong one %s (and makes the puzzle unsolvable), and solving the puzzle earns %s more.",
		formatScore(e.cfg.CorrectPlacementScore), formatScore(e.cfg.CorrectPlacementScore/2), formatScore(e.cfg.CompletionBonus))
	if e.cfg.MaxSteps > 0 {
		fmt.Fprintf(&sb, " You have %d placements.", e.cfg.MaxSteps)
	}
	return sb.String()
}

func formatScore(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Step applies one placement. Text in no accepted spelling, coordinates or
// a number outside the grid, a filled cell and a number already in the
// cell's row, column or box are invalid steps: nothing changes, the reward
// is 0 and the step does not count against max_steps. A valid placement
// pays correct_placement_score when it matches the solution and half of it
// otherwise, plus completion_bonus when it solves the puzzle. The episode
// ends when the puzzle is solved, when no number fits any empty cell, or
// after max_steps placements.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	p, ok := ParseAction(action)
	if !ok || !e.legal(p) {
		return envs.StepResult{Observation: e.Render()}, nil
	}
	i := (p.Row-1)*e.grid.n + p.Col - 1
	e.grid.cells[i] = uint8(p.Value)
	e.steps++
	correct := e.solution.cells[i] == uint8(p.Value)
	reward := e.cfg.CorrectPlacementScore
	if !correct {
		reward /= 2
	}
	solved := e.grid.Empty() == 0 // every placement obeys the rules, so a full grid is the solution
	if solved {
		reward += e.cfg.CompletionBonus
	}
	stuck := !solved && !e.anyLegal()
	e.done = solved || stuck || (e.cfg.MaxSteps > 0 && e.steps >= e.cfg.MaxSteps)
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        e.done,
		Info: envs.Info{
			Success:         solved,
			ActionValid:     true,
			ActionEffective: true,
			Metrics: map[string]float64{
				"correct": b2f(correct),
				"stuck":   b2f(stuck),
			},
		},
	}, nil
}

// legal reports whether p is a placement the rules allow now.
func (e *Env) legal(p Placement) bool {
	g := &e.grid
	n := g.n
	if p.Row < 1 || p.Row > n || p.Col < 1 || p.Col > n || p.Value < 1 || p.Value > n {
		return false
	}
	i := (p.Row-1)*n + p.Col - 1
	rows, cols, boxes := g.used()
	return g.candidates(i, &rows, &cols, &boxes)&(1<<p.Value) != 0
}

// legalPlacements lists every placement the rules allow, row-major, digits
// ascending.
func (e *Env) legalPlacements() []Placement {
	g := &e.grid
	rows, cols, boxes := g.used()
	var out []Placement
	for i := range g.n * g.n {
		m := g.candidates(i, &rows, &cols, &boxes)
		for d := 1; d <= g.n; d++ {
			if m&(1<<d) != 0 {
				out = append(out, Placement{Row: i/g.n + 1, Col: i%g.n + 1, Value: d})
			}
		}
	}
	return out
}

// anyLegal reports whether some number fits some empty cell.
func (e *Env) anyLegal() bool {
	g := &e.grid
	rows, cols, boxes := g.used()
	for i := range g.n * g.n {
		if g.candidates(i, &rows, &cols, &boxes) != 0 {
			return true
		}
	}
	return false
}

// RandomAction implements envs.RandomActor: a uniformly random legal
// placement (an empty cell and a number not yet in its row, column or
// box).
func (e *Env) RandomAction(rng *rand.Rand) (string, error) {
	if !e.started {
		return "", envs.ErrNotReset
	}
	legal := e.legalPlacements()
	if len(legal) == 0 {
		return "", fmt.Errorf("sudoku: no legal placement")
	}
	return legal[rng.IntN(len(legal))].String(), nil
}

// StateKey implements envs.StateKeyer: the grid's digits on one line.
func (e *Env) StateKey() string {
	if !e.started {
		return ""
	}
	return e.grid.key()
}

// CostToGo implements envs.Solver: the number of empty cells while every
// placed number matches the solution, and solvable false once one does
// not (the solution is unique, so a wrong number can never be completed).
func (e *Env) CostToGo() (int, bool, error) {
	if !e.started {
		return 0, false, envs.ErrNotReset
	}
	if !e.onTrack() {
		return 0, false, nil
	}
	return e.grid.Empty(), true, nil
}

// onTrack reports whether every filled cell matches the solution.
func (e *Env) onTrack() bool {
	for i, v := range e.grid.cells[:e.grid.n*e.grid.n] {
		if v != 0 && v != e.solution.cells[i] {
			return false
		}
	}
	return true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
