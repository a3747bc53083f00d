package algos

import "math"

// Finite reports whether every value is a finite number. Learners skip a
// mini-batch whose loss, or whose per-token inputs to the loss, are not
// (a diverged model), rather than step on it.
func Finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// FiniteRows reports whether x is finite wherever mask is set.
func FiniteRows(x [][]float64, mask [][]bool) bool {
	for i, row := range x {
		for j, v := range row {
			if mask[i][j] && !Finite(v) {
				return false
			}
		}
	}
	return true
}
