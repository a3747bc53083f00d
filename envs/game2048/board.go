package game2048

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Board sizes the environment accepts. RAGEN plays 4x4; larger boards are
// capped at 6 so that no reachable tile can overflow a uint64 score.
const (
	MinSize = 2
	MaxSize = 6
)

// Action is one slide. The order Up, Right, Down, Left is RAGEN's
// action_lookup (ids 0 to 3).
type Action int

// The four slides: every tile moves as far as it can in the direction,
// and two equal tiles that meet merge into one of twice the value.
const (
	Up Action = iota
	Right
	Down
	Left
	numActions
)

var actionNames = [numActions]string{"Up", "Right", "Down", "Left"}

// String is the action's name as the agent writes it.
func (a Action) String() string {
	if a < 0 || a >= numActions {
		return "Action(?)"
	}
	return actionNames[a]
}

// ParseAction reads an action name, ignoring case and surrounding
// whitespace. RAGEN's numeric ids are not accepted: the agent writes names.
func ParseAction(s string) (Action, bool) {
	s = strings.TrimSpace(s)
	for a, name := range actionNames {
		if strings.EqualFold(s, name) {
			return Action(a), true
		}
	}
	return 0, false
}

// Board is a square 2048 board. Each cell holds the base-2 logarithm of
// its tile (0 for an empty cell, 1 for a 2, 2 for a 4, ...), row-major.
// The zero Board is not usable; make one with NewBoard or ParseBoard.
type Board struct {
	n     int
	cells [MaxSize * MaxSize]uint8
}

// NewBoard returns an empty n×n board. n must be in [MinSize, MaxSize].
func NewBoard(n int) Board { return Board{n: n} }

// Size is the side of the board.
func (b *Board) Size() int { return b.n }

// Tile returns the value of the tile at (row, col), 0 for an empty cell.
func (b *Board) Tile(row, col int) uint64 { return tileValue(b.cells[row*b.n+col]) }

// SetTile puts a tile of value v (0 or a power of two from 2 on) at
// (row, col). Other values are rounded down to a power of two.
func (b *Board) SetTile(row, col int, v uint64) {
	var e uint8
	for v > 1 {
		v >>= 1
		e++
	}
	b.cells[row*b.n+col] = e
}

func tileValue(e uint8) uint64 {
	if e == 0 {
		return 0
	}
	return 1 << e
}

// Empty counts the empty cells.
func (b *Board) Empty() int {
	k := 0
	for _, c := range b.cells[:b.n*b.n] {
		if c == 0 {
			k++
		}
	}
	return k
}

// MaxTile is the value of the largest tile (0 on an empty board).
func (b *Board) MaxTile() uint64 {
	var m uint8
	for _, c := range b.cells[:b.n*b.n] {
		m = max(m, c)
	}
	return tileValue(m)
}

// maxCell is the row-major index of the first largest tile.
func (b *Board) maxCell() int {
	best := 0
	for i, c := range b.cells[:b.n*b.n] {
		if c > b.cells[best] {
			best = i
		}
	}
	return best
}

// lineIndex returns the cell index of the k-th cell of line i when sliding
// in direction a: k = 0 is the cell at the edge the tiles move towards.
func (b *Board) lineIndex(a Action, i, k int) int {
	n := b.n
	switch a {
	case Up:
		return k*n + i
	case Down:
		return (n-1-k)*n + i
	case Left:
		return i*n + k
	default: // Right
		return i*n + n - 1 - k
	}
}

// Move slides the board in direction a and returns the result, the sum of
// the values of the tiles created by merges (2048's score increment, the
// reward RAGEN pays) and whether any tile moved. Each tile merges at most
// once per move, and the pair nearest the edge merges first: sliding
// 2 2 2 . left gives 4 2 . . and 2 2 2 2 gives 4 4 . .
func (b *Board) Move(a Action) (Board, uint64, bool) {
	out := Board{n: b.n}
	var merged uint64
	moved := false
	var line [MaxSize]uint8
	for i := range b.n {
		m := 0 // tiles written to line
		var last uint8
		canMerge := false
		for k := range b.n {
			c := b.cells[b.lineIndex(a, i, k)]
			if c == 0 {
				continue
			}
			if canMerge && c == last {
				line[m-1] = c + 1
				merged += tileValue(c + 1)
				canMerge = false
				continue
			}
			line[m] = c
			m++
			last, canMerge = c, true
		}
		for k := range b.n {
			v := uint8(0)
			if k < m {
				v = line[k]
			}
			j := b.lineIndex(a, i, k)
			out.cells[j] = v
			if v != b.cells[j] {
				moved = true
			}
		}
	}
	return out, merged, moved
}

// CanMove reports whether some slide changes the board; a board without
// one is game over.
func (b *Board) CanMove() bool {
	n := b.n
	for r := range n {
		for c := range n {
			v := b.cells[r*n+c]
			if v == 0 {
				return true
			}
			if c+1 < n && b.cells[r*n+c+1] == v || r+1 < n && b.cells[(r+1)*n+c] == v {
				return true
			}
		}
	}
	return false
}

// ValidMoves lists the slides that change the board, in action order.
func (b *Board) ValidMoves() []Action {
	var out []Action
	for a := range numActions {
		if _, _, moved := b.Move(a); moved {
			out = append(out, a)
		}
	}
	return out
}

// spawn puts a new tile on a uniformly random empty cell: a 2 with
// probability twoProb, otherwise a 4, as RAGEN's _spawn_tile. A full board
// is left unchanged.
func (b *Board) spawn(rng *rand.Rand, twoProb float64) {
	k := b.Empty()
	if k == 0 {
		return
	}
	pick := rng.IntN(k)
	v := uint8(2)
	if rng.Float64() < twoProb {
		v = 1
	}
	for i, c := range b.cells[:b.n*b.n] {
		if c != 0 {
			continue
		}
		if pick == 0 {
			b.cells[i] = v
			return
		}
		pick--
	}
}

// String writes the board one row a line, tiles separated by spaces and
// empty cells as '.', the form ParseBoard reads.
func (b *Board) String() string {
	var sb strings.Builder
	for r := range b.n {
		if r > 0 {
			sb.WriteByte('\n')
		}
		for c := range b.n {
			if c > 0 {
				sb.WriteByte(' ')
			}
			if v := b.Tile(r, c); v == 0 {
				sb.WriteByte('.')
			} else {
				sb.WriteString(strconv.FormatUint(v, 10))
			}
		}
	}
	return sb.String()
}

// key is a compact form of the cells: one character per cell.
func (b *Board) key() string {
	buf := make([]byte, b.n*b.n)
	for i, c := range b.cells[:b.n*b.n] {
		buf[i] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/"[c&63]
	}
	return string(buf)
}

// ParseBoard reads a square board written one row a line (or rows
// separated by '/'), tiles separated by spaces or commas, empty cells as
// '.', '_' or 0: the form String writes and the rows of RAGEN's render
// ("[0, 2, 0, 4]"; brackets are ignored). Every tile must be a power of two
// from 2 on.
func ParseBoard(text string) (Board, error) {
	text = strings.TrimSpace(text)
	rows := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '/' })
	n := len(rows)
	if n < MinSize || n > MaxSize {
		return Board{}, fmt.Errorf("game2048: board has %d rows; want a square board of side %d to %d", n, MinSize, MaxSize)
	}
	b := NewBoard(n)
	for r, row := range rows {
		row = strings.NewReplacer("[", " ", "]", " ", ",", " ").Replace(row)
		cells := strings.Fields(row)
		if len(cells) != n {
			return Board{}, fmt.Errorf("game2048: board row %d has %d cells; want %d (a square board)", r+1, len(cells), n)
		}
		for c, s := range cells {
			if s == "." || s == "_" || s == "0" {
				continue
			}
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil || v < 2 || v&(v-1) != 0 || v > 1<<40 {
				return Board{}, fmt.Errorf("game2048: board row %d, column %d: %q is not a tile (a power of two from 2 to 2^40, or . for empty)", r+1, c+1, s)
			}
			b.SetTile(r, c, v)
		}
	}
	return b, nil
}
