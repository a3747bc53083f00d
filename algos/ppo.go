package algos

import (
	"fmt"
	"math"
)

// PPO clipped surrogate (Schulman et al. 2017) with DAPO's decoupled
// clip-higher bounds (Yu et al. 2025) and dual-clip (Ye et al. 2020), as
// verl's compute_policy_loss. Per token, with A the advantage:
//
//	ρ    = exp(clamp(logp − logp_old, −20, 20))
//	ℓ1   = −A·ρ
//	ℓ2   = −A·clamp(ρ, 1 − ε_low, 1 + ε_high)
//	ℓc   = max(ℓ1, ℓ2)                                 clipped ⇔ ℓ2 > ℓ1
//	ℓ    = ℓc                          if A ≥ 0 or dual-clip off
//	ℓ    = min(ℓc, −A·c)               if A < 0         clipped_lower ⇔ ℓc > −A·c
//
// Gradient with respect to logp (∂ρ/∂logp = ρ): the gradient of whichever
// branch is selected; a clamped quantity has gradient 0 outside its range
// (bounds inclusive, as torch.clamp); on an exact tie of max/min the two
// branch gradients are averaged (torch.maximum/minimum). So ∂ℓ/∂logp = −A·ρ
// on unclipped tokens and 0 on clipped ones.
//
// Batch metrics are token means over in-mask tokens whatever the loss
// aggregation (verl): pg_clipfrac = mean 1[ℓ2 > ℓ1], pg_clipfrac_lower =
// mean 1[ℓc > −A·c ∧ A < 0], ppo_kl = mean(logp_old − logp) (clamped).

// PPOClip holds the clipping parameters.
type PPOClip struct {
	// ClipLow is ε_low: the ratio is clipped below at 1 − ClipLow (verl clip_ratio_low).
	ClipLow float64
	// ClipHigh is ε_high: the ratio is clipped above at 1 + ClipHigh (verl clip_ratio_high).
	ClipHigh float64
	// ClipRatioC is the dual-clip constant c (> 1; verl clip_ratio_c, default 3);
	// 0 turns dual-clip off.
	ClipRatioC float64
}

// Validate checks the parameters.
func (c PPOClip) Validate() error {
	if err := checkFinite("clip parameters", []float64{c.ClipLow, c.ClipHigh, c.ClipRatioC}); err != nil {
		return err
	}
	if c.ClipLow < 0 || c.ClipLow >= 1 {
		return fmt.Errorf("algos: clip_ratio_low must be in [0, 1), got %v", c.ClipLow)
	}
	if c.ClipHigh < 0 {
		return fmt.Errorf("algos: clip_ratio_high must be ≥ 0, got %v", c.ClipHigh)
	}
	if c.ClipRatioC != 0 && c.ClipRatioC <= 1 {
		return fmt.Errorf("algos: clip_ratio_c must be > 1 (or 0 to disable dual-clip), got %v", c.ClipRatioC)
	}
	return nil
}

// PPOToken is the surrogate at one token.
type PPOToken struct {
	Loss         float64 // ℓ
	DLogp        float64 // ∂ℓ/∂logp
	LogRatio     float64 // clamp(logp − logp_old, −20, 20)
	Clipped      bool    // ℓ2 > ℓ1 (counted in pg_clipfrac)
	ClippedLower bool    // dual-clip bound active (counted in pg_clipfrac_lower)
}

// maxWithGrad is torch.maximum with its backward rule (ties split the gradient).
func maxWithGrad(a, da, b, db float64) (float64, float64) {
	switch {
	case a > b:
		return a, da
	case b > a:
		return b, db
	}
	return a, (da + db) / 2
}

// minWithGrad is torch.minimum with its backward rule.
func minWithGrad(a, da, b, db float64) (float64, float64) {
	v, d := maxWithGrad(-a, -da, -b, -db)
	return -v, -d
}

// clampWithGrad is torch.clamp: gradient dx inside [lo, hi] (inclusive), else 0.
func clampWithGrad(x, dx, lo, hi float64) (float64, float64) {
	switch {
	case x < lo:
		return lo, 0
	case x > hi:
		return hi, 0
	}
	return x, dx
}

// Token evaluates the surrogate at one token. The parameters are not
// validated here (see Validate).
func (c PPOClip) Token(logp, oldLogp, adv float64) PPOToken {
	logRatio, dLogRatio := clampWithGrad(logp-oldLogp, 1, -20, 20)
	ratio := math.Exp(logRatio)
	dRatio := ratio * dLogRatio
	l1, d1 := -adv*ratio, -adv*dRatio
	cr, dcr := clampWithGrad(ratio, dRatio, 1-c.ClipLow, 1+c.ClipHigh)
	l2, d2 := -adv*cr, -adv*dcr
	lc, dc := maxWithGrad(l1, d1, l2, d2)
	tok := PPOToken{Loss: lc, DLogp: dc, LogRatio: logRatio, Clipped: l2 > l1}
	if c.ClipRatioC > 0 && adv < 0 {
		l3 := -adv * c.ClipRatioC
		tok.ClippedLower = lc > l3
		tok.Loss, tok.DLogp = minWithGrad(l3, 0, lc, dc)
	}
	return tok
}

// PPOResult is the surrogate over a batch.
type PPOResult struct {
	Loss          [][]float64 // per-token ℓ (0 out of mask), not yet aggregated
	DLogp         [][]float64 // per-token ∂ℓ/∂logp (0 out of mask)
	ClipFrac      float64     // pg_clipfrac
	ClipFracLower float64     // pg_clipfrac_lower
	ApproxKL      float64     // ppo_kl = mean(logp_old − logp)
}

// PPOLoss evaluates the surrogate on every in-mask token.
func PPOLoss(c PPOClip, logp, oldLogp, adv [][]float64, mask [][]bool) (PPOResult, error) {
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
	n, clipped, lower, kl := 0, 0, 0, 0.0
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
			if tok.ClippedLower {
				lower++
			}
		}
	}
	if n > 0 {
		r.ClipFrac = float64(clipped) / float64(n)
		r.ClipFracLower = float64(lower) / float64(n)
		r.ApproxKL = kl / float64(n)
	}
	return r, nil
}
