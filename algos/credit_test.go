package algos

import (
	"math"
	"strings"
	"testing"
)

var inf = math.Inf(1)

// turnAt is a turn on sequence seq covering [start, end).
func turnAt(seq, start, end int, reward float64, state string) Turn {
	return Turn{Seq: seq, Start: start, End: end, Reward: reward, State: state, CostBefore: math.NaN(), CostAfter: math.NaN()}
}

// gigpoTurns: env group {0, 1, 2} and group {3}; γ = 0.5 below.
//
//	ep 0: A → B, rewards 0, 1      R = 0.5, 1
//	ep 1: A → C → B, rewards 0, 0, 1   R = 0.25, 0.5, 1
//	ep 2: A, reward −0.1 (cut off after one turn)   R = −0.1
//	ep 3: A, reward 1, but in another env group: a singleton
func gigpoTurns() [][]Turn {
	return [][]Turn{
		{turnAt(0, 1, 3, 0, "A"), turnAt(0, 4, 5, 1, "B")},
		{turnAt(1, 0, 1, 0, "A"), turnAt(1, 1, 2, 0, "C"), turnAt(1, 2, 3, 1, "B")},
		{turnAt(2, 0, 1, -0.1, "A")},
		{turnAt(3, 0, 1, 1, "A")},
	}
}

func TestGiGPOStepAdvantagesByHand(t *testing.T) {
	groups := Groups{{0, 1, 2}, {3}}
	// Anchor A in group 0: returns 0.5, 0.25, −0.1, mean 0.65/3.
	mu := 0.65 / 3
	dev := []float64{0.5 - mu, 0.25 - mu, -0.1 - mu}
	adv, st, err := GiGPOStepAdvantages(gigpoTurns(), groups, 0.5, false)
	mustNil(t, err)
	// B: returns 1 and 1 → 0; C and ep 3's A: singletons → 0.
	approxRows(t, "A^S (mean only)", adv, [][]float64{{dev[0], 0}, {dev[1], 0, 0}, {dev[2]}, {0}})
	if st.Groups != 4 || st.Turns != 7 || st.Singletons != 2 {
		t.Errorf("stats %+v, want 4 groups, 7 turns, 2 singletons", st)
	}
	approx(t, "mean |A^S|", st.AbsMean, (math.Abs(dev[0])+math.Abs(dev[1])+math.Abs(dev[2]))/7)

	sd := math.Sqrt((dev[0]*dev[0] + dev[1]*dev[1] + dev[2]*dev[2]) / 2)
	adv, _, err = GiGPOStepAdvantages(gigpoTurns(), groups, 0.5, true)
	mustNil(t, err)
	approxRows(t, "A^S (std)", adv, [][]float64{{dev[0] / (sd + 1e-6), 0}, {dev[1] / (sd + 1e-6), 0, 0}, {dev[2] / (sd + 1e-6)}, {0}})
}

func TestGiGPOEmptyStateIsASingleton(t *testing.T) {
	turns := [][]Turn{{turnAt(0, 0, 1, 1, "")}, {turnAt(1, 0, 1, 0, "")}}
	adv, st, err := GiGPOStepAdvantages(turns, Groups{{0, 1}}, 1, false)
	mustNil(t, err)
	approxRows(t, "A^S", adv, [][]float64{{0}, {0}})
	if st.Singletons != 2 || st.Groups != 2 {
		t.Errorf("stats %+v, want two singleton groups", st)
	}
}

func TestGiGPOPresetAddsStepToEpisodeAdvantage(t *testing.T) {
	// One sequence per episode; episode 0 is obs, reply, reply, obs, reply.
	mask := [][]bool{b(0, 1, 1, 0, 1), b(1, 1, 1), b(1), b(1)}
	p := PresetGiGPO()
	p.NormAdvByStd, p.StepWeight, p.StepGamma = false, 2, 0.5
	in := AdvantageInput{Scores: []float64{1, 1, -0.1, 1}, Groups: Groups{{0, 1, 2}, {3}}, Mask: mask, Turns: gigpoTurns()}
	adv, ret, m, err := p.AdvantagesWithMetrics(in)
	mustNil(t, err)
	// Dr.GRPO episode terms: group 0 mean 1.9/3; the singleton group has mean 0.
	e := []float64{1 - 1.9/3, 1 - 1.9/3, -0.1 - 1.9/3, 1}
	mu := 0.65 / 3
	want := [][]float64{
		{0, e[0] + 2*(0.5-mu), e[0] + 2*(0.5-mu), 0, e[0]},
		{e[1] + 2*(0.25-mu), e[1], e[1]},
		{e[2] + 2*(-0.1-mu)},
		{e[3]},
	}
	approxRows(t, "advantages", adv, want)
	approxRows(t, "returns", ret, want)
	approx(t, "credit/anchor_groups", m["credit/anchor_groups"], 4)
	approx(t, "credit/anchor_singleton_ratio", m["credit/anchor_singleton_ratio"], 2.0/7)
}

func TestSolverAdvantageCases(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		before, after, want float64
	}{
		{4, 3, 1},     // one optimal move
		{4, 2, 2},     // two optimal moves in one turn
		{4, 4, 0},     // wasted
		{4, 5, -1},    // harmful
		{4, inf, -4},  // deadlock: loses everything left
		{inf, inf, 0}, // already unsolvable: no gradient
		{inf, 3, 0},
		{nan, 3, 0}, // unknown
		{3, nan, 0},
		{1, 0, 1}, // solves it
	} {
		if got := SolverAdvantage(c.before, c.after); got != c.want {
			t.Errorf("SolverAdvantage(%v, %v) = %v, want %v", c.before, c.after, got, c.want)
		}
	}
}

func TestSolverCreditWithHistoryWindowByHand(t *testing.T) {
	// Two episodes of one group, a sequence per turn: episode 0 has two
	// turns (sequences 0, 1), episode 1 one (sequence 2).
	mask := [][]bool{b(0, 1, 1), b(0, 0, 1), b(0, 1)}
	cost := func(tr Turn, before, after float64) Turn { tr.CostBefore, tr.CostAfter = before, after; return tr }
	turns := [][]Turn{
		{cost(turnAt(0, 1, 3, -0.1, ""), 4, 2), cost(turnAt(1, 2, 3, -0.1, ""), 2, inf)},
		{cost(turnAt(2, 1, 2, 1, ""), 4, 4)},
	}
	p := PresetCAST()
	in := AdvantageInput{Scores: []float64{-0.2, 1}, Groups: Groups{{0, 1}}, Episode: []int{0, 0, 1}, Mask: mask, Turns: turns}
	adv, _, m, err := p.AdvantagesWithMetrics(in)
	mustNil(t, err)
	// a = 2, −2, 0; asinh(±2) over an RMS of asinh(2)·sqrt(2/3) is ±sqrt(3/2).
	h := math.Sqrt(1.5) * (1 - 1e-8/(math.Asinh(2)*math.Sqrt(2.0/3)))
	// GRPO: mean 0.4, std 0.6·sqrt(2); balance (S/E)/T_e = 0.75 and 1.5.
	a := 0.6 / (0.6*math.Sqrt2 + 1e-6)
	want := [][]float64{
		{0, -a*0.75 + 0.1*h, -a*0.75 + 0.1*h},
		{0, 0, -a*0.75 - 0.1*h},
		{0, a * 1.5},
	}
	approxRows(t, "advantages", adv, want)
	approx(t, "credit/solver_deadlocks", m["credit/solver_deadlocks"], 1)
	approx(t, "credit/solver_progress_ratio", m["credit/solver_progress_ratio"], 1.0/3)
	approx(t, "credit/solver_adv_raw_mean", m["credit/solver_adv_raw_mean"], 0)
}

func TestSolverTurnAdvantagesTransforms(t *testing.T) {
	turns := [][]Turn{{{CostBefore: 3, CostAfter: 2}, {CostBefore: 2, CostAfter: inf}}}
	h, st, err := SolverTurnAdvantages(turns, SolverIdentity)
	mustNil(t, err)
	rms := math.Sqrt((1 + 4) / 2.0)
	approxRows(t, "identity", h, [][]float64{{1 / (rms + 1e-8), -2 / (rms + 1e-8)}})
	approx(t, "rms", st.RMS, rms)

	zero := [][]Turn{{{CostBefore: 3, CostAfter: 3}}, {{CostBefore: math.NaN(), CostAfter: 1}}}
	h, st, err = SolverTurnAdvantages(zero, SolverAsinh)
	mustNil(t, err)
	approxRows(t, "no signal", h, [][]float64{{0}, {0}})
	if st.Known != 1 || st.Wasted != 1 {
		t.Errorf("stats %+v, want 1 known wasted turn", st)
	}
	if _, _, err := SolverTurnAdvantages(turns, "clip"); err == nil {
		t.Error("unknown transform accepted")
	}
}

// biLevelCase is one episode of two turns, rewards 0 then 1, values
// 0.1 0.2 | 0.3 0.4 on the replies. With γ = λ = 1 and γ_h = 0.5:
//
//	high: Â_1 = 1 − 0.4 = 0.6, G_1 = 1;  Â_0 = 0.5·0.4 − 0.2 + 0.5·0.6 = 0.3, G_0 = 0.5
//	turn 1: A = 0.6 (last), 0.4 − 0.3 + 0.6 = 0.7
//	turn 0: A = 0.5 − 0.2 = 0.3 (last), 0.2 − 0.1 + 0.3 = 0.4
func TestBiLevelGAEByHand(t *testing.T) {
	// One sequence: reply, reply, observation, reply, reply.
	values := [][]float64{{0.1, 0.2, 99, 0.3, 0.4}}
	mask := [][]bool{b(1, 1, 0, 1, 1)}
	turns := [][]Turn{{turnAt(0, 0, 2, 0, ""), turnAt(0, 3, 5, 1, "")}}
	adv, ret, err := BiLevelGAEUnwhitened(values, mask, turns, 1, 1, 0.5)
	mustNil(t, err)
	approxRows(t, "adv", adv, [][]float64{{0.4, 0.3, 0, 0.7, 0.6}})
	approxRows(t, "returns", ret, [][]float64{{0.5, 0.5, 0, 1, 1}})

	// The same episode as a sequence per turn (a history window): the high
	// level runs across the sequences.
	wValues := [][]float64{{7, 0.1, 0.2}, {7, 7, 0.3, 0.4}}
	wMask := [][]bool{b(0, 1, 1), b(0, 0, 1, 1)}
	wTurns := [][]Turn{{turnAt(0, 1, 3, 0, ""), turnAt(1, 2, 4, 1, "")}}
	adv, ret, err = BiLevelGAEUnwhitened(wValues, wMask, wTurns, 1, 1, 0.5)
	mustNil(t, err)
	approxRows(t, "windowed adv", adv, [][]float64{{0, 0.4, 0.3}, {0, 0, 0.7, 0.6}})
	approxRows(t, "windowed returns", ret, [][]float64{{0, 0.5, 0.5}, {0, 0, 1, 1}})
}

func TestBiLevelGAEWithoutDiscountIsGAE(t *testing.T) {
	// γ_h = γ = λ = 1 and the reward in the last turn: every trained token
	// gets score − V, as ordinary GAE with the score on the last token.
	values := [][]float64{{0.1, 0.2, 99, 0.3, 0.4}}
	mask := [][]bool{b(1, 1, 0, 1, 1)}
	turns := [][]Turn{{turnAt(0, 0, 2, 0, ""), turnAt(0, 3, 5, 1, "")}}
	got, gotRet, err := BiLevelGAE(values, mask, turns, 1, 1, 1)
	mustNil(t, err)
	want, wantRet, err := GAE([][]float64{{0, 0, 0, 0, 1}}, values, mask, 1, 1)
	mustNil(t, err)
	approxRows(t, "adv", got, want)
	approxRows(t, "returns", gotRet, wantRet)
}

func TestBiLevelPresetTruncatedEpisodeHasNoBootstrap(t *testing.T) {
	// A truncated episode (turn limit, not done) ends with its last turn:
	// Â = r − V there, whatever the next state would have been worth.
	values := [][]float64{{0.5, 0.5}}
	mask := [][]bool{b(1, 1)}
	turns := [][]Turn{{turnAt(0, 0, 1, -0.1, ""), turnAt(0, 1, 2, -0.1, "")}}
	adv, _, err := BiLevelGAEUnwhitened(values, mask, turns, 1, 1, 0.5)
	mustNil(t, err)
	// Â_1 = −0.1 − 0.5 = −0.6; Â_0 = −0.1 + 0.5·0.5 − 0.5 + 0.5·(−0.6) = −0.65.
	approxRows(t, "adv", adv, [][]float64{{-0.65, -0.6}})

	p := PresetBiLevelPPO()
	_, _, err = p.Advantages(AdvantageInput{Scores: []float64{-0.2}, Groups: Groups{{0}}, Values: values, Mask: mask, Turns: turns})
	mustNil(t, err)
}

func TestTurnCreditErrors(t *testing.T) {
	mask := [][]bool{b(0, 1, 1)}
	ok := [][]Turn{{turnAt(0, 1, 3, 1, "A")}}
	base := AdvantageInput{Scores: []float64{1}, Groups: Groups{{0}}, Mask: mask, Values: [][]float64{{0, 0, 0}}}
	for _, c := range []struct {
		name  string
		turns [][]Turn
		want  string
	}{
		{"missing", nil, "needs the episodes' turns"},
		{"uncovered token", [][]Turn{{turnAt(0, 1, 2, 1, "A")}}, "in no turn"},
		{"overlap", [][]Turn{{turnAt(0, 1, 3, 0, "A"), turnAt(0, 2, 3, 1, "B")}}, "overlaps"},
		{"outside", [][]Turn{{turnAt(0, 1, 4, 1, "A")}}, "outside"},
		{"bad sequence", [][]Turn{{turnAt(3, 1, 3, 1, "A")}}, "sequence 3"},
		{"no trained token", [][]Turn{{turnAt(0, 0, 1, 0, "A"), turnAt(0, 1, 3, 1, "A")}}, "no in-mask token"},
		{"episodes", [][]Turn{{turnAt(0, 1, 3, 1, "A")}, {}}, "turns for 2 episodes"},
		{"negative cost", [][]Turn{{{Seq: 0, Start: 1, End: 3, CostBefore: -1, CostAfter: 0}}}, "cost-to-go"},
		{"reward", [][]Turn{{{Seq: 0, Start: 1, End: 3, Reward: math.NaN()}}}, "reward"},
	} {
		for _, p := range []Preset{PresetGiGPO(), PresetCAST(), PresetBiLevelPPO()} {
			in := base
			in.Turns = c.turns
			_, _, err := p.Advantages(in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s / %s: err %v, want one containing %q", c.name, p.Name, err, c.want)
			}
		}
	}
	in := base
	in.Turns = ok
	for _, p := range []Preset{PresetGiGPO(), PresetCAST(), PresetBiLevelPPO()} {
		if _, _, err := p.Advantages(in); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}

	bad := func(mod func(*Preset)) Preset { p := PresetGiGPO(); mod(&p); return p }
	for name, p := range map[string]Preset{
		"credit on gae":      bad(func(p *Preset) { p.Estimator = EstimatorGAE }),
		"unknown credit":     bad(func(p *Preset) { p.Credit = "gipgo" }),
		"gamma > 1":          bad(func(p *Preset) { p.StepGamma = 1.5 }),
		"negative weight":    bad(func(p *Preset) { p.StepWeight = -1 }),
		"bi-level on grpo":   bad(func(p *Preset) { p.Credit, p.BiLevelGAE = CreditNone, true }),
		"credit + kl reward": bad(func(p *Preset) { p.UseKLInReward, p.KLRewardCoef = true, 0.1 }),
		"bad transform":      func() Preset { p := PresetCAST(); p.SolverTransform = "clip"; return p }(),
		"nan alpha":          func() Preset { p := PresetCAST(); p.SolverAlpha = math.NaN(); return p }(),
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
	}
}
