package algos

import (
	"fmt"
	"math"
)

// Entropy bonus, as verl's actor adds it: the per-token policy entropy H_t is
// aggregated with the same weights as the policy loss and subtracted,
//
//	L_H = −c_H · Σ_{i,t} w_{i,t}·H_{i,t}        ∂L_H/∂H_{i,t} = −c_H·w_{i,t}
//
// with c_H = entropy_coeff (RAGEN default 0.001). The learner back-propagates
// ∂L_H/∂H_t through its own entropy computation.

// EntropyBonus returns L_H and its per-token derivative with respect to the
// entropies, given aggregation weights w (AggWeights). It also returns the
// aggregated entropy Σ w·H (verl's actor/entropy metric).
func EntropyBonus(coef float64, entropy, w [][]float64) (loss, aggEntropy float64, dEntropy [][]float64, err error) {
	if math.IsNaN(coef) || math.IsInf(coef, 0) {
		return 0, 0, nil, fmt.Errorf("algos: entropy coefficient is %v", coef)
	}
	if len(entropy) != len(w) {
		return 0, 0, nil, fmt.Errorf("algos: entropy has %d rows, weights %d", len(entropy), len(w))
	}
	dEntropy = make([][]float64, len(w))
	for i := range w {
		if len(entropy[i]) != len(w[i]) {
			return 0, 0, nil, fmt.Errorf("algos: entropy row %d has %d tokens, weights %d", i, len(entropy[i]), len(w[i]))
		}
		dEntropy[i] = make([]float64, len(w[i]))
		for t, wt := range w[i] {
			if wt == 0 {
				continue
			}
			h := entropy[i][t]
			if math.IsNaN(h) || math.IsInf(h, 0) {
				return 0, 0, nil, fmt.Errorf("algos: entropy[%d][%d] is %v", i, t, h)
			}
			aggEntropy += wt * h
			dEntropy[i][t] = -coef * wt
		}
	}
	return -coef * aggEntropy, aggEntropy, dEntropy, nil
}
