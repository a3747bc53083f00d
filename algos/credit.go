package algos

import (
	"fmt"
	"math"
)

// Turn-level credit on top of a group estimator: the episode advantage of
// GRPO, Dr.GRPO or RLOO plus a per-turn term,
//
//	A_{e,k} = b_e · A^E_e + c_{e,k}       on the trained tokens of turn k
//
// with c = ω·A^S (GiGPO, gigpo.go) or c = α·h (solver credit, CAST,
// solver_credit.go), and b_e the per-turn balance of episodes.go when a
// history window trains each turn as its own sequence (1 otherwise). The
// per-turn term is not balanced: it judges each turn on its own.
//
// Bi-level GAE (bilevel_gae.go) is the token-estimator counterpart, for
// PPO's critic; it is switched on by Preset.BiLevelGAE.

// TurnCredit names a turn-level credit method for the group estimators.
type TurnCredit string

// The turn-level credit methods.
const (
	CreditNone   TurnCredit = "none"
	CreditGiGPO  TurnCredit = "gigpo"
	CreditSolver TurnCredit = "solver"
)

// validateCredit checks the turn-level credit settings of p.
func (p Preset) validateCredit() error {
	switch p.Credit {
	case "", CreditNone:
	case CreditGiGPO, CreditSolver:
		if p.UsesTokenEstimator() {
			return fmt.Errorf("algos: credit %q adds to a group estimator's advantage (grpo or rloo), not %q", string(p.Credit), string(p.Estimator))
		}
		if p.UseKLInReward {
			return fmt.Errorf("algos: credit %q has no per-token rewards for use_kl_in_reward", string(p.Credit))
		}
	default:
		return fmt.Errorf("algos: unknown credit %q (want none, gigpo or solver)", string(p.Credit))
	}
	if p.BiLevelGAE {
		if p.Estimator != EstimatorGAE {
			return fmt.Errorf("algos: bi_level_gae needs adv_estimator gae, not %q", string(p.Estimator))
		}
		if p.UseKLInReward {
			return fmt.Errorf("algos: bi_level_gae with use_kl_in_reward is not supported (the turn rewards would need the per-token penalty)")
		}
	}
	if p.Credit == CreditSolver {
		if _, _, err := SolverTurnAdvantages(nil, p.SolverTransform); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name   string
		v, max float64
	}{{"gigpo_step_weight", p.StepWeight, math.Inf(1)}, {"gigpo_gamma", p.StepGamma, 1},
		{"solver_alpha", p.SolverAlpha, math.Inf(1)}, {"high_level_gamma", p.HighLevelGamma, 1}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > f.max {
			return fmt.Errorf("algos: %s must be finite and in [0, %v], got %v", f.name, f.max, f.v)
		}
	}
	return nil
}

// UsesTurns reports whether the advantages need AdvantageInput.Turns.
func (p Preset) UsesTurns() bool {
	return p.BiLevelGAE || p.Credit == CreditGiGPO || p.Credit == CreditSolver
}

// UsesTurnStates reports whether the turns need their starting states.
func (p Preset) UsesTurnStates() bool { return p.Credit == CreditGiGPO }

// UsesCostToGo reports whether the turns need solver costs.
func (p Preset) UsesCostToGo() bool { return p.Credit == CreditSolver }

// turnCreditAdvantages is the group estimator plus the per-turn term.
func (p Preset) turnCreditAdvantages(in AdvantageInput) (advantages [][]float64, metrics map[string]float64, err error) {
	if in.TokenRewards != nil {
		return nil, nil, fmt.Errorf("algos: credit %q uses episode scores and turn rewards, not per-token rewards", string(p.Credit))
	}
	if err := checkScores(in.Scores, in.Groups); err != nil {
		return nil, nil, err
	}
	if err := validateTurns(in.Turns, len(in.Scores), in.Mask, in.Episode); err != nil {
		return nil, nil, err
	}
	episode, err := p.groupAdvantages(in.Scores, in.Groups)
	if err != nil {
		return nil, nil, err
	}
	if in.Episode != nil {
		balance, err := episodeBalance(in.Episode, len(in.Scores))
		if err != nil {
			return nil, nil, err
		}
		for e := range episode {
			episode[e] *= balance[e]
		}
	}
	var extra [][]float64
	switch p.Credit {
	case CreditGiGPO:
		var st GiGPOStats
		if extra, st, err = GiGPOStepAdvantages(in.Turns, in.Groups, p.StepGamma, p.NormAdvByStd); err != nil {
			return nil, nil, err
		}
		scale(extra, p.StepWeight)
		metrics = st.Metrics()
	case CreditSolver:
		var st SolverStats
		if extra, st, err = SolverTurnAdvantages(in.Turns, p.SolverTransform); err != nil {
			return nil, nil, err
		}
		scale(extra, p.SolverAlpha)
		metrics = st.Metrics()
	}
	return turnTokenAdvantages(in.Turns, in.Mask, episode, extra), metrics, nil
}

// groupAdvantages is the preset's group estimator on per-episode scores:
// RLOO, or GRPO / Dr.GRPO by NormAdvByStd.
func (p Preset) groupAdvantages(scores []float64, groups Groups) ([]float64, error) {
	if p.Estimator == EstimatorRLOO {
		return RLOOAdvantages(scores, groups)
	}
	return GroupAdvantages(scores, groups, p.NormAdvByStd)
}

// episodeBalance is (S/E)/T_e for every episode (see episodes.go).
func episodeBalance(episode []int, nEpisodes int) ([]float64, error) {
	turns := make([]int, nEpisodes)
	for i, e := range episode {
		if e < 0 || e >= nEpisodes {
			return nil, fmt.Errorf("algos: sequence %d belongs to episode %d, outside 0..%d", i, e, nEpisodes-1)
		}
		turns[e]++
	}
	out := make([]float64, nEpisodes)
	for e, n := range turns {
		if n == 0 {
			return nil, fmt.Errorf("algos: episode %d has no sequence", e)
		}
		out[e] = float64(len(episode)) / float64(nEpisodes) / float64(n)
	}
	return out, nil
}

func scale(x [][]float64, c float64) {
	for i := range x {
		for j := range x[i] {
			x[i][j] *= c
		}
	}
}
