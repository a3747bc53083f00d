package sokoban

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// golden is a hand-written level that shows every grid symbol but P.
const golden = `#######
#_O_X_#
#_X_√_#
#__S__#
#######`

func TestParseLevelRagen(t *testing.T) {
	l, err := ParseLevel(golden)
	if err != nil {
		t.Fatal(err)
	}
	if l.Rows() != 5 || l.Cols() != 7 || l.NumBoxes() != 3 {
		t.Errorf("size %dx%d, %d boxes", l.Rows(), l.Cols(), l.NumBoxes())
	}
	if got, want := l.Player(), (Pos{3, 3}); got != want {
		t.Errorf("player %v, want %v", got, want)
	}
	if got, want := l.Boxes(), []Pos{{1, 4}, {2, 2}, {2, 4}}; !slices.Equal(got, want) {
		t.Errorf("boxes %v, want %v", got, want)
	}
	if got, want := l.Targets(), []Pos{{1, 2}, {2, 4}, {3, 3}}; !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if !l.IsWall(Pos{0, 0}) || l.IsWall(Pos{1, 1}) || !l.IsWall(Pos{-1, 3}) || !l.IsWall(Pos{5, 0}) {
		t.Error("IsWall wrong")
	}
	if l.String() != golden || l.Key() != golden {
		t.Errorf("String/Key do not round-trip:\n%s", l)
	}
}

func TestParseLevelXSB(t *testing.T) {
	// Ragged rows, blank surroundings and CRLF line ends, as .xsb files have.
	xsb := "\r\n  #####\r\n###   #\r\n#.@$  #\r\n### $.#\r\n  #####\r\n\r\n"
	l, err := ParseLevel(xsb)
	if err != nil {
		t.Fatal(err)
	}
	// The blank surroundings become wall and the rows are padded to the
	// widest one.
	if want := "#######\n###___#\n#OPX__#\n###_XO#\n#######"; l.String() != want {
		t.Errorf("grid:\n%s\nwant:\n%s", l, want)
	}
	if want := "#######\n###   #\n#.@$  #\n### $.#\n#######"; l.XSB() != want {
		t.Errorf("XSB:\n%s\nwant:\n%s", l.XSB(), want)
	}
	back, err := ParseLevel(l.XSB())
	if err != nil || back.Key() != l.Key() {
		t.Errorf("XSB round trip: %v\n%s", err, back)
	}
	// '-' and '_' are floor in .xsb too; '+' and '*' put things on targets.
	l2, err := ParseLevel("#######\n#+-$__#\n#-*___#\n#######")
	if err != nil {
		t.Fatal(err)
	}
	if l2.String() != "#######\n#S_X__#\n#_√___#\n#######" {
		t.Errorf("got\n%s", l2)
	}
}

func TestParseLevelErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"empty", "\n  \n", "empty"},
		{"unknown char", "#####\n#P?O#\n#####", "unknown character '?' at (1, 2)"},
		{"tab", "#####\n#P\tO#\n#####", "unknown character"},
		{"mixed", "######\n#P$.X#\n######", "mixes RAGEN symbols"},
		{"ragged", "######\n#PXO#\n######", "ragged rows: row 1 has 5 cells"},
		{"space in ragen", "######\n#P X_O#\n######", "ragged"},
		{"space in ragen grid", "######\n#PX O#\n######", "space at (1, 3)"},
		{"no player", "#####\n#_XO#\n#####", "no player"},
		{"two players", "######\n#PXOP#\n######", "2 players, at (1, 1), (1, 4); want exactly one"},
		{"no boxes", "#####\n#P_O#\n#####", "no boxes"},
		{"no boxes xsb", "#####\n#@  #\n#####", "no boxes"},
		{"count mismatch", "#######\n#PXXO_#\n#######", "2 boxes but 1 target;"},
		{"count mismatch xsb", "#####\n#@$ #\n#####", "1 box but 0 targets"},
		{"too many boxes", "############\n#PXXXXXXXX_#\n#OOOOOOOO__#\n############", "8 boxes; at most 7"},
		{"open", "#####\n#P_XO\n#####", "not enclosed by walls"},
		{"open xsb", "#####\n @$.#\n#####", "not enclosed by walls"},
		{"box outside", "#########\n#P_XO#_X#\n#######O#\n#########", "box at (1, 7) is outside"},
		{"target outside", "########\n#PX_#_O#\n#__O#__#\n#_X_####\n########", "target at (1, 6) is outside"},
		{"solved", "#####\n#P√_#\n#####", "already on a target"},
		{"unsolvable corner", "#####\n#X__#\n#_PO#\n#####", "unsolvable"},
		{"unsolvable two boxes", "########\n#P_XX_O#\n#####O_#\n########", "unsolvable"},
		{"too big", strings.Repeat("#", 65), "larger than"},
	}
	for _, c := range cases {
		_, err := ParseLevel(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestSolveKnownLevels(t *testing.T) {
	cases := []struct {
		text string
		want string
	}{
		{"#######\n#P_X_O#\n#######", "Right Right Right"},
		// The box must be pushed up then right: walk around it first.
		{"######\n#___O#\n#_X__#\n#_P__#\n######", "Up Left Up Right Right"},
		{"######\n#@ $.#\n######", "Right Right"},
	}
	for _, c := range cases {
		l, err := ParseLevel(c.text)
		if err != nil {
			t.Fatal(err)
		}
		path, err := Solve(l, DefaultMaxStates)
		if err != nil {
			t.Fatal(err)
		}
		if got := joinActions(path); got != c.want {
			t.Errorf("%s: solved with %q, want %q", c.text, got, c.want)
		}
	}
}

func TestSolveLimits(t *testing.T) {
	l, err := parseLayout("########\n#P_XX_O#\n#####O_#\n########")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Solve(l, DefaultMaxStates); !errors.Is(err, ErrUnsolvable) {
		t.Errorf("unsolvable level: %v", err)
	}
	big, err := ParseLevel(golden)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Solve(big, 5); !errors.Is(err, ErrSearchLimit) {
		t.Errorf("tiny budget: %v", err)
	}
	if p, err := Solve(big, DefaultMaxStates); err != nil || len(p) == 0 {
		t.Errorf("golden level: %v %v", p, err)
	}
}

func joinActions(p []Action) string {
	s := make([]string, len(p))
	for i, a := range p {
		s[i] = a.String()
	}
	return strings.Join(s, " ")
}
