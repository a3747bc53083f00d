// Package stats holds the small statistics the reports share.
package stats

import "math"

// z95 is the two-sided 95% standard normal quantile.
const z95 = 1.959963984540054

// Wilson is the 95% Wilson score interval for a success rate p observed
// over n trials. It stays inside [0, 1] and is informative at p = 0 or 1,
// where the normal approximation collapses to a point. n ≤ 0 gives [0, 1].
func Wilson(p float64, n int) (lo, hi float64) {
	if n <= 0 || math.IsNaN(p) {
		return 0, 1
	}
	nf := float64(n)
	den := 1 + z95*z95/nf
	center := (p + z95*z95/(2*nf)) / den
	half := z95 * math.Sqrt(p*(1-p)/nf+z95*z95/(4*nf*nf)) / den
	return math.Max(0, center-half), math.Min(1, center+half)
}
