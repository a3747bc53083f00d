package algos

// RLOO: REINFORCE leave-one-out (Kool et al. 2019; Ahmadian et al. 2024),
// as verl's compute_rloo_outcome_advantage. The baseline of episode i is the
// mean score of the other members of its group:
//
//	A_i = R_i − (Σ_{j∈g, j≠i} R_j) / (n_g − 1)  =  n_g/(n_g−1) · (R_i − mean_g)
//
// A group of size 1 has no other member: A_i = R_i (verl leaves the score
// unchanged). A group whose members all scored the same gets exactly 0.
// The same A_i goes to every in-mask token (BroadcastToTokens).

// RLOOAdvantages returns the leave-one-out advantage of every episode.
func RLOOAdvantages(scores []float64, groups Groups) ([]float64, error) {
	if err := checkScores(scores, groups); err != nil {
		return nil, err
	}
	adv := make([]float64, len(scores))
	for _, members := range groups {
		n := len(members)
		if n == 1 {
			adv[members[0]] = scores[members[0]]
			continue
		}
		if constant(values(scores, members)) {
			continue // exactly 0, whatever the rounding of the sum below
		}
		sum := 0.0
		for _, i := range members {
			sum += scores[i]
		}
		for _, i := range members {
			adv[i] = scores[i] - (sum-scores[i])/float64(n-1)
		}
	}
	return adv, nil
}
