package sokoban

import (
	"fmt"
	"strconv"
	"strings"
)

// Format selects how observations are written.
type Format string

const (
	// FormatGrid is one RAGEN symbol per cell, rows on separate lines.
	FormatGrid Format = "grid"
	// FormatCoord is the board size followed by the zero-indexed
	// coordinates of the targets, boxes and player. Walls are not listed,
	// as in RAGEN.
	FormatCoord Format = "coord"
	// FormatGridCoord is the coordinate list followed by the grid, RAGEN's
	// CoordSokoban observation.
	FormatGridCoord Format = "grid_coord"
)

// legend names every grid symbol, in RAGEN's grid_vocab order.
const legend = "#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target"

// render writes the state (player, boxAt) of b in format f.
func render(b *board, player int, boxAt []bool, f Format) string {
	var buf []byte
	switch f {
	case FormatGrid:
		buf = appendGrid(buf, b, player, boxAt)
	case FormatCoord:
		buf = appendCoord(buf, b, player, boxAt)
	default:
		buf = append(buf, "Coordinates: \n"...)
		buf = appendCoord(buf, b, player, boxAt)
		buf = append(buf, "\nGrid Map: \n"...)
		buf = appendGrid(buf, b, player, boxAt)
	}
	return string(buf)
}

// appendGrid writes RAGEN's grid: one symbol per cell, rows joined by "\n".
func appendGrid(buf []byte, b *board, player int, boxAt []bool) []byte {
	for r := range b.rows {
		if r > 0 {
			buf = append(buf, '\n')
		}
		for c := range b.cols {
			i := r*b.cols + c
			var sym rune
			switch {
			case b.wall[i]:
				sym = symWall
			case i == player && b.target[i]:
				sym = symPlayerTarget
			case i == player:
				sym = symPlayer
			case boxAt[i] && b.target[i]:
				sym = symBoxOnTarget
			case boxAt[i]:
				sym = symBox
			case b.target[i]:
				sym = symTarget
			default:
				sym = symEmpty
			}
			buf = appendRune(buf, sym)
		}
	}
	return buf
}

func appendRune(buf []byte, r rune) []byte {
	if r < 0x80 {
		return append(buf, byte(r))
	}
	return append(buf, string(r)...)
}

// appendCoord writes RAGEN's coordinate render: the board size, then the
// non-empty lines among Targets (every target, covered or not), Boxes (off
// target), Boxes on target, Player and Player on target, each listing
// positions in row-major order.
func appendCoord(buf []byte, b *board, player int, boxAt []bool) []byte {
	buf = fmt.Appendf(buf, "Board size: %d rows x %d cols (zero-indexed).", b.rows, b.cols)
	lines := [5]struct {
		label string
		match func(i int) bool
	}{
		{"Targets", func(i int) bool { return b.target[i] }},
		{"Boxes", func(i int) bool { return boxAt[i] && !b.target[i] }},
		{"Boxes on target", func(i int) bool { return boxAt[i] && b.target[i] }},
		{"Player", func(i int) bool { return i == player && !b.target[i] }},
		{"Player on target", func(i int) bool { return i == player && b.target[i] }},
	}
	for _, line := range lines {
		n := 0
		for i := range b.wall {
			if b.wall[i] || !line.match(i) {
				continue
			}
			if n == 0 {
				buf = append(buf, '\n')
				buf = append(buf, line.label...)
				buf = append(buf, ": "...)
			} else {
				buf = append(buf, ", "...)
			}
			buf = appendPos(buf, b.pos(i))
			n++
		}
	}
	return buf
}

func appendPos(buf []byte, p Pos) []byte {
	buf = append(buf, '(')
	buf = strconv.AppendInt(buf, int64(p.Row), 10)
	buf = append(buf, ", "...)
	buf = strconv.AppendInt(buf, int64(p.Col), 10)
	return append(buf, ')')
}

// instruction is the system-prompt text for format f on a rows x cols
// board. Unlike RAGEN, which appends the symbol legend only to the grid
// format, every format that shows the grid gets the legend, and the
// coordinate range comes from the actual board size.
func instruction(f Format, rows, cols int) string {
	var sb strings.Builder
	sb.WriteString("You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets. " +
		"When you are right next to a box, you can push it by moving in the same direction. " +
		"You cannot push a box through a wall or into another box, and you cannot pull a box.\n")
	coords := fmt.Sprintf("Coordinates are zero-indexed (row, column) pairs from (0, 0) at the top left to (%d, %d) at the bottom right; "+
		"Up decreases the row, Down increases it, Left decreases the column and Right increases it.\n", rows-1, cols-1)
	switch f {
	case FormatGrid:
		sb.WriteString("The board is a grid with one symbol per cell. The meaning of each symbol is: " + legend + ".\n")
	case FormatCoord:
		sb.WriteString("The board is described by its size and the coordinates of the targets, the boxes (off target), " +
			"the boxes on target and the player (or the player on target). Walls are not listed.\n")
		sb.WriteString(coords)
	default:
		sb.WriteString("The board is given twice: as coordinates of the targets, boxes and player, then as a grid map " +
			"with one symbol per cell. The meaning of each symbol is: " + legend + ".\n")
		sb.WriteString(coords)
	}
	sb.WriteString("Your available actions are: Up, Down, Left, Right.")
	return sb.String()
}
