package algos

import (
	"fmt"
	"math"
)

// CISPO, Clipped IS-weight Policy Optimization (MiniMax, "MiniMax-M1:
// Scaling Test-Time Compute Efficiently with Lightning Attention", 2025,
// arXiv:2506.13585): clip the importance weight, not the update, so that
// every token keeps a gradient. Per token,
//
//	r    = exp(clamp(logp − logp_old, −20, 20))
//	r̂    = clamp(r, 1 − ε_low, 1 + ε_high)
//	ℓ    = −sg(r̂)·A·logp                       J = Σ_t sg(r̂_t)·A_t·log π_θ(y_t), aggregated
//	∂ℓ/∂logp = −r̂·A                              (r̂ is a constant: stop-gradient)
//
// aggregated with the preset's loss_agg_mode (the report normalises by
// Σ_i |o_i|: token-mean). PPO drops the gradient of a token whose ratio
// left the trust region; here such a token still contributes, with its
// weight capped. The report sets ε_low large, so that there is no lower
// clip in effect, and tunes ε_high without stating its value; the CISPO
// preset takes ε_high = 0.2 (verl's CISPO example) and ε_low = 1 (lower
// bound 0, which r > 0 never crosses). The loss value −r̂·A·logp is
// verl's pg_loss; only its gradient is meaningful. Metrics as verl:
// pg_clipfrac = mean 1[r̂ ≠ r], pg_clipfrac_lower = 0, ppo_kl =
// mean(logp_old − logp) (clamped).

// CISPO holds CISPO's clipping range of the importance weight.
type CISPO struct {
	// ClipLow is ε_low; any value ≥ 1 means no lower clip (Preset clip_ratio_low).
	ClipLow float64
	// ClipHigh is ε_high (Preset clip_ratio_high).
	ClipHigh float64
}

// Validate checks the parameters.
func (c CISPO) Validate() error {
	if !Finite(c.ClipLow) || c.ClipLow < 0 {
		return fmt.Errorf("algos: clip_ratio_low must be finite and ≥ 0 (≥ 1: no lower clip), got %v", c.ClipLow)
	}
	if !Finite(c.ClipHigh) || c.ClipHigh < 0 {
		return fmt.Errorf("algos: clip_ratio_high must be finite and ≥ 0, got %v", c.ClipHigh)
	}
	return nil
}

// CISPOToken is the objective at one token.
type CISPOToken struct {
	Loss     float64 // ℓ = −r̂·A·logp
	DLogp    float64 // ∂ℓ/∂logp = −r̂·A
	Weight   float64 // r̂
	LogRatio float64 // clamp(logp − logp_old, −20, 20)
	Clipped  bool    // r̂ ≠ r
}

// Token evaluates the objective at one token. The parameters are not
// validated here (see Validate).
func (c CISPO) Token(logp, oldLogp, adv float64) CISPOToken {
	logRatio := max(-logRatioBound, min(logRatioBound, logp-oldLogp))
	ratio := math.Exp(logRatio)
	w := max(1-c.ClipLow, min(1+c.ClipHigh, ratio))
	return CISPOToken{Loss: -w * adv * logp, DLogp: -w * adv, Weight: w, LogRatio: logRatio, Clipped: w != ratio}
}

// CISPOLoss evaluates CISPO on every in-mask token: the per-token ℓ and
// ∂ℓ/∂logp (to be multiplied by the aggregation weights), and verl's
// metrics (ClipFracLower is always 0).
func CISPOLoss(c CISPO, logp, oldLogp, adv [][]float64, mask [][]bool) (PPOResult, error) {
	if err := c.Validate(); err != nil {
		return PPOResult{}, err
	}
	for _, in := range []struct {
		name string
		x    [][]float64
	}{{"logp", logp}, {"old_logp", oldLogp}, {"advantages", adv}} {
		if err := checkTokens(in.name, in.x, mask); err != nil {
			return PPOResult{}, err
		}
	}
	r := PPOResult{Loss: zerosLike(mask), DLogp: zerosLike(mask)}
	n, clipped, kl := 0, 0, 0.0
	for i := range mask {
		for t, m := range mask[i] {
			if !m {
				continue
			}
			tok := c.Token(logp[i][t], oldLogp[i][t], adv[i][t])
			r.Loss[i][t], r.DLogp[i][t] = tok.Loss, tok.DLogp
			n++
			kl -= tok.LogRatio
			if tok.Clipped {
				clipped++
			}
		}
	}
	if n > 0 {
		r.ClipFrac = float64(clipped) / float64(n)
		r.ApproxKL = kl / float64(n)
	}
	return r, nil
}
