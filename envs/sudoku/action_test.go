package sudoku

import "testing"

func TestParseAction(t *testing.T) {
	want := Placement{Row: 2, Col: 4, Value: 3}
	for _, s := range []string{
		"place 3 at row 2 col 4", "Place 3 at Row 2 Col 4", "  place 3 at row 2, col 4 ", "place 3 at row 2 column 4",
		"place 3 at (2,4)", "place 3 at ( 2 , 4 )", "place 3 at 2,4", "3 at 2, 4",
		"(2,4,3)", "2,4,3", "2, 4, 3", "2 4 3",
	} {
		got, ok := ParseAction(s)
		if !ok || got != want {
			t.Errorf("ParseAction(%q) = %+v, %v", s, got, ok)
		}
	}
	for _, s := range []string{
		"", "place", "place 3", "place 3 at row 2", "put 3 at row 2 col 4", "place 3 at row 2 col 4 please",
		"2,4", "2,4,3,1", "(2,4,3", "place three at row two col four", "2;4;3", "place 123 at row 2 col 4",
		"I place 3 at row 2 col 4",
	} {
		if got, ok := ParseAction(s); ok {
			t.Errorf("ParseAction(%q) accepted: %+v", s, got)
		}
	}
	if s := want.String(); s != "place 3 at row 2 col 4" {
		t.Fatalf("String %q", s)
	}
}
