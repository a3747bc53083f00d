package sokoban

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/agentrl/agentrl/envs"
)

// Generation constants of gym-sokoban's room_utils, as RAGEN uses them.
const (
	// pChangeDirection is the random walk's chance of turning at each step.
	pChangeDirection = 0.35
	// topologyTries is how many rooms generate_room draws before giving up
	// on a seed.
	topologyTries = 4
	// maxExplored caps the states of one reverse-play search.
	maxExplored = 300_000
	// maxRegenerations bounds the derived-seed retries of one Generate call,
	// so that a configuration that cannot yield a level fails instead of
	// looping forever.
	maxRegenerations = 1000
	// streamGen labels the generator's random stream for envs.NewRand.
	streamGen = 0x736f6b2d67656e // "sok-gen"
)

// masks are the five 3x3 floor stamps of the topology random walk, centred
// on the walker.
var masks = [5][3][3]bool{
	{{false, false, false}, {true, true, true}, {false, false, false}},
	{{false, true, false}, {false, true, false}, {false, true, false}},
	{{false, false, false}, {true, true, false}, {false, true, false}},
	{{false, false, false}, {true, true, false}, {true, true, false}},
	{{false, false, false}, {false, true, true}, {false, true, false}},
}

// walkDirections are the walk's (row, col) steps.
var walkDirections = [4][2]int{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}

// Generator draws random solvable levels the way RAGEN does (gym-sokoban's
// generate_room with RAGEN's changes); see Generate. It keeps its scratch
// buffers between calls, so reusing one Generator is cheaper than calling
// Generate. It is not safe for concurrent use.
type Generator struct {
	rows, cols, numBoxes, searchDepth int

	b        *board // scratch board: walls and targets of the current try
	floor    []int
	occ      []int8 // cell -> index of the box on it, -1 if none
	player   int
	boxPos   [MaxBoxes]int         // box of target i (box_mapping) -> its cell
	pulled   [MaxBoxes]bool        // the box has been pulled (gym-sokoban's tile 3)
	explored map[stateKey]struct{} // visited boards with several boxes
	// With one box the visited set is a flat array indexed by player and
	// box code, stamped with the search number so it never needs clearing.
	visited   []uint32
	stamp     uint32
	nExplored int

	bestScore  int
	bestPlayer int
	bestBoxes  [MaxBoxes]int
}

// NewGenerator returns a generator for cfg's dim_x, dim_y, num_boxes and
// search_depth, or cfg's validation error.
func NewGenerator(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		rows: cfg.DimX, cols: cfg.DimY, numBoxes: cfg.NumBoxes, searchDepth: cfg.SearchDepth,
		b:   newBoard(cfg.DimX, cfg.DimY),
		occ: make([]int8, cfg.DimX*cfg.DimY),
	}
	// The flat array has 2n² entries for n cells: 10 KB for 6x6, capped at
	// 512 KB (16x16), beyond which the map is the smaller choice.
	if n := cfg.DimX * cfg.DimY; cfg.NumBoxes == 1 && n <= 256 {
		g.visited = make([]uint32, n*2*n)
	} else {
		g.explored = make(map[stateKey]struct{}, 1024)
	}
	return g, nil
}

// Generate draws the level of seed for cfg (see Generator.Generate).
func Generate(cfg Config, seed uint64) (*Level, error) {
	g, err := NewGenerator(cfg)
	if err != nil {
		return nil, err
	}
	return g.Generate(seed)
}

// Generate draws the level of seed. The level depends only on seed and the
// generator's configuration.
//
// It follows RAGEN's version of gym-sokoban's generate_room: up to four
// random-walk rooms, each with a random player and targets and a
// reverse-play search (pulls only, depth search_depth, at most 300,000
// states) for the start that scores highest, then RAGEN's short random walk
// of the player. When all four rooms score 0, or a room has too little
// floor, the seed is replaced by a seed derived from it and generation
// starts over (RAGEN re-seeds with Python's hash of the seed string, which
// is not reproducible across processes; the derived seed here is).
func (g *Generator) Generate(seed uint64) (*Level, error) {
	s := seed
	for range maxRegenerations {
		rng := envs.NewRand(s, streamGen)
		if l := g.try(rng); l != nil {
			return l, nil
		}
		s = deriveSeed(s)
	}
	return nil, fmt.Errorf("sokoban: no level for seed %d after %d regenerations (dim_x %d, dim_y %d, num_boxes %d, search_depth %d)",
		seed, maxRegenerations, g.rows, g.cols, g.numBoxes, g.searchDepth)
}

// deriveSeed is splitmix64's output function: a fixed, well-mixed successor
// seed.
func deriveSeed(s uint64) uint64 {
	s += 0x9e3779b97f4a7c15
	s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9
	s = (s ^ (s >> 27)) * 0x94d049bb133111eb
	return s ^ (s >> 31)
}

// try is one call of generate_room: nil when it would raise.
func (g *Generator) try(rng *rand.Rand) *Level {
	for range topologyTries {
		g.topology(rng)
		if !g.place(rng) {
			// place_boxes_and_player raises out of the tries loop.
			return nil
		}
		g.reversePlay()
		if g.bestScore > 0 {
			return g.finish(rng)
		}
	}
	return nil
}

// topology is room_topology_generation: a random walk that stamps floor
// masks, then walls all around.
func (g *Generator) topology(rng *rand.Rand) {
	b := g.b
	for i := range b.wall {
		b.wall[i] = true
		b.target[i] = false
	}
	b.targets = b.targets[:0]
	numSteps := int(1.7 * float64(g.rows+g.cols))
	dir := walkDirections[rng.IntN(4)]
	// randint(1, dim-1) is inclusive, so the walk may start on the far
	// border; the first step clamps it inside.
	r, c := 1+rng.IntN(g.rows-1), 1+rng.IntN(g.cols-1)
	for range numSteps {
		if rng.Float64() < pChangeDirection {
			dir = walkDirections[rng.IntN(4)]
		}
		r = min(max(r+dir[0], 1), g.rows-2)
		c = min(max(c+dir[1], 1), g.cols-2)
		m := &masks[rng.IntN(len(masks))]
		for dr := range 3 {
			for dc := range 3 {
				if m[dr][dc] {
					b.wall[(r+dr-1)*g.cols+c+dc-1] = false
				}
			}
		}
	}
	for r := range g.rows {
		b.wall[r*g.cols] = true
		b.wall[r*g.cols+g.cols-1] = true
	}
	for c := range g.cols {
		b.wall[c] = true
		b.wall[(g.rows-1)*g.cols+c] = true
	}
}

// place is place_boxes_and_player: the player, then each target, on a
// uniformly drawn free floor cell (in row-major order, as np.where lists
// them). It reports false when there is not more floor than boxes plus the
// player.
func (g *Generator) place(rng *rand.Rand) bool {
	b := g.b
	g.floor = g.floor[:0]
	for i, w := range b.wall {
		if !w {
			g.floor = append(g.floor, i)
		}
	}
	if len(g.floor) <= g.numBoxes+1 {
		return false
	}
	take := func() int {
		i := rng.IntN(len(g.floor))
		c := g.floor[i]
		g.floor = slices.Delete(g.floor, i, i+1)
		return c
	}
	g.player = take()
	for range g.numBoxes {
		t := take()
		b.target[t] = true
		b.targets = append(b.targets, t)
	}
	return true
}

// reversePlay is reverse_playing: a depth-first search from the solved
// state (every box on its target) over pulls, keeping the highest-scoring
// state.
func (g *Generator) reversePlay() {
	b := g.b
	for i := range g.occ {
		g.occ[i] = -1
	}
	// box_mapping's keys are the targets in np.where (row-major) order;
	// the order changes nothing but is kept for clarity.
	for i, t := range b.targets {
		g.boxPos[i] = t
		g.pulled[i] = false
		g.occ[t] = int8(i)
	}
	if g.visited != nil {
		g.stamp++
		if g.stamp == 0 { // wrapped: old stamps would read as visited
			clear(g.visited)
			g.stamp = 1
		}
	} else {
		clear(g.explored)
	}
	g.nExplored = 0
	g.bestScore = -1
	g.dfs(0, -1, g.searchDepth)
}

// dfs is depth_first_search with RAGEN's changes: pull actions 0-3 only, the
// child gets last_pull_next, and ttl is search_depth. Like the original, the
// explored set is keyed by the board alone (player, boxes, and which boxes
// were pulled), not by the box identities or the swap count, and ttl is
// checked before the explored set, so a state first reached deep is not
// searched again from a shallower path. The state is changed in place and
// restored after each child, so a node allocates nothing beyond its map
// entry.
func (g *Generator) dfs(swaps, lastPull, ttl int) {
	ttl--
	if ttl <= 0 || g.nExplored >= maxExplored || !g.firstVisit() {
		return
	}
	score := 0
	if swaps > 0 && g.targetsUncovered() {
		score = swaps * g.displacement()
	}
	if score > g.bestScore {
		g.bestScore = score
		g.bestPlayer = g.player
		g.bestBoxes = g.boxPos
	}

	b := g.b
	for _, d := range b.delta {
		p := g.player
		q := p + d
		// The player moves only onto empty floor or an empty target.
		if b.wall[q] || g.occ[q] >= 0 {
			continue
		}
		g.player = q
		pull := lastPull
		behind := p - d
		bi := g.occ[behind]
		var wasPulled bool
		if bi >= 0 {
			g.occ[behind], g.occ[p] = -1, bi
			g.boxPos[bi] = p
			wasPulled, g.pulled[bi] = g.pulled[bi], true
			pull = int(bi)
		}
		next := swaps
		if pull != lastPull {
			next++
		}
		g.dfs(next, pull, ttl)
		if bi >= 0 {
			g.occ[behind], g.occ[p] = bi, -1
			g.boxPos[bi] = behind
			g.pulled[bi] = wasPulled
		}
		g.player = p
	}
}

// firstVisit adds the current board to the explored set and reports
// whether it was new.
func (g *Generator) firstVisit() bool {
	if g.visited != nil {
		code := g.boxPos[0] << 1
		if g.pulled[0] {
			code |= 1
		}
		i := g.player*2*len(g.occ) + code
		if g.visited[i] == g.stamp {
			return false
		}
		g.visited[i] = g.stamp
	} else {
		key := g.key()
		if _, seen := g.explored[key]; seen {
			return false
		}
		g.explored[key] = struct{}{}
	}
	g.nExplored++
	return true
}

// key packs the board state: the player, then the boxes' cells (each with
// its pulled bit) in ascending order.
func (g *Generator) key() stateKey {
	var codes [MaxBoxes]int
	n := g.numBoxes
	for i := range n {
		c := g.boxPos[i] << 1
		if g.pulled[i] {
			c |= 1
		}
		j := i
		for ; j > 0 && codes[j-1] > c; j-- {
			codes[j] = codes[j-1]
		}
		codes[j] = c
	}
	return packState(g.player, codes[:n])
}

// targetsUncovered is the score condition: no box and not the player on any
// target (the count of empty-target tiles equals num_boxes).
func (g *Generator) targetsUncovered() bool {
	for _, t := range g.b.targets {
		if g.occ[t] >= 0 || g.player == t {
			return false
		}
	}
	return true
}

// displacement is box_displacement_score: the sum of the Manhattan
// distances between each box and its own target.
func (g *Generator) displacement() int {
	return g.displacementOf(&g.boxPos)
}

func (g *Generator) displacementOf(boxes *[MaxBoxes]int) int {
	s := 0
	for i, t := range g.b.targets {
		br, bc := boxes[i]/g.cols, boxes[i]%g.cols
		tr, tc := t/g.cols, t%g.cols
		s += abs(br-tr) + abs(bc-tc)
	}
	return s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// finish builds the level from the best state and applies RAGEN's
// add_random_player_movement: with probability 0.8 when the displacement is
// 1 (else 0.5) the player walks 1 to 3 random steps onto free floor or
// targets, never revisiting a cell, continuing after each step with
// probability 0.5.
func (g *Generator) finish(rng *rand.Rand) *Level {
	src := g.b
	b := newBoard(g.rows, g.cols)
	copy(b.wall, src.wall)
	copy(b.target, src.target)
	b.targets = slices.Clone(src.targets)
	boxes := slices.Clone(g.bestBoxes[:g.numBoxes])
	slices.Sort(boxes)

	moveProbability := 0.5
	if g.displacementOf(&g.bestBoxes) == 1 {
		moveProbability = 0.8
	}
	player := g.bestPlayer
	if rng.Float64() <= moveProbability {
		const maxSteps, continueProbability = 3, 0.5
		visited := [maxSteps + 1]int{player}
		var options [4]int
		for steps := 1; steps <= maxSteps; steps++ {
			n := 0
			for _, d := range b.delta {
				q := player + d
				if !b.wall[q] && !slices.Contains(boxes, q) && !slices.Contains(visited[:steps], q) {
					options[n] = q
					n++
				}
			}
			if n == 0 {
				break
			}
			player = options[rng.IntN(n)]
			visited[steps] = player
			if steps >= maxSteps || rng.Float64() > continueProbability {
				break
			}
		}
	}
	return &Level{board: b, player: player, boxes: boxes}
}
