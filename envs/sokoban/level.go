package sokoban

import (
	"fmt"
	"strings"
)

// Size limits of a level. Cell indices are packed into 16-bit fields of the
// solver's and generator's state keys, and the player plus MaxBoxes boxes
// fill exactly two 64-bit words, which is what keeps those keys
// allocation-free.
const (
	// MaxBoxes is the largest number of boxes a level may have.
	MaxBoxes = 7
	// MaxDim is the largest number of rows or columns of a level.
	MaxDim = 64
)

// Pos is a zero-indexed board position: Row 0 is the top row, Col 0 the
// leftmost column.
type Pos struct {
	Row, Col int
}

// String writes p as "(r, c)", the notation of the coordinate observation.
func (p Pos) String() string { return fmt.Sprintf("(%d, %d)", p.Row, p.Col) }

// board is the fixed part of a level: walls and targets. Every non-wall cell
// is strictly inside the grid (ParseLevel and the generator guarantee it),
// so moving from a non-wall cell never leaves the grid and no move needs a
// bounds check.
type board struct {
	rows, cols int
	wall       []bool
	target     []bool
	targets    []int  // target cells, ascending
	delta      [4]int // cell-index offset of Up, Down, Left, Right
}

func newBoard(rows, cols int) *board {
	n := rows * cols
	return &board{
		rows: rows, cols: cols,
		wall:   make([]bool, n),
		target: make([]bool, n),
		delta:  [4]int{-cols, cols, -1, 1},
	}
}

func (b *board) pos(cell int) Pos { return Pos{cell / b.cols, cell % b.cols} }

// Level is a Sokoban board in its initial state: walls, targets, boxes and
// the player. It is immutable once built by ParseLevel or Generate.
type Level struct {
	*board
	player int
	boxes  []int // box cells, ascending
}

// Rows is the number of rows of the board.
func (l *Level) Rows() int { return l.rows }

// Cols is the number of columns of the board.
func (l *Level) Cols() int { return l.cols }

// Player is the player's starting position.
func (l *Level) Player() Pos { return l.pos(l.player) }

// NumBoxes is the number of boxes (and of targets).
func (l *Level) NumBoxes() int { return len(l.boxes) }

// Boxes are the starting box positions in row-major order.
func (l *Level) Boxes() []Pos { return l.positions(l.boxes) }

// Targets are the target positions in row-major order.
func (l *Level) Targets() []Pos { return l.positions(l.targets) }

// IsWall reports whether p is a wall; positions off the board count as walls.
func (l *Level) IsWall(p Pos) bool {
	if p.Row < 0 || p.Row >= l.rows || p.Col < 0 || p.Col >= l.cols {
		return true
	}
	return l.wall[p.Row*l.cols+p.Col]
}

func (b *board) positions(cells []int) []Pos {
	out := make([]Pos, len(cells))
	for i, c := range cells {
		out[i] = b.pos(c)
	}
	return out
}

// String renders the level as a grid in RAGEN's symbols, rows separated by
// newlines.
func (l *Level) String() string {
	return string(appendGrid(nil, l.board, l.player, boxSet(l.board, l.boxes)))
}

// Key is a canonical key of the initial layout: two levels have the same key
// exactly when they have the same size, walls, targets, boxes and player
// start. It is the RAGEN grid text (which ParseLevel reads back), so it can
// be used to keep validation levels disjoint from training levels.
func (l *Level) Key() string { return l.String() }

// XSB renders the level in the standard .xsb notation (# wall, @ player,
// + player on target, $ box, * box on target, . target, space floor).
func (l *Level) XSB() string {
	boxAt := boxSet(l.board, l.boxes)
	var sb strings.Builder
	for r := range l.rows {
		if r > 0 {
			sb.WriteByte('\n')
		}
		for c := range l.cols {
			i := r*l.cols + c
			var ch byte
			switch {
			case l.wall[i]:
				ch = '#'
			case i == l.player && l.target[i]:
				ch = '+'
			case i == l.player:
				ch = '@'
			case boxAt[i] && l.target[i]:
				ch = '*'
			case boxAt[i]:
				ch = '$'
			case l.target[i]:
				ch = '.'
			default:
				ch = ' '
			}
			sb.WriteByte(ch)
		}
	}
	return sb.String()
}

func boxSet(b *board, boxes []int) []bool {
	s := make([]bool, b.rows*b.cols)
	for _, c := range boxes {
		s[c] = true
	}
	return s
}

// solved reports whether every box is on a target.
func (b *board) solved(boxes []int) bool {
	for _, c := range boxes {
		if !b.target[c] {
			return false
		}
	}
	return true
}
