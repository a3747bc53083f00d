package algos

import "math"

// SNR-aware top-p selection (RAGEN-2), the two rules of rollout_filter.py.
//
// Linear ("score mass", the guide's recommended rule), candidates sorted best
// first as s_(1), s_(2), …:
//
//	threshold = p · Σ_c s_c − eps
//	cum = 0; n = 0
//	for each s_(i): if cum ≥ threshold: stop; if s_(i) ≤ 0: stop; cum += s_(i); n++
//	keep s_(1..n) if cum ≥ threshold, else keep nothing
//
// A batch whose total score is below about eps/p is therefore dropped whole.
//
// Softmax (nucleus; the main-table scripts' rule):
//
//	q = softmax(s) (softmax(−s) for smallest), sorted desc;  C_i = q_(1) + … + q_(i)
//	k = searchsorted(C, p) + 1 = #{i : C_i < p} + 1,   k ≤ #candidates
//
// torch.searchsorted defaults to the left side: the first index i with
// C_i ≥ p, which is the number of entries strictly below p. So k is the
// smallest prefix whose mass reaches p (k = 1 for p ≤ q_(1)).
// RAGEN computes this in float32; here it is float64, which can differ when
// a cumulative sum lands within float32 rounding of p.

// topPLinear is the linear rule; cand is non-empty.
func topPLinear(scores []float64, cand []int, p, eps float64, typ FilterType) []int {
	order := sortedCandidates(scores, cand, typ)
	sum := 0.0
	for _, j := range cand {
		sum += scores[j]
	}
	threshold := p*sum - eps
	cum, n := 0.0, 0
	for _, j := range order {
		if cum >= threshold || scores[j] <= 0 {
			break
		}
		cum += scores[j]
		n++
	}
	if cum >= threshold {
		return order[:n]
	}
	return nil
}

// topPSoftmax is the softmax rule; cand is non-empty.
func topPSoftmax(scores []float64, cand []int, p float64, typ FilterType) []int {
	sign := 1.0
	if typ == Smallest {
		sign = -1
	}
	hi := math.Inf(-1)
	for _, j := range cand {
		hi = math.Max(hi, sign*scores[j])
	}
	// Sorting by probability desc = sorting by sign·score desc = best first.
	order := sortedCandidates(scores, cand, typ)
	z := 0.0
	for _, j := range cand {
		z += math.Exp(sign*scores[j] - hi)
	}
	below, cum := 0, 0.0 // below = #{i : C_i < p}; C is non-decreasing
	for _, j := range order {
		cum += math.Exp(sign*scores[j]-hi) / z
		if cum >= p {
			break
		}
		below++
	}
	k := below + 1
	return order[:min(k, len(order))]
}
