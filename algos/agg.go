package algos

import "fmt"

// Loss aggregation: how per-token losses ℓ_{i,t} of a batch of B sequences
// become one scalar, as verl's agg_loss defines the three modes RAGEN uses.
// Each mode is a weighting, L = Σ_{i,t} w_{i,t}·ℓ_{i,t}, with m_{i,t} ∈ {0,1}
// the loss mask, n_i = Σ_t m_{i,t} and B' = #{i : n_i > 0} the number of
// sequences with at least one trained token:
//
//	token-mean:           w_{i,t} = m_{i,t} / Σ_{j,s} m_{j,s}          (every token weighs the same)
//	seq-mean-token-mean:  w_{i,t} = m_{i,t} / (n_i · B')               (every sequence weighs the same)
//	seq-mean-token-sum:   w_{i,t} = m_{i,t} / B'                       (Σ over tokens, mean over sequences)
//
// Sequences without a trained token are left out of the mean over
// sequences, as in verl's agg_loss since PR #3915 (its seq_mask, "exclude
// fully masked sequences"); before that change verl divided by every row. So
// with four sequences of which one has trained tokens, that one sequence
// carries the whole loss. seq-mean-token-sum is normalised by the number of
// sequences only, never by a length, so longer sequences contribute
// proportionally more. verl's fourth mode seq-mean-token-sum-norm
// (Σ_{i,t} m·ℓ / T_max) is not offered.
//
// Deviations, all measure-zero in training: verl's masked means divide by
// Σm + 1e-8 (here exactly Σm); an all-empty batch gives all-zero weights.
//
// verl aggregates per micro-batch and averages micro-batches; pass the whole
// mini-batch here to get the mode's intended weighting. RAGEN trains with
// micro-batches of one sequence, so its effective weighting is the mode
// applied to each sequence alone and divided by the B sequences of the
// mini-batch (gradient accumulation), empty ones included
// (MicroBatchWeights):
//
//	token-mean, seq-mean-token-mean:  w_{i,t} = m_{i,t} / (n_i · B)   (every sequence weighs the same)
//	seq-mean-token-sum:               w_{i,t} = m_{i,t} / B
//
// So RAGEN's "token-mean" PPO weighs sequences, not tokens, equally.

// LossAggMode is a verl loss_agg_mode.
type LossAggMode string

// The aggregation modes.
const (
	TokenMean        LossAggMode = "token-mean"
	SeqMeanTokenMean LossAggMode = "seq-mean-token-mean"
	SeqMeanTokenSum  LossAggMode = "seq-mean-token-sum"
)

// ParseLossAggMode checks a mode name.
func ParseLossAggMode(s string) (LossAggMode, error) {
	switch m := LossAggMode(s); m {
	case TokenMean, SeqMeanTokenMean, SeqMeanTokenSum:
		return m, nil
	}
	return "", fmt.Errorf("algos: unknown loss_agg_mode %q (want token-mean, seq-mean-token-mean or seq-mean-token-sum)", s)
}

// AggWeights returns the per-token weights w of the mode (0 out of mask), so
// that the aggregated loss is Σ w·ℓ and its gradient with respect to a
// per-token input x is w·∂ℓ/∂x.
func AggWeights(mode LossAggMode, mask [][]bool) ([][]float64, error) {
	if _, err := ParseLossAggMode(string(mode)); err != nil {
		return nil, err
	}
	w := zerosLike(mask)
	counts := make([]int, len(mask))
	total, nonEmpty := 0, 0
	for i := range mask {
		for _, m := range mask[i] {
			if m {
				counts[i]++
			}
		}
		total += counts[i]
		if counts[i] > 0 {
			nonEmpty++
		}
	}
	b := float64(nonEmpty)
	for i := range mask {
		n := counts[i]
		if n == 0 {
			continue
		}
		var wi float64
		switch mode {
		case TokenMean:
			wi = 1 / float64(total)
		case SeqMeanTokenMean:
			wi = 1 / (float64(n) * b)
		case SeqMeanTokenSum:
			wi = 1 / b
		}
		for t, m := range mask[i] {
			if m {
				w[i][t] = wi
			}
		}
	}
	return w, nil
}

// MicroBatchWeights are the weights verl's aggregation gives when every
// micro-batch holds one sequence (RAGEN's setting): the mode on each
// sequence alone, averaged over the len(mask) micro-batches.
func MicroBatchWeights(mode LossAggMode, mask [][]bool) ([][]float64, error) {
	if _, err := ParseLossAggMode(string(mode)); err != nil {
		return nil, err
	}
	w := zerosLike(mask)
	for i := range mask {
		wi, err := AggWeights(mode, mask[i:i+1])
		if err != nil {
			return nil, err
		}
		for t := range wi[0] {
			w[i][t] = wi[0][t] / float64(len(mask))
		}
	}
	return w, nil
}

// Aggregate returns Σ w·ℓ over matching shapes (w from AggWeights).
func Aggregate(loss, w [][]float64) (float64, error) {
	if len(loss) != len(w) {
		return 0, fmt.Errorf("algos: loss has %d rows, weights %d", len(loss), len(w))
	}
	s := 0.0
	for i := range loss {
		if len(loss[i]) != len(w[i]) {
			return 0, fmt.Errorf("algos: loss row %d has %d tokens, weights %d", i, len(loss[i]), len(w[i]))
		}
		for t := range loss[i] {
			if w[i][t] != 0 {
				s += w[i][t] * loss[i][t]
			}
		}
	}
	return s, nil
}
