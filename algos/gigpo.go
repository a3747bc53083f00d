package algos

import (
	"fmt"
	"math"
)

// GiGPO: group-in-group policy optimisation (Feng et al. 2025, "Group-in-
// Group Policy Optimization for LLM Agent Training", arXiv 2505.10978;
// reference code verl-agent, gigpo/core_gigpo.py). Two nested groups give
// two advantages:
//
//	episode level (Eq. 3): the group estimator over the episodes of one env
//	group (GRPO, Dr.GRPO or RLOO, as configured): A^E_e
//
//	step level: anchor states. Within one env group, every turn that
//	started from the same environment state s̃ joins one step group
//	(Eq. 6):  G^S(s̃) = {(e, k) : s_{e,k} = s̃}.
//	Each turn carries its discounted return (Eq. 5)
//	    R_{e,k} = Σ_{j ≥ k} γ^{j−k} r_{e,j}
//	and its step advantage is relative to its step group (Eq. 7)
//	    A^S_{e,k} = (R_{e,k} − mean_{G^S}) / F_norm
//	with F_norm = std_{G^S} + 1e-6 (unbiased std, GRPO's normalisation) or
//	1 (mean-centring only, Dr.GRPO's); the step groups follow the episode
//	estimator's choice, as the reference's single `mode` sets both.
//
//	joint (Eq. 8):  A_{e,k} = A^E_e + ω · A^S_{e,k}, on every trained token
//	of turn k.
//
// A step group of one turn has mean R_{e,k} itself, so A^S = 0 (the
// reference does the same: a state nobody else visited carries no
// step-level contrast). Turns with an empty State are such singletons.
// A truncated episode's returns end at its last turn (no bootstrap).
// Defaults follow the paper: ω = 1, γ = 0.95.
//
// Where this differs from verl-agent: its episode mean and std run over
// every step sample of the group (compute_mean_std_cross_steps), which
// weights long episodes by their length; Eq. 3 and agentrl count each
// episode once, as GRPO does everywhere else here. With a history window
// the episode term keeps the per-turn balance of episodes.go, the step
// term does not (each turn is judged on its own).

// GiGPOStats describes the anchor-state groups of one batch.
type GiGPOStats struct {
	// Groups is the number of step groups; Turns the number of turns.
	Groups, Turns int
	// Singletons counts the turns whose step group has one member.
	Singletons int
	// AbsMean is the mean |A^S| over turns.
	AbsMean float64
}

// Metrics returns the statistics under credit/ names.
func (s GiGPOStats) Metrics() map[string]float64 {
	m := map[string]float64{"credit/anchor_groups": float64(s.Groups), "credit/step_adv_abs_mean": s.AbsMean}
	if s.Groups > 0 {
		m["credit/anchor_group_size_mean"] = float64(s.Turns) / float64(s.Groups)
	}
	if s.Turns > 0 {
		m["credit/anchor_singleton_ratio"] = float64(s.Singletons) / float64(s.Turns)
	}
	return m
}

// GiGPOStepAdvantages returns A^S_{e,k} for every turn of every episode,
// grouping turns by State within each env group (groups index episodes).
func GiGPOStepAdvantages(turns [][]Turn, groups Groups, gamma float64, normByStd bool) ([][]float64, GiGPOStats, error) {
	if err := groups.validate(len(turns)); err != nil {
		return nil, GiGPOStats{}, err
	}
	if math.IsNaN(gamma) || gamma < 0 || gamma > 1 {
		return nil, GiGPOStats{}, fmt.Errorf("algos: gigpo_gamma must be in [0, 1], got %v", gamma)
	}
	returns := discountedTurnReturns(turns, gamma)
	adv := make([][]float64, len(turns))
	for e := range turns {
		adv[e] = make([]float64, len(turns[e]))
	}
	var st GiGPOStats
	type ref struct{ e, k int }
	absSum := 0.0
	for _, members := range groups {
		// Step groups in order of first appearance, so the result does not
		// depend on map iteration order.
		index := map[string]int{}
		var steps [][]ref
		for _, e := range members {
			for k, tr := range turns[e] {
				st.Turns++
				if tr.State == "" {
					steps = append(steps, []ref{{e, k}})
					continue
				}
				j, ok := index[tr.State]
				if !ok {
					j = len(steps)
					index[tr.State] = j
					steps = append(steps, nil)
				}
				steps[j] = append(steps[j], ref{e, k})
			}
		}
		st.Groups += len(steps)
		for _, sg := range steps {
			if len(sg) == 1 {
				st.Singletons++
				continue // A^S = R − R = 0
			}
			rs := make([]float64, len(sg))
			for i, r := range sg {
				rs[i] = returns[r.e][r.k]
			}
			mu := mean(rs)
			sd := math.Sqrt(unbiasedVar(rs))
			for i, r := range sg {
				a := rs[i] - mu
				if normByStd {
					a /= sd + GRPOEpsilon
				}
				adv[r.e][r.k] = a
				absSum += math.Abs(a)
			}
		}
	}
	if st.Turns > 0 {
		st.AbsMean = absSum / float64(st.Turns)
	}
	return adv, st, nil
}
