package sokoban

import (
	"errors"
	"slices"
)

// DefaultMaxStates is the state budget of Solve callers that have no reason
// to pick another (the expert uses it for levels with several boxes).
const DefaultMaxStates = 1_000_000

var (
	// ErrUnsolvable means the search proved that no sequence of moves puts
	// every box on a target.
	ErrUnsolvable = errors.New("sokoban: level is unsolvable")
	// ErrSearchLimit means the search gave up after its state budget
	// without an answer either way.
	ErrSearchLimit = errors.New("sokoban: solver state limit reached")
)

// Solve returns a shortest solution of l in player moves (pushes and walks
// both count one, as in the environment's step count). Among shortest
// solutions it picks, move by move, the first of Up, Down, Left, Right that
// still leads to a shortest solution, so the answer is deterministic. It
// returns ErrUnsolvable when no solution exists and ErrSearchLimit when the
// breadth-first search stores more than maxStates states.
func Solve(l *Level, maxStates int) ([]Action, error) {
	return solveLevel(l.board, l.player, l.boxes, maxStates)
}

// stateKey packs the player cell and the ascending box cells into 16-bit
// fields: field 0 is the player, field i the i-th box. Equal states have
// equal keys because the boxes are sorted; map lookups on a fixed-size array
// key neither allocate nor hash more than 16 bytes.
type stateKey [2]uint64

func packState(player int, boxes []int) stateKey {
	var k stateKey
	k[0] = uint64(player)
	for i, c := range boxes {
		f := i + 1
		k[f/4] |= uint64(c) << (16 * (f % 4))
	}
	return k
}

// liveCells marks the cells from which a lone box can still be pushed onto
// some target, ignoring other boxes. A box anywhere else (a corner, along a
// wall without a target) can never be solved, so the search drops such
// states without losing any solution. The cells are found backwards: a box
// at c can be pulled to c+d when the player has room at c+d and c+2d.
func (b *board) liveCells() []bool {
	live := make([]bool, len(b.wall))
	stack := slices.Clone(b.targets)
	for _, t := range b.targets {
		live[t] = true
	}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range b.delta {
			p, q := c+d, c+2*d
			if q < 0 || q >= len(b.wall) || b.wall[p] || b.wall[q] || live[p] {
				continue
			}
			live[p] = true
			stack = append(stack, p)
		}
	}
	return live
}

// step applies action a to the state (player, boxes) and writes the
// successor's boxes (ascending) into next. moved is false when the player
// cannot move; pushed reports a push.
func (b *board) step(player int, boxes []int, a Action, next []int) (newPlayer int, moved, pushed bool) {
	d := b.delta[a]
	q := player + d
	if b.wall[q] {
		return player, false, false
	}
	copy(next, boxes)
	i := slices.Index(boxes, q)
	if i < 0 {
		return q, true, false
	}
	r := q + d
	if b.wall[r] || slices.Contains(boxes, r) {
		return player, false, false
	}
	next[i] = r
	// Keep next sorted: the moved box only shifts past neighbours in the
	// direction of the push.
	for i > 0 && next[i-1] > next[i] {
		next[i-1], next[i] = next[i], next[i-1]
		i--
	}
	for i+1 < len(next) && next[i+1] < next[i] {
		next[i+1], next[i] = next[i], next[i+1]
		i++
	}
	return q, true, true
}

// solveLevel is the breadth-first search behind Solve. It expands the tree
// level by level, recording each expanded state's successors; once a level
// contains a solved state it marks, backwards, the states from which a
// shortest solution continues, then walks forward from the start taking the
// first marked successor in action order.
func solveLevel(b *board, player int, boxes []int, maxStates int) ([]Action, error) {
	if len(boxes) > MaxBoxes {
		return nil, ErrSearchLimit
	}
	if b.solved(boxes) {
		return []Action{}, nil
	}
	live := b.liveCells()
	for _, c := range boxes {
		if !live[c] {
			return nil, ErrUnsolvable
		}
	}
	k := len(boxes)
	stride := k + 1
	states := make([]uint16, 0, 256*stride)
	index := make(map[stateKey]int32, 256)
	add := func(p int, bx []int) int32 {
		key := packState(p, bx)
		if j, ok := index[key]; ok {
			return j
		}
		j := int32(len(states) / stride)
		index[key] = j
		states = append(states, uint16(p))
		for _, c := range bx {
			states = append(states, uint16(c))
		}
		return j
	}
	add(player, boxes)
	var succ []int32  // 4 per expanded state, -1 for no move
	var goals []int32 // solved states of the last level
	levelStart := []int32{0}
	cur := make([]int, k)
	next := make([]int, k)
	for depth := 0; ; depth++ {
		lo, hi := levelStart[depth], int32(len(states)/stride)
		if lo == hi {
			return nil, ErrUnsolvable
		}
		levelStart = append(levelStart, hi)
		for i := lo; i < hi; i++ {
			// Copy the state out: add may move the states array.
			s := states[int(i)*stride : int(i+1)*stride]
			p := int(s[0])
			for j := range k {
				cur[j] = int(s[j+1])
			}
			for a := range numActions {
				np, moved, pushed := b.step(p, cur, a, next)
				if !moved {
					succ = append(succ, -1)
					continue
				}
				if pushed && !allLive(live, next) {
					succ = append(succ, -1)
					continue
				}
				before := int32(len(states) / stride)
				j := add(np, next)
				succ = append(succ, j)
				if j >= before && pushed && b.solved(next) {
					goals = append(goals, j)
				}
			}
			if len(states)/stride > maxStates {
				return nil, ErrSearchLimit
			}
		}
		if len(goals) > 0 {
			return shortestPath(succ, levelStart, goals, len(states)/stride), nil
		}
	}
}

func allLive(live []bool, boxes []int) bool {
	for _, c := range boxes {
		if !live[c] {
			return false
		}
	}
	return true
}

// shortestPath extracts the tie-broken shortest path from the recorded
// search tree (see solveLevel). levelStart[d] is the first of the n states
// of depth d; the solved ones, goals, are at the last depth D =
// len(levelStart)-1. A successor of a depth-d state has depth at most d+1,
// so an index at or past levelStart[d+1] means exactly depth d+1.
func shortestPath(succ []int32, levelStart []int32, goals []int32, n int) []Action {
	depth := len(levelStart) - 1
	good := make([]bool, n)
	for _, g := range goals {
		good[g] = true
	}
	for d := depth - 1; d >= 0; d-- {
		for i := levelStart[d]; i < levelStart[d+1]; i++ {
			for _, j := range succ[4*i : 4*i+4] {
				if j >= levelStart[d+1] && good[j] {
					good[i] = true
					break
				}
			}
		}
	}
	path := make([]Action, 0, depth)
	i := int32(0)
	for d := range depth {
		for a, j := range succ[4*i : 4*i+4] {
			if j >= levelStart[d+1] && good[j] {
				path = append(path, Action(a))
				i = j
				break
			}
		}
	}
	return path
}

// oneBoxTable holds, for a level with one box, the number of moves to the
// goal from every (player, box) placement, or -1 where the box can no longer
// reach the target. Placements are indexed over floor cells only, so a 6x6
// room needs at most 16x16 entries; one reverse breadth-first search fills
// the table, after which any state's optimal moves are a lookup.
type oneBoxTable struct {
	b     *board
	floor []int   // floor index -> cell
	fidx  []int32 // cell -> floor index, -1 for walls
	dist  []int32 // player floor index * len(floor) + box floor index
}

func newOneBoxTable(b *board) *oneBoxTable {
	t := &oneBoxTable{b: b, fidx: make([]int32, len(b.wall))}
	for c, w := range b.wall {
		t.fidx[c] = -1
		if !w {
			t.fidx[c] = int32(len(t.floor))
			t.floor = append(t.floor, c)
		}
	}
	f := len(t.floor)
	t.dist = make([]int32, f*f)
	for i := range t.dist {
		t.dist[i] = -1
	}
	queue := make([]int32, 0, f*f)
	for _, tc := range b.targets {
		bt := t.fidx[tc]
		for pi := range f {
			if int32(pi) != bt {
				s := int32(pi*f) + bt
				t.dist[s] = 0
				queue = append(queue, s)
			}
		}
	}
	// Predecessors of (p', b') under a move in direction d: a walk from
	// p'-d when that cell is floor and not the box, or a push from p'-d
	// when the box was at p' and now sits at p'+d.
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		pp, bb := t.floor[int(s)/f], t.floor[int(s)%f]
		nd := t.dist[s] + 1
		for _, d := range b.delta {
			p := pp - d
			if b.wall[p] || p == bb {
				continue
			}
			if w := int32(int(t.fidx[p])*f) + t.fidx[bb]; t.dist[w] < 0 {
				t.dist[w] = nd
				queue = append(queue, w)
			}
			if bb == pp+d {
				if u := int32(int(t.fidx[p])*f) + t.fidx[pp]; t.dist[u] < 0 {
					t.dist[u] = nd
					queue = append(queue, u)
				}
			}
		}
	}
	return t
}

// distance is the number of moves to the goal from (player, box), -1 if
// there is no way.
func (t *oneBoxTable) distance(player, box int) int {
	return int(t.dist[int(t.fidx[player])*len(t.floor)+int(t.fidx[box])])
}

// plan returns the tie-broken shortest solution from (player, box), or nil
// and false when there is none.
func (t *oneBoxTable) plan(player, box int) ([]Action, bool) {
	d := t.distance(player, box)
	if d < 0 {
		return nil, false
	}
	path := make([]Action, 0, d)
	cur, next := []int{box}, []int{0}
	for ; d > 0; d-- {
		for a := range numActions {
			np, moved, _ := t.b.step(player, cur, a, next)
			if moved && t.distance(np, next[0]) == d-1 {
				path = append(path, a)
				player, cur[0] = np, next[0]
				break
			}
		}
	}
	return path, true
}
