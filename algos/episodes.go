package algos

import "fmt"

// Episodes split into per-turn sequences (a history window: RAGEN's
// windowed modes train each turn's prompt window and reply as one
// sequence). AdvantageInput.Episode maps sequence i to its episode e(i);
// with S sequences, E episodes and T_e the number of sequences of episode e:
//
//	group estimators (GRPO, Dr.GRPO, RLOO): A_e from the episode scores and
//	groups, counting each episode once (as RAGEN does), then
//	    A_i = A_e(i) · (S/E) / T_e(i)      on every in-mask token of sequence i
//	token estimators (GAE, REINFORCE++): each sequence carries its episode's
//	    score, R_i = Scores[e(i)], placed on its last in-mask token.
//
// The factor (S/E)/T_e gives every episode the same total weight, as it has
// when the whole conversation is one sequence, while keeping the mean weight
// per sequence at 1. Without it, failed episodes (which run to the turn
// limit) outweigh short successful ones several times over, and the negative
// advantage they spread over the shared format and reasoning tokens drags
// those down (measured on Sokoban: validation success fell from 0.18 to 0.05).
//
// The KL penalty in reward is per token and has no episode-level form for a
// group estimator; that combination is an error.

// episodeGroupAdvantages is the group-estimator branch above.
func (p Preset) episodeGroupAdvantages(in AdvantageInput) (advantages, returns [][]float64, err error) {
	if in.TokenRewards != nil {
		return nil, nil, fmt.Errorf("algos: per-token rewards with per-turn sequences need a token estimator (gae or reinforce_plus_plus)")
	}
	if p.UseKLInReward {
		return nil, nil, fmt.Errorf("algos: use_kl_in_reward with per-turn sequences needs a token estimator (gae or reinforce_plus_plus)")
	}
	if len(in.Episode) != len(in.Mask) {
		return nil, nil, fmt.Errorf("algos: %d episode indices for %d sequences", len(in.Episode), len(in.Mask))
	}
	balance, err := episodeBalance(in.Episode, len(in.Scores))
	if err != nil {
		return nil, nil, err
	}
	perEpisode, err := p.groupAdvantages(in.Scores, in.Groups)
	if err != nil {
		return nil, nil, err
	}
	values := make([]float64, len(in.Episode))
	for i, e := range in.Episode {
		values[i] = perEpisode[e] * balance[e]
	}
	adv, err := BroadcastToTokens(values, in.Mask)
	return adv, adv, err
}

// sequenceScores gives every sequence its episode's score.
func sequenceScores(scores []float64, episode []int) ([]float64, error) {
	out := make([]float64, len(episode))
	for i, e := range episode {
		if e < 0 || e >= len(scores) {
			return nil, fmt.Errorf("algos: sequence %d belongs to episode %d, outside 0..%d", i, e, len(scores)-1)
		}
		out[i] = scores[e]
	}
	return out, nil
}
