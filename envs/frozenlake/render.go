package frozenlake

import (
	"strconv"
	"strings"
)

// Format selects how observations are written.
type Format string

const (
	// FormatGrid is one character per tile, rows on separate lines.
	FormatGrid Format = "grid"
	// FormatCoord lists the board size and the zero-indexed coordinates of
	// the start, goal, player and holes.
	FormatCoord Format = "coord"
	// FormatGridCoord is the coordinate list followed by the grid, RAGEN's
	// CoordFrozenLake observation.
	FormatGridCoord Format = "grid_coord"
)

// Grid symbols, RAGEN's FrozenLake vocabulary. The start tile is shown as
// frozen ice once the player has left it, as in RAGEN.
const (
	symPlayer       = "P"
	symFrozen       = "_"
	symHole         = "O"
	symGoal         = "G"
	symPlayerInHole = "X"
	symPlayerOnGoal = "√"
)

// appendGrid writes the board with the player at pos.
func appendGrid(b []byte, m *Map, pos Pos) []byte {
	for r := range m.rows {
		if r > 0 {
			b = append(b, '\n')
		}
		for c := range m.cols {
			p := Pos{r, c}
			hole := m.hole[r*m.cols+c]
			var s string
			switch {
			case p == pos && p == m.goal:
				s = symPlayerOnGoal
			case p == pos && hole:
				s = symPlayerInHole
			case p == pos:
				s = symPlayer
			case p == m.goal:
				s = symGoal
			case hole:
				s = symHole
			default:
				s = symFrozen
			}
			b = append(b, s...)
		}
	}
	return b
}

// appendCoord writes RAGEN's coordinate observation: the board size, then
// Start, Goal, the player (labelled by what it stands on) and Holes. Unlike
// RAGEN's Sokoban render, which drops empty lines, a board without holes
// says "Holes: none" so that the agent is told rather than left to infer it.
func appendCoord(b []byte, m *Map, pos Pos) []byte {
	b = append(b, "Board size: "...)
	b = strconv.AppendInt(b, int64(m.rows), 10)
	b = append(b, " rows x "...)
	b = strconv.AppendInt(b, int64(m.cols), 10)
	b = append(b, " cols (zero-indexed).\nStart: "...)
	b = m.start.appendTo(b)
	b = append(b, "\nGoal: "...)
	b = m.goal.appendTo(b)
	switch {
	case pos == m.goal:
		b = append(b, "\nPlayer on goal: "...)
	case m.IsHole(pos):
		b = append(b, "\nPlayer in hole: "...)
	default:
		b = append(b, "\nPlayer: "...)
	}
	b = pos.appendTo(b)
	b = append(b, "\nHoles: "...)
	n := 0
	for i, h := range m.hole {
		if h {
			if n > 0 {
				b = append(b, ", "...)
			}
			b = Pos{i / m.cols, i % m.cols}.appendTo(b)
			n++
		}
	}
	if n == 0 {
		b = append(b, "none"...)
	}
	return b
}

// render writes the observation of the player at pos in format f.
func render(m *Map, pos Pos, f Format) string {
	b := make([]byte, 0, 64+m.rows*(m.cols+1)+16*len(m.hole))
	switch f {
	case FormatGrid:
		b = appendGrid(b, m, pos)
	case FormatCoord:
		b = appendCoord(b, m, pos)
	default: // FormatGridCoord; Config.Validate admits nothing else
		b = append(b, "Coordinates: \n"...)
		b = appendCoord(b, m, pos)
		b = append(b, "\nGrid Map: \n"...)
		b = appendGrid(b, m, pos)
	}
	return string(b)
}

// instruction is the environment part of the system prompt for a board of
// rows×cols under cfg.
func instruction(cfg Config, rows, cols int) string {
	var sb strings.Builder
	sb.WriteString("You are walking on a frozen lake of ")
	sb.WriteString(strconv.Itoa(rows))
	sb.WriteString(" rows and ")
	sb.WriteString(strconv.Itoa(cols))
	sb.WriteString(" columns. Reach the goal without falling into a hole.\n")
	if cfg.ObservationFormat != FormatCoord {
		sb.WriteString("Grid symbols: P you, _ frozen ice (safe; your starting tile is also shown as _), O hole, G goal, X you in a hole, √ you on the goal.\n")
	}
	if cfg.ObservationFormat != FormatGrid {
		sb.WriteString("The coordinates list the start, the goal, your position (\"Player on goal\" or \"Player in hole\" once the episode ends) and every hole.\n")
	}
	sb.WriteString("Positions are (row, column), zero-indexed: (0, 0) is the top-left tile and (")
	sb.WriteString(strconv.Itoa(rows - 1))
	sb.WriteString(", ")
	sb.WriteString(strconv.Itoa(cols - 1))
	sb.WriteString(") the bottom-right; Down increases the row, Right increases the column.\n")
	sb.WriteString("Actions: Left, Down, Right, Up. Each moves you one tile; a move off the edge leaves you where you are.\n")
	sb.WriteString("Reaching the goal gives reward 1 and ends the episode; falling into a hole ends it with reward 0.")
	if cfg.MaxSteps > 0 {
		sb.WriteString(" You have at most ")
		sb.WriteString(strconv.Itoa(cfg.MaxSteps))
		sb.WriteString(" moves.")
	}
	if s := cfg.SuccessRate; s < 1 {
		sb.WriteString("\nThe ice is slippery: a move goes in the intended direction with probability ")
		sb.WriteString(percent(s))
		sb.WriteString(" and otherwise slides to one of the two perpendicular directions (")
		sb.WriteString(percent((1 - s) / 2))
		sb.WriteString(" each), so check where you actually are after every move.")
	}
	return sb.String()
}

// percent formats a probability as a short percentage, e.g. 0.8 -> "80%".
func percent(p float64) string {
	return strconv.FormatFloat(p*100, 'g', 4, 64) + "%"
}
