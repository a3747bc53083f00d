package game2048

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// searchDepth is the expert's expectimax depth in moves: a move, every
// possible new tile, a second move, then the heuristic. It decides in tens
// of microseconds on 4x4 and reaches 2048 in about half of full games (see
// TestExpertStrength).
const searchDepth = 2

// lostValue is the heuristic value of a board with no move left: below any
// live board.
const lostValue = -1e30

// snakeWeights returns the heuristic's weight of every cell of an n×n
// board: 2^(n²-1-k) for the k-th cell of a snake that starts in the top-left
// corner, runs along the top row, back along the second and so on. Big
// tiles are worth most in the corner and in descending order along the
// snake, the arrangement that keeps them mergeable.
func snakeWeights(n int) []float64 {
	w := make([]float64, n*n)
	k := 0
	for r := range n {
		for j := range n {
			c := j
			if r%2 == 1 {
				c = n - 1 - j
			}
			w[r*n+c] = math.Ldexp(1, n*n-1-k)
			k++
		}
	}
	return w
}

var weightsBySize = func() [MaxSize + 1][]float64 {
	var t [MaxSize + 1][]float64
	for n := MinSize; n <= MaxSize; n++ {
		t[n] = snakeWeights(n)
	}
	return t
}()

// evaluate is the heuristic value of a board after a move: the tiles
// weighted along the snake, plus a bonus for empty cells, which keep the
// game alive.
func evaluate(b *Board) float64 {
	w := weightsBySize[b.n]
	v := 0.0
	empty := 0
	for i, c := range b.cells[:b.n*b.n] {
		if c == 0 {
			empty++
			continue
		}
		v += float64(tileValue(c)) * w[i]
	}
	return v + float64(empty)*w[b.n*b.n/2]*2
}

// searcher runs the expectimax search with the spawn probabilities of one
// configuration.
type searcher struct{ twoProb float64 }

// moveValue is the value of playing a on b: the expectation over the new
// tile of the best continuation (depth moves in all).
func (s searcher) moveValue(b *Board, a Action, depth int) (float64, bool) {
	next, _, moved := b.Move(a)
	if !moved {
		return 0, false
	}
	return s.chance(&next, depth), true
}

// chance averages the best continuation over every empty cell and both
// new tiles.
func (s searcher) chance(b *Board, depth int) float64 {
	if depth <= 1 {
		return evaluate(b)
	}
	empties := 0
	sum := 0.0
	for i, c := range b.cells[:b.n*b.n] {
		if c != 0 {
			continue
		}
		empties++
		for _, t := range [2]struct {
			e uint8
			p float64
		}{{1, s.twoProb}, {2, 1 - s.twoProb}} {
			if t.p == 0 {
				continue
			}
			b.cells[i] = t.e
			sum += t.p * s.best(b, depth-1)
			b.cells[i] = 0
		}
	}
	if empties == 0 {
		return s.best(b, depth-1)
	}
	return sum / float64(empties)
}

// best is the value of the best move from b, lostValue if there is none.
func (s searcher) best(b *Board, depth int) float64 {
	v := lostValue
	for a := range numActions {
		if mv, ok := s.moveValue(b, a, depth); ok {
			v = max(v, mv)
		}
	}
	return v
}

// choose returns the valid moves of b ordered by value, best first (ties
// in action order).
func (s searcher) choose(b *Board, depth int) []Action {
	type scored struct {
		a Action
		v float64
	}
	var ms []scored
	for a := range numActions {
		if v, ok := s.moveValue(b, a, depth); ok {
			ms = append(ms, scored{a, v})
		}
	}
	// Insertion sort: at most four moves, stable.
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && ms[j].v > ms[j-1].v; j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
	out := make([]Action, len(ms))
	for i, m := range ms {
		out[i] = m.a
	}
	return out
}

// blind chooses a move to play on pre after its new tile appears, without
// seeing the tile: the move with the best heuristic value on average over
// every possible new tile, where a move that the tile leaves invalid is
// worth the board as it stands, less a penalty for the wasted action.
func (s searcher) blind(pre *Board) Action {
	best, bestV := Up, math.Inf(-1)
	for a := range numActions {
		sum, weight := 0.0, 0.0
		for i, c := range pre.cells[:pre.n*pre.n] {
			if c != 0 {
				continue
			}
			for _, t := range [2]struct {
				e uint8
				p float64
			}{{1, s.twoProb}, {2, 1 - s.twoProb}} {
				if t.p == 0 {
					continue
				}
				pre.cells[i] = t.e
				v := evaluate(pre) * 0.5
				if next, _, moved := pre.Move(a); moved {
					v = evaluate(&next)
				}
				pre.cells[i] = 0
				sum += t.p * v
				weight += t.p
			}
		}
		if weight == 0 { // a full board: no tile will appear
			v := evaluate(pre) * 0.5
			if next, _, moved := pre.Move(a); moved {
				v = evaluate(&next)
			}
			sum, weight = v, 1
		}
		if v := sum / weight; v > bestV {
			best, bestV = a, v
		}
	}
	return best
}

// Advise implements envs.Expert: the move a depth-2 expectimax search over
// the new tiles prefers, with a heuristic that keeps the large tiles in
// descending order from the top-left corner. With maxActions > 1 the
// following moves are chosen blind, as an agent that answers with several
// moves at once must choose them: each is the move with the best value on
// average over the tile the previous move will bring (see blind). Callers
// that can should ask again after every move.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	if e.done {
		return envs.Advice{}, envs.ErrEpisodeDone
	}
	s := searcher{twoProb: e.cfg.TwoProb}
	if maxActions <= 0 {
		maxActions = 1
	}
	b := e.board
	first := s.choose(&b, searchDepth)
	if len(first) == 0 {
		// Unreachable: a board without moves ends the episode.
		return envs.Advice{}, fmt.Errorf("game2048: no move left")
	}
	plan := []Action{first[0]}
	for cur, _, _ := b.Move(first[0]); len(plan) < maxActions; {
		a := s.blind(&cur)
		plan = append(plan, a)
		cur, _, _ = cur.Move(a)
	}
	actions := make([]string, len(plan))
	for i, a := range plan {
		actions[i] = a.String()
	}
	return envs.Advice{Actions: actions, Rationale: e.rationale(plan[0], rng), Brief: e.brief(plan[0])}, nil
}

// merges lists the values of the pairs a move merges ("8" for 8+8), in
// line order.
func merges(b *Board, a Action) []uint64 {
	var out []uint64
	for i := range b.n {
		var last uint8
		canMerge := false
		for k := range b.n {
			c := b.cells[b.lineIndex(a, i, k)]
			if c == 0 {
				continue
			}
			if canMerge && c == last {
				out = append(out, tileValue(c))
				canMerge = false
				continue
			}
			last, canMerge = c, true
		}
	}
	return out
}

// brief is the terse rationale: the largest tile and where it is, the move
// and what it merges ("64 at 1,1; Left merges 8,2").
func (e *Env) brief(a Action) string {
	b := &e.board
	m := b.maxCell()
	s := fmt.Sprintf("%d at %d,%d; %s", b.MaxTile(), m/b.n+1, m%b.n+1, a)
	if ms := merges(b, a); len(ms) > 0 {
		s += " merges " + joinValues(ms, ",")
	}
	return s
}

// rationale explains the move in one of several phrasings, naming the
// largest tile, what the move merges and the empty cells it leaves.
func (e *Env) rationale(a Action, rng *rand.Rand) string {
	b := &e.board
	m := b.maxCell()
	maxTile, row, col := b.MaxTile(), m/b.n+1, m%b.n+1
	next, _, _ := b.Move(a)
	empty := next.Empty()
	ms := merges(b, a)
	what := "merges nothing"
	if len(ms) > 0 {
		pairs := make([]string, len(ms))
		for i, v := range ms {
			pairs[i] = fmt.Sprintf("%d+%d", v, v)
		}
		what = "merges " + strings.Join(pairs, " and ")
	}
	corner := ""
	if nm := next.maxCell(); nm == 0 {
		corner = " and keeps the largest tile in the top-left corner"
	}
	phrasings := []func() string{
		func() string {
			return fmt.Sprintf("The largest tile, %d, is at row %d col %d. %s %s, leaves %d empty cells%s.", maxTile, row, col, a, what, empty, corner)
		},
		func() string {
			return fmt.Sprintf("My biggest tile is %d at row %d col %d. Sliding %s %s%s; %d cells stay empty.", maxTile, row, col, strings.ToLower(a.String()), what, corner, empty)
		},
		func() string {
			return fmt.Sprintf("Best move: %s (largest tile %d at row %d col %d). It %s; %d cells stay empty%s.", a, maxTile, row, col, what, empty, strings.Replace(corner, " and keeps", ", and it keeps", 1))
		},
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(phrasings))
	}
	return phrasings[i]()
}

func joinValues(vs []uint64, sep string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.FormatUint(v, 10)
	}
	return strings.Join(parts, sep)
}
