package sudoku

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
)

// Grid is an n×n Sudoku board (n = 4 or 9, boxes of side 2 or 3), row-major,
// 0 for an empty cell.
type Grid struct {
	n     int
	cells [81]uint8
}

// NewGrid returns an empty grid of side n (4 or 9).
func NewGrid(n int) Grid { return Grid{n: n} }

// Size is the side of the grid.
func (g *Grid) Size() int { return g.n }

// box is the side of a box: 2 on 4×4, 3 on 9×9.
func (g *Grid) box() int {
	if g.n == 4 {
		return 2
	}
	return 3
}

// At returns the digit at (row, col), 0-indexed; 0 when empty.
func (g *Grid) At(row, col int) int { return int(g.cells[row*g.n+col]) }

// Empty counts the empty cells.
func (g *Grid) Empty() int {
	k := 0
	for _, c := range g.cells[:g.n*g.n] {
		if c == 0 {
			k++
		}
	}
	return k
}

// boxOf is the index of the box holding cell i.
func (g *Grid) boxOf(i int) int {
	b := g.box()
	r, c := i/g.n, i%g.n
	return (r/b)*b + c/b
}

// used returns, for every row, column and box, the set of digits in it as
// a bit mask (bit d for digit d).
func (g *Grid) used() (rows, cols, boxes [9]uint16) {
	for i, v := range g.cells[:g.n*g.n] {
		if v == 0 {
			continue
		}
		m := uint16(1) << v
		rows[i/g.n] |= m
		cols[i%g.n] |= m
		boxes[g.boxOf(i)] |= m
	}
	return
}

// all is the mask of the digits 1..n.
func (g *Grid) all() uint16 { return uint16(1)<<(g.n+1) - 2 }

// candidates returns the digits that can go in empty cell i without
// repeating one in its row, column or box (0 for a filled cell).
func (g *Grid) candidates(i int, rows, cols, boxes *[9]uint16) uint16 {
	if g.cells[i] != 0 {
		return 0
	}
	return g.all() &^ (rows[i/g.n] | cols[i%g.n] | boxes[g.boxOf(i)])
}

// conflictFree reports whether no digit repeats in a row, column or box.
func (g *Grid) conflictFree() bool {
	var rows, cols, boxes [9]uint16
	for i, v := range g.cells[:g.n*g.n] {
		if v == 0 {
			continue
		}
		m := uint16(1) << v
		r, c, b := i/g.n, i%g.n, g.boxOf(i)
		if rows[r]&m != 0 || cols[c]&m != 0 || boxes[b]&m != 0 {
			return false
		}
		rows[r] |= m
		cols[c] |= m
		boxes[b] |= m
	}
	return true
}

// solver is a depth-first search that fills the most constrained empty
// cell first, on bit masks of the digits used per row, column and box.
type solver struct {
	g                 Grid
	rows, cols, boxes [9]uint16
	count, limit      int
	first             Grid // the first solution found
	order             *rand.Rand
}

func newSolver(g Grid, limit int, order *rand.Rand) *solver {
	s := &solver{g: g, limit: limit, order: order}
	s.rows, s.cols, s.boxes = g.used()
	return s
}

func (s *solver) search() {
	g := &s.g
	best, bestMask, bestN := -1, uint16(0), 99
	for i, v := range g.cells[:g.n*g.n] {
		if v != 0 {
			continue
		}
		m := g.candidates(i, &s.rows, &s.cols, &s.boxes)
		k := bits.OnesCount16(m)
		if k < bestN {
			best, bestMask, bestN = i, m, k
			if k <= 1 {
				break
			}
		}
	}
	if best < 0 {
		if s.count == 0 {
			s.first = *g
		}
		s.count++
		return
	}
	var digits [9]uint8
	nd := 0
	for m := bestMask; m != 0; m &= m - 1 {
		digits[nd] = uint8(bits.TrailingZeros16(m))
		nd++
	}
	if s.order != nil {
		s.order.Shuffle(nd, func(a, b int) { digits[a], digits[b] = digits[b], digits[a] })
	}
	r, c, b := best/g.n, best%g.n, g.boxOf(best)
	for _, d := range digits[:nd] {
		m := uint16(1) << d
		g.cells[best] = d
		s.rows[r] |= m
		s.cols[c] |= m
		s.boxes[b] |= m
		s.search()
		s.rows[r] &^= m
		s.cols[c] &^= m
		s.boxes[b] &^= m
		g.cells[best] = 0
		if s.count >= s.limit {
			return
		}
	}
}

// countSolutions counts the completions of g, stopping at limit.
func countSolutions(g Grid, limit int) int {
	if !g.conflictFree() {
		return 0
	}
	s := newSolver(g, limit, nil)
	s.search()
	return s.count
}

// Solve returns the completion of g and true when it has exactly one.
func Solve(g Grid) (Grid, bool) {
	if !g.conflictFree() {
		return Grid{}, false
	}
	s := newSolver(g, 2, nil)
	s.search()
	return s.first, s.count == 1
}

// randomSolution fills an empty n×n grid by a search that tries digits in
// random order: a uniformly drawn-looking full Sudoku of side n.
func randomSolution(n int, rng *rand.Rand) Grid {
	s := newSolver(NewGrid(n), 1, rng)
	s.search()
	return s.first
}

// errGivens is returned when no puzzle with the requested number of
// givens turned up within maxGenerateAttempts.
var errGivens = errors.New("sudoku: no puzzle with that many givens found")

// maxGenerateAttempts bounds the fresh solutions Generate tries.
const maxGenerateAttempts = 200

// Generate draws a puzzle of side n with exactly givens filled cells and a
// unique solution, and returns it with its solution. It fills a random
// grid, then empties its cells in random order, keeping a cell filled
// whenever emptying it would admit a second solution, until givens remain;
// when a pass ends above givens (the puzzle is minimal sooner) it starts
// over from a new grid.
func Generate(n, givens int, rng *rand.Rand) (puzzle, solution Grid, err error) {
	for range maxGenerateAttempts {
		solution = randomSolution(n, rng)
		puzzle = solution
		filled := n * n
		for _, i := range rng.Perm(n * n) {
			if filled == givens {
				break
			}
			v := puzzle.cells[i]
			puzzle.cells[i] = 0
			if countSolutions(puzzle, 2) == 1 {
				filled--
			} else {
				puzzle.cells[i] = v
			}
		}
		if filled == givens {
			return puzzle, solution, nil
		}
	}
	return Grid{}, Grid{}, fmt.Errorf("%w: %d givens on %dx%d in %d attempts", errGivens, givens, n, n, maxGenerateAttempts)
}

// String writes the grid one row a line, digits without separators and
// '.' for an empty cell: the form ParseGrid reads.
func (g *Grid) String() string {
	var sb strings.Builder
	for r := range g.n {
		if r > 0 {
			sb.WriteByte('\n')
		}
		for c := range g.n {
			if v := g.At(r, c); v == 0 {
				sb.WriteByte('.')
			} else {
				sb.WriteByte(byte('0' + v))
			}
		}
	}
	return sb.String()
}

// key is the grid on one line.
func (g *Grid) key() string {
	b := make([]byte, g.n*g.n)
	for i, v := range g.cells[:g.n*g.n] {
		b[i] = '0' + v
	}
	return string(b)
}

// ParseGrid reads a 4×4 or 9×9 grid written one row a line (or rows
// separated by '/'), one character per cell: a digit, or '.', '_' or 0 for
// an empty cell. Spaces and the box separators '|' and '+' are ignored, and
// lines of only '-', '+' and spaces are skipped. The digits must not
// repeat in a row, column or box.
func ParseGrid(text string) (Grid, error) {
	var rows []string
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '/' }) {
		line = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\r' || r == '|' || r == '+' {
				return -1
			}
			return r
		}, line)
		if strings.Trim(line, "-") == "" {
			continue
		}
		rows = append(rows, line)
	}
	n := len(rows)
	if n != 4 && n != 9 {
		return Grid{}, fmt.Errorf("sudoku: grid has %d rows; want 4 or 9", n)
	}
	g := NewGrid(n)
	for r, row := range rows {
		if len(row) != n {
			return Grid{}, fmt.Errorf("sudoku: row %d has %d cells; want %d", r+1, len(row), n)
		}
		for c := range n {
			ch := row[c]
			switch {
			case ch == '.' || ch == '_' || ch == '0':
			case ch >= '1' && int(ch-'0') <= n:
				g.cells[r*n+c] = ch - '0'
			default:
				return Grid{}, fmt.Errorf("sudoku: row %d, col %d: %q is not a digit from 1 to %d or '.'", r+1, c+1, ch, n)
			}
		}
	}
	if !g.conflictFree() {
		return Grid{}, fmt.Errorf("sudoku: a digit repeats in a row, column or box")
	}
	return g, nil
}
