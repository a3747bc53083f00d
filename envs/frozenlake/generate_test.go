package frozenlake

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestGenerateSameSeedSameMap(t *testing.T) {
	for _, pl := range []Placement{PlacementRandom, PlacementCorners} {
		for seed := range uint64(50) {
			a, err := Generate(6, 0.8, pl, envs.NewRand(seed, streamMap))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Generate(6, 0.8, pl, envs.NewRand(seed, streamMap))
			if a.Key() != b.Key() {
				t.Fatalf("%s seed %d: %s != %s", pl, seed, a.Key(), b.Key())
			}
		}
	}
	// Different seeds give different maps (not a constant generator).
	keys := map[string]bool{}
	for seed := range uint64(100) {
		m, _ := Generate(4, 0.9, PlacementRandom, envs.NewRand(seed, streamMap))
		keys[m.Key()] = true
	}
	if len(keys) < 90 {
		t.Fatalf("only %d distinct maps in 100 seeds", len(keys))
	}
}

// TestGeneratedMapsSolvable generates thousands of maps and walks the
// expert's route on each in deterministic mode; it must reach the goal.
func TestGeneratedMapsSolvable(t *testing.T) {
	n := 0
	for _, size := range []int{4, 6, 8} {
		for _, p := range []float64{0.6, 0.75, 0.9, 1} {
			for _, pl := range []Placement{PlacementRandom, PlacementCorners} {
				cfg := DefaultConfig()
				cfg.Size, cfg.P, cfg.Placement, cfg.MaxSteps = size, p, pl, 0
				e, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				for seed := range uint64(120) {
					n++
					if _, err := e.Reset(seed); err != nil {
						t.Fatal(err)
					}
					m := e.Map()
					if m.Rows() != size || m.Cols() != size {
						t.Fatalf("size %d: got %dx%d", size, m.Rows(), m.Cols())
					}
					if m.Start() == m.Goal() || m.IsHole(m.Start()) || m.IsHole(m.Goal()) {
						t.Fatalf("bad start/goal in %s", m.Key())
					}
					if pl == PlacementCorners && (m.Start() != Pos{0, 0} || m.Goal() != Pos{size - 1, size - 1}) {
						t.Fatalf("corners placement gave start %v goal %v", m.Start(), m.Goal())
					}
					if p == 1 && len(m.Holes()) != 0 {
						t.Fatalf("p=1 map has holes: %s", m.Key())
					}
					walkExpert(t, e)
				}
			}
		}
	}
	if n < 2000 {
		t.Fatalf("only %d maps checked", n)
	}
}

// walkExpert follows the expert's first action until the episode ends and
// requires success within the shortest-path length.
func walkExpert(t *testing.T, e *Env) {
	t.Helper()
	path, ok := e.Map().ShortestPath(e.Position())
	if !ok {
		t.Fatalf("no path on generated map %s", e.Map().Key())
	}
	for i := 0; ; i++ {
		adv, err := e.Advise(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(adv.Actions) != 1 || adv.Actions[0] != path[i].String() {
			t.Fatalf("advice %v, want %v at step %d", adv.Actions, path[i], i)
		}
		res, err := e.Step(adv.Actions[0])
		if err != nil {
			t.Fatal(err)
		}
		if res.Done {
			if !res.Info.Success || res.Reward != 1 || i != len(path)-1 {
				t.Fatalf("map %s: episode ended at step %d of %d without success: %+v", e.Map().Key(), i, len(path), res)
			}
			return
		}
	}
}

func TestRandomPlacementCoversBoard(t *testing.T) {
	starts, goals := map[Pos]int{}, map[Pos]int{}
	for seed := range uint64(2000) {
		m, err := Generate(4, 1, PlacementRandom, envs.NewRand(seed, streamMap))
		if err != nil {
			t.Fatal(err)
		}
		starts[m.Start()]++
		goals[m.Goal()]++
	}
	// 2000 draws over 16 tiles: every tile expected 125 times.
	for r := range 4 {
		for c := range 4 {
			p := Pos{r, c}
			if starts[p] < 70 || goals[p] < 70 {
				t.Errorf("tile %v: %d starts, %d goals of 2000", p, starts[p], goals[p])
			}
		}
	}
}

func TestHoleRate(t *testing.T) {
	// With corners placement and p close to 1 nearly every board is
	// accepted, so the hole fraction of non-start/goal tiles is ~1-p.
	holes, tiles := 0, 0
	for seed := range uint64(3000) {
		m, _ := Generate(8, 0.95, PlacementCorners, envs.NewRand(seed, streamMap))
		holes += len(m.Holes())
		tiles += 62
	}
	if rate := float64(holes) / float64(tiles); rate < 0.045 || rate > 0.055 {
		t.Fatalf("hole rate %.4f, want about 0.05", rate)
	}
}

func TestGenerateErrors(t *testing.T) {
	rng := envs.NewRand(1, streamMap)
	for _, tc := range []struct {
		size int
		p    float64
		pl   Placement
		want string
	}{
		{1, 0.9, PlacementRandom, "size"},
		{MaxSize + 1, 0.9, PlacementRandom, "size"},
		{4, 0, PlacementRandom, "p must"},
		{4, 1.5, PlacementRandom, "p must"},
		{4, 0.9, "middle", "placement"},
		{8, 0.01, PlacementCorners, "no solvable"},
	} {
		_, err := Generate(tc.size, tc.p, tc.pl, rng)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Generate(%d, %v, %q) = %v, want error containing %q", tc.size, tc.p, tc.pl, err, tc.want)
		}
	}
}
