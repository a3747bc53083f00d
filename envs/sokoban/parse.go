package sokoban

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ParseMaxStates is the solver's state budget when ParseLevel checks that a
// level is solvable. A level whose search exceeds it is accepted unproven:
// only a level the solver proves unsolvable is rejected.
const ParseMaxStates = 200_000

// Symbols of RAGEN's grid observation, which ParseLevel also reads.
const (
	symWall         = '#'
	symEmpty        = '_'
	symTarget       = 'O'
	symBoxOnTarget  = '√'
	symBox          = 'X'
	symPlayer       = 'P'
	symPlayerTarget = 'S'
)

// ParseLevel reads a level written either in RAGEN's grid symbols
// (# wall, _ empty, O target, √ box on target, X box, P player,
// S player on target) or in the standard .xsb notation (# wall, @ player,
// + player on target, $ box, * box on target, . target, and space, - or _
// for floor). The notation is detected from the symbols used; mixing the
// two is an error.
//
// Rules, each violation an error that names it:
//   - Leading and trailing blank lines are ignored, as are "\r" and, in the
//     RAGEN notation, trailing spaces and tabs.
//   - RAGEN rows must all have the same length. Ragged .xsb rows are
//     padded with spaces, as .xsb files usually drop trailing blanks.
//   - Exactly one player; at least one and at most MaxBoxes boxes; as many
//     targets as boxes; at most MaxDim rows and columns.
//   - The player's area (the cells reachable through non-wall cells,
//     boxes included) must be enclosed by walls: an area that touches the
//     edge of the text is an error rather than an implied wall, so that what
//     the agent sees is the whole board. Floor outside the player's area
//     (the blank surroundings of an .xsb level) becomes wall; a box or
//     target there is an error.
//   - A level whose boxes are all on targets already is an error.
//   - A level the solver proves unsolvable is an error. A level whose
//     search exceeds ParseMaxStates states is accepted unproven; one box
//     on up to 447 floor cells always fits, so the check is exact there.
func ParseLevel(text string) (*Level, error) {
	l, err := parseLayout(text)
	if err != nil {
		return nil, err
	}
	if _, err := solveLevel(l.board, l.player, l.boxes, ParseMaxStates); errors.Is(err, ErrUnsolvable) {
		return nil, fmt.Errorf("sokoban level: unsolvable: no sequence of moves puts every box on a target")
	}
	return l, nil
}

// parseLayout is ParseLevel without the solvability check.
func parseLayout(text string) (*Level, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r", ""), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, errors.New("sokoban level: empty text")
	}
	grid := make([][]rune, len(lines))
	var ragenSym, xsbSym rune
	for r, line := range lines {
		grid[r] = []rune(line)
		for c, ch := range grid[r] {
			switch ch {
			case symTarget, symBoxOnTarget, symBox, symPlayer, symPlayerTarget:
				if ragenSym == 0 {
					ragenSym = ch
				}
			case '@', '+', '$', '*', '.', '-':
				if xsbSym == 0 {
					xsbSym = ch
				}
			case symWall, symEmpty, ' ':
			default:
				return nil, fmt.Errorf("sokoban level: unknown character %q at %v (RAGEN symbols: # _ O √ X P S; .xsb symbols: # @ + $ * . space - _)", ch, Pos{r, c})
			}
		}
	}
	if ragenSym != 0 && xsbSym != 0 {
		return nil, fmt.Errorf("sokoban level: mixes RAGEN symbols (%q) with .xsb symbols (%q); use one notation", ragenSym, xsbSym)
	}
	ragen := ragenSym != 0
	width := 0
	for r := range grid {
		if ragen {
			grid[r] = []rune(strings.TrimRight(string(grid[r]), " \t"))
		}
		width = max(width, len(grid[r]))
	}
	if len(grid) > MaxDim || width > MaxDim {
		return nil, fmt.Errorf("sokoban level: %d rows x %d cols is larger than the %dx%d limit", len(grid), width, MaxDim, MaxDim)
	}
	for r := range grid {
		if ragen && len(grid[r]) != width {
			return nil, fmt.Errorf("sokoban level: ragged rows: row %d has %d cells but the widest row has %d (RAGEN grids are rectangular)", r, len(grid[r]), width)
		}
		for len(grid[r]) < width {
			grid[r] = append(grid[r], ' ')
		}
	}

	b := newBoard(len(grid), width)
	l := &Level{board: b, player: -1}
	var players []Pos
	for r, row := range grid {
		for c, ch := range row {
			i := r*width + c
			if ragen && ch == ' ' {
				return nil, fmt.Errorf("sokoban level: space at %v in a RAGEN grid; write empty floor as _", Pos{r, c})
			}
			switch ch {
			case symWall:
				b.wall[i] = true
			case symTarget, '.':
				b.target[i] = true
			case symBox, '$':
				l.boxes = append(l.boxes, i)
			case symBoxOnTarget, '*':
				b.target[i] = true
				l.boxes = append(l.boxes, i)
			case symPlayer, '@':
				players = append(players, Pos{r, c})
				l.player = i
			case symPlayerTarget, '+':
				b.target[i] = true
				players = append(players, Pos{r, c})
				l.player = i
			}
			if b.target[i] {
				b.targets = append(b.targets, i)
			}
		}
	}
	switch {
	case len(players) == 0:
		return nil, errors.New("sokoban level: no player (P or S; @ or + in .xsb)")
	case len(players) > 1:
		at := make([]string, len(players))
		for i, p := range players {
			at[i] = p.String()
		}
		return nil, fmt.Errorf("sokoban level: %d players, at %s; want exactly one", len(players), strings.Join(at, ", "))
	case len(l.boxes) == 0:
		return nil, errors.New("sokoban level: no boxes")
	case len(l.boxes) > MaxBoxes:
		return nil, fmt.Errorf("sokoban level: %d boxes; at most %d are supported", len(l.boxes), MaxBoxes)
	case len(l.boxes) != len(b.targets):
		return nil, fmt.Errorf("sokoban level: %s but %s; want as many targets as boxes", count(len(l.boxes), "box", "boxes"), count(len(b.targets), "target", "targets"))
	}
	if err := enclose(l); err != nil {
		return nil, err
	}
	if b.solved(l.boxes) {
		return nil, errors.New("sokoban level: every box is already on a target")
	}
	slices.Sort(l.boxes)
	return l, nil
}

// enclose checks that the player's area is walled in and turns floor outside
// it into wall (see ParseLevel).
func enclose(l *Level) error {
	b := l.board
	seen := make([]bool, b.rows*b.cols)
	stack := []int{l.player}
	seen[l.player] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		r, c := i/b.cols, i%b.cols
		if r == 0 || c == 0 || r == b.rows-1 || c == b.cols-1 {
			return fmt.Errorf("sokoban level: not enclosed by walls: the player can reach the edge at %v", Pos{r, c})
		}
		for _, d := range b.delta {
			if j := i + d; !b.wall[j] && !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	boxAt := boxSet(b, l.boxes)
	for i := range b.wall {
		if b.wall[i] || seen[i] {
			continue
		}
		switch {
		case boxAt[i]:
			return fmt.Errorf("sokoban level: box at %v is outside the player's walled area", b.pos(i))
		case b.target[i]:
			return fmt.Errorf("sokoban level: target at %v is outside the player's walled area", b.pos(i))
		}
		b.wall[i] = true
	}
	return nil
}

// count writes n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
