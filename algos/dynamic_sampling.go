package algos

import "fmt"

// DAPO dynamic sampling (Yu et al. 2025, "DAPO"): drop every group whose
// episodes all scored the same (accuracy 0 or 1: zero reward variance, so a
// zero group-relative advantage) and keep sampling new groups until the batch
// again holds the target number of groups:
//
//	keep g  ⇔  std_g > 0  or  |g| = 1
//	need    = max(0, target − (alreadyKept + #kept))
//
// Groups of one episode are kept, as verl's DAPO recipe does (their variance
// is undefined, not zero). "Zero variance" is tested exactly (all scores
// equal), not with a tolerance. RAGEN-2 does not refill: its filters shrink
// the batch instead; this helper is for comparison runs.

// DynamicSamplingResult is the outcome of one dynamic-sampling round.
type DynamicSamplingResult struct {
	Kept              []int // kept group indices, ascending
	ZeroVarianceCount int   // dropped groups
	NeedGroups        int   // further groups to sample to reach the target
}

// DynamicSampling drops the zero-variance groups of one generation round.
// alreadyKept is the number of groups kept by earlier rounds of the same
// step; target is the number of groups the batch should hold.
func DynamicSampling(scores []float64, groups Groups, alreadyKept, target int) (DynamicSamplingResult, error) {
	if alreadyKept < 0 || target < 0 {
		return DynamicSamplingResult{}, fmt.Errorf("algos: alreadyKept (%d) and target (%d) must be ≥ 0", alreadyKept, target)
	}
	stats, err := ComputeGroupStats(scores, groups)
	if err != nil {
		return DynamicSamplingResult{}, err
	}
	r := DynamicSamplingResult{Kept: []int{}}
	for j, s := range stats {
		if s.Constant && s.Size > 1 {
			r.ZeroVarianceCount++
			continue
		}
		r.Kept = append(r.Kept, j)
	}
	r.NeedGroups = max(0, target-alreadyKept-len(r.Kept))
	return r, nil
}
