package algos_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrl/agentrl/algos"
)

// SNR-aware top-p filtering of 4 groups of 4 episodes with RAGEN-2's
// recommended settings (linear rule, p = 0.9, zero-spread groups dropped).
func ExampleFilterGroups() {
	scores := []float64{
		0, 0, 0, 0, // solved by nobody: no spread
		0, 1, 0, 1, // std 0.577
		1, 1, 1, 1, // solved by everybody: no spread
		0, 10, 0, 0, // std 5
	}
	groups, _ := algos.ContiguousGroups(len(scores), 4)
	res, err := algos.FilterGroups(algos.RecommendedFilterConfig(), scores, groups)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Metrics()
	fmt.Println("kept groups:", res.Kept)
	fmt.Println("kept episodes:", groups.Members(res.Kept))
	fmt.Printf("kept ratio %.2f, zero-spread groups %.0f, empty %.0f\n",
		m["rollout/filter_kept_ratio"], m["rollout/filter_zero_count"], m["rollout/empty_after_filter"])

	// A stricter p keeps only the high-spread group.
	cfg := algos.RecommendedFilterConfig()
	cfg.Value = 0.8
	res, _ = algos.FilterGroups(cfg, scores, groups)
	fmt.Printf("p=0.8 keeps %v (%.1f%% of the spread)\n", res.Kept, 100*res.ScoreMassKept)

	// Early stopping watches the mean in-group std of every step.
	stop := algos.NewEarlyStop(algos.DefaultEarlyStopConfig())
	reason, _ := stop.ObserveFilter(res)
	fmt.Printf("stop reason %q\n", reason)
	// Output:
	// kept groups: [1 3]
	// kept episodes: [4 5 6 7 12 13 14 15]
	// kept ratio 0.50, zero-spread groups 2, empty 0
	// p=0.8 keeps [3] (89.6% of the spread)
	// stop reason ""
}

// Template-collapse metrics on a 4×2 cross-scoring matrix: two prompts, two
// reasonings each; every reasoning is likelier under its own prompt.
func ExampleComputeCollapse() {
	in := algos.CollapseInput{
		// L_sum[r][j]: summed log-likelihood of reasoning r after prompt j.
		LSum: [][]float64{
			{-10, -14},
			{-12, -13},
			{-15, -9},
			{-20, -16},
		},
		ReasoningLen: []int{5, 5, 4, 8},
		Col:          []int{0, 0, 1, 1},
	}
	res, err := algos.ComputeCollapse(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	ema := algos.NewCollapseEMA()
	ema.Update(algos.SchemeFirstTurn, &res)
	m := res.Metrics(algos.SchemeFirstTurn)
	for _, k := range []string{"mi_estimate", "mi_upper_bound", "conditional_entropy_est",
		"retrieval_accuracy", "retrieval_chance_level", "mi_zscore_ema"} {
		fmt.Printf("%s/%s = %.4f\n", algos.SchemeFirstTurn, k, m[algos.SchemeFirstTurn+"/"+k])
	}

	// Rows come from a pair-sampling scheme over the batch's trajectories.
	trajs := []algos.TrajectoryTurns{
		{Group: 0, Valid: []bool{true, true}},
		{Group: 0, Valid: []bool{true}},
		{Group: 1, Valid: []bool{true, false}},
		{Group: 1, Valid: []bool{false}},
	}
	s, _ := algos.SampleFirstTurnPairs(rand.New(rand.NewPCG(1, 2)), trajs, 64)
	fmt.Println("rows:", s.Pairs, "columns:", s.Col, "groups:", s.ColGroup)
	// Output:
	// collapse_first_turn_sample/mi_estimate = 0.2820
	// collapse_first_turn_sample/mi_upper_bound = 0.6931
	// collapse_first_turn_sample/conditional_entropy_est = 2.1625
	// collapse_first_turn_sample/retrieval_accuracy = 1.0000
	// collapse_first_turn_sample/retrieval_chance_level = 0.5000
	// collapse_first_turn_sample/mi_zscore_ema = 1.4174
	// rows: [{0 0} {1 0} {2 0}] columns: [0 0 1] groups: [0 1]
}

// Solver credit (CAST) on one Sokoban level played twice, one sequence
// per turn: both episodes fail, so GRPO gives every turn 0, but the
// solver's cost-to-go tells the turn that made progress from the one that
// pushed the box into a corner: a = 2, 0, −1, −7 (a deadlock 7 moves from
// the goal), asinh-compressed and scaled by the batch RMS, times α = 0.1.
func ExamplePresetCAST() {
	turn := func(seq int, before, after float64) algos.Turn {
		return algos.Turn{Seq: seq, Start: 0, End: 2, Reward: -0.2, CostBefore: before, CostAfter: after}
	}
	in := algos.AdvantageInput{
		Scores:  []float64{-0.4, -0.4},
		Groups:  algos.Groups{{0, 1}},
		Episode: []int{0, 0, 1, 1},
		Mask:    [][]bool{{true, true}, {true, true}, {true, true}, {true, true}},
		Turns: [][]algos.Turn{
			{turn(0, 6, 4), turn(1, 4, 4)},           // two optimal moves, then two wasted ones
			{turn(2, 6, 7), turn(3, 7, math.Inf(1))}, // a detour, then a deadlock
		},
	}
	adv, _, m, err := algos.PresetCAST().AdvantagesWithMetrics(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, row := range adv {
		fmt.Printf("turn sequence %d: %+.3f\n", i, row[0])
	}
	fmt.Printf("deadlocks %.0f, progress %.2f of turns\n", m["credit/solver_deadlocks"], m["credit/solver_progress_ratio"])
	// Output:
	// turn sequence 0: +0.092
	// turn sequence 1: +0.000
	// turn sequence 2: -0.056
	// turn sequence 3: -0.168
	// deadlocks 1, progress 0.25 of turns
}

// Correcting the train–inference mismatch: the sampler (another engine)
// reported other log-probs than the learner's recompute under the same
// weights. Truncated importance sampling caps each token's ratio
// π_old/π_sampler at 2; IcePop drops the tokens outside [0.5, 5].
func ExampleRolloutISWeights() {
	learner := [][]float64{{-0.10, -1.20, -0.70}, {-2.30, -0.05}}
	sampler := [][]float64{{-0.15, -2.60, -0.70}, {-0.90, -0.05}}
	mask := [][]bool{{true, true, true}, {true, true}}
	for _, c := range []struct {
		name string
		cfg  algos.RolloutCorrection
	}{{"TIS", algos.TIS(2)}, {"IcePop", algos.IcePop()}} {
		r, err := algos.RolloutISWeights(c.cfg, learner, sampler, mask)
		if err != nil {
			fmt.Println(err)
			return
		}
		m := r.Metrics()
		fmt.Printf("%-6s weights %.3f\n", c.name, r.Weights)
		fmt.Printf("       ratio mean %.3f, max %.3f, above threshold %.0f%%\n",
			m["mismatch/rollout_is_mean"], m["mismatch/rollout_is_max"], 100*m["mismatch/rollout_is_ratio_fraction_high"])
	}

	// In a preset the weights multiply the policy loss of every token.
	p := algos.PresetGRPO()
	p.RolloutIS, p.RolloutISLevel, p.RolloutISMode, p.RolloutISThreshold = true, algos.ISToken, algos.ISTruncate, 2
	res, err := p.ActorLoss(algos.ActorBatch{
		LogProb: learner, OldLogProb: learner, SamplerLogProb: sampler,
		Advantages: [][]float64{{1, 1, 1}, {-1, -1}},
		Entropy:    [][]float64{{1, 1, 1}, {1, 1}},
		Mask:       mask,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("dL/dlogp %.3f\n", res.DLogProb)
	// Output:
	// TIS    weights [[1.051 2.000 1.000] [0.247 1.000]]
	//        ratio mean 1.471, max 4.055, above threshold 20%
	// IcePop weights [[1.051 4.055 1.000] [0.000 1.000]]
	//        ratio mean 1.471, max 4.055, above threshold 0%
	// dL/dlogp [[-0.175 -0.333 -0.167] [0.062 0.250]]
}
