package sudoku

import (
	"regexp"
	"strconv"
	"strings"
)

// Placement is one action: put Value at (Row, Col), all 1-based as the
// agent writes them.
type Placement struct {
	Row, Col, Value int
}

// String is the canonical form of the action, the one the expert writes:
// "place 3 at row 2 col 4".
func (p Placement) String() string {
	return "place " + strconv.Itoa(p.Value) + " at row " + strconv.Itoa(p.Row) + " col " + strconv.Itoa(p.Col)
}

// actionForm is one accepted spelling: a pattern over the lower-cased,
// trimmed action with three numbers, and which of them is the row, the
// column and the value.
type actionForm struct {
	re              *regexp.Regexp
	row, col, value int
}

const num = `(\d{1,2})`

// actionForms are the spellings RAGEN's Sudoku parses, matched against the
// whole action (not searched for inside longer text).
var actionForms = []actionForm{
	{regexp.MustCompile(`^place\s+` + num + `\s+at\s+row\s+` + num + `\s*,?\s*col(?:umn)?\s+` + num + `$`), 2, 3, 1},
	{regexp.MustCompile(`^place\s+` + num + `\s+at\s+\(\s*` + num + `\s*,\s*` + num + `\s*\)$`), 2, 3, 1},
	{regexp.MustCompile(`^(?:place\s+)?` + num + `\s+at\s+` + num + `\s*,\s*` + num + `$`), 2, 3, 1},
	{regexp.MustCompile(`^\(\s*` + num + `\s*,\s*` + num + `\s*,\s*` + num + `\s*\)$`), 1, 2, 3},
	{regexp.MustCompile(`^` + num + `\s*,\s*` + num + `\s*,\s*` + num + `$`), 1, 2, 3},
	{regexp.MustCompile(`^` + num + `\s+` + num + `\s+` + num + `$`), 1, 2, 3},
}

// ParseAction reads a placement in any of RAGEN's spellings, ignoring case
// and surrounding whitespace:
//
//	place 5 at row 2 col 3     (also "column", "row 2, col 3")
//	place 5 at (2,3)
//	place 5 at 2,3   5 at 2,3
//	(2,3,5)   2,3,5   2 3 5    (row, column, value)
//
// It checks the form only; whether the numbers fit the board is the
// environment's business.
func ParseAction(s string) (Placement, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) > 64 {
		return Placement{}, false
	}
	for _, f := range actionForms {
		m := f.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		atoi := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		return Placement{Row: atoi(f.row), Col: atoi(f.col), Value: atoi(f.value)}, true
	}
	return Placement{}, false
}
