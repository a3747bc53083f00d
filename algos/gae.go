package algos

import (
	"fmt"
	"math"
)

// GAE: generalised advantage estimation over per-token rewards and values
// (Schulman et al. 2016), with verl's treatment of the loss mask
// (compute_gae_advantage_return), the PPO learner RAGEN uses by default.
//
// For each sequence, walking t from the last token to the first, with
// nextvalue = lastgaelam = 0 at the end:
//
//	δ_t        = r_t + γ·nextvalue − V_t
//	gae_t      = δ_t + γ·λ·lastgaelam
//	if mask_t:   nextvalue = V_t,  lastgaelam = gae_t,  A_t = gae_t
//	else:        nextvalue and lastgaelam carry through unchanged
//	R_t        = A_t + V_t                                   (returns)
//
// So out-of-mask (observation) tokens are skipped: an assistant token's
// bootstrap value is the value of the next in-mask token, and rewards and
// values at out-of-mask positions are never used. With γ = λ = 1 and the
// episode score on the last token, every in-mask token gets A_t = R − V_t.
// Finally the advantages are whitened over all in-mask tokens of the batch
// (see WhitenMasked); the returns are not.
//
// Outputs are 0 at out-of-mask positions (verl leaves the carried value
// there; it is never used).

// GAE returns verl's whitened GAE advantages and the (unwhitened) returns.
// rewards, values and mask must have the same ragged shape; rows may differ in
// length. The batch needs at least two in-mask tokens for the whitening.
func GAE(rewards, values [][]float64, mask [][]bool, gamma, lambda float64) (advantages, returns [][]float64, err error) {
	adv, ret, err := GAEUnwhitened(rewards, values, mask, gamma, lambda)
	if err != nil {
		return nil, nil, err
	}
	adv, err = WhitenMasked(adv, mask, true)
	if err != nil {
		return nil, nil, err
	}
	return adv, ret, nil
}

// GAEUnwhitened is GAE without the final whitening: the raw A_t and R_t.
func GAEUnwhitened(rewards, values [][]float64, mask [][]bool, gamma, lambda float64) (advantages, returns [][]float64, err error) {
	if err := checkTokens("rewards", rewards, mask); err != nil {
		return nil, nil, err
	}
	if err := checkTokens("values", values, mask); err != nil {
		return nil, nil, err
	}
	if err := checkFinite("gamma/lambda", []float64{gamma, lambda}); err != nil {
		return nil, nil, err
	}
	advantages = zerosLike(mask)
	returns = zerosLike(mask)
	for i := range mask {
		nextValue, lastGAE := 0.0, 0.0
		for t := len(mask[i]) - 1; t >= 0; t-- {
			if !mask[i][t] {
				continue // carry nextValue and lastGAE through
			}
			delta := rewards[i][t] + gamma*nextValue - values[i][t]
			lastGAE = delta + gamma*lambda*lastGAE
			nextValue = values[i][t]
			advantages[i][t] = lastGAE
			returns[i][t] = lastGAE + values[i][t]
		}
	}
	return advantages, returns, nil
}

// whitenEps is verl's masked_whiten variance epsilon.
const whitenEps = 1e-8

// WhitenMasked is verl's masked_whiten over all in-mask tokens of the batch:
//
//	μ  = Σ_{mask} x / n
//	σ² = Σ_{mask} (x − μ)² / (n − 1)          (unbiased, n = in-mask count)
//	x' = (x − μ) / sqrt(σ² + 1e-8)            (+ μ again if !shiftMean)
//
// verl raises when n < 2 (division by zero in the Bessel correction); so does
// this, with an error. Out-of-mask outputs are 0.
func WhitenMasked(x [][]float64, mask [][]bool, shiftMean bool) ([][]float64, error) {
	if err := checkTokens("x", x, mask); err != nil {
		return nil, err
	}
	var in []float64
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				in = append(in, x[i][t])
			}
		}
	}
	if len(in) < 2 {
		return nil, fmt.Errorf("algos: whitening needs at least 2 in-mask tokens, got %d", len(in))
	}
	mu := mean(in)
	scale := 1 / math.Sqrt(unbiasedVar(in)+whitenEps)
	out := zerosLike(mask)
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				out[i][t] = (x[i][t] - mu) * scale
				if !shiftMean {
					out[i][t] += mu
				}
			}
		}
	}
	return out, nil
}
