package algos

// Supervised fine-tuning on demonstrations (the warm start): the negative
// log-likelihood of the demonstrated tokens, aggregated like the policy
// loss,
//
//	L_SFT = −Σ_{i,t} w_{i,t}·logp_{i,t}          ∂L_SFT/∂logp_{i,t} = −w_{i,t}
//
// with w the weights of the aggregation mode (AggWeights); token-mean gives
// the mean NLL per demonstrated token, the usual SFT loss.

// SFTResult is the supervised loss and its per-token gradient.
type SFTResult struct {
	Loss     float64     // L_SFT
	DLogProb [][]float64 // ∂L_SFT/∂logp_t (0 out of mask)
	Tokens   int         // in-mask tokens
}

// Metrics returns sft/loss and sft/tokens.
func (r SFTResult) Metrics() map[string]float64 {
	return map[string]float64{"sft/loss": r.Loss, "sft/tokens": float64(r.Tokens)}
}

// SFTLoss computes L_SFT on a batch. logp must be finite wherever mask is set.
func SFTLoss(mode LossAggMode, logp [][]float64, mask [][]bool) (SFTResult, error) {
	if err := checkTokens("logp", logp, mask); err != nil {
		return SFTResult{}, err
	}
	w, err := AggWeights(mode, mask)
	if err != nil {
		return SFTResult{}, err
	}
	r := SFTResult{DLogProb: zerosLike(mask)}
	for i := range w {
		for t, wt := range w[i] {
			if mask[i][t] {
				r.Tokens++
			}
			if wt != 0 {
				r.Loss -= wt * logp[i][t]
				r.DLogProb[i][t] = -wt
			}
		}
	}
	return r, nil
}
