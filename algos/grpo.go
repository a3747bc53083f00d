package algos

import (
	"fmt"
	"math"
)

// GRPO and Dr.GRPO group-relative advantages (Shao et al. 2024; Liu et al.
// 2025, "Understanding R1-Zero-Like Training"), as RAGEN computes them
// (ragen/trainer/core_algos.py, uid = group id). For episode i in group g
// with score R_i:
//
//	GRPO:     A_i = (R_i − mean_g) / (std_g + 1e-6)     std_g unbiased (torch.std)
//	Dr.GRPO:  A_i =  R_i − mean_g                         (norm_adv_by_std_in_grpo=False)
//
// A group of size 1 uses mean_g = 0 and std_g = 1, as the reference does, so
// its advantage is R_i/(1+1e-6) (GRPO) or R_i (Dr.GRPO). The same A_i goes to
// every in-mask token of the episode (BroadcastToTokens).

// GRPOEpsilon is the ε in the GRPO denominator std_g + ε.
const GRPOEpsilon = 1e-6

// GRPOAdvantages returns the std-normalised GRPO advantage of every episode.
func GRPOAdvantages(scores []float64, groups Groups) ([]float64, error) {
	return GroupAdvantages(scores, groups, true)
}

// DrGRPOAdvantages returns the Dr.GRPO advantage R_i − mean_g of every episode.
func DrGRPOAdvantages(scores []float64, groups Groups) ([]float64, error) {
	return GroupAdvantages(scores, groups, false)
}

// GroupAdvantages is GRPO (normByStd true) or Dr.GRPO (false).
func GroupAdvantages(scores []float64, groups Groups, normByStd bool) ([]float64, error) {
	if err := checkScores(scores, groups); err != nil {
		return nil, err
	}
	adv := make([]float64, len(scores))
	for _, members := range groups {
		mu, sd := 0.0, 1.0
		if len(members) > 1 {
			vs := values(scores, members)
			mu, sd = mean(vs), math.Sqrt(unbiasedVar(vs))
		}
		for _, i := range members {
			if normByStd {
				adv[i] = (scores[i] - mu) / (sd + GRPOEpsilon)
			} else {
				adv[i] = scores[i] - mu
			}
		}
	}
	return adv, nil
}

// checkScores validates per-episode scores against a grouping.
func checkScores(scores []float64, groups Groups) error {
	if len(scores) == 0 {
		return fmt.Errorf("algos: no scores")
	}
	if err := checkFinite("scores", scores); err != nil {
		return err
	}
	return groups.validate(len(scores))
}
