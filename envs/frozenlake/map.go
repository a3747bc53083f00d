// Package frozenlake is the FrozenLake grid world of Gymnasium as RAGEN uses
// it: walk from the start to the goal over frozen tiles without falling into
// a hole, on randomly generated maps that are always solvable.
//
// The package has three layers that can be used separately:
//
//   - Map, Pos and Action: a board and its geometry, parsed from text
//     (ParseMap) or generated (Generate), with a canonical Key for
//     de-duplicating levels and a shortest-path search;
//   - Env: the text environment registered as "frozenlake", with the
//     Gymnasium slip model and RAGEN's renders;
//   - the expert (Env.Advise): shortest-path advice with a rationale.
//
// Coordinates are zero-indexed (row, column) pairs with row 0 at the top, as
// in RAGEN's coordinate observations.
package frozenlake

import (
	"strconv"
	"strings"
)

// Pos is a zero-indexed board position: Row 0 is the top row, Col 0 the left
// column.
type Pos struct {
	Row, Col int
}

// String formats p as "(row, col)", the notation of the coordinate render.
func (p Pos) String() string {
	return string(p.appendTo(nil))
}

func (p Pos) appendTo(b []byte) []byte {
	b = append(b, '(')
	b = strconv.AppendInt(b, int64(p.Row), 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(p.Col), 10)
	return append(b, ')')
}

// Action is a move. The values are Gymnasium's action indices (LEFT=0,
// DOWN=1, RIGHT=2, UP=3); RAGEN numbers the same actions 1..4, i.e. a+1. The
// slip model relies on this order: a-1 and a+1 (mod 4) are the two
// directions perpendicular to a.
type Action int

// The four moves, in Gymnasium order. This order is also the expert's
// tie-break among equally short routes.
const (
	Left Action = iota
	Down
	Right
	Up
)

// numActions is the size of the action space.
const numActions = 4

var actionNames = [numActions]string{"Left", "Down", "Right", "Up"}

// delta is the (row, col) displacement of each action.
var delta = [numActions]Pos{{0, -1}, {1, 0}, {0, 1}, {-1, 0}}

// String returns the action's name as the agent writes it ("Left", ...).
func (a Action) String() string {
	if a < 0 || a >= numActions {
		return "Action(" + strconv.Itoa(int(a)) + ")"
	}
	return actionNames[a]
}

// ParseAction reads an action name, case-insensitively and ignoring
// surrounding whitespace. Anything else (including RAGEN's numbers 1..4,
// which a language model could confuse with coordinates) is rejected.
func ParseAction(s string) (Action, bool) {
	s = strings.TrimSpace(s)
	for a, name := range actionNames {
		if strings.EqualFold(s, name) {
			return Action(a), true
		}
	}
	return 0, false
}

// Map is a FrozenLake board: a rectangle of frozen tiles and holes with one
// start and one goal, both on non-hole tiles. A Map is immutable once built
// and safe to share between environments.
type Map struct {
	rows, cols  int
	hole        []bool // row-major; never true at start or goal
	start, goal Pos
}

// Rows is the number of rows.
func (m *Map) Rows() int { return m.rows }

// Cols is the number of columns.
func (m *Map) Cols() int { return m.cols }

// Start is where the player begins.
func (m *Map) Start() Pos { return m.start }

// Goal is the tile that ends the episode with reward 1.
func (m *Map) Goal() Pos { return m.goal }

// InBounds reports whether p lies on the board.
func (m *Map) InBounds(p Pos) bool {
	return p.Row >= 0 && p.Row < m.rows && p.Col >= 0 && p.Col < m.cols
}

// IsHole reports whether p is a hole. Positions off the board are not holes.
func (m *Map) IsHole(p Pos) bool {
	return m.InBounds(p) && m.hole[p.Row*m.cols+p.Col]
}

// Holes lists the holes in row-major order.
func (m *Map) Holes() []Pos {
	var out []Pos
	for i, h := range m.hole {
		if h {
			out = append(out, Pos{i / m.cols, i % m.cols})
		}
	}
	return out
}

// letter is the Gymnasium letter of the tile at p (S, F, H or G).
func (m *Map) letter(p Pos) byte {
	switch {
	case p == m.goal:
		return 'G'
	case p == m.start:
		return 'S'
	case m.hole[p.Row*m.cols+p.Col]:
		return 'H'
	}
	return 'F'
}

// appendRows writes the board in Gymnasium letters, rows separated by sep.
func (m *Map) appendRows(b []byte, sep byte) []byte {
	for r := range m.rows {
		if r > 0 {
			b = append(b, sep)
		}
		for c := range m.cols {
			b = append(b, m.letter(Pos{r, c}))
		}
	}
	return b
}

// String returns the board in Gymnasium letters (S F H G), one row per line;
// ParseMap reads it back.
func (m *Map) String() string {
	return string(m.appendRows(make([]byte, 0, m.rows*(m.cols+1)), '\n'))
}

// Key is a canonical one-line form of the layout, Gymnasium letters with rows
// separated by '/', e.g. "SFFF/FHFH/FFFH/HFFG". Two maps have the same Key
// exactly when they have the same size, holes, start and goal, whichever
// alphabet they were written in, so it can key a set of levels. ParseMap
// accepts it too.
func (m *Map) Key() string {
	return string(m.appendRows(make([]byte, 0, m.rows*(m.cols+1)), '/'))
}

// move returns where action a takes the player from p; a move off the board
// leaves the player in place, as in Gymnasium.
func (m *Map) move(p Pos, a Action) Pos {
	q := Pos{p.Row + delta[a].Row, p.Col + delta[a].Col}
	if !m.InBounds(q) {
		return p
	}
	return q
}
