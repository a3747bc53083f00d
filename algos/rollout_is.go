package algos

import (
	"fmt"
	"math"
)

// Rollout importance sampling: an off-policy correction of the
// train–inference mismatch (Yao et al. 2025, "Your Efficient RL Framework
// Secretly Brings You Off-Policy RL Training"; verl's rollout_is,
// verl/trainer/ppo/mismatch_helper.py as of October 2025). The tokens were
// drawn from π_sampler (an inference engine with its own kernels and
// precision, e.g. vLLM in bf16), while the learner's surrogate takes its
// ratio against π_old, the learner's recompute under the weights that
// sampled; its policy gradient is an expectation under π_old, so each
// token's term is reweighted by the ratio of the two:
//
//	log ρ_t = logp_old(y_t) − logp_sampler(y_t)             ρ_t = π_old(y_t)/π_sampler(y_t)
//
// at one of three levels, over the trained tokens T_i of sequence i:
//
//	token      λ_t = log ρ_t                                 biased, low variance
//	sequence   λ_t = Σ_{s∈T_i} log ρ_s                       the sequence's likelihood ratio: unbiased
//	geometric  λ_t = (1/|T_i|)·Σ_{s∈T_i} log ρ_s             its per-token geometric mean
//
//	ω_t = exp(clamp(λ_t, −20, 20))
//
// bounded by the mode, with thresholds L ≤ U (L = 1/U unless set):
//
//	truncate  (TIS)  ω_t ← min(ω_t, U)
//	mask      (MIS)  ω_t ← ω_t·1[L ≤ ω_t ≤ U]                the token (sequence) leaves the loss
//
// and, with a veto threshold V > 0, zeroed on every token of a sequence
// that holds a catastrophic token, ρ_t < V (verl's default V = 1e-4). The
// weight is a constant (no gradient flows through it) that multiplies each
// token's policy loss before aggregation, as verl's pg_losses ·
// rollout_is_weights:
//
//	L_pg = Σ_{i,t} w_{i,t}·ω_{i,t}·ℓ_{i,t}                   (w: the loss_agg_mode weights)
//
// so the entropy and KL terms are not reweighted. Without a recompute the
// old log-probs are the sampler's and every ρ_t = 1.
//
// Metrics, verl's names under mismatch/, over the trained tokens of the
// sequences with at least one (verl divides by every row of its batch),
// from the weights before the mode bounds them:
//
//	rollout_is_mean                  token mean of ω
//	rollout_is_max, rollout_is_min   token: max and min of ω; sequence and geometric: e^{max λ} (λ capped at 20) and e^{min λ} over sequences
//	rollout_is_ratio_fraction_high   share above U: of tokens (token, geometric) or of sequences (sequence), λ compared with log U
//	rollout_is_ratio_fraction_low    the same below L; in truncate mode, fraction_high is the share truncated
//	rollout_is_std                   population std over tokens of clamp(ω, L, U) (0 with one token)
//	rollout_is_eff_sample_size       ESS/N = (mean ω̃)² / mean ω̃², ω̃ = clamp(ω, L, U) (verl adds 1e-8 to the mean)
//	rollout_is_veto_fraction         share of sequences vetoed
//	rollout_is_catastrophic_token_fraction   share of tokens with ρ_t < V
//	rollout_is_masked_fraction       mask mode: share of tokens outside [L, U]
//	rollout_is_seq_masked_fraction   mask mode: share of sequences with a token outside [L, U]

// ISLevel is the level at which the importance ratio is taken (verl
// rollout_is_level).
type ISLevel string

// The importance-sampling levels.
const (
	ISToken     ISLevel = "token"
	ISSequence  ISLevel = "sequence"
	ISGeometric ISLevel = "geometric"
)

// ISMode is how the importance weights are bounded (verl rollout_is_mode).
type ISMode string

// The bounding modes.
const (
	ISTruncate ISMode = "truncate" // TIS: cap at the upper threshold
	ISMask     ISMode = "mask"     // MIS: drop weights outside [lower, upper]
)

// logRatioBound is the safety clamp on log-ratios before exp, as verl's
// SAFETY_BOUND (e^20 ≈ 4.9e8).
const logRatioBound = 20

// RolloutCorrection holds the settings of the rollout importance weights.
type RolloutCorrection struct {
	Level ISLevel
	Mode  ISMode
	// Threshold is the upper bound U (verl rollout_is_threshold).
	Threshold float64
	// ThresholdLower is the lower bound L of mask mode, also used by the
	// metrics; 0 means 1/Threshold (verl rollout_is_threshold_lower unset).
	ThresholdLower float64
	// VetoThreshold V zeroes a sequence holding a token with ρ_t < V; 0
	// turns the veto off (verl rollout_is_veto_threshold, default 1e-4).
	VetoThreshold float64
}

// TIS is token-level truncated importance sampling, w_t = min(ρ_t, c),
// without a veto.
func TIS(c float64) RolloutCorrection {
	return RolloutCorrection{Level: ISToken, Mode: ISTruncate, Threshold: c}
}

// MIS is token-level masked importance sampling, w_t = ρ_t on
// [lower, upper] and 0 outside, without a veto.
func MIS(lower, upper float64) RolloutCorrection {
	return RolloutCorrection{Level: ISToken, Mode: ISMask, Threshold: upper, ThresholdLower: lower}
}

// Bounds returns the thresholds [L, U] in effect.
func (c RolloutCorrection) Bounds() (lower, upper float64) {
	if c.ThresholdLower == 0 {
		return 1 / c.Threshold, c.Threshold
	}
	return c.ThresholdLower, c.Threshold
}

// Validate checks the settings; errors name the Preset key.
func (c RolloutCorrection) Validate() error {
	switch c.Level {
	case ISToken, ISSequence, ISGeometric:
	default:
		return fmt.Errorf("algos: rollout_is_level must be token, sequence or geometric, got %q", string(c.Level))
	}
	switch c.Mode {
	case ISTruncate, ISMask:
	default:
		return fmt.Errorf("algos: rollout_is_mode must be truncate or mask, got %q", string(c.Mode))
	}
	if !Finite(c.Threshold) || c.Threshold <= 0 {
		return fmt.Errorf("algos: rollout_is_threshold must be finite and > 0, got %v", c.Threshold)
	}
	if !Finite(c.ThresholdLower) || c.ThresholdLower < 0 {
		return fmt.Errorf("algos: rollout_is_threshold_lower must be finite and ≥ 0 (0: 1/rollout_is_threshold), got %v", c.ThresholdLower)
	}
	if lower, upper := c.Bounds(); lower > upper {
		return fmt.Errorf("algos: rollout_is_threshold_lower (%v in effect; 0 means 1/rollout_is_threshold) must not exceed rollout_is_threshold %v", lower, upper)
	}
	if !Finite(c.VetoThreshold) || c.VetoThreshold < 0 || c.VetoThreshold >= 1 {
		return fmt.Errorf("algos: rollout_is_veto_threshold must be in [0, 1) (0: no veto), got %v", c.VetoThreshold)
	}
	return nil
}

// RolloutISResult holds the weights of a batch and their statistics.
type RolloutISResult struct {
	// Weights are the per-token ω (0 out of mask), to multiply into the
	// policy loss.
	Weights [][]float64

	// Mode is the bounding mode the weights were computed with.
	Mode ISMode

	// The statistics of the file comment, from the weights before the mode
	// bounds them (Metrics gives their names).
	Mean, Max, Min, Std, ESS           float64
	FractionHigh, FractionLow          float64
	VetoFraction, CatastrophicFraction float64
	MaskedFraction, SeqMaskedFraction  float64 // mask mode only
}

// Metrics returns the statistics under verl's names (mismatch/rollout_is_*).
func (r RolloutISResult) Metrics() map[string]float64 {
	m := map[string]float64{
		"mismatch/rollout_is_mean":                        r.Mean,
		"mismatch/rollout_is_max":                         r.Max,
		"mismatch/rollout_is_min":                         r.Min,
		"mismatch/rollout_is_std":                         r.Std,
		"mismatch/rollout_is_eff_sample_size":             r.ESS,
		"mismatch/rollout_is_ratio_fraction_high":         r.FractionHigh,
		"mismatch/rollout_is_ratio_fraction_low":          r.FractionLow,
		"mismatch/rollout_is_veto_fraction":               r.VetoFraction,
		"mismatch/rollout_is_catastrophic_token_fraction": r.CatastrophicFraction,
	}
	if r.Mode == ISMask {
		m["mismatch/rollout_is_masked_fraction"] = r.MaskedFraction
		m["mismatch/rollout_is_seq_masked_fraction"] = r.SeqMaskedFraction
	}
	return m
}

// RolloutISWeights computes the importance weights of the correction from
// the learner's old log-probs and the sampler's, over the tokens where
// mask is set. A batch without a trained token gets all-zero weights and
// statistics.
func RolloutISWeights(c RolloutCorrection, oldLogProb, samplerLogProb [][]float64, mask [][]bool) (RolloutISResult, error) {
	if err := c.Validate(); err != nil {
		return RolloutISResult{}, err
	}
	if err := checkTokens("old_logp", oldLogProb, mask); err != nil {
		return RolloutISResult{}, err
	}
	if err := checkTokens("sampler_logp", samplerLogProb, mask); err != nil {
		return RolloutISResult{}, err
	}
	lower, upper := c.Bounds()
	logLower, logUpper := math.Log(lower), math.Log(upper)
	logVeto := math.Inf(-1)
	if c.VetoThreshold > 0 {
		logVeto = math.Log(c.VetoThreshold)
	}
	r := RolloutISResult{Weights: zerosLike(mask), Mode: c.Mode, Max: math.Inf(-1), Min: math.Inf(1)}

	var tokens, seqs, catastrophic, vetoed, masked, seqMasked int
	var high, low, seqHigh, seqLow int
	var sumW, sumClamped, sumClamped2 float64
	maxLambda, minLambda := math.Inf(-1), math.Inf(1)
	for i, row := range mask {
		n, sum, veto := 0, 0.0, false
		for t, m := range row {
			if !m {
				continue
			}
			d := oldLogProb[i][t] - samplerLogProb[i][t]
			n++
			sum += d
			if d < logVeto {
				catastrophic++
				veto = true
			}
		}
		if n == 0 {
			continue
		}
		seqs++
		tokens += n
		if veto {
			vetoed++
		}
		// The sequence-wide λ of the sequence and geometric levels.
		seqLambda := sum
		if c.Level == ISGeometric {
			seqLambda = sum / float64(n)
		}
		if c.Level != ISToken {
			maxLambda, minLambda = max(maxLambda, seqLambda), min(minLambda, seqLambda)
			if c.Level == ISSequence {
				seqHigh += b2i(seqLambda > logUpper)
				seqLow += b2i(seqLambda < logLower)
			}
		}
		anyMasked := false
		for t, m := range row {
			if !m {
				continue
			}
			lambda := seqLambda
			if c.Level == ISToken {
				lambda = oldLogProb[i][t] - samplerLogProb[i][t]
			}
			w := math.Exp(max(-logRatioBound, min(logRatioBound, lambda)))
			sumW += w
			if c.Level == ISToken {
				r.Max, r.Min = max(r.Max, w), min(r.Min, w)
			}
			if c.Level != ISSequence {
				high += b2i(lambda > logUpper)
				low += b2i(lambda < logLower)
			}
			wc := max(lower, min(upper, w))
			sumClamped += wc
			sumClamped2 += wc * wc

			switch c.Mode {
			case ISTruncate:
				w = min(w, upper)
			case ISMask:
				if w < lower || w > upper {
					w = 0
					masked++
					anyMasked = true
				}
			}
			if veto {
				w = 0
			}
			r.Weights[i][t] = w
		}
		if anyMasked {
			seqMasked++
		}
	}
	if tokens == 0 {
		r.Max, r.Min = 0, 0
		return r, nil
	}
	nt, ns := float64(tokens), float64(seqs)
	if c.Level != ISToken {
		r.Max, r.Min = math.Exp(min(maxLambda, logRatioBound)), math.Exp(minLambda)
	}
	r.Mean = sumW / nt
	if c.Level == ISSequence {
		r.FractionHigh, r.FractionLow = float64(seqHigh)/ns, float64(seqLow)/ns
	} else {
		r.FractionHigh, r.FractionLow = float64(high)/nt, float64(low)/nt
	}
	meanC, meanC2 := sumClamped/nt, sumClamped2/nt
	if tokens > 1 {
		r.Std = math.Sqrt(max(0, meanC2-meanC*meanC))
	}
	r.ESS = meanC * meanC / meanC2
	r.VetoFraction, r.CatastrophicFraction = float64(vetoed)/ns, float64(catastrophic)/nt
	if c.Mode == ISMask {
		r.MaskedFraction, r.SeqMaskedFraction = float64(masked)/nt, float64(seqMasked)/ns
	}
	return r, nil
}
