package algos

import (
	"math"
	"testing"
)

func TestPPOTokenTable(t *testing.T) {
	c := PPOClip{ClipLow: 0.2, ClipHigh: 0.28, ClipRatioC: 3}
	noDual := PPOClip{ClipLow: 0.2, ClipHigh: 0.28}
	for _, tc := range []struct {
		name          string
		clip          PPOClip
		ratio, adv    float64
		loss, dlogp   float64
		clipped, lowr bool
	}{
		{"inside, A>0", c, 1.1, 1, -1.1, -1.1, false, false},
		{"above 1+ε_high, A>0", c, 1.5, 1, -1.28, 0, true, false},
		{"below 1−ε_low, A>0: unclipped", c, 0.5, 1, -0.5, -0.5, false, false},
		{"below 1−ε_low, A<0: clipped", c, 0.5, -1, 0.8, 0, true, false},
		{"inside, A<0", c, 1.2, -1, 1.2, 1.2, false, false},
		{"A<0, ratio 2 < c", c, 2, -1, 2, 2, false, false},
		{"A<0, ratio 4 > c: dual-clip", c, 4, -1, 3, 0, false, true},
		{"A<0, ratio 4, dual-clip off", noDual, 4, -1, 4, 4, false, false},
		{"A<0, scaled advantage", c, 4, -0.5, 1.5, 0, false, true},
		{"A=0", c, 3, 0, 0, 0, false, false},
	} {
		tok := tc.clip.Token(math.Log(tc.ratio), 0, tc.adv)
		if !near(tok.Loss, tc.loss, 1e-12) || !near(tok.DLogp, tc.dlogp, 1e-12) ||
			tok.Clipped != tc.clipped || tok.ClippedLower != tc.lowr {
			t.Errorf("%s: got loss %v d %v clipped %v lower %v; want %v %v %v %v",
				tc.name, tok.Loss, tok.DLogp, tok.Clipped, tok.ClippedLower, tc.loss, tc.dlogp, tc.clipped, tc.lowr)
		}
	}
	// The log-ratio clamp at ±20 stops the gradient.
	tok := noDual.Token(25, 0, -1)
	approx(t, "clamped loss", tok.Loss, math.Exp(20))
	approx(t, "clamped grad", tok.DLogp, 0)
	approx(t, "clamped log-ratio", tok.LogRatio, 20)
}

func TestPPOLossBatch(t *testing.T) {
	c := PPOClip{ClipLow: 0.2, ClipHigh: 0.28, ClipRatioC: 3}
	logp := [][]float64{{math.Log(1.5), 0, math.Log(4)}, {math.Log(1.1)}}
	old := [][]float64{{0, 0, 0}, {0}}
	adv := [][]float64{{1, 7, -1}, {1}}
	mask := [][]bool{b(1, 0, 1), b(1)}
	r, err := PPOLoss(c, logp, old, adv, mask)
	mustNil(t, err)
	approxRows(t, "loss", r.Loss, [][]float64{{-1.28, 0, 3}, {-1.1}})
	approxRows(t, "dlogp", r.DLogp, [][]float64{{0, 0, 0}, {-1.1}})
	approx(t, "clipfrac", r.ClipFrac, 1.0/3)
	approx(t, "clipfrac lower", r.ClipFracLower, 1.0/3)
	approx(t, "ppo_kl", r.ApproxKL, -(math.Log(1.5)+math.Log(4)+math.Log(1.1))/3)

	_, err = PPOLoss(PPOClip{ClipLow: 0.2, ClipHigh: 0.2, ClipRatioC: 1}, logp, old, adv, mask)
	wantErr(t, "c ≤ 1", err)
	_, err = PPOLoss(PPOClip{ClipLow: 1.2}, logp, old, adv, mask)
	wantErr(t, "ε_low ≥ 1", err)
	logp[1][0] = math.NaN()
	_, err = PPOLoss(c, logp, old, adv, mask)
	wantErr(t, "NaN logp", err)
}

func TestAggWeights(t *testing.T) {
	mask := [][]bool{b(1, 1, 0), b(1, 0, 0), b(0, 0)}
	for _, tc := range []struct {
		mode LossAggMode
		want [][]float64
	}{
		// 3 in-mask tokens.
		{TokenMean, [][]float64{{1.0 / 3, 1.0 / 3, 0}, {1.0 / 3, 0, 0}, {0, 0}}},
		// n = {2, 1, 0}: B' = 2 sequences with trained tokens (verl's
		// seq_mask leaves the empty one out of the mean).
		{SeqMeanTokenMean, [][]float64{{1.0 / 4, 1.0 / 4, 0}, {1.0 / 2, 0, 0}, {0, 0}}},
		{SeqMeanTokenSum, [][]float64{{1.0 / 2, 1.0 / 2, 0}, {1.0 / 2, 0, 0}, {0, 0}}},
	} {
		w, err := AggWeights(tc.mode, mask)
		mustNil(t, err)
		approxRows(t, string(tc.mode), w, tc.want)
	}
	w, _ := AggWeights(SeqMeanTokenMean, mask)
	l, err := Aggregate([][]float64{{2, 4, 100}, {6, 100, 100}, {100, 100}}, w)
	mustNil(t, err)
	approx(t, "seq-mean-token-mean loss", l, (3+6)/2.0)
	// verl v0.6.1's agg_loss on four rows of which only the first has
	// trained tokens (loss 0.283 there): the empty rows do not dilute it.
	one := [][]bool{b(1, 1), b(0, 0), b(0, 0), b(0, 0)}
	for _, mode := range []LossAggMode{SeqMeanTokenMean, SeqMeanTokenSum} {
		w, err := AggWeights(mode, one)
		mustNil(t, err)
		l, err := Aggregate([][]float64{{0.283, 0.283}, {9, 9}, {9, 9}, {9, 9}}, w)
		mustNil(t, err)
		want := 0.283
		if mode == SeqMeanTokenSum {
			want = 2 * 0.283
		}
		approx(t, string(mode)+" with empty rows", l, want)
	}
	w, err = AggWeights(SeqMeanTokenMean, [][]bool{b(0), b(0, 0)})
	mustNil(t, err)
	approxRows(t, "all-empty batch", w, [][]float64{{0}, {0, 0}})
	_, err = AggWeights("seq-mean-token-sum-norm", mask)
	wantErr(t, "unsupported mode", err)
}

func TestKLEstimators(t *testing.T) {
	// d = logp − ref = 0.5.
	for _, tc := range []struct {
		kind     KLKind
		v, dlogp float64
	}{
		{KL1, 0.5, 1},
		{KLAbs, 0.5, 1},
		{KL2, 0.125, 0.5},
		{KL3, math.Exp(-0.5) - 0.5, 1 - math.Exp(-0.5)}, // e^{−d} + d − 1 with d = 0.5
	} {
		v, d, err := tc.kind.KL(-1, -1.5)
		mustNil(t, err)
		approx(t, string(tc.kind)+" value", v, tc.v)
		approx(t, string(tc.kind)+" grad", d, tc.dlogp)
	}
	approx(t, "k3 literal", func() float64 { v, _, _ := KL3.KL(-1, -1.5); return v }(), 0.1065306597126334)
	// Clamps: ref − logp = 20 ⇒ e^{20} − 21 > 10; ref − logp = −15 ⇒ 14 > 10.
	for _, pair := range [][2]float64{{-20, 0}, {0, -15}, {-30, 0}} {
		v, d, _ := KL3.KL(pair[0], pair[1])
		if v != 10 || d != 0 {
			t.Errorf("k3(%v, %v) = %v, %v; want 10, 0", pair[0], pair[1], v, d)
		}
	}
	v, d, _ := KLAbs.KL(-1, -0.5)
	approx(t, "abs neg value", v, 0.5)
	approx(t, "abs neg grad", d, -1)
	for _, s := range []string{"kl", "k1", "abs", "mse", "k2", "low_var_kl", "low-var-kl", "K3"} {
		if _, err := ParseKLKind(s); err != nil {
			t.Errorf("ParseKLKind(%q): %v", s, err)
		}
	}
	_, err := ParseKLKind("full")
	wantErr(t, "unknown kind", err)
	_, _, err = KLKind("x").KL(0, 0)
	wantErr(t, "unknown kind KL", err)
}

func TestValueLossToken(t *testing.T) {
	// clip 0.5 around v_old = 1, return 3.
	for _, tc := range []struct {
		v, loss, d float64
		clipped    bool
	}{
		{1.2, 0.5 * 1.8 * 1.8, -1.8, false}, // inside the clip range: both branches equal
		{2.0, 0.5 * 1.5 * 1.5, 0, true},     // v_c = 1.5 is farther from 3: clipped
		{0.0, 0.5 * 9, -3, false},           // v_c = 0.5 is closer: unclipped
	} {
		tok := ValueLossToken(tc.v, 1, 3, 0.5)
		if !near(tok.Loss, tc.loss, 1e-12) || !near(tok.DValue, tc.d, 1e-12) || tok.Clipped != tc.clipped {
			t.Errorf("v=%v: got %+v, want loss %v d %v clipped %v", tc.v, tok, tc.loss, tc.d, tc.clipped)
		}
	}
	// Ties, as torch's backward of verl's max(min(v, hi), lo) and of the
	// outer max resolves them (equal arguments share the gradient):
	// v = hi: the clip passes ½, the branches tie: ½·(-3 + ½·(-3)) = -2.25,
	// times the ½ of the loss.
	if tok := ValueLossToken(1.5, 1, 3, 0.5); !near(tok.DValue, -1.125, 1e-12) || !near(tok.Loss, 0.5*2.25, 1e-12) {
		t.Errorf("v at the upper clip bound: %+v, want dv -1.125", tok)
	}
	// cliprange_value 0 with v = v_old: the clip passes ¼, so
	// ½·½·(2(v-R) + ¼·2(v-R)) = ⅝·(v-R) = -1.25 (verl gives the same).
	if tok := ValueLossToken(1, 1, 3, 0); !near(tok.DValue, -1.25, 1e-12) || !near(tok.Loss, 2, 1e-12) || tok.Clipped {
		t.Errorf("cliprange 0, v = v_old: %+v, want loss 2, dv -1.25, not clipped", tok)
	}
	r, err := ValueLoss([][]float64{{1.2, 2.0}}, [][]float64{{1, 1}}, [][]float64{{3, 3}}, [][]bool{b(1, 1)}, 0.5)
	mustNil(t, err)
	approx(t, "vf clipfrac", r.ClipFrac, 0.5)
	_, err = ValueLoss([][]float64{{1}}, [][]float64{{1}}, [][]float64{{3}}, [][]bool{b(1)}, -1)
	wantErr(t, "negative clip", err)
}

func TestEntropyBonus(t *testing.T) {
	w := [][]float64{{0.25, 0.75, 0}}
	loss, agg, d, err := EntropyBonus(0.01, [][]float64{{2, 4, math.NaN()}}, w)
	mustNil(t, err)
	approx(t, "agg entropy", agg, 3.5)
	approx(t, "loss", loss, -0.035)
	approxRows(t, "dH", d, [][]float64{{-0.0025, -0.0075, 0}})
	_, _, _, err = EntropyBonus(0.01, [][]float64{{math.NaN(), 1, 1}}, w)
	wantErr(t, "NaN entropy", err)
}

func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		p, err := NewPreset(name)
		mustNil(t, err)
		mustNil(t, p.Validate())
		if p.Name != name || p.ClipLow != 0.2 || p.ClipHigh != 0.28 || p.ClipRatioC != 3 ||
			p.EntropyCoeff != 0.001 || p.Gamma != 1 || p.Lambda != 1 || p.UseKLLoss || p.UseKLInReward {
			t.Errorf("preset %s: %+v", name, p)
		}
	}
	for name, want := range map[string]struct {
		est  AdvantageEstimator
		std  bool
		agg  LossAggMode
		crit bool
	}{
		"ppo":     {EstimatorGAE, false, TokenMean, true},
		"DAPO":    {EstimatorGAE, false, TokenMean, true},
		"grpo":    {EstimatorGRPO, true, SeqMeanTokenMean, false},
		"dr_grpo": {EstimatorGRPO, false, SeqMeanTokenSum, false},
	} {
		p, err := NewPreset(name)
		mustNil(t, err)
		if p.Estimator != want.est || p.NormAdvByStd != want.std || p.LossAgg != want.agg || p.UsesCritic() != want.crit {
			t.Errorf("%s: %+v", name, p)
		}
	}
	if PresetDAPO().KLLossCoef != 0 || PresetPPO().KLLossCoef != 0.001 {
		t.Error("kl_loss_coef: DAPO 0, others 0.001")
	}
	_, err := NewPreset("trpo")
	wantErr(t, "unknown preset", err)
	p := PresetPPO()
	p.LossAgg = "bogus"
	wantErr(t, "bad agg", p.Validate())
	p = PresetPPO()
	p.EntropyCoeff = math.NaN()
	wantErr(t, "NaN coef", p.Validate())
}

func TestActorLossByHand(t *testing.T) {
	// token-mean over 2 tokens, ratios 1 (A = 2) and 1.5 (A = 1, clipped).
	p := PresetPPO()
	p.EntropyCoeff = 0.1
	p.UseKLLoss, p.KLLossCoef, p.KLLossType = true, 0.5, KL1
	batch := ActorBatch{
		LogProb:    [][]float64{{0, math.Log(1.5)}},
		OldLogProb: [][]float64{{0, 0}},
		RefLogProb: [][]float64{{-1, 0}},
		Advantages: [][]float64{{2, 1}},
		Entropy:    [][]float64{{1, 3}},
		Mask:       [][]bool{b(1, 1)},
	}
	r, err := p.ActorLoss(batch)
	mustNil(t, err)
	// pg = (−2 − 1.28)/2; entropy = 2; kl(k1) = (1 + ln 1.5)/2.
	kl := (1 + math.Log(1.5)) / 2
	approx(t, "pg", r.PGLoss, -1.64)
	approx(t, "kl", r.KLLoss, kl)
	approx(t, "entropy", r.Entropy, 2)
	approx(t, "loss", r.Loss, -1.64-0.1*2+0.5*kl)
	approxRows(t, "dlogp", r.DLogProb, [][]float64{{0.5*-2 + 0.5*0.5, 0 + 0.5*0.5}})
	approxRows(t, "dH", r.DEntropy, [][]float64{{-0.05, -0.05}})
	if r.Metrics()["actor/pg_clipfrac"] != 0.5 {
		t.Errorf("clipfrac metric %v", r.Metrics()["actor/pg_clipfrac"])
	}
	// The same gradient in its three terms.
	parts, err := p.ActorGradParts(batch)
	mustNil(t, err)
	approxRows(t, "task", parts.Task, [][]float64{{0.5 * -2, 0}})
	approxRows(t, "kl", parts.KL, [][]float64{{0.5 * 0.5, 0.5 * 0.5}})
	approxRows(t, "entropy", parts.Entropy, [][]float64{{-0.05, -0.05}})
	p.EntropyCoeff, p.UseKLLoss = 0, false
	parts, err = p.ActorGradParts(batch)
	mustNil(t, err)
	approxRows(t, "kl off", parts.KL, [][]float64{{0, 0}})
	approxRows(t, "entropy off", parts.Entropy, [][]float64{{0, 0}})
	p.EntropyCoeff = 0.1
	batch.Entropy = nil
	_, err = p.ActorLoss(batch)
	wantErr(t, "missing entropy", err)
}

func TestSFTLoss(t *testing.T) {
	mask := [][]bool{b(0, 1, 1), b(0, 1)}
	logp := [][]float64{{math.NaN(), -1, -2}, {7, -3}} // out-of-mask values are never read
	r, err := SFTLoss(TokenMean, logp, mask)
	mustNil(t, err)
	approx(t, "token-mean NLL", r.Loss, 2)
	approxRows(t, "dlogp", r.DLogProb, [][]float64{{0, -1.0 / 3, -1.0 / 3}, {0, -1.0 / 3}})
	if r.Tokens != 3 || r.Metrics()["sft/loss"] != r.Loss {
		t.Errorf("tokens %d, metrics %v", r.Tokens, r.Metrics())
	}
	r, err = SFTLoss(SeqMeanTokenMean, logp, mask)
	mustNil(t, err)
	approx(t, "seq-mean NLL", r.Loss, (1.5+3)/2)
	logp[1][1] = math.Inf(-1)
	_, err = SFTLoss(TokenMean, logp, mask)
	wantErr(t, "infinite logp", err)
}

func TestMicroBatchWeights(t *testing.T) {
	// Three sequences of 1, 3 and 0 trained tokens: one-sequence
	// micro-batches averaged over B = 3.
	mask := [][]bool{b(1, 0), b(1, 1, 1), b(0)}
	w, err := MicroBatchWeights(TokenMean, mask)
	mustNil(t, err)
	approxRows(t, "token-mean", w, [][]float64{{1.0 / 3, 0}, {1.0 / 9, 1.0 / 9, 1.0 / 9}, {0}})
	w, err = MicroBatchWeights(SeqMeanTokenSum, mask)
	mustNil(t, err)
	approxRows(t, "seq-mean-token-sum", w, [][]float64{{1.0 / 3, 0}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {0}})
	// Against the whole-batch token-mean, which weighs every token 1/4.
	whole, err := AggWeights(TokenMean, mask)
	mustNil(t, err)
	approxRows(t, "whole-batch token-mean", whole, [][]float64{{0.25, 0}, {0.25, 0.25, 0.25}, {0}})
	if _, err := MicroBatchWeights("token-avg", mask); err == nil {
		t.Error("unknown mode accepted")
	}
	// The preset switch reaches the losses.
	p := PresetPPO()
	p.MicroBatchWeighting = true
	w, err = p.aggWeights(mask)
	mustNil(t, err)
	approx(t, "first token weight", w[0][0], 1.0/3)
}
