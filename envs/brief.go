package envs

import (
	"regexp"
	"slices"
	"strconv"
)

// briefCell matches one "<tag><row>,<col>" of a brief rationale.
var briefCell = regexp.MustCompile(`([A-Z])(\d{1,4}),(\d{1,4})`)

// BriefCells reads the "<tag><row>,<col>" cells of a brief rationale
// ("P4,3 X3,3 O1,3"), by tag, each list sorted row-major.
func BriefCells(text string) map[byte][][2]int {
	out := map[byte][][2]int{}
	for _, m := range briefCell.FindAllStringSubmatch(text, -1) {
		r, _ := strconv.Atoi(m[2])
		c, _ := strconv.Atoi(m[3])
		out[m[1][0]] = append(out[m[1][0]], [2]int{r, c})
	}
	for _, cells := range out {
		slices.SortFunc(cells, compareCells)
	}
	return out
}

// SameCells reports whether a brief states exactly the cells want (any
// order), each once.
func SameCells(stated, want [][2]int) bool {
	w := slices.Clone(want)
	slices.SortFunc(w, compareCells)
	return slices.Equal(stated, w)
}

func compareCells(a, b [2]int) int {
	if a[0] != b[0] {
		return a[0] - b[0]
	}
	return a[1] - b[1]
}
