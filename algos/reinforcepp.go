package algos

import (
	"fmt"
	"math"
)

// REINFORCE++ (Hu 2025, arXiv 2501.03262): critic-free REINFORCE whose
// advantages are the discounted returns, whitened over the whole batch
// ("global advantage normalisation") instead of per group.
//
// Definition used here. Per-token reward, with an optional KL penalty folded
// in (paper eq.: r(s_t,a_t) = 1[s_t = EOS]·r(x,y) − β·KL(t),
// KL(t) = log π_old(a_t|s_t) − log π_ref(a_t|s_t)):
//
//	r_t = score·1[t = last in-mask token] − β·kl_t       (KLPenalizedRewards; β = 0: no penalty)
//
// Return, walking backwards over in-mask tokens only (out-of-mask tokens are
// skipped: their reward is ignored and the running return carries through):
//
//	G_t = r_t + γ·G_next                                  (G_next = 0 after the last in-mask token)
//
// Advantage: A_t = WhitenMasked(G)_t, i.e. (G_t − μ)/sqrt(σ² + 1e-8) with μ
// and the unbiased σ² over every in-mask token of the batch.
//
// Relation to verl (compute_reinforce_plus_plus_outcome_advantage): verl
// resets the running return to 0 at every out-of-mask token ("reset after
// EOS"), which is meant for trailing padding. When each row's mask is one
// contiguous block and rewards outside it are 0 (single-turn), both agree
// exactly. For multi-turn rows, where observation tokens interrupt the mask,
// verl's reset would cut the final reward off from earlier turns; this
// package carries it through, the same skip rule verl's GAE uses.
//
// Shortcut: with γ = 1, no KL penalty and the score on the last token, every
// in-mask token of episode i has G_t = R_i, so the advantage is one number per
// episode: ReinforcePlusPlusOutcome.

// ReinforcePlusPlus returns the whitened REINFORCE++ advantages and the raw
// returns G_t (0 at out-of-mask positions).
func ReinforcePlusPlus(rewards [][]float64, mask [][]bool, gamma float64) (advantages, returns [][]float64, err error) {
	if err := checkTokens("rewards", rewards, mask); err != nil {
		return nil, nil, err
	}
	if math.IsNaN(gamma) || math.IsInf(gamma, 0) {
		return nil, nil, fmt.Errorf("algos: gamma is %v", gamma)
	}
	returns = zerosLike(mask)
	for i := range mask {
		running := 0.0
		for t := len(mask[i]) - 1; t >= 0; t-- {
			if !mask[i][t] {
				continue
			}
			running = rewards[i][t] + gamma*running
			returns[i][t] = running
		}
	}
	advantages, err = WhitenMasked(returns, mask, true)
	if err != nil {
		return nil, nil, err
	}
	return advantages, returns, nil
}

// ReinforcePlusPlusOutcome is the per-episode REINFORCE++ advantage for an
// outcome reward with γ = 1 and no KL penalty: the scores whitened over the
// batch with weights w_i,
//
//	μ  = Σ w_i R_i / W,   σ² = Σ w_i (R_i − μ)² / (W − 1),   W = Σ w_i
//	A_i = (R_i − μ) / sqrt(σ² + 1e-8)
//
// With tokenCounts (w_i = in-mask token count of episode i) this equals
// ReinforcePlusPlus exactly: token-level whitening, longer episodes weigh
// more. With tokenCounts nil every episode has weight 1 (episode-level
// whitening). W must be at least 2.
func ReinforcePlusPlusOutcome(scores []float64, tokenCounts []int) ([]float64, error) {
	if len(scores) == 0 {
		return nil, fmt.Errorf("algos: no scores")
	}
	if err := checkFinite("scores", scores); err != nil {
		return nil, err
	}
	w := make([]float64, len(scores))
	for i := range w {
		w[i] = 1
	}
	if tokenCounts != nil {
		if len(tokenCounts) != len(scores) {
			return nil, fmt.Errorf("algos: %d token counts for %d scores", len(tokenCounts), len(scores))
		}
		for i, c := range tokenCounts {
			if c < 0 {
				return nil, fmt.Errorf("algos: token count %d is negative (%d)", i, c)
			}
			w[i] = float64(c)
		}
	}
	total, sum := 0.0, 0.0
	for i, r := range scores {
		total += w[i]
		sum += w[i] * r
	}
	if total < 2 {
		return nil, fmt.Errorf("algos: whitening needs a total weight of at least 2, got %v", total)
	}
	mu := sum / total
	ss := 0.0
	for i, r := range scores {
		ss += w[i] * (r - mu) * (r - mu)
	}
	scale := 1 / math.Sqrt(ss/(total-1)+whitenEps)
	adv := make([]float64, len(scores))
	for i, r := range scores {
		adv[i] = (r - mu) * scale
	}
	return adv, nil
}
