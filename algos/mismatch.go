package algos

import (
	"fmt"
	"math"
)

// Train–inference mismatch: how far the log-probs the sampler reported
// while sampling (an inference engine such as vLLM, with its own kernels
// and precision, or the in-process policy's incremental decode) are from
// the learner's recompute of the same tokens under the same weights
// (verl's recompute of old_log_prob; reference/serving.md §1.4,
// "Numerics"). Over the trained tokens t (mask true), with
//
//	d_t = logp_learner(y_t) − logp_sampler(y_t)
//
//	mean_abs_logprob_diff = mean_t |d_t|
//	max_abs_logprob_diff  = max_t |d_t|
//	k3_kl                 = mean_t (e^{d_t} − 1 − d_t)
//
// The tokens y_t were drawn from the sampler, so k3 (Schulman's estimator
// with r = π_learner/π_sampler, the k3 of kl.go with the roles set by who
// sampled) estimates KL(π_sampler ‖ π_learner) per token; each term is
// ≥ 0, and ≈ ½·d_t² for small d_t. A token where either log-prob is not
// finite (a diverged model, or a sampler reporting −Inf) is left out of
// the three and counted in nonfinite_tokens, rather than failing the
// step: the numbers are a diagnostic.

// Mismatch is the train–inference mismatch of one batch.
type Mismatch struct {
	// MeanAbs and MaxAbs are the mean and largest |d_t|; K3 the mean k3
	// term (0 when no token counted).
	MeanAbs, MaxAbs, K3 float64
	// Tokens is the number of tokens counted; NonFinite the number left
	// out.
	Tokens, NonFinite int
}

// LogProbMismatch compares the learner's log-probs with the sampler's over
// the tokens where mask is set. The three matrices must have the same
// ragged shape.
func LogProbMismatch(learner, sampler [][]float64, mask [][]bool) (Mismatch, error) {
	if len(learner) != len(mask) || len(sampler) != len(mask) {
		return Mismatch{}, fmt.Errorf("algos: mismatch: %d learner and %d sampler rows for %d mask rows", len(learner), len(sampler), len(mask))
	}
	var m Mismatch
	sumAbs, sumK3 := 0.0, 0.0
	for i, row := range mask {
		if len(learner[i]) != len(row) || len(sampler[i]) != len(row) {
			return Mismatch{}, fmt.Errorf("algos: mismatch: row %d has %d learner and %d sampler values for %d mask entries", i, len(learner[i]), len(sampler[i]), len(row))
		}
		for t, on := range row {
			if !on {
				continue
			}
			d := learner[i][t] - sampler[i][t]
			if math.IsNaN(d) || math.IsInf(d, 0) {
				m.NonFinite++
				continue
			}
			m.Tokens++
			sumAbs += math.Abs(d)
			m.MaxAbs = max(m.MaxAbs, math.Abs(d))
			sumK3 += math.Expm1(d) - d
		}
	}
	if m.Tokens > 0 {
		m.MeanAbs, m.K3 = sumAbs/float64(m.Tokens), sumK3/float64(m.Tokens)
	}
	return m, nil
}

// Metrics returns the mismatch under the mismatch/ prefix.
func (m Mismatch) Metrics() map[string]float64 {
	return map[string]float64{
		"mismatch/mean_abs_logprob_diff": m.MeanAbs,
		"mismatch/max_abs_logprob_diff":  m.MaxAbs,
		"mismatch/k3_kl":                 m.K3,
		"mismatch/tokens":                float64(m.Tokens),
		"mismatch/nonfinite_tokens":      float64(m.NonFinite),
	}
}
