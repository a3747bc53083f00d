package algos

import (
	"fmt"
	"math"
	"sort"
)

// Rollout filtering: keep or drop whole groups by a per-group score, RAGEN's
// StarPO-S (V1) and SNR-aware (RAGEN-2) filters (ragen/trainer/rollout_filter.py).
//
// Score per group g with episode scores R_{g,1..K}:
//
//	reward_variance  (default): std_g = sqrt(Σ(R − mean_g)²/(K − 1))   unbiased STD, despite the name
//	reward_var:                 std_g²                                 (the true unbiased variance; agentrl addition)
//	reward:                     mean_g
//	reward_sum:                 Σ R
//
// A group of one episode has std 0 here (torch gives NaN).
//
// Selection (SelectGroups), on the candidate groups: all groups, or with
// IncludeZero = false only those with |score| > 1e-10. Type "largest"
// prefers high scores, "smallest" low ones.
//
//	top_p, Value ≥ 1:  keep every candidate.
//	top_p, linear:     sort candidates (desc for largest, asc for smallest);
//	                   threshold = p·Σ scores − eps (eps = SelectionEps, 0.01);
//	                   walk the sorted list: stop once cum ≥ threshold, stop at a
//	                   score ≤ 0, else add it; keep the walked prefix if
//	                   cum ≥ threshold, otherwise keep NOTHING.
//	top_p, softmax:    q = softmax(scores) (of −scores for smallest), sorted desc;
//	                   k = searchsorted_left(cumsum(q), p) + 1 = #{cumsum < p} + 1,
//	                   capped at the candidate count; keep the k most probable.
//	top_k:             k = max(1, min(int(Value·numGroups), #candidates)) best
//	                   (StarPO-S: 0.25, largest); int() truncates like Python.
//	top_k_abs:         k = max(1, min(int(Value), #candidates)) best.
//	min_p:             largest: keep score ≥ Value·max − 1e-10;
//	                   smallest: keep score ≤ min/(Value + 1e-10) + 1e-10.
//
// Ties are broken by group index (lower first); torch's sort/topk leave that
// order unspecified. Kept groups are returned in ascending index order.
//
// Metrics (FilterResult.Metrics), RAGEN names unless marked (+):
//
//	rollout/in_group_reward_{std,max,mean,sum}          mean over all groups
//	rollout/chosen_in_group_reward_{std,max,mean,sum}   mean over kept groups (0 if none)
//	rollout/in_group_{std,max,mean}, rollout/chosen_in_group_{std,max,mean}   same numbers, base names
//	rollout/filter_kept_count, rollout/filter_kept_ratio (kept / all groups)
//	rollout/filter_zero_count                           groups with |score| ≤ 1e-10
//	rollout/filter_zero_variance_count (+)              groups whose episodes all scored the same
//	rollout/filter_kept_score_mass (+)                  Σ kept scores / Σ all scores (0 if Σ = 0)
//	rollout/empty_after_filter                          1 if nothing was kept
//	rollout/in_group_reward_var (+)                     mean unbiased variance

// FilterStrategy is rollout_filter_strategy.
type FilterStrategy string

// The filter strategies.
const (
	StrategyTopP    FilterStrategy = "top_p"
	StrategyTopK    FilterStrategy = "top_k"
	StrategyTopKAbs FilterStrategy = "top_k_abs"
	StrategyMinP    FilterStrategy = "min_p"
	// StrategyPercentileRange keeps the groups ranked in
	// [percentile_low, percentile_high) (filter_percentile.go).
	StrategyPercentileRange FilterStrategy = "percentile_range"
	// StrategyWithinGroup keeps every group but only the value·G episodes
	// of each whose scores vary the most (filter_within.go); it selects
	// episodes, so FilterGroups keeps every group and the caller applies
	// WithinGroupSelect.
	StrategyWithinGroup FilterStrategy = "within_group"
)

// FilterType is rollout_filter_type.
type FilterType string

// The filter types.
const (
	Largest  FilterType = "largest"
	Smallest FilterType = "smallest"
)

// TopPMode is rollout_filter_top_p_prob_mode.
type TopPMode string

// The top-p modes.
const (
	TopPLinear  TopPMode = "linear"
	TopPSoftmax TopPMode = "softmax"
)

// FilterMetric is rollout_filter_metric: the per-group score.
type FilterMetric string

// The group scores.
const (
	MetricRewardStd  FilterMetric = "reward_variance" // unbiased std (RAGEN's name)
	MetricRewardVar  FilterMetric = "reward_var"      // unbiased variance
	MetricRewardMean FilterMetric = "reward"
	MetricRewardSum  FilterMetric = "reward_sum"
)

// zeroTol is RAGEN's |score| ≤ 1e-10 "zero" test.
const zeroTol = 1e-10

// FilterConfig configures a rollout filter.
type FilterConfig struct {
	Strategy     FilterStrategy `json:"strategy" yaml:"strategy"`
	Value        float64        `json:"value" yaml:"value"`
	Type         FilterType     `json:"type" yaml:"type"`
	Metric       FilterMetric   `json:"metric" yaml:"metric"`
	IncludeZero  bool           `json:"include_zero" yaml:"include_zero"`
	TopPMode     TopPMode       `json:"top_p_prob_mode" yaml:"top_p_prob_mode"`
	SelectionEps float64        `json:"selection_eps" yaml:"selection_eps"`
	// PercentileLow and PercentileHigh bound percentile_range's ranks.
	PercentileLow  float64 `json:"percentile_low" yaml:"percentile_low"`
	PercentileHigh float64 `json:"percentile_high" yaml:"percentile_high"`
}

// DefaultFilterConfig is RAGEN's base.yaml: top_p 1.0 (no filtering),
// largest, reward_variance, include_zero, linear, eps 0.01.
func DefaultFilterConfig() FilterConfig {
	return FilterConfig{Strategy: StrategyTopP, Value: 1, Type: Largest, Metric: MetricRewardStd,
		IncludeZero: true, TopPMode: TopPLinear, SelectionEps: 0.01, PercentileLow: 0, PercentileHigh: 1}
}

// RecommendedFilterConfig is the README/guide recipe: top_p 0.9, linear,
// include_zero false, eps 0.01.
func RecommendedFilterConfig() FilterConfig {
	c := DefaultFilterConfig()
	c.Value, c.IncludeZero = 0.9, false
	return c
}

// MainTableFilterConfig is what the RAGEN-2 main-table scripts ran: top_p 0.9,
// softmax, include_zero true.
func MainTableFilterConfig() FilterConfig {
	c := DefaultFilterConfig()
	c.Value, c.TopPMode = 0.9, TopPSoftmax
	return c
}

// StarPOSFilterConfig is RAGEN V1's StarPO-S: keep the top 25% of groups by
// in-group reward std.
func StarPOSFilterConfig() FilterConfig {
	c := DefaultFilterConfig()
	c.Strategy, c.Value = StrategyTopK, 0.25
	return c
}

// IsNoOp reports whether the filter keeps every group whatever the scores
// (top_p ≥ 1 with include_zero), RAGEN's untouched-batch path.
func (c FilterConfig) IsNoOp() bool {
	return c.Strategy == StrategyTopP && c.Value >= 1 && c.IncludeZero
}

// Validate checks the configuration.
func (c FilterConfig) Validate() error {
	switch c.Strategy {
	case StrategyTopP, StrategyTopK, StrategyTopKAbs, StrategyMinP:
	case StrategyPercentileRange:
		if !(c.PercentileLow >= 0 && c.PercentileLow < c.PercentileHigh && c.PercentileHigh <= 1) {
			return fmt.Errorf("algos: percentile_range needs 0 ≤ percentile_low < percentile_high ≤ 1, got %v, %v", c.PercentileLow, c.PercentileHigh)
		}
	case StrategyWithinGroup:
		if !(c.Value > 0 && c.Value <= 1) {
			return fmt.Errorf("algos: within_group's value is the share of each group kept, in (0, 1], got %v", c.Value)
		}
	default:
		return fmt.Errorf("algos: unknown filter strategy %q", string(c.Strategy))
	}
	switch c.Type {
	case Largest, Smallest:
	default:
		return fmt.Errorf("algos: unknown filter type %q (want largest or smallest)", string(c.Type))
	}
	switch c.Metric {
	case MetricRewardStd, MetricRewardVar, MetricRewardMean, MetricRewardSum:
	default:
		return fmt.Errorf("algos: unknown filter metric %q", string(c.Metric))
	}
	if c.Strategy == StrategyTopP {
		switch c.TopPMode {
		case TopPLinear, TopPSoftmax:
		default:
			return fmt.Errorf("algos: unknown top_p_prob_mode %q (want linear or softmax)", string(c.TopPMode))
		}
	}
	if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) || c.Value < 0 {
		return fmt.Errorf("algos: filter value must be finite and ≥ 0, got %v", c.Value)
	}
	if math.IsNaN(c.SelectionEps) || math.IsInf(c.SelectionEps, 0) {
		return fmt.Errorf("algos: selection_eps is %v", c.SelectionEps)
	}
	return nil
}

// GroupStats are the statistics of one group's episode scores.
type GroupStats struct {
	Size int     `json:"size"`
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"` // unbiased; 0 for a single episode
	Var  float64 `json:"var"` // unbiased; 0 for a single episode
	Max  float64 `json:"max"`
	Sum  float64 `json:"sum"`
	// Constant is true when every episode scored exactly the same (zero
	// variance, tested without rounding).
	Constant bool `json:"constant"`
}

// ComputeGroupStats returns the statistics of every group.
func ComputeGroupStats(scores []float64, groups Groups) ([]GroupStats, error) {
	if err := checkScores(scores, groups); err != nil {
		return nil, err
	}
	out := make([]GroupStats, len(groups))
	for j, members := range groups {
		vs := values(scores, members)
		s := GroupStats{Size: len(vs), Mean: mean(vs), Var: unbiasedVar(vs), Max: vs[0], Constant: true}
		s.Std = math.Sqrt(s.Var)
		for _, v := range vs {
			s.Sum += v
			s.Max = math.Max(s.Max, v)
			if v != vs[0] {
				s.Constant = false
			}
		}
		out[j] = s
	}
	return out, nil
}

// score returns the selection score of a group under the metric.
func (m FilterMetric) score(s GroupStats) float64 {
	switch m {
	case MetricRewardVar:
		return s.Var
	case MetricRewardMean:
		return s.Mean
	case MetricRewardSum:
		return s.Sum
	}
	return s.Std
}

// FilterResult is the outcome of one filtering step.
type FilterResult struct {
	Kept              []int        `json:"kept"`   // kept group indices, ascending
	Scores            []float64    `json:"scores"` // selection score of every group
	Stats             []GroupStats `json:"stats"`  // per-group statistics
	NumGroups         int          `json:"num_groups"`
	KeptCount         int          `json:"kept_count"`
	KeptRatio         float64      `json:"kept_ratio"`
	ZeroCount         int          `json:"zero_count"`          // |score| ≤ 1e-10
	ZeroVarianceCount int          `json:"zero_variance_count"` // constant groups
	// ScoreMassKept is Σ kept scores / Σ all scores (0 when Σ all = 0).
	ScoreMassKept float64 `json:"score_mass_kept"`
	Empty         bool    `json:"empty"` // nothing kept: RAGEN skips the step
}

// FilterGroups scores every group and selects the groups to keep.
func FilterGroups(cfg FilterConfig, scores []float64, groups Groups) (FilterResult, error) {
	if err := cfg.Validate(); err != nil {
		return FilterResult{}, err
	}
	stats, err := ComputeGroupStats(scores, groups)
	if err != nil {
		return FilterResult{}, err
	}
	r := FilterResult{Stats: stats, NumGroups: len(groups), Scores: make([]float64, len(groups))}
	for j, s := range stats {
		r.Scores[j] = cfg.Metric.score(s)
		if math.IsNaN(r.Scores[j]) || math.IsInf(r.Scores[j], 0) {
			return FilterResult{}, fmt.Errorf("algos: group %d score is %v", j, r.Scores[j])
		}
		if math.Abs(r.Scores[j]) <= zeroTol {
			r.ZeroCount++
		}
		if s.Constant {
			r.ZeroVarianceCount++
		}
	}
	r.Kept, err = SelectGroups(cfg, r.Scores)
	if err != nil {
		return FilterResult{}, err
	}
	r.KeptCount = len(r.Kept)
	r.KeptRatio = float64(r.KeptCount) / float64(r.NumGroups)
	r.Empty = r.KeptCount == 0
	total, kept := 0.0, 0.0
	for _, s := range r.Scores {
		total += s
	}
	for _, j := range r.Kept {
		kept += r.Scores[j]
	}
	if total != 0 {
		r.ScoreMassKept = kept / total
	}
	return r, nil
}

// SelectGroups applies the selection rule to per-group scores and returns the
// kept group indices in ascending order.
func SelectGroups(cfg FilterConfig, scores []float64) ([]int, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(scores) == 0 {
		return nil, fmt.Errorf("algos: no groups to filter")
	}
	if err := checkFinite("group scores", scores); err != nil {
		return nil, err
	}
	var cand []int
	for j, s := range scores {
		// within_group keeps every group, as the reference does.
		if cfg.IncludeZero || cfg.Strategy == StrategyWithinGroup || math.Abs(s) > zeroTol {
			cand = append(cand, j)
		}
	}
	if len(cand) == 0 {
		return []int{}, nil
	}
	var kept []int
	switch cfg.Strategy {
	case StrategyTopP:
		switch {
		case cfg.Value >= 1:
			kept = cand
		case cfg.TopPMode == TopPSoftmax:
			kept = topPSoftmax(scores, cand, cfg.Value, cfg.Type)
		default:
			kept = topPLinear(scores, cand, cfg.Value, cfg.SelectionEps, cfg.Type)
		}
	case StrategyTopK:
		kept = topK(scores, cand, truncCount(cfg.Value*float64(len(scores)), len(cand)), cfg.Type)
	case StrategyTopKAbs:
		kept = topK(scores, cand, truncCount(cfg.Value, len(cand)), cfg.Type)
	case StrategyMinP:
		kept = minP(scores, cand, cfg.Value, cfg.Type)
	case StrategyPercentileRange:
		kept = percentileRange(scores, cand, cfg.PercentileLow, cfg.PercentileHigh, cfg.Type)
	case StrategyWithinGroup:
		kept = cand // episodes are chosen inside the groups (WithinGroupSelect)
	}
	out := append([]int{}, kept...)
	sort.Ints(out)
	return out, nil
}

// truncCount is Python's int(x) for x ≥ 0, saturated at limit (so huge
// values cannot overflow the conversion).
func truncCount(x float64, limit int) int {
	if x >= float64(limit) {
		return limit
	}
	return int(x)
}

// sortedCandidates returns cand ordered best first (by score desc for
// largest, asc for smallest), ties by index.
func sortedCandidates(scores []float64, cand []int, typ FilterType) []int {
	s := append([]int{}, cand...)
	sort.SliceStable(s, func(a, b int) bool {
		if typ == Smallest {
			return scores[s[a]] < scores[s[b]]
		}
		return scores[s[a]] > scores[s[b]]
	})
	return s
}

// Metrics returns the RAGEN-named filter metrics (see the file comment).
func (r FilterResult) Metrics() map[string]float64 {
	all := func(f func(GroupStats) float64) float64 {
		s := 0.0
		for _, g := range r.Stats {
			s += f(g)
		}
		return s / float64(max(len(r.Stats), 1))
	}
	chosen := func(f func(GroupStats) float64) float64 {
		if len(r.Kept) == 0 {
			return 0
		}
		s := 0.0
		for _, j := range r.Kept {
			s += f(r.Stats[j])
		}
		return s / float64(len(r.Kept))
	}
	fields := map[string]func(GroupStats) float64{
		"std":  func(g GroupStats) float64 { return g.Std },
		"max":  func(g GroupStats) float64 { return g.Max },
		"mean": func(g GroupStats) float64 { return g.Mean },
		"sum":  func(g GroupStats) float64 { return g.Sum },
	}
	m := map[string]float64{}
	for name, f := range fields {
		m["rollout/in_group_reward_"+name] = all(f)
		m["rollout/chosen_in_group_reward_"+name] = chosen(f)
		if name != "sum" {
			m["rollout/in_group_"+name] = all(f)
			m["rollout/chosen_in_group_"+name] = chosen(f)
		}
	}
	m["rollout/in_group_reward_var"] = all(func(g GroupStats) float64 { return g.Var })
	m["rollout/filter_kept_count"] = float64(r.KeptCount)
	m["rollout/filter_kept_ratio"] = r.KeptRatio
	m["rollout/filter_zero_count"] = float64(r.ZeroCount)
	m["rollout/filter_zero_variance_count"] = float64(r.ZeroVarianceCount)
	m["rollout/filter_kept_score_mass"] = r.ScoreMassKept
	m["rollout/empty_after_filter"] = 0
	if r.Empty {
		m["rollout/empty_after_filter"] = 1
	}
	return m
}

// MeanInGroupStd is rollout/in_group_reward_std: the mean over all groups of
// the unbiased in-group std, the quantity the reward-variance early stop
// watches.
func (r FilterResult) MeanInGroupStd() float64 {
	s := 0.0
	for _, g := range r.Stats {
		s += g.Std
	}
	return s / float64(max(len(r.Stats), 1))
}
