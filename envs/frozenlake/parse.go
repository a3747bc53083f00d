package frozenlake

import (
	"fmt"
	"strings"
)

// tile kinds a map character can stand for.
type tileKind int

const (
	tileFrozen tileKind = iota
	tileHole
	tileStart
	tileGoal
)

// alphabet tells which notation a character belongs to, so that a map that
// mixes the two is rejected rather than guessed at.
type alphabet int

const (
	alphaBoth alphabet = iota // 'G' is the goal in both notations
	alphaGym
	alphaRAGEN
)

var tileChars = map[rune]struct {
	kind  tileKind
	alpha alphabet
}{
	'S': {tileStart, alphaGym},
	'F': {tileFrozen, alphaGym},
	'H': {tileHole, alphaGym},
	'P': {tileStart, alphaRAGEN},
	'_': {tileFrozen, alphaRAGEN},
	'O': {tileHole, alphaRAGEN},
	'G': {tileGoal, alphaBoth},
}

// ParseMap reads a map written in Gymnasium letters (S start, F frozen,
// H hole, G goal) or in RAGEN's render symbols (P player at the start,
// _ frozen, O hole, G goal). Rows are separated by newlines or by '/' (the
// form Key writes); surrounding whitespace on the text and on each row is
// ignored. The rows must have equal length, there must be exactly one start
// and one goal, and the goal must be reachable from the start without
// crossing a hole. RAGEN's X (player in a hole) and √ (player on the goal)
// are rejected because an episode cannot start in a finished state.
func ParseMap(text string) (*Map, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("frozenlake: map is empty")
	}
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '/' })
	// FieldsFunc drops empty fields; count separators to catch blank rows.
	if seps := strings.Count(text, "\n") + strings.Count(text, "/"); seps != len(lines)-1 {
		return nil, fmt.Errorf("frozenlake: map has an empty row")
	}
	m := &Map{rows: len(lines)}
	var starts, goals []Pos
	seen := alphaBoth
	for r, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" {
			return nil, fmt.Errorf("frozenlake: map row %d is empty", r)
		}
		cols := 0
		for _, ch := range line {
			p := Pos{r, cols}
			cols++
			t, ok := tileChars[ch]
			if !ok {
				return nil, fmt.Errorf("frozenlake: map row %d, column %d: unknown tile %q (use Gymnasium letters S F H G or RAGEN symbols P _ O G)",
					p.Row, p.Col, ch)
			}
			if t.alpha != alphaBoth {
				if seen != alphaBoth && seen != t.alpha {
					return nil, fmt.Errorf("frozenlake: map row %d, column %d: %q mixes RAGEN symbols (P _ O G) with Gymnasium letters (S F H G)",
						p.Row, p.Col, ch)
				}
				seen = t.alpha
			}
			switch t.kind {
			case tileStart:
				starts = append(starts, p)
			case tileGoal:
				goals = append(goals, p)
			}
			m.hole = append(m.hole, t.kind == tileHole)
		}
		if r == 0 {
			m.cols = cols
		} else if cols != m.cols {
			return nil, fmt.Errorf("frozenlake: map row %d has %d tiles but row 0 has %d; rows must have equal length",
				r, cols, m.cols)
		}
	}
	switch len(starts) {
	case 0:
		return nil, fmt.Errorf("frozenlake: map has no start (S, or P in RAGEN symbols)")
	case 1:
		m.start = starts[0]
	default:
		return nil, fmt.Errorf("frozenlake: map has %d starts at %s; want exactly one", len(starts), joinPos(starts))
	}
	switch len(goals) {
	case 0:
		return nil, fmt.Errorf("frozenlake: map has no goal (G)")
	case 1:
		m.goal = goals[0]
	default:
		return nil, fmt.Errorf("frozenlake: map has %d goals at %s; want exactly one", len(goals), joinPos(goals))
	}
	if m.distances(m.goal)[m.index(m.start)] < 0 {
		return nil, fmt.Errorf("frozenlake: goal %s is unreachable from start %s without crossing a hole",
			m.goal, m.start)
	}
	return m, nil
}

// joinPos formats positions as "(r, c), (r, c)".
func joinPos(ps []Pos) string {
	b := make([]byte, 0, 8*len(ps))
	for i, p := range ps {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = p.appendTo(b)
	}
	return string(b)
}
