package algos

import (
	"fmt"
	"math"
	"sort"
)

// Within-group selection (RAGEN's rebuttal branch more-experiments,
// WithinGroupTrajectoryFilter, strategy within_group): every group is
// kept, but only k = max(1, round(value · G)) of its G episodes, the k
// whose scores have the largest variance. It separates the effect of a
// higher reward spread (SNR) from that of choosing which prompts to train
// on. The best subset of k is always the j lowest and k − j highest
// scores for some j (an exchange argument: a middle score can be swapped
// for a more extreme one without lowering the variance), so the k + 1
// such splits are tried and the first with the largest variance wins.

// MaxVarianceSubset returns the indices (ascending) of the k scores with
// the largest unbiased variance; all of them when k ≥ len(scores).
func MaxVarianceSubset(scores []float64, k int) []int {
	n := len(scores)
	if k >= n {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })
	bestJ, bestVar := 0, math.Inf(-1)
	for j := 0; j <= k; j++ {
		sel := append(append([]int{}, order[:j]...), order[n-(k-j):]...)
		v := 0.0
		if k > 1 {
			v = unbiasedVar(values(scores, sel))
		}
		if v > bestVar {
			bestVar, bestJ = v, j
		}
	}
	out := append(append([]int{}, order[:bestJ]...), order[n-(k-bestJ):]...)
	sort.Ints(out)
	return out
}

// WithinGroupSelect keeps, in every group, the round(value · size)
// members (at least one) whose scores vary the most. It returns the kept
// members of each group, in batch order.
func WithinGroupSelect(value float64, scores []float64, groups Groups) ([][]int, error) {
	if err := checkScores(scores, groups); err != nil {
		return nil, err
	}
	if math.IsNaN(value) || value <= 0 || value > 1 {
		return nil, fmt.Errorf("algos: within_group keep ratio must be in (0, 1], got %v", value)
	}
	out := make([][]int, len(groups))
	for g, members := range groups {
		k := max(1, int(math.RoundToEven(value*float64(len(members)))))
		for _, i := range MaxVarianceSubset(values(scores, members), k) {
			out[g] = append(out[g], members[i])
		}
	}
	return out, nil
}
