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

// tQuantile975 is the 0.975 quantile of Student's t with df ≥ 1 degrees
// of freedom (the normal 1.96 beyond 30).
func tQuantile975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df <= len(table) {
		return table[df-1]
	}
	return 1.96
}

// MeanCI95 returns the mean of xs and the half-width of its 95% interval,
// mean ± t_{0.975, n−1}·s/√n with s the unbiased standard deviation: the
// interval over seeds (or any small set of independent runs). The
// half-width is NaN for fewer than two values, and both are NaN for none.
func MeanCI95(xs []float64) (mean, half float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) < 2 {
		return mean, math.NaN()
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, tQuantile975(len(xs)-1) * math.Sqrt(ss/(n-1)/n)
}
