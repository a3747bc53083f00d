package algos

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// fourGroups: contiguous groups of 4 with stds {0, sqrt(1/3), 0, 5}.
//
//	g0 {0,0,0,0}   mean 0    std 0
//	g1 {0,1,0,1}   mean 0.5  std sqrt(4·0.25/3)
//	g2 {1,1,1,1}   mean 1    std 0
//	g3 {0,10,0,0}  mean 2.5  var (3·6.25 + 56.25)/3 = 25, std 5
var fourGroups = []float64{0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0, 10, 0, 0}

func sel(t *testing.T, cfg FilterConfig, scores []float64) []int {
	t.Helper()
	k, err := SelectGroups(cfg, scores)
	mustNil(t, err)
	return k
}

func TestGroupStats(t *testing.T) {
	g, _ := ContiguousGroups(16, 4)
	st, err := ComputeGroupStats(fourGroups, g)
	mustNil(t, err)
	approx(t, "std1", st[1].Std, math.Sqrt(1.0/3))
	approx(t, "var3", st[3].Var, 25)
	approx(t, "std3", st[3].Std, 5)
	approx(t, "mean3", st[3].Mean, 2.5)
	approx(t, "max3", st[3].Max, 10)
	approx(t, "sum1", st[1].Sum, 2)
	if !st[0].Constant || st[1].Constant || !st[2].Constant || st[3].Constant {
		t.Errorf("constant flags %+v", st)
	}
	// A single-episode group has std 0 (torch: NaN).
	st, err = ComputeGroupStats([]float64{3}, Groups{{0}})
	mustNil(t, err)
	if st[0].Std != 0 || !st[0].Constant {
		t.Errorf("singleton %+v", st[0])
	}
}

func TestTopPLinear(t *testing.T) {
	cfg := RecommendedFilterConfig() // top_p 0.9, linear, include_zero false, eps 0.01
	scores := []float64{0.5, 3, 0, 1.5}
	// candidates {0.5, 3, 1.5}: Σ = 5, threshold 4.49: take 3 (3 < 4.49), 1.5 (4.5 ≥ 4.49), stop.
	if k := sel(t, cfg, scores); !equalInts(k, []int{1, 3}) {
		t.Errorf("p=0.9: %v", k)
	}
	cfg.Value = 0.5 // threshold 2.49: 3 is enough
	if k := sel(t, cfg, scores); !equalInts(k, []int{1}) {
		t.Errorf("p=0.5: %v", k)
	}
	// Tiny total: threshold 0.9·0.006 − 0.01 < 0 is met before taking any
	// group ⇒ keep nothing.
	cfg.Value = 0.9
	if k := sel(t, cfg, []float64{0.005, 0.001}); len(k) != 0 {
		t.Errorf("tiny total: %v", k)
	}
	// All zero, include_zero false ⇒ no candidates ⇒ nothing.
	if k := sel(t, cfg, []float64{0, 0}); len(k) != 0 {
		t.Errorf("all zero: %v", k)
	}
	// Stop at a score ≤ 0: mean-reward scores {2, −1, −1}: Σ = 0, threshold
	// −0.01 is met immediately ⇒ empty; with {3, 0, −2} (include_zero):
	// Σ = 1, threshold 0.89, take 3 ⇒ {0}.
	cfg.IncludeZero = true
	if k := sel(t, cfg, []float64{3, 0, -2}); !equalInts(k, []int{0}) {
		t.Errorf("negative scores: %v", k)
	}
	// p ≥ 1 keeps every candidate: all with include_zero, non-zero without.
	cfg.Value = 1
	if k := sel(t, cfg, scores); !equalInts(k, []int{0, 1, 2, 3}) {
		t.Errorf("p=1 include_zero: %v", k)
	}
	if !cfg.IsNoOp() {
		t.Error("p=1 with include_zero should be a no-op")
	}
	cfg.IncludeZero = false
	if k := sel(t, cfg, scores); !equalInts(k, []int{0, 1, 3}) {
		t.Errorf("p=1 without zeros: %v", k)
	}
	// smallest: ascending {0.5, 1.5, 3}; p = 0.3 ⇒ threshold 1.49: 0.5, then 2.0 ≥ 1.49.
	cfg.Value, cfg.Type = 0.3, Smallest
	if k := sel(t, cfg, []float64{0.5, 3, 1.5}); !equalInts(k, []int{0, 2}) {
		t.Errorf("smallest: %v", k)
	}
}

func TestTopPSoftmax(t *testing.T) {
	cfg := MainTableFilterConfig() // top_p 0.9 softmax include_zero
	ln := math.Log
	// softmax(ln 1, ln 2, ln 3, ln 4) = {.1,.2,.3,.4}; sorted C = {.4,.7,.9,1}.
	scores := []float64{ln(1), ln(2), ln(3), ln(4)}
	for _, tc := range []struct {
		p    float64
		want []int
	}{
		{0.1, []int{3}},           // #{C < 0.1} = 0 ⇒ k = 1
		{0.5, []int{2, 3}},        // #{C < 0.5} = 1 ⇒ k = 2
		{0.85, []int{1, 2, 3}},    // k = 3
		{0.95, []int{0, 1, 2, 3}}, // k = 4
	} {
		cfg.Value = tc.p
		if k := sel(t, cfg, scores); !equalInts(k, tc.want) {
			t.Errorf("p=%v: %v, want %v", tc.p, k, tc.want)
		}
	}
	// searchsorted's left side: equal scores give C = {.25,.5,.75,1} exactly;
	// p = 0.5 sits on C_2, so #{C < 0.5} = 1 and k = 2 (the right side would give 3).
	cfg.Value = 0.5
	if k := sel(t, cfg, []float64{7, 7, 7, 7}); !equalInts(k, []int{0, 1}) {
		t.Errorf("boundary: %v", k)
	}
	// smallest: softmax(−ln s) ∝ {1, 1/2, 1/3, 1/4} = {.48,.24,.16,.12}; p = 0.5 ⇒ k = 2.
	cfg.Type = Smallest
	if k := sel(t, cfg, scores); !equalInts(k, []int{0, 1}) {
		t.Errorf("smallest: %v", k)
	}
}

func TestTopKAndMinP(t *testing.T) {
	scores := []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7}
	cfg := StarPOSFilterConfig() // top_k 0.25 ⇒ int(0.25·8) = 2
	if k := sel(t, cfg, scores); !equalInts(k, []int{6, 7}) {
		t.Errorf("top_k: %v", k)
	}
	cfg.Type = Smallest
	if k := sel(t, cfg, scores); !equalInts(k, []int{0, 1}) {
		t.Errorf("top_k smallest: %v", k)
	}
	cfg.Type, cfg.Value = Largest, 0.01 // int(0.08) = 0 ⇒ at least 1
	if k := sel(t, cfg, scores); !equalInts(k, []int{7}) {
		t.Errorf("top_k min 1: %v", k)
	}
	// k counts all groups but is capped at the candidates: 0.75·8 = 6, yet
	// only 2 groups are non-zero.
	cfg.Value, cfg.IncludeZero = 0.75, false
	if k := sel(t, cfg, []float64{0, 0, 0, 0, 0, 0, 1, 2}); !equalInts(k, []int{6, 7}) {
		t.Errorf("top_k capped: %v", k)
	}
	// Python int() truncation: 0.29·100 = 28.999999999999996 ⇒ 28.
	many := make([]float64, 100)
	for i := range many {
		many[i] = float64(i + 1)
	}
	cfg.Value = 0.29
	if k := sel(t, cfg, many); len(k) != 28 {
		t.Errorf("truncation: kept %d", len(k))
	}
	abs := FilterConfig{Strategy: StrategyTopKAbs, Value: 3, Type: Largest, Metric: MetricRewardStd, IncludeZero: true}
	if k := sel(t, abs, scores); !equalInts(k, []int{5, 6, 7}) {
		t.Errorf("top_k_abs: %v", k)
	}
	abs.Value = 1e300 // saturates at the candidate count
	if k := sel(t, abs, scores); len(k) != len(scores) {
		t.Errorf("huge top_k_abs kept %d", len(k))
	}
	abs.Value = 3
	// Ties broken by index.
	if k := sel(t, abs, []float64{1, 1, 1, 1, 1}); !equalInts(k, []int{0, 1, 2}) {
		t.Errorf("top_k_abs ties: %v", k)
	}
	minp := FilterConfig{Strategy: StrategyMinP, Value: 0.9, Type: Largest, Metric: MetricRewardStd, IncludeZero: true}
	if k := sel(t, minp, []float64{1, 2, 4, 3.9, 3.6}); !equalInts(k, []int{2, 3, 4}) { // ≥ 3.6 − 1e-10
		t.Errorf("min_p: %v", k)
	}
	// smallest: keep ≤ min/(value + 1e-10) + 1e-10. With value 0.5 the bound
	// is 1.9999999997, so a score of exactly 2 is dropped (RAGEN's tolerance
	// points the other way); with 0.4 the bound is 2.5.
	minp.Type, minp.Value = Smallest, 0.5
	if k := sel(t, minp, []float64{1, 2, 4, 3.9}); !equalInts(k, []int{0}) {
		t.Errorf("min_p smallest 0.5: %v", k)
	}
	minp.Value = 0.4
	if k := sel(t, minp, []float64{1, 2, 4, 3.9}); !equalInts(k, []int{0, 1}) {
		t.Errorf("min_p smallest 0.4: %v", k)
	}
}

func TestFilterGroupsMetrics(t *testing.T) {
	g, _ := ContiguousGroups(16, 4)
	r, err := FilterGroups(RecommendedFilterConfig(), fourGroups, g)
	mustNil(t, err)
	// stds {0, s1, 0, 5}, s1 = 0.57735; candidates {1, 3}; Σ = 5.57735;
	// threshold 0.9·Σ − 0.01 = 5.00962 > 5 ⇒ both candidates are needed.
	if !equalInts(r.Kept, []int{1, 3}) {
		t.Fatalf("kept %v", r.Kept)
	}
	s1 := math.Sqrt(1.0 / 3)
	m := r.Metrics()
	for name, want := range map[string]float64{
		"rollout/filter_kept_count":           2,
		"rollout/filter_kept_ratio":           0.5,
		"rollout/filter_zero_count":           2,
		"rollout/filter_zero_variance_count":  2,
		"rollout/filter_kept_score_mass":      1,
		"rollout/empty_after_filter":          0,
		"rollout/in_group_reward_std":         (s1 + 5) / 4,
		"rollout/in_group_std":                (s1 + 5) / 4,
		"rollout/in_group_reward_mean":        (0 + 0.5 + 1 + 2.5) / 4,
		"rollout/in_group_reward_max":         (0.0 + 1 + 1 + 10) / 4,
		"rollout/in_group_reward_sum":         (0.0 + 2 + 4 + 10) / 4,
		"rollout/in_group_reward_var":         (1.0/3 + 25) / 4,
		"rollout/chosen_in_group_reward_std":  (s1 + 5) / 2,
		"rollout/chosen_in_group_reward_mean": (0.5 + 2.5) / 2,
		"rollout/chosen_in_group_reward_max":  (1.0 + 10) / 2,
		"rollout/chosen_in_group_reward_sum":  (2.0 + 10) / 2,
		"rollout/chosen_in_group_mean":        1.5,
	} {
		got, ok := m[name]
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		approx(t, name, got, want)
	}
	if got := g.Members(r.Kept); !equalInts(got, []int{4, 5, 6, 7, 12, 13, 14, 15}) {
		t.Errorf("members %v", got)
	}

	// p = 0.8: threshold 0.8·Σ − 0.01 = 4.452 ⇒ the std-5 group alone.
	cfg := RecommendedFilterConfig()
	cfg.Value = 0.8
	r, err = FilterGroups(cfg, fourGroups, g)
	mustNil(t, err)
	if !equalInts(r.Kept, []int{3}) {
		t.Fatalf("p=0.8 kept %v", r.Kept)
	}
	approx(t, "mass", r.ScoreMassKept, 5/(5+s1))

	// Variance as the score changes the linear rule: {0, 1/3, 0, 25}, Σ =
	// 25.33, threshold 22.79: 25 alone suffices.
	cfg = RecommendedFilterConfig()
	cfg.Metric = MetricRewardVar
	r, err = FilterGroups(cfg, fourGroups, g)
	mustNil(t, err)
	approx(t, "var score", r.Scores[1], 1.0/3)
	if !equalInts(r.Kept, []int{3}) {
		t.Errorf("variance score kept %v", r.Kept)
	}

	// Default config keeps everything.
	r, err = FilterGroups(DefaultFilterConfig(), fourGroups, g)
	mustNil(t, err)
	if r.KeptCount != 4 || r.Empty {
		t.Errorf("default: %+v", r)
	}
	// Empty result.
	r, err = FilterGroups(RecommendedFilterConfig(), []float64{1, 1, 2, 2}, Groups{{0, 1}, {2, 3}})
	mustNil(t, err)
	if !r.Empty || r.Metrics()["rollout/empty_after_filter"] != 1 || r.Metrics()["rollout/chosen_in_group_reward_std"] != 0 {
		t.Errorf("empty: %+v", r)
	}
}

func TestFilterErrors(t *testing.T) {
	g := Groups{{0, 1}}
	_, err := FilterGroups(RecommendedFilterConfig(), []float64{1, math.NaN()}, g)
	wantErr(t, "NaN score", err)
	_, err = FilterGroups(RecommendedFilterConfig(), []float64{1, 2, 3}, g)
	wantErr(t, "uncovered", err)
	for _, mut := range []func(*FilterConfig){
		func(c *FilterConfig) { c.Strategy = "top_q" },
		func(c *FilterConfig) { c.Type = "middle" },
		func(c *FilterConfig) { c.TopPMode = "cubic" },
		func(c *FilterConfig) { c.Metric = "entropy" },
		func(c *FilterConfig) { c.Value = math.NaN() },
		func(c *FilterConfig) { c.Value = -1 },
	} {
		c := RecommendedFilterConfig()
		mut(&c)
		_, err := FilterGroups(c, []float64{1, 2}, g)
		wantErr(t, "bad config", err)
	}
	_, err = SelectGroups(RecommendedFilterConfig(), nil)
	wantErr(t, "no groups", err)
	_, err = SelectGroups(RecommendedFilterConfig(), []float64{math.Inf(1)})
	wantErr(t, "Inf score", err)
}

func TestDynamicSampling(t *testing.T) {
	g, _ := ContiguousGroups(16, 4)
	r, err := DynamicSampling(fourGroups, g, 0, 4)
	mustNil(t, err)
	if !equalInts(r.Kept, []int{1, 3}) || r.ZeroVarianceCount != 2 || r.NeedGroups != 2 {
		t.Errorf("%+v", r)
	}
	r, _ = DynamicSampling(fourGroups, g, 1, 4)
	if r.NeedGroups != 1 {
		t.Errorf("already kept: %+v", r)
	}
	r, _ = DynamicSampling(fourGroups, g, 5, 4)
	if r.NeedGroups != 0 {
		t.Errorf("over target: %+v", r)
	}
	// Single-episode groups are kept (verl's DAPO recipe).
	r, _ = DynamicSampling([]float64{1, 1, 0}, Groups{{0, 1}, {2}}, 0, 2)
	if !equalInts(r.Kept, []int{1}) || r.NeedGroups != 1 {
		t.Errorf("singleton: %+v", r)
	}
	// 0.1+0.2 style rounding must not hide a constant group.
	r, _ = DynamicSampling([]float64{0.3, 0.3, 0.3}, Groups{{0, 1, 2}}, 0, 1)
	if r.ZeroVarianceCount != 1 {
		t.Errorf("constant: %+v", r)
	}
	_, err = DynamicSampling(fourGroups, g, -1, 4)
	wantErr(t, "negative", err)
}

func TestEarlyStopEmptyStreak(t *testing.T) {
	e := NewEarlyStop(DefaultEarlyStopConfig())
	for i, empty := range []bool{true, true, false, true, true, true, true} {
		reason, err := e.Observe(empty, 1)
		mustNil(t, err)
		if reason != "" {
			t.Fatalf("stopped early at step %d", i)
		}
	}
	reason, _ := e.Observe(true, 0)
	if reason != StopEmptyFiltered || e.Metrics()["early_stopped/empty_filtered_steps"] != 1 ||
		e.Metrics()["rollout/consecutive_empty_after_filter_steps"] != 5 {
		t.Errorf("reason %q metrics %v", reason, e.Metrics())
	}
	_, err := NewEarlyStop(DefaultEarlyStopConfig()).Observe(false, math.NaN())
	wantErr(t, "NaN std", err)
}

func TestEarlyStopRewardVariance(t *testing.T) {
	run := func(e *EarlyStop, steps []float64) string {
		for _, v := range steps {
			empty := math.IsInf(v, -1) // −Inf marks an empty step in this table
			if empty {
				v = 0
			}
			r, err := e.Observe(empty, v)
			mustNil(t, err)
			if r != "" {
				return r
			}
		}
		return ""
	}
	warm := []float64{0.5, 1.5, 1, 1, 1, 1, 1, 1, 1, 1} // baseline 1
	low := []float64{0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05}
	empty := math.Inf(-1)

	e := NewEarlyStop(DefaultEarlyStopConfig())
	if r := run(e, append(append(append([]float64{}, warm...), low...), empty)); r != "" {
		t.Fatalf("9 low steps + an empty one stopped: %q", r)
	}
	approx(t, "baseline", e.Baseline, 1)
	// Checkpoint round trip in the middle of the streak.
	data, err := json.Marshal(e)
	mustNil(t, err)
	if strings.Contains(string(data), "patience") {
		t.Errorf("checkpointed counters hold settings: %s", data)
	}
	resumed := EarlyStop{Config: DefaultEarlyStopConfig()}
	mustNil(t, json.Unmarshal(data, &resumed))
	if r := run(&resumed, []float64{0.05}); r != StopRewardVariance {
		t.Errorf("10th low step: %q", r)
	}
	// A resumed run takes its settings from its own configuration: with the
	// variance stop off, the same counters do not stop it.
	off := EarlyStop{Config: DefaultEarlyStopConfig()}
	off.Config.Patience = 0
	mustNil(t, json.Unmarshal(data, &off))
	if r := run(&off, []float64{0.05, 0.05}); r != "" {
		t.Errorf("variance stop disabled on resume, still stopped: %q", r)
	}
	if r := run(e, []float64{0.05}); r != StopRewardVariance {
		t.Errorf("original: %q", r)
	}

	// A step at 0.1·baseline (not below) breaks the streak.
	e = NewEarlyStop(DefaultEarlyStopConfig())
	steps := append(append(append([]float64{}, warm...), low...), 0.1)
	steps = append(steps, low...)
	if r := run(e, steps); r != "" {
		t.Errorf("broken streak stopped: %q", r)
	}
	// Empty steps during warm-up do not count toward the baseline.
	e = NewEarlyStop(DefaultEarlyStopConfig())
	run(e, []float64{empty, 4, empty, 4})
	if e.HasBaseline || len(e.WarmupValues) != 2 {
		t.Errorf("warm-up %+v", e)
	}
}

func TestPercentileRange(t *testing.T) {
	// Eight groups, scores 8…1 at indices 0…7 (largest ranks index 0 first).
	scores := []float64{8, 7, 6, 5, 4, 3, 2, 1}
	cfg := DefaultFilterConfig()
	cfg.Strategy = StrategyPercentileRange
	for _, c := range []struct {
		low, high float64
		typ       FilterType
		want      []int
	}{
		{0, 0.25, Largest, []int{0, 1}},        // Q1: the highest-variance quartile
		{0.75, 1, Largest, []int{6, 7}},        // Q4: the lowest
		{0.25, 0.5, Largest, []int{2, 3}},      // Q2
		{0, 0.25, Smallest, []int{6, 7}},       // smallest ranks the lowest first
		{0.9, 1, Largest, []int{7}},            // round(7.2) = 7: one group
		{0.99, 1, Largest, []int{}},            // round(7.92) = 8: past the end, nothing (as Python's slice)
		{0.0625, 0.1875, Largest, []int{0, 1}}, // round(0.5) = 0 and round(1.5) = 2 (half to even): [0, 2)
	} {
		cfg.PercentileLow, cfg.PercentileHigh, cfg.Type = c.low, c.high, c.typ
		got, err := SelectGroups(cfg, scores)
		mustNil(t, err)
		if !equalInts(got, c.want) {
			t.Errorf("[%v, %v) %s: kept %v, want %v", c.low, c.high, c.typ, got, c.want)
		}
	}
	cfg.PercentileLow, cfg.PercentileHigh = 0.5, 0.5
	if cfg.Validate() == nil {
		t.Error("an empty range accepted")
	}
}

func TestMaxVarianceSubset(t *testing.T) {
	// Brute force over every subset of size k agrees with the bottom-j +
	// top-(k−j) search.
	scores := []float64{0.3, 10, -2, 4, 4, 7.5, 0, 1}
	for k := 1; k <= len(scores); k++ {
		got := MaxVarianceSubset(scores, k)
		if len(got) != k {
			t.Fatalf("k %d: %v", k, got)
		}
		best := -1.0
		for mask := 0; mask < 1<<len(scores); mask++ {
			var sel []float64
			for i := range scores {
				if mask&(1<<i) != 0 {
					sel = append(sel, scores[i])
				}
			}
			if len(sel) == k {
				best = math.Max(best, unbiasedVar(sel))
			}
		}
		approx(t, fmt.Sprintf("variance of the k=%d subset", k), unbiasedVar(values(scores, got)), best)
	}
}

func TestWithinGroupSelect(t *testing.T) {
	// Two groups of four: keep half of each; the zero-spread group stays.
	scores := []float64{0, 10, 5, 1, 3, 3, 3, 3}
	groups := Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}
	got, err := WithinGroupSelect(0.5, scores, groups)
	mustNil(t, err)
	if !equalInts(got[0], []int{0, 1}) || len(got[1]) != 2 {
		t.Errorf("kept %v", got)
	}
	cfg := DefaultFilterConfig()
	cfg.Strategy, cfg.Value, cfg.IncludeZero = StrategyWithinGroup, 0.5, false
	kept, err := SelectGroups(cfg, []float64{4.5, 0})
	mustNil(t, err)
	if !equalInts(kept, []int{0, 1}) {
		t.Errorf("within_group dropped a group: %v", kept)
	}
	if _, err := WithinGroupSelect(0, scores, groups); err == nil {
		t.Error("keep ratio 0 accepted")
	}
}
