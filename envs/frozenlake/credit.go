package frozenlake

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

var (
	_ envs.StateKeyer = (*Env)(nil)
	_ envs.Solver     = (*Env)(nil)
)

// StateKey implements envs.StateKeyer: the player's position ("2,3"), the
// whole state within a map. Empty before the first Reset.
func (e *Env) StateKey() string {
	if e.m == nil {
		return ""
	}
	return fmt.Sprintf("%d,%d", e.pos.Row, e.pos.Col)
}

// CostToGo implements envs.Solver: the number of moves of a shortest
// hole-free route to the goal (0 on it), and solvable false in a hole or
// where no route is left. It assumes every move goes where intended, so it
// is exact with success_rate 1 (the shipped setting); with slipping it is
// the fewest moves that could still reach the goal, not an expectation.
func (e *Env) CostToGo() (int, bool, error) {
	if !e.started {
		return 0, false, envs.ErrNotReset
	}
	if e.m.IsHole(e.pos) {
		return 0, false, nil
	}
	path, ok := e.m.ShortestPath(e.pos)
	if !ok {
		return 0, false, nil
	}
	return len(path), true, nil
}

var _ envs.RationaleChecker = (*Env)(nil)

// CheckRationale implements envs.RationaleChecker for the brief form
// "P r,c G r,c": facts player and goal.
func (e *Env) CheckRationale(text string) map[string]bool {
	if e.m == nil {
		return nil
	}
	stated := envs.BriefCells(text)
	return map[string]bool{
		"player": envs.SameCells(stated['P'], [][2]int{{e.pos.Row, e.pos.Col}}),
		"goal":   envs.SameCells(stated['G'], [][2]int{{e.m.goal.Row, e.m.goal.Col}}),
	}
}
