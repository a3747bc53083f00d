package report

import "math"

// EMA smooths a series with an exponential moving average of the given
// weight in [0, 1) (0: no smoothing), debiased as TensorBoard's: point i
// is the weighted mean of points 0..i with weights weight^(i-k), so the
// first points are not pulled towards zero. Non-finite values are left
// as they are and skipped by the average.
func EMA(values []float64, weight float64) []float64 {
	out := make([]float64, len(values))
	weight = math.Min(math.Max(weight, 0), 0.999)
	var last, norm float64
	for i, x := range values {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out[i] = x
			continue
		}
		last = weight*last + (1-weight)*x
		norm = weight*norm + (1 - weight)
		out[i] = last / norm
	}
	return out
}
