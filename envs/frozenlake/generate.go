package frozenlake

import (
	"fmt"
	"math/rand/v2"
)

// Placement says where a generated map puts its start and goal.
type Placement string

const (
	// PlacementRandom puts the start and the goal on two distinct tiles
	// drawn uniformly, as RAGEN's generator does.
	PlacementRandom Placement = "random"
	// PlacementCorners puts the start at (0, 0) and the goal at
	// (size-1, size-1), as Gymnasium's generate_random_map does.
	PlacementCorners Placement = "corners"
)

// Limits on generated maps. The size is capped because rejection sampling
// redraws whole boards and the renders are meant for a prompt; the attempt
// cap turns a hopeless configuration (a tiny p on a big board) into an error
// instead of an endless loop.
const (
	MinSize             = 2
	MaxSize             = 32
	maxGenerateAttempts = 100_000
)

// Generate draws a random solvable size×size map from rng.
//
// Every tile is frozen with probability p and a hole otherwise; the start
// and goal are then placed (overwriting whatever tile was there) and the
// whole board is redrawn until a depth-first search from the start reaches
// the goal without crossing a hole. This is Gymnasium's generate_random_map
// with RAGEN's choice of start and goal under PlacementRandom.
func Generate(size int, p float64, placement Placement, rng *rand.Rand) (*Map, error) {
	var g generator
	return g.generate(size, p, placement, rng)
}

// generator keeps the scratch space of Generate so that an environment can
// draw map after map without reallocating it.
type generator struct {
	hole    []bool
	visited []bool
	stack   []int
}

func (g *generator) generate(size int, p float64, placement Placement, rng *rand.Rand) (*Map, error) {
	if size < MinSize || size > MaxSize {
		return nil, fmt.Errorf("frozenlake: size must be in [%d, %d], got %d", MinSize, MaxSize, size)
	}
	if !(p > 0 && p <= 1) {
		return nil, fmt.Errorf("frozenlake: p must be in (0, 1], got %v", p)
	}
	if placement != PlacementRandom && placement != PlacementCorners {
		return nil, fmt.Errorf("frozenlake: placement must be %q or %q, got %q", PlacementRandom, PlacementCorners, placement)
	}
	n := size * size
	g.hole = grow(g.hole, n)
	g.visited = grow(g.visited, n)
	for range maxGenerateAttempts {
		for i := range g.hole {
			// Gymnasium: choice(["F", "H"], p=[p, 1-p]), i.e. frozen when
			// the uniform draw falls below p.
			g.hole[i] = rng.Float64() >= p
		}
		start, goal := 0, n-1
		if placement == PlacementRandom {
			// Equivalent to RAGEN's redraw-until-distinct, with one draw
			// fewer: pick the goal among the n-1 tiles other than start.
			start = rng.IntN(n)
			goal = rng.IntN(n - 1)
			if goal >= start {
				goal++
			}
		}
		g.hole[start], g.hole[goal] = false, false
		if g.reachable(size, size, start, goal) {
			hole := make([]bool, n)
			copy(hole, g.hole)
			return &Map{
				rows: size, cols: size, hole: hole,
				start: Pos{start / size, start % size},
				goal:  Pos{goal / size, goal % size},
			}, nil
		}
	}
	return nil, fmt.Errorf("frozenlake: no solvable %dx%d map in %d attempts with p=%v; raise p",
		size, size, maxGenerateAttempts, p)
}

// reachable is Gymnasium's validity check: an iterative depth-first search
// from start over in-bounds 4-neighbours that are not holes, stopping as soon
// as it reaches goal. It reads g.hole and uses g.visited and g.stack.
func (g *generator) reachable(rows, cols, start, goal int) bool {
	clear(g.visited)
	g.stack = append(g.stack[:0], start)
	g.visited[start] = true
	for len(g.stack) > 0 {
		i := g.stack[len(g.stack)-1]
		g.stack = g.stack[:len(g.stack)-1]
		r, c := i/cols, i%cols
		for _, d := range delta {
			nr, nc := r+d.Row, c+d.Col
			if nr < 0 || nr >= rows || nc < 0 || nc >= cols {
				continue
			}
			j := nr*cols + nc
			if j == goal {
				return true
			}
			if g.visited[j] || g.hole[j] {
				continue
			}
			g.visited[j] = true
			g.stack = append(g.stack, j)
		}
	}
	return false
}

// grow returns s resized to n elements, reusing its storage when it can.
func grow(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}
