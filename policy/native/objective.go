package native

import (
	"errors"
	"fmt"
	"math"
)

// This file holds the token-level training objectives as plain scalar
// functions of the model's per-token outputs, each returning its value and
// its derivative, plus Objective, which combines them with a masked token
// mean and fills OutputGrads for Model.Backward. The model itself knows
// nothing about losses.

// PolicyGradientLoss is the PPO clipped surrogate for one token:
//
//	r = exp(logp - logpOld)
//	loss = max(-A·r, -A·clip(r, 1-clipLow, 1+clipHigh))
//
// with separate lower and upper clip ranges (DAPO's clip-higher). Clipping is
// disabled when clipLow and clipHigh are both ≤ 0, giving the plain
// importance-weighted policy gradient -A·r. With logpOld == logp (on-policy)
// the derivative is -A, the REINFORCE gradient. clipped reports that the
// clipped branch was taken, so the token contributes no gradient.
func PolicyGradientLoss(logp, logpOld, adv, clipLow, clipHigh float64) (loss, dlogp float64, clipped bool) {
	r := math.Exp(logp - logpOld)
	unclipped := -adv * r
	if clipLow <= 0 && clipHigh <= 0 {
		return unclipped, unclipped, false
	}
	rc := min(max(r, 1-clipLow), 1+clipHigh)
	c := -adv * rc
	if c > unclipped {
		return c, 0, true
	}
	return unclipped, unclipped, false // d(-A·r)/dlogp = -A·r
}

// CrossEntropyLoss is the supervised loss -logp of the target token.
func CrossEntropyLoss(logp float64) (loss, dlogp float64) {
	return -logp, -1
}

// EntropyLoss returns -H, whose minimisation raises entropy; an entropy
// bonus with coefficient c adds c·EntropyLoss to the loss.
func EntropyLoss(entropy float64) (loss, dentropy float64) {
	return -entropy, -1
}

// KLK1 is the k1 estimator of KL(π‖π_ref) on a token sampled from π:
// logp - logpRef. Unbiased but can be negative.
func KLK1(logp, logpRef float64) (kl, dlogp float64) {
	return logp - logpRef, 1
}

// KLK3 is the k3 estimator (Schulman): with δ = logpRef - logp,
// exp(δ) - δ - 1 ≥ 0, unbiased for KL(π‖π_ref) on tokens sampled from π.
// Its derivative with respect to logp is 1 - exp(δ).
func KLK3(logp, logpRef float64) (kl, dlogp float64) {
	d := logpRef - logp
	e := math.Exp(d)
	return e - d - 1, 1 - e
}

// ValueLoss is the PPO clipped value loss for one token:
//
//	0.5·max((v - R)², (vOld + clip(v - vOld, -clip, clip) - R)²)
//
// clip ≤ 0 disables clipping (plain 0.5·(v - R)²).
func ValueLoss(value, valueOld, ret, clip float64) (loss, dvalue float64) {
	e := value - ret
	if clip <= 0 {
		return 0.5 * e * e, e
	}
	vc := valueOld + min(max(value-valueOld, -clip), clip)
	ec := vc - ret
	if ec*ec > e*e {
		// The clipped branch is constant in value unless value-valueOld is
		// inside the clip range, where both branches coincide.
		return 0.5 * ec * ec, 0
	}
	return 0.5 * e * e, e
}

// KLEstimator selects the per-token KL estimator.
type KLEstimator int

// KL estimators; see KLK1 and KLK3.
const (
	K1 KLEstimator = iota
	K3
)

// Objective is a weighted sum of token-level terms, each averaged over the
// masked tokens of the whole batch (token-mean):
//
//	L = PG·mean(pg) + CE·mean(-logp) - Entropy·mean(H) + KL·mean(kl) + Value·mean(vloss)
//
// A zero coefficient disables its term (and its inputs are then not needed).
type Objective struct {
	PGCoef      float64     // policy-gradient (PPO surrogate) weight
	ClipLow     float64     // ratio clip below 1 (e.g. 0.2); ≤0 with ClipHigh ≤0 disables clipping
	ClipHigh    float64     // ratio clip above 1 (e.g. 0.28)
	CECoef      float64     // supervised cross-entropy weight
	EntropyCoef float64     // entropy bonus (subtracted)
	KLCoef      float64     // KL-to-reference penalty weight
	KL          KLEstimator // K1 or K3
	ValueCoef   float64     // value-loss weight
	ValueClip   float64     // value clip range; ≤0 disables
	// TokenCount, if positive, is the number of tokens to average over
	// instead of this batch's masked tokens: with gradient accumulation over
	// micro-batches, set it to the masked-token count of the whole batch so
	// the summed gradients are those of one global token mean.
	TokenCount int
}

// TokenData holds the per-token inputs of an Objective, token-aligned like
// Outputs ([sequence][position]). Only the fields its nonzero terms use are
// required.
type TokenData struct {
	Mask       [][]bool    // tokens that carry loss (required)
	Advantages [][]float32 // PG weights
	OldLogProb [][]float32 // behaviour log-probs; nil means on-policy (ratio 1)
	RefLogProb [][]float32 // reference-policy log-probs for the KL term
	Returns    [][]float32 // value targets
	OldValues  [][]float32 // values at rollout time for value clipping; nil disables
}

// LossStats reports the objective and its terms (token means) for logging.
type LossStats struct {
	Loss     float64 // the weighted total
	PG       float64 // mean PPO surrogate
	CE       float64 // mean -logp
	Entropy  float64 // mean entropy
	KL       float64 // mean KL estimate
	Value    float64 // mean value loss
	ClipFrac float64 // clipped tokens / the averaging count
	Tokens   int     // masked tokens in this batch
}

// Compute evaluates the objective on out and writes dL/d(output) into g,
// reusing g's slices when they have the right shape. Call Model.Backward(g)
// next. With no masked tokens the loss and gradients are zero.
func (o Objective) Compute(out *Outputs, in TokenData, g *OutputGrads) (LossStats, error) {
	var st LossStats
	nseq := len(out.LogProb)
	if len(in.Mask) != nseq {
		return st, fmt.Errorf("native: objective: %d masks for %d sequences", len(in.Mask), nseq)
	}
	need := func(name string, x [][]float32, on bool) error {
		if !on {
			return nil
		}
		if x == nil {
			return fmt.Errorf("native: objective: %s required", name)
		}
		if len(x) != nseq {
			return fmt.Errorf("native: objective: %s has %d sequences, want %d", name, len(x), nseq)
		}
		for i := range x {
			if len(x[i]) != len(out.LogProb[i]) {
				return fmt.Errorf("native: objective: %s[%d] has %d entries, want %d", name, i, len(x[i]), len(out.LogProb[i]))
			}
		}
		return nil
	}
	for i := range in.Mask {
		if len(in.Mask[i]) != len(out.LogProb[i]) {
			return st, fmt.Errorf("native: objective: Mask[%d] has %d entries, want %d", i, len(in.Mask[i]), len(out.LogProb[i]))
		}
	}
	useV := o.ValueCoef != 0
	if useV && out.Value == nil {
		return st, errors.New("native: objective: value loss needs a model with a value head")
	}
	for _, e := range []error{
		need("Advantages", in.Advantages, o.PGCoef != 0),
		need("OldLogProb", in.OldLogProb, o.PGCoef != 0 && in.OldLogProb != nil),
		need("RefLogProb", in.RefLogProb, o.KLCoef != 0),
		need("Returns", in.Returns, useV),
		need("OldValues", in.OldValues, useV && in.OldValues != nil),
	} {
		if e != nil {
			return st, e
		}
	}

	g.LogProb = shapeLike(g.LogProb, out.LogProb)
	g.Entropy = shapeLike(g.Entropy, out.LogProb)
	if useV {
		g.Value = shapeLike(g.Value, out.LogProb)
	} else {
		g.Value = nil
	}
	for i := range in.Mask {
		for _, m := range in.Mask[i] {
			if m {
				st.Tokens++
			}
		}
	}
	inv := 0.0
	if o.TokenCount > 0 {
		inv = 1 / float64(o.TokenCount)
	} else if st.Tokens > 0 {
		inv = 1 / float64(st.Tokens)
	}
	clipped := 0
	for i, mask := range in.Mask {
		for t, m := range mask {
			g.LogProb[i][t], g.Entropy[i][t] = 0, 0
			if useV {
				g.Value[i][t] = 0
			}
			if !m {
				continue
			}
			lp := float64(out.LogProb[i][t])
			var dlp, dh, dv float64
			if o.PGCoef != 0 {
				old := lp
				if in.OldLogProb != nil {
					old = float64(in.OldLogProb[i][t])
				}
				l, d, c := PolicyGradientLoss(lp, old, float64(in.Advantages[i][t]), o.ClipLow, o.ClipHigh)
				st.PG += l
				dlp += o.PGCoef * d
				if c {
					clipped++
				}
			}
			if o.CECoef != 0 {
				l, d := CrossEntropyLoss(lp)
				st.CE += l
				dlp += o.CECoef * d
			}
			h := float64(out.Entropy[i][t])
			st.Entropy += h
			if o.EntropyCoef != 0 {
				_, d := EntropyLoss(h)
				dh += o.EntropyCoef * d
			}
			if o.KLCoef != 0 {
				var l, d float64
				if o.KL == K3 {
					l, d = KLK3(lp, float64(in.RefLogProb[i][t]))
				} else {
					l, d = KLK1(lp, float64(in.RefLogProb[i][t]))
				}
				st.KL += l
				dlp += o.KLCoef * d
			}
			if useV {
				v := float64(out.Value[i][t])
				old := v
				clip := o.ValueClip
				if in.OldValues != nil {
					old = float64(in.OldValues[i][t])
				} else {
					clip = 0
				}
				l, d := ValueLoss(v, old, float64(in.Returns[i][t]), clip)
				st.Value += l
				dv += o.ValueCoef * d
			}
			g.LogProb[i][t] = float32(dlp * inv)
			g.Entropy[i][t] = float32(dh * inv)
			if useV {
				g.Value[i][t] = float32(dv * inv)
			}
		}
	}
	st.PG *= inv
	st.CE *= inv
	st.Entropy *= inv
	st.KL *= inv
	st.Value *= inv
	st.ClipFrac = float64(clipped) * inv
	st.Loss = o.PGCoef*st.PG + o.CECoef*st.CE - o.EntropyCoef*st.Entropy + o.KLCoef*st.KL + o.ValueCoef*st.Value
	return st, nil
}

// shapeLike returns s reshaped to the ragged shape of like, reusing storage
// when the shape already matches.
func shapeLike(s [][]float32, like [][]float32) [][]float32 {
	ok := len(s) == len(like)
	for i := 0; ok && i < len(s); i++ {
		ok = len(s[i]) == len(like[i])
	}
	if ok {
		return s
	}
	s = make([][]float32, len(like))
	for i := range like {
		s[i] = make([]float32, len(like[i]))
	}
	return s
}
