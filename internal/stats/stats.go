// Package stats holds the small statistics the reports share.
package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

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
// of freedom.
func tQuantile975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
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
