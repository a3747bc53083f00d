package frozenlake

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// index is the row-major index of p.
func (m *Map) index(p Pos) int { return p.Row*m.cols + p.Col }

// distances runs a breadth-first search from target over tiles that are not
// holes and returns, for every tile, the number of moves to target (-1 where
// target cannot be reached). Moves are reversible, so the distances from
// target are also the distances to it.
func (m *Map) distances(target Pos) []int {
	dist := make([]int, m.rows*m.cols)
	for i := range dist {
		dist[i] = -1
	}
	if !m.InBounds(target) || m.IsHole(target) {
		return dist
	}
	queue := make([]Pos, 1, len(dist))
	queue[0] = target
	dist[m.index(target)] = 0
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for a := range Action(numActions) {
			q := m.move(p, a)
			if j := m.index(q); q != p && dist[j] < 0 && !m.hole[j] {
				dist[j] = dist[m.index(p)] + 1
				queue = append(queue, q)
			}
		}
	}
	return dist
}

// ShortestPath returns a shortest sequence of moves from from to the goal
// that never enters a hole, assuming every move goes where intended, and
// false if there is none (from is a hole, off the board, or cut off). Among
// equally short routes it picks, move by move, the first of Left, Down,
// Right, Up, so the answer is deterministic. From the goal itself the route
// is empty.
func (m *Map) ShortestPath(from Pos) ([]Action, bool) {
	return m.shortestPath(from, m.distances(m.goal))
}

func (m *Map) shortestPath(from Pos, dist []int) ([]Action, bool) {
	if !m.InBounds(from) || dist[m.index(from)] < 0 {
		return nil, false
	}
	path := make([]Action, 0, dist[m.index(from)])
	for p := from; p != m.goal; {
		d := dist[m.index(p)]
		for a := range Action(numActions) {
			if q := m.move(p, a); q != p && dist[m.index(q)] == d-1 {
				path = append(path, a)
				p = q
				break
			}
		}
	}
	return path, true
}

// Advise implements envs.Expert: the next moves along the shortest hole-free
// route from the player to the goal (see Map.ShortestPath), at most
// maxActions of them (all if maxActions <= 0).
//
// The advice ignores slipping. With success_rate < 1 the shortest route is
// still the natural plan, but it is not the policy that maximises the chance
// of reaching the goal (that would avoid tiles next to holes), and a slip can
// put the player off the route, so callers should ask again after every
// step, not replay a long plan.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	if e.done {
		return envs.Advice{}, envs.ErrEpisodeDone
	}
	m := e.m
	dist := m.distances(m.goal)
	path, ok := m.shortestPath(e.pos, dist)
	if !ok {
		// Unreachable by construction: maps are solvable and the player
		// only ever stands on tiles connected to the start.
		return envs.Advice{}, errors.New("frozenlake: goal unreachable from the player's position")
	}
	actions := make([]string, 0, len(path))
	for _, a := range path {
		actions = append(actions, a.String())
	}
	rationale := e.rationale(path, rng)
	if maxActions > 0 && len(actions) > maxActions {
		actions = actions[:maxActions]
	}
	brief := fmt.Sprintf("P%d,%d G%d,%d", e.pos.Row, e.pos.Col, m.goal.Row, m.goal.Col)
	return envs.Advice{Actions: actions, Rationale: rationale, Brief: brief}, nil
}

// rationale explains the route in one of several phrasings. It names the
// player, the goal, the holes that border the route (the ones a careless
// move would fall into) and the route itself, so that it can only be
// reproduced by reading the board.
func (e *Env) rationale(path []Action, rng *rand.Rand) string {
	m := e.m
	player, goal := e.pos.String(), m.goal.String()
	if len(path) == 0 {
		// Advise refuses finished episodes, so this is only a safeguard.
		return "I am on the goal at " + goal + "."
	}
	route := routeText(path)
	n := len(path)
	moves := "moves"
	if n == 1 {
		moves = "move"
	}

	// Holes next to any tile of the route, the player's tile included,
	// listed in row-major order.
	var near []Pos
	seenHole := map[Pos]bool{}
	p := e.pos
	for i := 0; ; i++ {
		for a := range Action(numActions) {
			if q := m.move(p, a); m.IsHole(q) && !seenHole[q] {
				seenHole[q] = true
				near = append(near, q)
			}
		}
		if i == len(path) {
			break
		}
		p = m.move(p, path[i])
	}
	slices.SortFunc(near, func(a, b Pos) int { return cmp.Or(a.Row-b.Row, a.Col-b.Col) })
	var holes string
	switch len(near) {
	case 0:
		holes = "no hole borders this route"
	case 1:
		holes = "the hole at " + near[0].String() + " borders it"
	default:
		holes = "holes at " + joinPos(near) + " border it"
	}
	slip := ""
	if e.cfg.SuccessRate < 1 {
		slip = " The ice is slippery, so I will re-plan after each move."
	}

	phrasings := []func() string{
		func() string {
			return fmt.Sprintf("I am at %s and the goal is at %s. The shortest safe route is %s (%d %s); %s.%s",
				player, goal, route, n, moves, holes, slip)
		},
		func() string {
			return fmt.Sprintf("The goal at %s is %d %s from my position %s. Going %s gets there without stepping into a hole; %s.%s",
				goal, n, moves, player, route, holes, slip)
		},
		func() string {
			return fmt.Sprintf("Player %s, goal %s. Plan: %s, %d %s in all, and %s.%s",
				player, goal, route, n, moves, holes, slip)
		},
		func() string {
			first := path[0].String()
			return fmt.Sprintf("From %s the quickest hole-free way to the goal at %s starts with %s: the full route is %s (%d %s), and %s.%s",
				player, goal, first, route, n, moves, holes, slip)
		},
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(phrasings))
	}
	return phrasings[i]()
}

// routeText writes a route compactly: "Down, Down, Right" becomes
// "Down x2, Right".
func routeText(path []Action) string {
	var parts []string
	for i := 0; i < len(path); {
		j := i
		for j < len(path) && path[j] == path[i] {
			j++
		}
		if j-i == 1 {
			parts = append(parts, path[i].String())
		} else {
			parts = append(parts, fmt.Sprintf("%s x%d", path[i], j-i))
		}
		i = j
	}
	return strings.Join(parts, ", ")
}
