package sudoku

import (
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// TestGenerate: every puzzle has exactly the givens asked for, a unique
// solution that agrees with it, and a valid full solution.
func TestGenerate(t *testing.T) {
	for _, tc := range []struct{ n, givens, seeds int }{
		{4, 10, 200}, {4, 6, 200}, {4, 4, 50}, {9, 36, 20}, {9, 24, 5},
	} {
		keys := map[string]bool{}
		for seed := range uint64(tc.seeds) {
			p, sol, err := Generate(tc.n, tc.givens, envs.NewRand(seed, streamPuzzle))
			if err != nil {
				t.Fatal(err)
			}
			keys[p.key()] = true
			if got := tc.n*tc.n - p.Empty(); got != tc.givens {
				t.Fatalf("%dx%d seed %d: %d givens, want %d", tc.n, tc.n, seed, got, tc.givens)
			}
			if sol.Empty() != 0 || !sol.conflictFree() {
				t.Fatalf("%dx%d seed %d: invalid solution\n%s", tc.n, tc.n, seed, sol.String())
			}
			for i, v := range p.cells[:tc.n*tc.n] {
				if v != 0 && v != sol.cells[i] {
					t.Fatalf("%dx%d seed %d: given differs from the solution", tc.n, tc.n, seed)
				}
			}
			if got, unique := Solve(p); !unique || got != sol {
				t.Fatalf("%dx%d seed %d: solution not unique or different", tc.n, tc.n, seed)
			}
		}
		if len(keys) < tc.seeds*9/10 {
			t.Errorf("%dx%d/%d: only %d distinct puzzles in %d seeds", tc.n, tc.n, tc.givens, len(keys), tc.seeds)
		}
	}
}

func TestCountSolutions(t *testing.T) {
	empty := NewGrid(4)
	if n := countSolutions(empty, 1000); n != 288 {
		t.Fatalf("%d 4x4 Sudoku grids, want 288", n)
	}
	bad, _ := ParseGrid("1...\n....\n....\n....")
	bad.cells[1] = 1 // a repeated digit
	if n := countSolutions(bad, 2); n != 0 {
		t.Fatalf("a grid with a repeat has %d solutions", n)
	}
}

func TestParseGrid(t *testing.T) {
	g, err := ParseGrid("1 2 | 3 4\n3 4 | . 2\n--+--\n2 1 | 4 3\n4 . | 2 1")
	if err != nil {
		t.Fatal(err)
	}
	if g.Size() != 4 || g.At(1, 2) != 0 || g.At(3, 0) != 4 || g.Empty() != 2 {
		t.Fatalf("parsed\n%s", g.String())
	}
	again, err := ParseGrid(g.String())
	if err != nil || again != g {
		t.Fatalf("String does not read back: %v", err)
	}
	if slash, _ := ParseGrid("1234/34.2/2143/4.21"); slash != g {
		t.Fatal("rows separated by / differ")
	}
	for _, bad := range []string{"", "123\n456\n789", "12345\n....\n....\n....", "1...\n1...\n....\n....",
		"5...\n....\n....\n....", "1.\n..", "12x4\n....\n....\n...."} {
		if _, err := ParseGrid(bad); err == nil {
			t.Errorf("ParseGrid(%q) accepted", bad)
		}
	}
}
