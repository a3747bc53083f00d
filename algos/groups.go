package algos

import (
	"fmt"
	"math"
	"sort"
)

// Groups partitions a batch of episodes into groups: Groups[g] lists the batch
// indices of the members of group g. In RAGEN a group is the set of rollouts
// that share one environment seed, hence one initial state (the "prompt").
//
// Every function taking a Groups checks that it is a partition of 0..n-1
// (each index exactly once, no empty group) and returns an error otherwise.
type Groups [][]int

// GroupsByID builds Groups from one group id per episode. Groups are numbered
// in order of first appearance and members keep batch order, so
// GroupsByID([]int{7, 7, 3, 7}) is {{0, 1, 3}, {2}}.
func GroupsByID[K comparable](ids []K) Groups {
	index := make(map[K]int)
	var g Groups
	for i, id := range ids {
		j, ok := index[id]
		if !ok {
			j = len(g)
			index[id] = j
			g = append(g, nil)
		}
		g[j] = append(g[j], i)
	}
	return g
}

// ContiguousGroups partitions n episodes into n/k groups of k consecutive
// episodes, the group-contiguous order RAGEN's env manager produces.
func ContiguousGroups(n, k int) (Groups, error) {
	if k <= 0 {
		return nil, fmt.Errorf("algos: group size must be positive, got %d", k)
	}
	if n <= 0 || n%k != 0 {
		return nil, fmt.Errorf("algos: %d episodes cannot be split into groups of %d", n, k)
	}
	g := make(Groups, n/k)
	for j := range g {
		g[j] = make([]int, k)
		for i := range k {
			g[j][i] = j*k + i
		}
	}
	return g, nil
}

// validate checks that g is a partition of 0..n-1 into non-empty groups.
func (g Groups) validate(n int) error {
	if len(g) == 0 {
		return fmt.Errorf("algos: no groups")
	}
	seen := make([]bool, n)
	count := 0
	for j, members := range g {
		if len(members) == 0 {
			return fmt.Errorf("algos: group %d is empty", j)
		}
		for _, i := range members {
			if i < 0 || i >= n {
				return fmt.Errorf("algos: group %d has index %d outside 0..%d", j, i, n-1)
			}
			if seen[i] {
				return fmt.Errorf("algos: index %d is in more than one group", i)
			}
			seen[i] = true
			count++
		}
	}
	if count != n {
		return fmt.Errorf("algos: groups cover %d of %d episodes", count, n)
	}
	return nil
}

// Members returns the batch indices of the given groups, in ascending batch
// order: the samples to keep after a filter kept those groups.
func (g Groups) Members(groups []int) []int {
	var out []int
	for _, j := range groups {
		if j >= 0 && j < len(g) {
			out = append(out, g[j]...)
		}
	}
	sort.Ints(out)
	return out
}

// values returns xs at the given indices.
func values(xs []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for k, i := range idx {
		out[k] = xs[i]
	}
	return out
}

// mean is the arithmetic mean; 0 for an empty slice. The mean of equal
// values is that value exactly (a plain running sum of 16 copies of 10.8
// is not 16·10.8), so a constant group has a spread and advantages of exactly
// zero, which the filters' "score ≤ 0" and "|score| ≤ 1e-10" tests rely on.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	if constant(xs) {
		return xs[0]
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// constant reports whether every element equals the first.
func constant(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// unbiasedVar is Σ(x−mean)²/(n−1) (torch.var default); 0 when n < 2.
func unbiasedVar(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(n-1)
}

// populationStd is sqrt(Σ(x−mean)²/n) (torch std(unbiased=False)).
func populationStd(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)))
}

// checkFinite returns an error naming the first NaN or infinite element.
func checkFinite(name string, xs []float64) error {
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("algos: %s[%d] is %v", name, i, x)
		}
	}
	return nil
}

// checkTokens checks that x has the shape of mask (same rows, same row
// lengths) and is finite at every in-mask position. Out-of-mask positions are
// never read by this package, so they may hold anything (padding).
func checkTokens(name string, x [][]float64, mask [][]bool) error {
	if len(x) != len(mask) {
		return fmt.Errorf("algos: %s has %d rows, mask has %d", name, len(x), len(mask))
	}
	for i := range x {
		if len(x[i]) != len(mask[i]) {
			return fmt.Errorf("algos: %s row %d has %d tokens, mask row has %d", name, i, len(x[i]), len(mask[i]))
		}
		for t, m := range mask[i] {
			if m && (math.IsNaN(x[i][t]) || math.IsInf(x[i][t], 0)) {
				return fmt.Errorf("algos: %s[%d][%d] is %v", name, i, t, x[i][t])
			}
		}
	}
	return nil
}

// zerosLike returns a zero matrix with the row lengths of mask.
func zerosLike(mask [][]bool) [][]float64 {
	out := make([][]float64, len(mask))
	for i := range mask {
		out[i] = make([]float64, len(mask[i]))
	}
	return out
}

// BroadcastToTokens gives every in-mask token of sequence i the advantage
// adv[i] (out-of-mask tokens get 0): the way GRPO, Dr.GRPO, RLOO and the
// outcome REINFORCE++ shortcut turn one number per episode into per-token
// advantages (verl: scores.unsqueeze(-1) * response_mask).
func BroadcastToTokens(adv []float64, mask [][]bool) ([][]float64, error) {
	if len(adv) != len(mask) {
		return nil, fmt.Errorf("algos: %d advantages for %d sequences", len(adv), len(mask))
	}
	if err := checkFinite("advantages", adv); err != nil {
		return nil, err
	}
	out := zerosLike(mask)
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				out[i][t] = adv[i]
			}
		}
	}
	return out, nil
}

// OutcomeRewards builds per-token rewards with the episode score on the last
// in-mask token of each sequence and 0 elsewhere, RAGEN's placement of the
// trajectory score (use_turn_scores=False). A sequence without any in-mask
// token is an error: its score would be lost.
func OutcomeRewards(scores []float64, mask [][]bool) ([][]float64, error) {
	if len(scores) != len(mask) {
		return nil, fmt.Errorf("algos: %d scores for %d sequences", len(scores), len(mask))
	}
	if err := checkFinite("scores", scores); err != nil {
		return nil, err
	}
	out := zerosLike(mask)
	for i := range mask {
		last := -1
		for t, m := range mask[i] {
			if m {
				last = t
			}
		}
		if last < 0 {
			return nil, fmt.Errorf("algos: sequence %d has no in-mask token to carry its score", i)
		}
		out[i][last] = scores[i]
	}
	return out, nil
}
