package algos

import (
	"math"
	"testing"
)

// near reports |got − want| ≤ tol·max(1, |want|).
func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func approx(t *testing.T, name string, got, want float64) {
	t.Helper()
	if !near(got, want, 1e-9) {
		t.Errorf("%s = %.12g, want %.12g", name, got, want)
	}
}

func approxRows(t *testing.T, name string, got, want [][]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", name, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s row %d: %d tokens, want %d", name, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if !near(got[i][j], want[i][j], 1e-9) {
				t.Errorf("%s[%d][%d] = %.12g, want %.12g", name, i, j, got[i][j], want[i][j])
			}
		}
	}
}

func approxSlice(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", name, len(got), len(want))
	}
	for i := range want {
		if !near(got[i], want[i], 1e-9) {
			t.Errorf("%s[%d] = %.12g, want %.12g", name, i, got[i], want[i])
		}
	}
}

func wantErr(t *testing.T, name string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: expected an error", name)
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// b is a shorthand mask row builder: 1 = in mask.
func b(bits ...int) []bool {
	out := make([]bool, len(bits))
	for i, x := range bits {
		out[i] = x == 1
	}
	return out
}
