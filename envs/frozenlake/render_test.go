package frozenlake

import "testing"

func TestRenderGolden(t *testing.T) {
	m, err := ParseMap(classic)
	if err != nil {
		t.Fatal(err)
	}
	const coordStart = "Board size: 4 rows x 4 cols (zero-indexed).\n" +
		"Start: (0, 0)\n" +
		"Goal: (3, 3)\n" +
		"Player: (0, 0)\n" +
		"Holes: (1, 1), (1, 3), (2, 3), (3, 0)"
	const gridStart = "P___\n_O_O\n___O\nO__G"
	for _, tc := range []struct {
		name string
		pos  Pos
		f    Format
		want string
	}{
		{"grid start", Pos{0, 0}, FormatGrid, gridStart},
		{"coord start", Pos{0, 0}, FormatCoord, coordStart},
		{"grid_coord start", Pos{0, 0}, FormatGridCoord, "Coordinates: \n" + coordStart + "\nGrid Map: \n" + gridStart},
		{"grid moved", Pos{0, 1}, FormatGrid, "_P__\n_O_O\n___O\nO__G"},
		{"grid in hole", Pos{1, 1}, FormatGrid, "____\n_X_O\n___O\nO__G"},
		{"grid on goal", Pos{3, 3}, FormatGrid, "____\n_O_O\n___O\nO__√"},
		{"coord in hole", Pos{1, 1}, FormatCoord, "Board size: 4 rows x 4 cols (zero-indexed).\nStart: (0, 0)\nGoal: (3, 3)\n" +
			"Player in hole: (1, 1)\nHoles: (1, 1), (1, 3), (2, 3), (3, 0)"},
		{"coord on goal", Pos{3, 3}, FormatCoord, "Board size: 4 rows x 4 cols (zero-indexed).\nStart: (0, 0)\nGoal: (3, 3)\n" +
			"Player on goal: (3, 3)\nHoles: (1, 1), (1, 3), (2, 3), (3, 0)"},
	} {
		if got := render(m, tc.pos, tc.f); got != tc.want {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", tc.name, got, tc.want)
		}
	}

	open, _ := ParseMap("FG\nSF")
	want := "Board size: 2 rows x 2 cols (zero-indexed).\nStart: (1, 0)\nGoal: (0, 1)\nPlayer: (1, 0)\nHoles: none"
	if got := render(open, open.Start(), FormatCoord); got != want {
		t.Errorf("no holes:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderThroughEnv(t *testing.T) {
	e := newEnv(t, nil) // default format grid_coord
	obs, err := e.LoadLevel(classic)
	if err != nil {
		t.Fatal(err)
	}
	m := e.Map()
	if obs != render(m, Pos{0, 0}, FormatGridCoord) || e.Render() != obs {
		t.Fatalf("initial observation:\n%s", obs)
	}
	res := mustStep(t, e, "Right")
	if res.Observation != render(m, Pos{0, 1}, FormatGridCoord) {
		t.Fatalf("after Right:\n%s", res.Observation)
	}
}
