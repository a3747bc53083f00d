package algos

import "math"

// Percentile range (RAGEN's rebuttal branch more-experiments,
// rollout_filter.py, strategy percentile_range): the reward-variance
// quartile ablation. The candidates are ranked best first (largest: the
// highest score is rank 0) and the ranks [lo, hi) are kept, with
//
//	lo = round(percentile_low · N),  hi = max(lo + 1, min(round(percentile_high · N), N))
//
// N the number of candidates and round Python's (half to even), so the
// range keeps at least one group unless lo rounds to N (then, as Python's
// slice past the end, none). With N = 8, [0.75, 1) keeps the bottom two
// groups of a largest ranking: the lowest-variance quartile.

// percentileRange keeps the candidates ranked in [low, high).
func percentileRange(scores []float64, cand []int, low, high float64, typ FilterType) []int {
	n := len(cand)
	lo := int(math.RoundToEven(low * float64(n)))
	hi := int(math.RoundToEven(high * float64(n)))
	hi = max(lo+1, min(hi, n))
	// Python slicing past the end: a low bound of n keeps nothing.
	lo, hi = min(lo, n), min(hi, n)
	return sortedCandidates(scores, cand, typ)[lo:hi]
}
