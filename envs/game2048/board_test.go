package game2048

import (
	"strings"
	"testing"
)

func mustBoard(t testing.TB, text string) Board {
	t.Helper()
	b, err := ParseBoard(text)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMoveRules: one table row per rule of a slide, each checked in all
// four directions by rotating the line into place.
func TestMoveRules(t *testing.T) {
	cases := []struct {
		name    string
		line    string // the line, first cell at the edge the tiles move to
		want    string
		merged  uint64
		changed bool
	}{
		{"slide to the edge", ". . . 2", "2 . . .", 0, true},
		{"equal pair merges", "2 2 . .", "4 . . .", 4, true},
		{"pair across a gap merges", "2 . . 2", "4 . . .", 4, true},
		{"three equal: the pair at the edge merges", "2 2 2 .", "4 2 . .", 4, true},
		{"four equal: two merges", "2 2 2 2", "4 4 . .", 8, true},
		{"a merged tile does not merge again", "4 4 8 .", "8 8 . .", 8, true},
		{"no chain merge", "2 2 4 8", "4 4 8 .", 4, true},
		{"different tiles only slide", ". 2 4 8", "2 4 8 .", 0, true},
		{"packed distinct tiles do not move", "2 4 8 16", "2 4 8 16", 0, false},
		{"empty line", ". . . .", ". . . .", 0, false},
		{"big tiles", "1024 1024 2 2", "2048 4 . .", 2052, true},
	}
	for _, tc := range cases {
		for a := range numActions {
			t.Run(tc.name+"/"+a.String(), func(t *testing.T) {
				b := lineBoard(t, a, tc.line)
				got, merged, moved := b.Move(a)
				want := lineBoard(t, a, tc.want)
				if got.String() != want.String() || merged != tc.merged || moved != tc.changed {
					t.Fatalf("%s on\n%s\ngave\n%s (merged %d, moved %v), want\n%s (merged %d, moved %v)",
						a, b.String(), got.String(), merged, moved, want.String(), tc.merged, tc.changed)
				}
			})
		}
	}
}

// lineBoard places line (edge-first for direction a) on line 1 of an
// otherwise empty 4x4 board.
func lineBoard(t *testing.T, a Action, line string) Board {
	b := NewBoard(4)
	for k, s := range strings.Fields(line) {
		if s == "." {
			continue
		}
		one := mustBoard(t, s+" .\n. .")
		b.cells[b.lineIndex(a, 1, k)] = one.cells[0]
	}
	return b
}

func TestCanMoveAndValidMoves(t *testing.T) {
	full := mustBoard(t, "2 4\n4 2")
	if full.CanMove() || len(full.ValidMoves()) != 0 {
		t.Fatal("a locked board can move")
	}
	pair := mustBoard(t, "2 4\n2 8")
	if !pair.CanMove() {
		t.Fatal("a vertical pair cannot merge")
	}
	if got := pair.ValidMoves(); len(got) != 2 || got[0] != Up || got[1] != Down {
		t.Fatalf("valid moves %v, want [Up Down]", got)
	}
	corner := mustBoard(t, "2 .\n. .")
	if got := corner.ValidMoves(); len(got) != 2 || got[0] != Right || got[1] != Down {
		t.Fatalf("valid moves %v, want [Right Down]", got)
	}
}

func TestParseBoard(t *testing.T) {
	b := mustBoard(t, "[0, 2, 0, 4]\n[0, 0, 0, 0]\n[8, 0, 0, 0]\n[0, 0, 0, 2048]")
	if b.Tile(0, 1) != 2 || b.Tile(3, 3) != 2048 || b.MaxTile() != 2048 || b.Empty() != 12 {
		t.Fatalf("parsed %s", b.String())
	}
	if again := mustBoard(t, b.String()); again != b {
		t.Fatal("String does not read back")
	}
	if slash := mustBoard(t, ". 2 . 4/. . . ./8 . . ./. . . 2048"); slash != b {
		t.Fatal("rows separated by / differ")
	}
	for _, bad := range []string{"", "2", "2 2\n2", "3 .\n. .", "2 . .\n. . .\n. . x", "1 .\n. .", strings.Repeat(". ", 7) + "\n"} {
		if _, err := ParseBoard(bad); err == nil {
			t.Errorf("ParseBoard(%q) accepted", bad)
		}
	}
}
