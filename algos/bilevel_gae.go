package algos

import (
	"fmt"
	"math"
)

// Bi-level GAE: RAGEN's two-level advantage for PPO
// (ragen/trainer/core_algos.py, compute_bi_level_gae_advantage_return).
// The agentic MDP's steps are turns; each turn is itself a token MDP. With
// p_k the last trained token of turn k, V_k = V(p_k) and r_k the turn's
// reward:
//
//	high level, k from the last turn down (V_K = 0, no bootstrap past the end):
//	    δ_k = r_k + γ_h·V_{k+1} − V_k
//	    Â_k = δ_k + γ_h·λ·Â_{k+1}
//	    G_k = Â_k + V_k                       (the turn's return)
//	low level, inside turn k, t from p_k down over its trained tokens:
//	    at p_k:     δ = G_k − V(p_k)               (= Â_k; next value 0, Â reset)
//	    otherwise:  δ_t = γ·V(t') − V(t)           (t' the next trained token)
//	    A_t = δ_t + γ·λ·A_{t'}
//	    R_t = A_t + V(t)
//
// then the advantages are whitened over every trained token of the batch
// (WhitenMasked, as GAE). γ_h is high_level_gamma (RAGEN: 0.95), γ and λ
// the preset's gamma and lam (RAGEN: 1, 1). So a turn's tokens share the
// credit of the turn, bootstrapped from the next turn's value and
// discounted per turn rather than per token.
//
// Where this differs from the reference: RAGEN finds turn ends as the
// tokens with a non-zero reward, and with its settings (no per-turn scores)
// only the last token of the episode carries one, so there the two levels
// collapse into ordinary token GAE over the whole episode. Here the turns
// are explicit (AdvantageInput.Turns) and r_k is the turn's own reward
// (environment rewards plus format penalty), which sums to the episode
// score: a turn with zero reward is still a turn.

// BiLevelGAE returns the whitened bi-level advantages and the returns.
// values and mask share a ragged shape; turns describe every episode (see
// turns.go).
func BiLevelGAE(values [][]float64, mask [][]bool, turns [][]Turn, gamma, lambda, highGamma float64) (advantages, returns [][]float64, err error) {
	adv, ret, err := BiLevelGAEUnwhitened(values, mask, turns, gamma, lambda, highGamma)
	if err != nil {
		return nil, nil, err
	}
	if adv, err = WhitenMasked(adv, mask, true); err != nil {
		return nil, nil, err
	}
	return adv, ret, nil
}

// BiLevelGAEUnwhitened is BiLevelGAE without the final whitening.
func BiLevelGAEUnwhitened(values [][]float64, mask [][]bool, turns [][]Turn, gamma, lambda, highGamma float64) (advantages, returns [][]float64, err error) {
	if err := checkTokens("values", values, mask); err != nil {
		return nil, nil, err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"gamma", gamma}, {"lam", lambda}, {"high_level_gamma", highGamma}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return nil, nil, fmt.Errorf("algos: %s must be finite and ≥ 0, got %v", f.name, f.v)
		}
	}
	if err := validateTurns(turns, len(turns), mask, nil); err != nil {
		return nil, nil, err
	}
	advantages, returns = zerosLike(mask), zerosLike(mask)
	for _, ts := range turns {
		// Trained positions of every turn, ascending.
		pos := make([][]int, len(ts))
		for k, tr := range ts {
			for t := tr.Start; t < tr.End; t++ {
				if mask[tr.Seq][t] {
					pos[k] = append(pos[k], t)
				}
			}
		}
		turnReturn := make([]float64, len(ts))
		nextValue, lastGAE := 0.0, 0.0
		for k := len(ts) - 1; k >= 0; k-- {
			v := values[ts[k].Seq][pos[k][len(pos[k])-1]]
			delta := ts[k].Reward + highGamma*nextValue - v
			lastGAE = delta + highGamma*lambda*lastGAE
			turnReturn[k] = lastGAE + v
			nextValue = v
		}
		for k, tr := range ts {
			row := values[tr.Seq]
			last := len(pos[k]) - 1
			a := 0.0
			for j := last; j >= 0; j-- {
				t := pos[k][j]
				var delta float64
				if j == last {
					delta = turnReturn[k] - row[t]
				} else {
					delta = gamma*row[pos[k][j+1]] - row[t]
				}
				a = delta + gamma*lambda*a
				advantages[tr.Seq][t] = a
				returns[tr.Seq][t] = a + row[t]
			}
		}
	}
	return advantages, returns, nil
}
