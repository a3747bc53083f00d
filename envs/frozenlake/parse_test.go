package frozenlake

import (
	"strings"
	"testing"
)

func TestParseMapAlphabets(t *testing.T) {
	gym := "SFFF\nFHFH\nFFFH\nHFFG"
	ragen := "P___\n_O_O\n___O\nO__G"
	a, err := ParseMap(gym)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseMap(ragen)
	if err != nil {
		t.Fatal(err)
	}
	const key = "SFFF/FHFH/FFFH/HFFG"
	if a.Key() != key || b.Key() != key {
		t.Fatalf("keys %q, %q, want %q", a.Key(), b.Key(), key)
	}
	if a.String() != gym {
		t.Fatalf("String() = %q", a.String())
	}
	for _, text := range []string{key, "  SFFF \r\nFHFH\r\nFFFH\r\nHFFG\n\n", a.String()} {
		c, err := ParseMap(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if c.Key() != key {
			t.Fatalf("%q parsed to %q", text, c.Key())
		}
	}
	if a.Start() != (Pos{0, 0}) || a.Goal() != (Pos{3, 3}) || a.Rows() != 4 || a.Cols() != 4 {
		t.Fatalf("start %v goal %v size %dx%d", a.Start(), a.Goal(), a.Rows(), a.Cols())
	}
	want := []Pos{{1, 1}, {1, 3}, {2, 3}, {3, 0}}
	got := a.Holes()
	if len(got) != len(want) {
		t.Fatalf("holes %v", got)
	}
	for i := range want {
		if got[i] != want[i] || !a.IsHole(want[i]) {
			t.Fatalf("holes %v, want %v", got, want)
		}
	}
	if a.IsHole(Pos{-1, 0}) || a.IsHole(Pos{0, 4}) {
		t.Fatal("off-board position reported as a hole")
	}
	// Rectangular maps are fine.
	r, err := ParseMap("SFH\nFFG")
	if err != nil || r.Rows() != 2 || r.Cols() != 3 {
		t.Fatalf("rectangular: %v %v", r, err)
	}
}

func TestParseMapErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "  \n ", "empty"},
		{"blank row", "SF\n\nFG", "empty row"},
		{"blank row slash", "SF//FG", "empty row"},
		{"whitespace row", "SF\n  \nFG", "row 1 is empty"},
		{"ragged", "SFF\nFG", "row 1 has 2 tiles but row 0 has 3"},
		{"unknown", "SFF\nFXG", `row 1, column 1: unknown tile 'X'`},
		{"unknown unicode", "S√\nFG", `unknown tile '√'`},
		{"space inside", "S F\nF G", `unknown tile ' '`},
		{"lowercase", "sfff\nfffg", `unknown tile 's'`},
		{"mixed alphabets", "S_\n_G", "mixes"},
		{"no start", "FFF\nFFG", "no start"},
		{"two starts", "SFS\nFFG", "2 starts at (0, 0), (0, 2)"},
		{"two starts ragen", "P_P\n__G", "2 starts"},
		{"no goal", "SFF\nFFF", "no goal"},
		{"two goals", "SFG\nFFG", "2 goals at (0, 2), (1, 2)"},
		{"unreachable", "SFF\nHHH\nFFG", "goal (2, 2) is unreachable from start (0, 0)"},
		{"unreachable ragen", "P_O\n_OG", "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMap(tc.text)
			if err == nil {
				t.Fatalf("parsed %q to %s, want error", tc.text, m.Key())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseAction(t *testing.T) {
	for in, want := range map[string]Action{"Left": Left, " down\n": Down, "RIGHT": Right, "\tuP ": Up} {
		if a, ok := ParseAction(in); !ok || a != want {
			t.Errorf("ParseAction(%q) = %v, %v", in, a, ok)
		}
	}
	for _, in := range []string{"", "1", "l", "Left Right", "le ft", "Upp", "north"} {
		if _, ok := ParseAction(in); ok {
			t.Errorf("ParseAction(%q) accepted", in)
		}
	}
	if Action(7).String() != "Action(7)" {
		t.Errorf("String of out-of-range action: %q", Action(7).String())
	}
}
