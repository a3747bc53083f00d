package algos

import (
	"fmt"
	"math"
)

// Clipped value loss, verl style (compute_value_loss). Per token, with v the
// new value prediction, v_old the value at rollout time, R the GAE return and
// c the clip range (verl cliprange_value, default 0.5):
//
//	v_c = max(min(v, v_old + c), v_old − c)            (verl's clip_by_value)
//	ℓ   = ½ · max((v − R)², (v_c − R)²)                clipped ⇔ (v_c − R)² > (v − R)²
//
// ∂ℓ/∂v = (v − R) when the unclipped branch is selected, 0 when the clipped
// branch is (v_c is constant outside its range). Exact ties follow torch's
// backward for the elementwise max and min, which splits the gradient
// equally between equal arguments: at v = v_old ± c the clip passes half the
// gradient, at c = 0 and v = v_old a quarter, and equal branches average.
// These ties are measure-zero except in the degenerate cliprange_value: 0
// with fresh values equal to the old ones, where this matches verl exactly
// (∂ℓ/∂v = ⅝·(v − R) instead of (v − R)). The batch loss is
// Σ w·ℓ with the aggregation weights w (AggWeights); vf_clipfrac is the
// token mean of the clipped indicator.

// ValueToken is the value loss at one token.
type ValueToken struct {
	Loss    float64 // ℓ
	DValue  float64 // ∂ℓ/∂v
	Clipped bool    // the clipped branch is strictly larger
}

// ValueLossToken evaluates the clipped value loss at one token.
func ValueLossToken(v, oldValue, ret, clipRange float64) ValueToken {
	l1, d1 := (v-ret)*(v-ret), 2*(v-ret)
	vc, dvc := minWithGrad(v, 1, oldValue+clipRange, 0)
	vc, dvc = maxWithGrad(vc, dvc, oldValue-clipRange, 0)
	l2, d2 := (vc-ret)*(vc-ret), 2*(vc-ret)*dvc
	l, d := maxWithGrad(l1, d1, l2, d2)
	return ValueToken{Loss: 0.5 * l, DValue: 0.5 * d, Clipped: l2 > l1}
}

// ValueResult is the value loss over a batch, per token and not aggregated.
type ValueResult struct {
	Loss     [][]float64 // per-token ℓ (0 out of mask)
	DValue   [][]float64 // per-token ∂ℓ/∂v (0 out of mask)
	ClipFrac float64     // vf_clipfrac
}

// ValueLoss evaluates the clipped value loss on every in-mask token.
func ValueLoss(v, oldValues, returns [][]float64, mask [][]bool, clipRange float64) (ValueResult, error) {
	if math.IsNaN(clipRange) || clipRange < 0 {
		return ValueResult{}, fmt.Errorf("algos: cliprange_value must be ≥ 0, got %v", clipRange)
	}
	for _, in := range []struct {
		name string
		x    [][]float64
	}{{"values", v}, {"old_values", oldValues}, {"returns", returns}} {
		if err := checkTokens(in.name, in.x, mask); err != nil {
			return ValueResult{}, err
		}
	}
	r := ValueResult{Loss: zerosLike(mask), DValue: zerosLike(mask)}
	n, clipped := 0, 0
	for i := range mask {
		for t, m := range mask[i] {
			if !m {
				continue
			}
			tok := ValueLossToken(v[i][t], oldValues[i][t], returns[i][t], clipRange)
			r.Loss[i][t], r.DValue[i][t] = tok.Loss, tok.DValue
			n++
			if tok.Clipped {
				clipped++
			}
		}
	}
	if n > 0 {
		r.ClipFrac = float64(clipped) / float64(n)
	}
	return r, nil
}
