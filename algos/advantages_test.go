package algos

import (
	"math"
	"testing"
)

func TestGAESkipsOutOfMaskTokens(t *testing.T) {
	// γ = 0.9, λ = 0.8; the middle token is an observation: its reward 5 and
	// value 100 must be ignored.
	//   t=2: δ = 1 + 0.9·0 − 0.2 = 0.8,  A = 0.8,  R = 1.0
	//   t=0: δ = 0 + 0.9·0.2 − 0.5 = −0.32,  A = −0.32 + 0.72·0.8 = 0.256,  R = 0.756
	rewards := [][]float64{{0, 5, 1}}
	values := [][]float64{{0.5, 100, 0.2}}
	mask := [][]bool{b(1, 0, 1)}
	adv, ret, err := GAEUnwhitened(rewards, values, mask, 0.9, 0.8)
	mustNil(t, err)
	approxRows(t, "adv", adv, [][]float64{{0.256, 0, 0.8}})
	approxRows(t, "returns", ret, [][]float64{{0.756, 0, 1.0}})

	// Whitened over the two in-mask tokens: μ = 0.528, σ² = 2·0.272²/1.
	wadv, wret, err := GAE(rewards, values, mask, 0.9, 0.8)
	mustNil(t, err)
	sd := math.Sqrt(0.147968 + 1e-8)
	approxRows(t, "whitened adv", wadv, [][]float64{{-0.272 / sd, 0, 0.272 / sd}})
	approxRows(t, "returns", wret, [][]float64{{0.756, 0, 1.0}})
}

func TestGAEGammaLambdaOneIsScoreMinusValue(t *testing.T) {
	// RAGEN's default: γ = λ = 1, score on the last token ⇒ A_t = R − V_t.
	rewards := [][]float64{{0, 0, 0, 2}, {0, 1}}
	values := [][]float64{{0.5, math.NaN(), 0.3, 0.1}, {0.25, 0.5}}
	mask := [][]bool{b(1, 0, 1, 1), b(1, 1)}
	adv, ret, err := GAEUnwhitened(rewards, values, mask, 1, 1)
	mustNil(t, err)
	approxRows(t, "adv", adv, [][]float64{{1.5, 0, 1.7, 1.9}, {0.75, 0.5}})
	approxRows(t, "returns", ret, [][]float64{{2, 0, 2, 2}, {1, 1}})
}

func TestGAEErrors(t *testing.T) {
	_, _, err := GAE([][]float64{{0, 1}}, [][]float64{{0, math.NaN()}}, [][]bool{b(1, 1)}, 1, 1)
	wantErr(t, "NaN value in mask", err)
	_, _, err = GAE([][]float64{{0, 1}}, [][]float64{{0}}, [][]bool{b(1, 1)}, 1, 1)
	wantErr(t, "ragged mismatch", err)
	_, _, err = GAE([][]float64{{0, 1}}, [][]float64{{0, 0}}, [][]bool{b(0, 1)}, 1, 1)
	wantErr(t, "whitening one token", err)
	_, _, err = GAE([][]float64{{0, 1}}, [][]float64{{0, 0}, {1}}, [][]bool{b(1, 1)}, 1, 1)
	wantErr(t, "row count", err)
}

func TestWhitenMaskedKeepMean(t *testing.T) {
	x := [][]float64{{1, 99, 3}}
	mask := [][]bool{b(1, 0, 1)}
	got, err := WhitenMasked(x, mask, false)
	mustNil(t, err)
	sd := math.Sqrt(2 + 1e-8) // mean 2, unbiased var (1+1)/1
	approxRows(t, "whiten", got, [][]float64{{-1/sd + 2, 0, 1/sd + 2}})
}

func TestGroupsConstructors(t *testing.T) {
	g := GroupsByID([]int{7, 7, 3, 7})
	if len(g) != 2 || !equalInts(g[0], []int{0, 1, 3}) || !equalInts(g[1], []int{2}) {
		t.Errorf("GroupsByID = %v", g)
	}
	c, err := ContiguousGroups(6, 3)
	mustNil(t, err)
	if len(c) != 2 || !equalInts(c[1], []int{3, 4, 5}) {
		t.Errorf("ContiguousGroups = %v", c)
	}
	_, err = ContiguousGroups(7, 3)
	wantErr(t, "indivisible", err)
	_, err = ContiguousGroups(6, 0)
	wantErr(t, "zero size", err)
	if got := g.Members([]int{1}); !equalInts(got, []int{2}) {
		t.Errorf("Members = %v", got)
	}
	if got := g.Members([]int{1, 0}); !equalInts(got, []int{0, 1, 2, 3}) {
		t.Errorf("Members = %v", got)
	}
}

func TestGRPOAndDrGRPO(t *testing.T) {
	// Group 0: {1,0,0,1}: mean 0.5, unbiased std sqrt(1/3). Group 1: a single
	// episode: mean 0, std 1.
	scores := []float64{1, 0, 0, 1, 5}
	groups := Groups{{0, 1, 2, 3}, {4}}
	sd := math.Sqrt(1.0/3) + 1e-6
	adv, err := GRPOAdvantages(scores, groups)
	mustNil(t, err)
	approxSlice(t, "GRPO", adv, []float64{0.5 / sd, -0.5 / sd, -0.5 / sd, 0.5 / sd, 5 / (1 + 1e-6)})
	dr, err := DrGRPOAdvantages(scores, groups)
	mustNil(t, err)
	approxSlice(t, "DrGRPO", dr, []float64{0.5, -0.5, -0.5, 0.5, 5})

	// Interleaved group ids.
	adv, err = GRPOAdvantages([]float64{2, 10, 4, 10}, GroupsByID([]string{"a", "b", "a", "b"}))
	mustNil(t, err)
	sd = math.Sqrt(2) + 1e-6 // {2,4}: mean 3, unbiased var 2
	approxSlice(t, "GRPO ids", adv, []float64{-1 / sd, 0, 1 / sd, 0})
}

func TestGroupAdvantageErrors(t *testing.T) {
	_, err := GRPOAdvantages([]float64{1, math.NaN()}, Groups{{0, 1}})
	wantErr(t, "NaN", err)
	_, err = GRPOAdvantages([]float64{1, 2}, Groups{{0}})
	wantErr(t, "uncovered", err)
	_, err = GRPOAdvantages([]float64{1, 2}, Groups{{0, 1}, {1}})
	wantErr(t, "duplicate", err)
	_, err = RLOOAdvantages([]float64{1, 2}, Groups{{0, 2}})
	wantErr(t, "out of range", err)
	_, err = DrGRPOAdvantages(nil, Groups{{0}})
	wantErr(t, "empty", err)
}

func TestRLOO(t *testing.T) {
	// {1,2,6}: A_i = R_i − mean of the others: 1−4, 2−3.5, 6−1.5. {7}: unchanged.
	adv, err := RLOOAdvantages([]float64{1, 2, 6, 7}, Groups{{0, 1, 2}, {3}})
	mustNil(t, err)
	approxSlice(t, "RLOO", adv, []float64{-3, -1.5, 4.5, 7})
}

func TestReinforcePlusPlus(t *testing.T) {
	// γ = 1. Row 0: mask {1,1,0}, reward 1 on token 1 ⇒ G = {1,1}.
	// Row 1: mask {1,0,1}, reward 3 on token 2; the observation token's 9 is
	// ignored and the return carries through ⇒ G = {3,·,3}.
	// In-mask G = {1,1,3,3}: μ = 2, unbiased σ² = 4/3.
	rewards := [][]float64{{0, 1, 0}, {0, 9, 3}}
	mask := [][]bool{b(1, 1, 0), b(1, 0, 1)}
	adv, ret, err := ReinforcePlusPlus(rewards, mask, 1)
	mustNil(t, err)
	approxRows(t, "returns", ret, [][]float64{{1, 1, 0}, {3, 0, 3}})
	a := 1 / math.Sqrt(4.0/3+1e-8)
	approxRows(t, "adv", adv, [][]float64{{-a, -a, 0}, {a, 0, a}})

	// The per-episode shortcut with token counts is the same whitening.
	seq, err := ReinforcePlusPlusOutcome([]float64{1, 3}, []int{2, 2})
	mustNil(t, err)
	approxSlice(t, "outcome", seq, []float64{-a, a})
	// Episode weights: {1,3}: μ = 2, σ² = 2.
	seq, err = ReinforcePlusPlusOutcome([]float64{1, 3}, nil)
	mustNil(t, err)
	approxSlice(t, "outcome unweighted", seq, []float64{-1 / math.Sqrt(2+1e-8), 1 / math.Sqrt(2+1e-8)})

	// Discounting: γ = 0.5, reward 4 at the end ⇒ G = {1, 2, 4}.
	_, ret, err = ReinforcePlusPlus([][]float64{{0, 0, 4}}, [][]bool{b(1, 1, 1)}, 0.5)
	mustNil(t, err)
	approxRows(t, "discounted", ret, [][]float64{{1, 2, 4}})

	_, err = ReinforcePlusPlusOutcome([]float64{1}, nil)
	wantErr(t, "one episode", err)
	_, err = ReinforcePlusPlusOutcome([]float64{1, 2}, []int{1})
	wantErr(t, "count mismatch", err)
}

func TestOutcomeRewardsAndBroadcast(t *testing.T) {
	mask := [][]bool{b(0, 1, 1, 0), b(1)}
	r, err := OutcomeRewards([]float64{2, -1}, mask)
	mustNil(t, err)
	approxRows(t, "outcome", r, [][]float64{{0, 0, 2, 0}, {-1}})
	a, err := BroadcastToTokens([]float64{0.5, 3}, mask)
	mustNil(t, err)
	approxRows(t, "broadcast", a, [][]float64{{0, 0.5, 0.5, 0}, {3}})
	_, err = OutcomeRewards([]float64{1}, [][]bool{b(0, 0)})
	wantErr(t, "no in-mask token", err)
	_, err = BroadcastToTokens([]float64{1}, mask)
	wantErr(t, "length", err)
}

func TestKLPenalizedRewards(t *testing.T) {
	// k1: kl = old − ref = {0.5, −1}; β = 0.1.
	r, err := KLPenalizedRewards([][]float64{{0, 1}}, [][]float64{{-1, -2}}, [][]float64{{-1.5, -1}}, [][]bool{b(1, 1)}, 0.1, KL1)
	mustNil(t, err)
	approxRows(t, "penalised", r, [][]float64{{-0.05, 1.1}})
}

func TestPresetAdvantagesDispatch(t *testing.T) {
	mask := [][]bool{b(1, 1), b(1, 1)}
	in := AdvantageInput{Scores: []float64{1, 3}, Groups: Groups{{0, 1}}, Mask: mask,
		Values: [][]float64{{0, 0}, {0, 0}}}
	adv, _, err := PresetDrGRPO().Advantages(in)
	mustNil(t, err)
	approxRows(t, "DrGRPO", adv, [][]float64{{-1, -1}, {1, 1}})
	adv, ret, err := PresetPPO().Advantages(in)
	mustNil(t, err)
	// Values 0, γ = λ = 1: A = R on every token, whitened over {1,1,3,3}.
	a := 1 / math.Sqrt(4.0/3+1e-8)
	approxRows(t, "PPO adv", adv, [][]float64{{-a, -a}, {a, a}})
	approxRows(t, "PPO ret", ret, [][]float64{{1, 1}, {3, 3}})
	p := PresetGRPO()
	p.Estimator = EstimatorRLOO
	adv, _, err = p.Advantages(in)
	mustNil(t, err)
	approxRows(t, "RLOO", adv, [][]float64{{-2, -2}, {2, 2}})
	p.Estimator = EstimatorReinforcePP
	adv, _, err = p.Advantages(in)
	mustNil(t, err)
	approxRows(t, "REINFORCE++", adv, [][]float64{{-a, -a}, {a, a}})
}

// TestConstantGroupsAreExactlyZero: a group whose episodes all scored the
// same has a spread and advantages of exactly 0, not the rounding residue
// of a running sum (16 copies of 10.8 sum to 172.80000000000004).
func TestConstantGroupsAreExactlyZero(t *testing.T) {
	const k = 16
	var scores []float64
	for range k {
		scores = append(scores, 10.8)
	}
	scores = append(scores, 0, 1, 0, 1, 0, 2, 0, 2)
	groups := Groups{make([]int, k), {16, 17, 18, 19}, {20, 21, 22, 23}}
	for i := range k {
		groups[0][i] = i
	}
	stats, err := ComputeGroupStats(scores, groups)
	mustNil(t, err)
	if s := stats[0]; s.Std != 0 || s.Var != 0 || s.Mean != 10.8 || !s.Constant {
		t.Errorf("constant group stats %+v, want mean 10.8 and std, var exactly 0", s)
	}
	for name, est := range map[string]func([]float64, Groups) ([]float64, error){
		"GRPO": GRPOAdvantages, "DrGRPO": DrGRPOAdvantages, "RLOO": RLOOAdvantages,
	} {
		adv, err := est(scores, groups)
		mustNil(t, err)
		for i := range k {
			if adv[i] != 0 {
				t.Fatalf("%s: advantage of constant-group member %d = %g, want exactly 0", name, i, adv[i])
			}
		}
	}
	// RAGEN's linear top-p on the lowest spreads (type smallest, include
	// zero): the walk stops at the first score ≤ 0, so with the constant
	// group first nothing is kept. A residue of 1.9e-15 instead of 0 would
	// let the walk go on and keep groups.
	cfg := DefaultFilterConfig()
	cfg.Value, cfg.Type = 0.9, Smallest
	r, err := FilterGroups(cfg, scores, groups)
	mustNil(t, err)
	if len(r.Kept) != 0 || !r.Empty {
		t.Errorf("kept %v, want nothing", r.Kept)
	}
}

func TestEpisodeAdvantagesBalanceEpisodes(t *testing.T) {
	// Two episodes of one group: a success in 1 turn, a failure in 3; four
	// per-turn sequences.
	in := AdvantageInput{
		Scores:  []float64{1, 0},
		Groups:  Groups{{0, 1}},
		Episode: []int{0, 1, 1, 1},
		Mask:    [][]bool{b(0, 1), b(0, 1), b(0, 1), b(0, 1)},
	}
	adv, ret, err := PresetDrGRPO().Advantages(in)
	mustNil(t, err)
	// Dr.GRPO: A = ±0.5; 4 sequences over 2 episodes gives S/E = 2, so the
	// success's one sequence carries +1 and each of the failure's three
	// −1/3: both episodes sum to the same magnitude.
	approxRows(t, "advantages", adv, [][]float64{{0, 1}, {0, -1.0 / 3}, {0, -1.0 / 3}, {0, -1.0 / 3}})
	approxRows(t, "returns", ret, adv)

	// RLOO counts episodes too: A = R_i − R_other = ±1, scaled the same way.
	adv, _, err = rlooPreset().Advantages(in)
	mustNil(t, err)
	approxRows(t, "RLOO", adv, [][]float64{{0, 2}, {0, -2.0 / 3}, {0, -2.0 / 3}, {0, -2.0 / 3}})

	// A token estimator gives each turn its episode's score as the reward.
	rpp := PresetDrGRPO()
	rpp.Estimator = EstimatorReinforcePP
	adv, _, err = rpp.Advantages(in)
	mustNil(t, err)
	if adv[0][1] <= 0 || adv[1][1] >= 0 || adv[1][1] != adv[3][1] {
		t.Errorf("REINFORCE++ per-turn advantages %v: want the success positive and the failure's turns equal and negative", adv)
	}

	bad := in
	bad.Episode = []int{0, 1, 1, 5}
	_, _, err = PresetGRPO().Advantages(bad)
	wantErr(t, "episode out of range", err)
	bad.Episode = []int{1, 1, 1, 1}
	_, _, err = PresetGRPO().Advantages(bad)
	wantErr(t, "episode without a sequence", err)
	kl := PresetGRPO()
	kl.UseKLInReward = true
	_, _, err = kl.Advantages(in)
	wantErr(t, "KL in reward with per-turn group advantages", err)
}

// rlooPreset is GRPO's settings with the RLOO estimator.
func rlooPreset() Preset {
	p := PresetGRPO()
	p.Estimator = EstimatorRLOO
	return p
}
