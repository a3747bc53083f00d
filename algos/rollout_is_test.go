package algos

import (
	"math"
	"strings"
	"testing"
)

// isBatch: log ρ = old − sampler is ln 3, ln ½, 0 on the first sequence
// (its fourth token out of mask), ln 1.5, ln 1e-5 on the second (a
// catastrophic token for V = 1e-4), and the third has no trained token. The
// first row's sampler log-probs are 0 so that its log-ratios are exact
// (ln ½ sits on the default lower bound 1/U for U = 2).
func isBatch() (old, sampler [][]float64, mask [][]bool) {
	old = [][]float64{{math.Log(3), math.Log(0.5), 0, 99}, {math.Log(1.5) - 2, math.Log(1e-5) - 2}, {7}}
	sampler = [][]float64{{0, 0, 0, -99}, {-2, -2}, {-7}}
	mask = [][]bool{b(1, 1, 1, 0), b(1, 1), b(0)}
	return old, sampler, mask
}

// TestRolloutISWeightsByHand: weights and metrics of each level and mode,
// computed by hand following verl's compute_rollout_importance_weights and
// compute_is_metrics (mismatch_helper.py, October 2025): metrics from the
// safety-clamped weights before truncation or masking, std and ESS from
// weights clamped to [L, U], the veto applied after the mode.
func TestRolloutISWeightsByHand(t *testing.T) {
	old, sampler, mask := isBatch()
	cube := math.Cbrt(1.5)    // geometric weight of the first sequence: (3·½·1)^(1/3)
	root := math.Sqrt(1.5e-5) // and of the second: (1.5·1e-5)^(1/2)
	for _, c := range []struct {
		name string
		cfg  RolloutCorrection
		w    [][]float64
		want RolloutISResult
	}{
		{
			// ρ = 3, ½, 1 | 1.5, 1e-5: truncated at 2, the second sequence vetoed.
			// Clamped to [½, 2]: 2, ½, 1, 1.5, ½ (mean 1.1, mean square 1.55).
			name: "token truncate (TIS) with veto",
			cfg:  RolloutCorrection{Level: ISToken, Mode: ISTruncate, Threshold: 2, VetoThreshold: 1e-4},
			w:    [][]float64{{2, 0.5, 1, 0}, {0, 0}, {0}},
			want: RolloutISResult{Mode: ISTruncate, Mean: (3 + 0.5 + 1 + 1.5 + 1e-5) / 5, Max: 3, Min: 1e-5,
				Std: math.Sqrt(1.55 - 1.21), ESS: 1.21 / 1.55, FractionHigh: 0.2, FractionLow: 0.2,
				VetoFraction: 0.5, CatastrophicFraction: 0.2},
		},
		{
			// The same ratios masked to [½, 2] (½ is kept: bounds are inclusive).
			name: "token mask (MIS) with veto",
			cfg:  RolloutCorrection{Level: ISToken, Mode: ISMask, Threshold: 2, VetoThreshold: 1e-4},
			w:    [][]float64{{0, 0.5, 1, 0}, {0, 0}, {0}},
			want: RolloutISResult{Mode: ISMask, Mean: (3 + 0.5 + 1 + 1.5 + 1e-5) / 5, Max: 3, Min: 1e-5,
				Std: math.Sqrt(1.55 - 1.21), ESS: 1.21 / 1.55, FractionHigh: 0.2, FractionLow: 0.2,
				VetoFraction: 0.5, CatastrophicFraction: 0.2, MaskedFraction: 0.4, SeqMaskedFraction: 1},
		},
		{
			// Products 1.5 and 1.5e-5, no veto; fractions over sequences. Clamped: 1.5 ×3, ½ ×2.
			name: "sequence truncate",
			cfg:  RolloutCorrection{Level: ISSequence, Mode: ISTruncate, Threshold: 2},
			w:    [][]float64{{1.5, 1.5, 1.5, 0}, {1.5e-5, 1.5e-5}, {0}},
			want: RolloutISResult{Mode: ISTruncate, Mean: (4.5 + 3e-5) / 5, Max: 1.5, Min: 1.5e-5,
				Std: math.Sqrt(1.45 - 1.21), ESS: 1.21 / 1.45, FractionLow: 0.5, CatastrophicFraction: 0},
		},
		{
			// Geometric means 1.5^(1/3) and (1.5e-5)^(1/2); the second is masked; fractions over tokens.
			name: "geometric mask",
			cfg:  RolloutCorrection{Level: ISGeometric, Mode: ISMask, Threshold: 2, ThresholdLower: 0.5},
			w:    [][]float64{{cube, cube, cube, 0}, {0, 0}, {0}},
			want: func() RolloutISResult {
				mc := (3*cube + 1) / 5
				mc2 := (3*cube*cube + 0.5) / 5
				return RolloutISResult{Mode: ISMask, Mean: (3*cube + 2*root) / 5, Max: cube, Min: root,
					Std: math.Sqrt(mc2 - mc*mc), ESS: mc * mc / mc2, FractionLow: 0.4,
					MaskedFraction: 0.4, SeqMaskedFraction: 0.5}
			}(),
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := RolloutISWeights(c.cfg, old, sampler, mask)
			mustNil(t, err)
			approxRows(t, "weights", r.Weights, c.w)
			got, want := r, c.want
			got.Weights = nil
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"mean", got.Mean, want.Mean}, {"max", got.Max, want.Max}, {"min", got.Min, want.Min},
				{"std", got.Std, want.Std}, {"ess", got.ESS, want.ESS},
				{"fraction_high", got.FractionHigh, want.FractionHigh}, {"fraction_low", got.FractionLow, want.FractionLow},
				{"veto", got.VetoFraction, want.VetoFraction}, {"catastrophic", got.CatastrophicFraction, want.CatastrophicFraction},
				{"masked", got.MaskedFraction, want.MaskedFraction}, {"seq_masked", got.SeqMaskedFraction, want.SeqMaskedFraction},
			} {
				approx(t, f.name, f.got, f.want)
			}
			if got.Mode != want.Mode {
				t.Errorf("mode %q", got.Mode)
			}
		})
	}
}

// TestTISMISIcePop: the named corrections are the token-level modes
// without a veto; IcePop keeps ratios in [½, 5] at their value.
func TestTISMISIcePop(t *testing.T) {
	logs := func(xs ...float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = math.Log(x)
		}
		return out
	}
	old := [][]float64{logs(6, 0.4, 2, 5, 0.5, 1e-6)}
	sampler := [][]float64{{0, 0, 0, 0, 0, 0}}
	mask := [][]bool{b(1, 1, 1, 1, 1, 1)}
	for _, c := range []struct {
		name string
		cfg  RolloutCorrection
		want []float64
	}{
		{"TIS(2)", TIS(2), []float64{2, 0.4, 2, 2, 0.5, 1e-6}},
		{"MIS(0.5, 4)", MIS(0.5, 4), []float64{0, 0, 2, 0, 0.5, 0}},
		{"IcePop", IcePop(), []float64{0, 0, 2, 5, 0.5, 0}},
	} {
		r, err := RolloutISWeights(c.cfg, old, sampler, mask)
		mustNil(t, err)
		approxSlice(t, c.name, r.Weights[0], c.want)
		if r.VetoFraction != 0 {
			t.Errorf("%s vetoed", c.name)
		}
	}
	if c := IcePop(); c.Level != ISToken || c.Mode != ISMask || c.ThresholdLower != 0.5 || c.Threshold != 5 || c.VetoThreshold != 0 {
		t.Errorf("IcePop() = %+v", c)
	}
}

// TestRolloutISEdges: the safety clamp at e^20, an empty batch, equal
// log-probs (every weight exactly 1) and the metric names.
func TestRolloutISEdges(t *testing.T) {
	mask := [][]bool{b(1, 1)}
	r, err := RolloutISWeights(RolloutCorrection{Level: ISSequence, Mode: ISTruncate, Threshold: 1e12},
		[][]float64{{15, 15}}, [][]float64{{0, 0}}, mask)
	mustNil(t, err)
	approx(t, "clamped weight", r.Weights[0][0]/math.Exp(20), 1)
	approx(t, "max", r.Max/math.Exp(20), 1)

	r, err = RolloutISWeights(TIS(2), [][]float64{{1}}, [][]float64{{2}}, [][]bool{b(0)})
	mustNil(t, err)
	if r.Mean != 0 || r.Max != 0 || r.Min != 0 || r.ESS != 0 || r.Weights[0][0] != 0 {
		t.Errorf("empty batch: %+v", r)
	}

	lp := [][]float64{{-0.3, -2.5}}
	for _, lvl := range []ISLevel{ISToken, ISSequence, ISGeometric} {
		r, err := RolloutISWeights(RolloutCorrection{Level: lvl, Mode: ISMask, Threshold: 2, VetoThreshold: 1e-4}, lp, lp, mask)
		mustNil(t, err)
		if r.Weights[0][0] != 1 || r.Weights[0][1] != 1 || r.Mean != 1 || r.Std != 0 || r.ESS != 1 {
			t.Errorf("%s on equal log-probs: %+v", lvl, r)
		}
	}

	trunc, _ := RolloutISWeights(TIS(2), lp, lp, mask)
	if _, ok := trunc.Metrics()["mismatch/rollout_is_masked_fraction"]; ok || len(trunc.Metrics()) != 9 {
		t.Errorf("truncate metrics %v", trunc.Metrics())
	}
	masked, _ := RolloutISWeights(IcePop(), lp, lp, mask)
	m := masked.Metrics()
	for _, k := range []string{"mean", "max", "min", "std", "eff_sample_size", "ratio_fraction_high", "ratio_fraction_low",
		"veto_fraction", "catastrophic_token_fraction", "masked_fraction", "seq_masked_fraction"} {
		if _, ok := m["mismatch/rollout_is_"+k]; !ok {
			t.Errorf("no mismatch/rollout_is_%s in %v", k, m)
		}
	}
}

// TestRolloutISValidate: every bad setting is an error naming its key.
func TestRolloutISValidate(t *testing.T) {
	old, sampler, mask := isBatch()
	ok := RolloutCorrection{Level: ISToken, Mode: ISTruncate, Threshold: 2, VetoThreshold: 1e-4}
	mustNil(t, ok.Validate())
	for _, c := range []struct {
		key string
		fix func(*RolloutCorrection)
	}{
		{"rollout_is_level", func(c *RolloutCorrection) { c.Level = "seq" }},
		{"rollout_is_mode", func(c *RolloutCorrection) { c.Mode = "clip" }},
		{"rollout_is_threshold", func(c *RolloutCorrection) { c.Threshold = 0 }},
		{"rollout_is_threshold", func(c *RolloutCorrection) { c.Threshold = math.Inf(1) }},
		{"rollout_is_threshold_lower", func(c *RolloutCorrection) { c.ThresholdLower = 3 }},
		{"rollout_is_threshold_lower", func(c *RolloutCorrection) { c.ThresholdLower = -1 }},
		{"rollout_is_threshold_lower", func(c *RolloutCorrection) { c.Threshold = 0.5 }}, // 1/U = 2 > U
		{"rollout_is_veto_threshold", func(c *RolloutCorrection) { c.VetoThreshold = 1 }},
		{"rollout_is_veto_threshold", func(c *RolloutCorrection) { c.VetoThreshold = math.NaN() }},
	} {
		cfg := ok
		c.fix(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%+v: error %v, want one naming %s", cfg, err, c.key)
		}
		if _, err := RolloutISWeights(cfg, old, sampler, mask); err == nil {
			t.Errorf("%+v accepted by RolloutISWeights", cfg)
		}
	}
	_, err := RolloutISWeights(ok, old, sampler[:2], mask)
	wantErr(t, "missing sampler row", err)
	bad := [][]float64{{0, math.Inf(-1), 0, 0}, {0, 0}, {0}}
	_, err = RolloutISWeights(ok, old, bad, mask)
	wantErr(t, "-Inf sampler log-prob", err)
}
