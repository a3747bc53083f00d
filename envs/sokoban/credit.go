package sokoban

import (
	"errors"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

var (
	_ envs.StateKeyer = (*Env)(nil)
	_ envs.Solver     = (*Env)(nil)
)

// StateKey implements envs.StateKeyer: the player's cell and the box
// cells in ascending order ("P14 B9 B20"), the whole state within a
// level. Empty before the first Reset.
func (e *Env) StateKey() string {
	if e.level == nil {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('P')
	sb.WriteString(strconv.Itoa(e.player))
	for _, c := range e.boxes() {
		sb.WriteString(" B")
		sb.WriteString(strconv.Itoa(c))
	}
	return sb.String()
}

// CostToGo implements envs.Solver with the expert's search: the length of
// a shortest solution in player moves (walks and pushes both count one, as
// the step limit does), 0 when solved, and solvable false once no box
// arrangement can be reached that puts every box on a target (a deadlock).
// The remaining step budget is not considered. With one box the answer
// comes from the level's distance table, built once per level; with
// several, a search capped at DefaultMaxStates states, whose overflow is
// an error wrapping ErrSearchLimit.
func (e *Env) CostToGo() (int, bool, error) {
	if !e.started {
		return 0, false, envs.ErrNotReset
	}
	boxes := e.boxes()
	if e.level.board.solved(boxes) {
		return 0, true, nil
	}
	plan, err := e.plan(boxes)
	switch {
	case errors.Is(err, ErrUnsolvable):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return len(plan), true, nil
}

var _ envs.RationaleChecker = (*Env)(nil)

// CheckRationale implements envs.RationaleChecker for the brief form
// "P r,c X r,c … O r,c …": facts player, boxes and targets, each right
// when the text states exactly the true cells (all boxes, all targets).
func (e *Env) CheckRationale(text string) map[string]bool {
	if e.level == nil {
		return nil
	}
	b := e.level.board
	cells := func(cs []int) [][2]int {
		out := make([][2]int, len(cs))
		for i, c := range cs {
			p := b.pos(c)
			out[i] = [2]int{p.Row, p.Col}
		}
		return out
	}
	stated := envs.BriefCells(text)
	return map[string]bool{
		"player":  envs.SameCells(stated['P'], cells([]int{e.player})),
		"boxes":   envs.SameCells(stated['X'], cells(e.boxes())),
		"targets": envs.SameCells(stated['O'], cells(b.targets)),
	}
}
