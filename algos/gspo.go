package algos

import (
	"fmt"
	"math"
)

// GSPO, Group Sequence Policy Optimization (Zheng et al. 2025,
// arXiv:2507.18071): the importance ratio and its clipping are taken per
// sequence, as the length-normalised likelihood ratio, instead of per token.
// Over the trained tokens T_i of sequence i (n_i = |T_i|):
//
//	m_i  = (1/n_i)·Σ_{t∈T_i} (logp_t − logp_old,t)
//	s_i  = exp(min(m_i, 10))                                  (verl's clamp)
//	ℓ_{i,t} = max(−A_{i,t}·s_i, −A_{i,t}·clamp(s_i, 1 − ε_low, 1 + ε_high))
//
// With a sequence advantage A_i (GRPO) every token of the sequence carries
// the same ℓ_i, and seq-mean-token-mean aggregation gives the paper's
// objective −(1/G)·Σ_i min(s_i·A_i, clip(s_i)·A_i); other modes weigh the
// sequences as they weigh tokens. The paper clips tightly, ε_low/ε_high =
// 3e-4/4e-4 (Section 5.1); there is no dual clip.
//
// Gradient of L = Σ_{i,t} w_{i,t}·ℓ_{i,t} (w: the aggregation weights, with
// any rollout importance weights folded in). The ratio depends on every
// token's log-prob through the mean, ∂s_i/∂logp_u = s_i/n_i (0 when the
// clamp at 10 is active), so every token of a sequence gets
//
//	∂L/∂logp_{i,u} = (s_i/n_i)·Σ_{t∈T_i} w_{i,t}·∂ℓ_{i,t}/∂s_i
//
// with ∂ℓ/∂s = −A on the unclipped branch and 0 on the clipped one (ties
// averaged, as torch.maximum): (1/|y_i|)·s_i·A_i per token in the paper's
// form.
//
// GSPO-token (the paper's token-level variant; verl's gspo loss) lets
// advantages vary within a sequence: s_{i,t} = sg[s_i]·π_θ(y_t)/sg[π_θ(y_t)]
// has the value s_i, but its gradient flows through token t alone,
//
//	∂L/∂logp_{i,t} = w_{i,t}·s_i·∂ℓ_{i,t}/∂s_i
//
// which equals GSPO's whenever A and w are constant within a sequence
// (every aggregation mode's weights are; token-level importance weights
// are not). Metrics, token means as verl:
// pg_clipfrac = mean 1[clipped branch > unclipped], ppo_kl = mean(logp_old −
// logp).

// gspoLogRatioMax caps m_i before exp, as verl's clamp(max=10).
const gspoLogRatioMax = 10

// GSPO holds GSPO's clipping range of the sequence ratio.
type GSPO struct {
	ClipLow, ClipHigh float64 // ε_low, ε_high (Preset clip_ratio_low, clip_ratio_high)
	// Token selects GSPO-token: each token's gradient flows through its own
	// log-prob only.
	Token bool
}

// Validate checks the parameters.
func (g GSPO) Validate() error {
	if !Finite(g.ClipLow) || g.ClipLow < 0 || g.ClipLow >= 1 {
		return fmt.Errorf("algos: clip_ratio_low must be in [0, 1), got %v", g.ClipLow)
	}
	if !Finite(g.ClipHigh) || g.ClipHigh < 0 {
		return fmt.Errorf("algos: clip_ratio_high must be finite and ≥ 0, got %v", g.ClipHigh)
	}
	return nil
}

// GSPOResult is the GSPO objective over a batch.
type GSPOResult struct {
	Loss     [][]float64 // per-token ℓ_{i,t} (0 out of mask), not yet aggregated
	DLoss    [][]float64 // ∂(Σ w·ℓ)/∂logp for the weights passed (0 out of mask)
	Ratio    []float64   // s_i (1 for a sequence without a trained token)
	ClipFrac float64     // pg_clipfrac
	ApproxKL float64     // ppo_kl
}

// Loss evaluates GSPO on every in-mask token and the gradient of the
// weighted sum Σ w·ℓ, w of mask's shape (the aggregation weights).
func (g GSPO) Loss(logp, oldLogp, adv, w [][]float64, mask [][]bool) (GSPOResult, error) {
	if err := g.Validate(); err != nil {
		return GSPOResult{}, err
	}
	for _, in := range []struct {
		name string
		x    [][]float64
	}{{"logp", logp}, {"old_logp", oldLogp}, {"advantages", adv}, {"weights", w}} {
		if err := checkTokens(in.name, in.x, mask); err != nil {
			return GSPOResult{}, err
		}
	}
	r := GSPOResult{Loss: zerosLike(mask), DLoss: zerosLike(mask), Ratio: make([]float64, len(mask))}
	dl := zerosLike(mask) // ∂ℓ_{i,t}/∂s_i
	tokens, clipped, kl := 0, 0, 0.0
	for i, row := range mask {
		n, sum := 0, 0.0
		for t, m := range row {
			if m {
				n++
				sum += logp[i][t] - oldLogp[i][t]
			}
		}
		r.Ratio[i] = 1
		if n == 0 {
			continue
		}
		logS, dLogS := clampWithGrad(sum/float64(n), 1, math.Inf(-1), gspoLogRatioMax)
		s := math.Exp(logS)
		r.Ratio[i] = s
		// ∂s_i/∂m_i: 0 when the clamp is active.
		dsdm := s * dLogS
		gi := 0.0 // Σ_t w_{i,t}·∂ℓ_{i,t}/∂s_i
		for t, m := range row {
			if !m {
				continue
			}
			a := adv[i][t]
			l1, d1 := -a*s, -a
			cs, dcs := clampWithGrad(s, 1, 1-g.ClipLow, 1+g.ClipHigh)
			l2, d2 := -a*cs, -a*dcs
			r.Loss[i][t], dl[i][t] = maxWithGrad(l1, d1, l2, d2)
			gi += w[i][t] * dl[i][t]
			tokens++
			kl += oldLogp[i][t] - logp[i][t]
			if l2 > l1 {
				clipped++
			}
		}
		for t, m := range row {
			if !m {
				continue
			}
			if g.Token {
				r.DLoss[i][t] = w[i][t] * dl[i][t] * dsdm
			} else {
				r.DLoss[i][t] = gi * dsdm / float64(n)
			}
		}
	}
	if tokens > 0 {
		r.ClipFrac = float64(clipped) / float64(tokens)
		r.ApproxKL = kl / float64(tokens)
	}
	return r, nil
}
