package sokoban

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// TestGeneratedLevelsAreSolvable generates thousands of levels of several
// sizes and checks each one's invariants and that the solver solves it.
func TestGeneratedLevelsAreSolvable(t *testing.T) {
	cases := []struct{ rows, cols, boxes, n int }{
		{6, 6, 1, 2000},
		{7, 7, 2, 1000},
		{8, 8, 2, 500},
		{10, 10, 3, 100},
	}
	if testing.Short() {
		for i := range cases {
			cases[i].n /= 10
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d/%d", c.rows, c.cols, c.boxes), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DimX, cfg.DimY, cfg.NumBoxes = c.rows, c.cols, c.boxes
			g, err := NewGenerator(cfg)
			if err != nil {
				t.Fatal(err)
			}
			onTarget, totalLen := 0, 0
			for seed := range uint64(c.n) {
				l, err := g.Generate(seed)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkGenerated(t, l, cfg)
				// Reverse play never ends with the player on a target; only
				// RAGEN's random walk afterwards can step onto one.
				if l.target[g.bestPlayer] {
					t.Errorf("seed %d: player on a target before the walk", seed)
				}
				if l.target[l.player] {
					onTarget++
				}
				path, err := Solve(l, DefaultMaxStates)
				if err != nil {
					t.Fatalf("seed %d: %v\n%s", seed, err, l)
				}
				totalLen += len(path)
				if !replaySolves(l, path) {
					t.Fatalf("seed %d: solution %v does not solve\n%s", seed, path, l)
				}
				if c.boxes == 1 {
					plan, ok := newOneBoxTable(l.board).plan(l.player, l.boxes[0])
					if !ok || !slices.Equal(plan, path) {
						t.Fatalf("seed %d: table plan %v, BFS %v\n%s", seed, plan, path, l)
					}
				}
			}
			t.Logf("%d levels, mean optimal length %.2f, player starts on a target in %d",
				c.n, float64(totalLen)/float64(c.n), onTarget)
		})
	}
}

// checkGenerated checks the structural invariants of a generated level.
func checkGenerated(t *testing.T, l *Level, cfg Config) {
	t.Helper()
	if l.rows != cfg.DimX || l.cols != cfg.DimY || len(l.boxes) != cfg.NumBoxes || len(l.targets) != cfg.NumBoxes {
		t.Fatalf("level shape %dx%d, %d boxes, %d targets:\n%s", l.rows, l.cols, len(l.boxes), len(l.targets), l)
	}
	for i := range l.wall {
		r, c := i/l.cols, i%l.cols
		if (r == 0 || c == 0 || r == l.rows-1 || c == l.cols-1) && !l.wall[i] {
			t.Fatalf("open border at (%d, %d):\n%s", r, c, l)
		}
	}
	for _, b := range l.boxes {
		if l.wall[b] || l.target[b] || b == l.player {
			t.Fatalf("box at %v on a wall, target or the player:\n%s", l.pos(b), l)
		}
	}
	if l.wall[l.player] {
		t.Fatalf("player in a wall:\n%s", l)
	}
	// The level reads back from its own rendering.
	back, err := ParseLevel(l.String())
	if err != nil || back.Key() != l.Key() {
		t.Fatalf("level does not parse back (%v):\n%s", err, l)
	}
}

func replaySolves(l *Level, path []Action) bool {
	player, boxes, next := l.player, slices.Clone(l.boxes), make([]int, len(l.boxes))
	for _, a := range path {
		var moved bool
		player, moved, _ = l.step(player, boxes, a, next)
		if !moved {
			return false
		}
		boxes, next = next, boxes
	}
	return l.solved(boxes)
}

func TestGenerateDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DimX, cfg.DimY, cfg.NumBoxes = 7, 7, 2
	g, _ := NewGenerator(cfg)
	var first []string
	for seed := range uint64(50) {
		l, err := g.Generate(seed)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, l.Key())
	}
	// A fresh generator, in another order, gives the same levels.
	g2, _ := NewGenerator(cfg)
	for seed := 49; seed >= 0; seed-- {
		l, err := g2.Generate(uint64(seed))
		if err != nil {
			t.Fatal(err)
		}
		if l.Key() != first[seed] {
			t.Errorf("seed %d: different level on the second run", seed)
		}
	}
	distinct := map[string]bool{}
	for _, k := range first {
		distinct[k] = true
	}
	if len(distinct) < 45 {
		t.Errorf("only %d distinct levels in 50 seeds", len(distinct))
	}
}

func TestTopologyWalk(t *testing.T) {
	// With one step count per size the walk alone must stay inside the
	// border and leave some floor.
	for _, dim := range [][2]int{{5, 5}, {6, 6}, {6, 9}, {12, 7}} {
		cfg := DefaultConfig()
		cfg.DimX, cfg.DimY = dim[0], dim[1]
		g, _ := NewGenerator(cfg)
		for seed := range uint64(200) {
			g.topology(newRand(seed))
			floor := 0
			for i, w := range g.b.wall {
				r, c := i/cfg.DimY, i%cfg.DimY
				if !w {
					floor++
					if r == 0 || c == 0 || r == cfg.DimX-1 || c == cfg.DimY-1 {
						t.Fatalf("%v seed %d: floor on the border", dim, seed)
					}
				}
			}
			if floor < 3 {
				t.Fatalf("%v seed %d: only %d floor cells", dim, seed, floor)
			}
		}
	}
}

func newRand(seed uint64) *rand.Rand { return envs.NewRand(seed, streamGen) }
