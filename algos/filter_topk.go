package algos

// Fixed-count and relative-threshold selection (rollout_filter.py).
//
//	top_k      (StarPO-S, RAGEN V1): k = int(value·numGroups), then clamped to
//	           [1, #candidates]; keep the k best candidates.
//	top_k_abs: k = int(value), clamped the same way.
//	min_p:     largest:  keep s ≥ value·max(s) − 1e-10
//	           smallest: keep s ≤ min(s)/(value + 1e-10) + 1e-10
//	           (max/min over the candidates).
//
// numGroups counts all groups, not just the candidates left after
// include_zero = false; k is then capped at the candidate count. Note that
// top_k keeps at least one group even when value·numGroups < 1.

// topK keeps the k best candidates (k clamped to [1, len(cand)]).
func topK(scores []float64, cand []int, k int, typ FilterType) []int {
	k = max(min(k, len(cand)), 1)
	return sortedCandidates(scores, cand, typ)[:k]
}

// minP keeps the candidates within a factor of the best score.
func minP(scores []float64, cand []int, value float64, typ FilterType) []int {
	best := scores[cand[0]]
	for _, j := range cand {
		if (typ == Smallest && scores[j] < best) || (typ != Smallest && scores[j] > best) {
			best = scores[j]
		}
	}
	var kept []int
	for _, j := range cand {
		if typ == Smallest {
			if scores[j] <= best/(value+zeroTol)+zeroTol {
				kept = append(kept, j)
			}
		} else if scores[j] >= value*best-zeroTol {
			kept = append(kept, j)
		}
	}
	return kept
}
