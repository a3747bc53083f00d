package sudoku

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// deduction is one placement and why it follows.
type deduction struct {
	p    Placement
	kind deductionKind
	// unit names the row, column or box of a hidden single ("row 2").
	unit string
	// row, col and box are the digits already in the cell's units (naked
	// singles); cands are the cell's candidates (search).
	row, col, box, cands uint16
}

type deductionKind int

const (
	nakedSingle  deductionKind = iota // the cell has one candidate
	hiddenSingle                      // the digit has one cell in a unit
	search                            // neither: the solution's digit at the most constrained cell
	offTrack                          // a wrong digit was placed: any legal placement
)

// deduce finds the next placement on g: the first naked single in
// row-major order, else the first hidden single (rows, then columns, then
// boxes), else the solution's digit at the cell with the fewest
// candidates. When g no longer agrees with solution it returns the first
// legal placement of the most constrained cell. ok is false when no
// number fits anywhere.
func deduce(g *Grid, solution *Grid, onTrack bool) (deduction, bool) {
	n := g.n
	rows, cols, boxes := g.used()
	best, bestN := -1, 99
	for i := range n * n {
		if g.cells[i] != 0 {
			continue
		}
		m := g.candidates(i, &rows, &cols, &boxes)
		k := bits.OnesCount16(m)
		if k == 1 && onTrack {
			r, c := i/n, i%n
			return deduction{p: Placement{r + 1, c + 1, bits.TrailingZeros16(m)}, kind: nakedSingle,
				row: rows[r], col: cols[c], box: boxes[g.boxOf(i)]}, true
		}
		if k > 0 && k < bestN {
			best, bestN = i, k
		}
	}
	if best < 0 {
		return deduction{}, false
	}
	cellOf := func(i int) Placement { return Placement{Row: i/n + 1, Col: i%n + 1} }
	if !onTrack {
		m := g.candidates(best, &rows, &cols, &boxes)
		p := cellOf(best)
		p.Value = bits.TrailingZeros16(m)
		return deduction{p: p, kind: offTrack, cands: m}, true
	}
	// Hidden singles: a digit missing from a unit that fits one cell of it.
	b := g.box()
	units := []struct {
		name  string
		cells func(u, k int) int
	}{
		{"row", func(u, k int) int { return u*n + k }},
		{"column", func(u, k int) int { return k*n + u }},
		{"box", func(u, k int) int { return (u/b*b+k/b)*n + u%b*b + k%b }},
	}
	for _, unit := range units {
		for u := range n {
			for d := 1; d <= n; d++ {
				at, count := -1, 0
				for k := range n {
					i := unit.cells(u, k)
					if g.candidates(i, &rows, &cols, &boxes)&(1<<d) != 0 {
						at, count = i, count+1
					}
				}
				if count == 1 {
					p := cellOf(at)
					p.Value = d
					return deduction{p: p, kind: hiddenSingle, unit: fmt.Sprintf("%s %d", unit.name, u+1)}, true
				}
			}
		}
	}
	p := cellOf(best)
	p.Value = int(solution.cells[best])
	return deduction{p: p, kind: search, cands: g.candidates(best, &rows, &cols, &boxes)}, true
}

// Advise implements envs.Expert: placements found by constraint
// propagation (naked singles, then hidden singles, then the solution's
// digit at the most constrained cell), planned in sequence, at most
// maxActions of them (all the puzzle's remaining ones if maxActions <= 0).
// The brief rationale lists them as "(row,col)=digit"; the full one
// explains the first.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	if e.done {
		return envs.Advice{}, envs.ErrEpisodeDone
	}
	g := e.grid
	onTrack := e.onTrack()
	var plan []deduction
	for maxActions <= 0 || len(plan) < maxActions {
		d, ok := deduce(&g, &e.solution, onTrack)
		if !ok {
			break
		}
		plan = append(plan, d)
		g.cells[(d.p.Row-1)*g.n+d.p.Col-1] = uint8(d.p.Value)
	}
	if len(plan) == 0 {
		// Unreachable: an episode without a legal placement has ended.
		return envs.Advice{}, fmt.Errorf("sudoku: no legal placement")
	}
	actions := make([]string, len(plan))
	brief := make([]string, len(plan))
	for i, d := range plan {
		actions[i] = d.p.String()
		brief[i] = fmt.Sprintf("(%d,%d)=%d", d.p.Row, d.p.Col, d.p.Value)
	}
	return envs.Advice{Actions: actions, Rationale: plan[0].explain(rng), Brief: strings.Join(brief, " ")}, nil
}

// explain writes why d follows, in one of several phrasings.
func (d deduction) explain(rng *rand.Rand) string {
	cell := fmt.Sprintf("(%d,%d)", d.p.Row, d.p.Col)
	v := d.p.Value
	var phrasings []string
	switch d.kind {
	case nakedSingle:
		row, col, box := digitList(d.row, ", "), digitList(d.col, ", "), digitList(d.box, ", ")
		phrasings = []string{
			fmt.Sprintf("Row %d has %s, column %d has %s and the box has %s, so only %d fits at %s.", d.p.Row, row, d.p.Col, col, box, v, cell),
			fmt.Sprintf("%s can only be %d: its row holds %s, its column %s and its box %s.", cell, v, row, col, box),
			fmt.Sprintf("Every number but %d is already in the row (%s), column (%s) or box (%s) of %s.", v, row, col, box, cell),
		}
	case hiddenSingle:
		phrasings = []string{
			fmt.Sprintf("In %s, %d fits only at %s.", d.unit, v, cell),
			fmt.Sprintf("%d has a single place left in %s: %s.", v, d.unit, cell),
			fmt.Sprintf("Every other empty cell of %s sees a %d already, so %d goes at %s.", d.unit, v, v, cell),
		}
	case search:
		cands := digitList(d.cands, ", ")
		phrasings = []string{
			fmt.Sprintf("No cell is forced. %s has the fewest candidates (%s); the puzzle's only solution puts %d there.", cell, cands, v),
			fmt.Sprintf("%s could hold %s; only %d leads to a complete grid.", cell, cands, v),
		}
	default:
		phrasings = []string{
			fmt.Sprintf("A placed number is wrong, so the puzzle cannot be solved any more; %d still fits at %s.", v, cell),
		}
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(phrasings))
	}
	return phrasings[i]
}
