package algos

import (
	"math"
	"strings"
	"testing"
)

// TestGSPOByHand, with ε = 0.2/0.28 (ratio range [0.8, 1.28]) and
// seq-mean-token-mean weights w = 1/(n_i·B):
//
//	seq 0: logp − old = 0.1, 0.3     m = 0.2, s = e^0.2 ≈ 1.2214 inside, A = 1:   ℓ = −s
//	seq 1: logp − old = 0.5, 0.5, 0.5  s = e^0.5 ≈ 1.6487 above, A = 1:        ℓ = −1.28, clipped, no gradient
//	seq 2: logp − old = 0.5, 0.5     s = e^0.5 above, A = −1:                   ℓ = +s (the unclipped branch is larger)
//	seq 3: logp − old = 0, 0 (+ one untrained)  s = 1, A = 1, −1 (per token):  ℓ = −1, +1
//
// GSPO's gradient on every token of sequence i is (s_i/n_i)·Σ_t w·∂ℓ/∂s;
// GSPO-token's is w·s_i·∂ℓ_t/∂s. They agree except on seq 3, whose
// advantages differ within the sequence. The GSPO-token values and the
// metrics follow verl's compute_policy_loss_gspo (s_{i,t} = sg[s_i]·π/sg[π],
// pg_clipfrac and ppo_kl as token means), worked by hand.
func TestGSPOByHand(t *testing.T) {
	logp := [][]float64{{-1.0, -2.0}, {-0.5, -0.5, -0.5}, {-1, -1}, {-1, -1, 5}}
	old := [][]float64{{-1.1, -2.3}, {-1, -1, -1}, {-1.5, -1.5}, {-1, -1, 0}}
	adv := [][]float64{{1, 1}, {1, 1, 1}, {-1, -1}, {1, -1, 0}}
	mask := [][]bool{b(1, 1), b(1, 1, 1), b(1, 1), b(1, 1, 0)}
	w, err := AggWeights(SeqMeanTokenMean, mask)
	mustNil(t, err)
	s0, s1 := math.Exp(0.2), math.Exp(0.5)

	g := GSPO{ClipLow: 0.2, ClipHigh: 0.28}
	r, err := g.Loss(logp, old, adv, w, mask)
	mustNil(t, err)
	approxSlice(t, "ratio", r.Ratio, []float64{s0, s1, s1, 1})
	approxRows(t, "loss", r.Loss, [][]float64{{-s0, -s0}, {-1.28, -1.28, -1.28}, {s1, s1}, {-1, 1, 0}})
	// w = 1/8 on seqs 0, 2, 3 (n = 2) and 1/12 on seq 1.
	approxRows(t, "dL", r.DLoss, [][]float64{
		{-s0 / 2 * (2.0 / 8), -s0 / 2 * (2.0 / 8)},
		{0, 0, 0},
		{s1 / 2 * (2.0 / 8), s1 / 2 * (2.0 / 8)},
		{0, 0, 0},
	})
	// pg_clipfrac counts seq 1's three tokens of 9; ppo_kl = mean(old − logp).
	approx(t, "clipfrac", r.ClipFrac, 3.0/9)
	approx(t, "ppo_kl", r.ApproxKL, -(0.1+0.3+1.5+1.0)/9)

	g.Token = true
	rt, err := g.Loss(logp, old, adv, w, mask)
	mustNil(t, err)
	approxRows(t, "loss (token)", rt.Loss, r.Loss)
	approxRows(t, "dL (token)", rt.DLoss, [][]float64{
		{-s0 / 8, -s0 / 8},
		{0, 0, 0},
		{s1 / 8, s1 / 8},
		{-1.0 / 8, 1.0 / 8, 0},
	})

	// The paper's objective: −(1/G)·Σ_i min(s_i·A_i, clip(s_i)·A_i) on the
	// sequences with one advantage (0 to 2).
	sub := func(x [][]float64) [][]float64 { return x[:3] }
	w3, _ := AggWeights(SeqMeanTokenMean, mask[:3])
	r3, err := GSPO{ClipLow: 0.2, ClipHigh: 0.28}.Loss(sub(logp), sub(old), sub(adv), w3, mask[:3])
	mustNil(t, err)
	got, _ := Aggregate(r3.Loss, w3)
	approx(t, "paper objective", got, -(min(s0, s0)+min(s1, 1.28)+min(-s1, -1.28))/3)
}

// TestGSPOClampAndValidate: the sequence log-ratio is capped at 10 (no
// gradient beyond), an empty sequence has ratio 1, and the clip range is
// checked.
func TestGSPOClampAndValidate(t *testing.T) {
	mask := [][]bool{b(1, 1), b(0)}
	w, _ := AggWeights(TokenMean, mask)
	r, err := GSPO{ClipLow: 0.2, ClipHigh: 0.28}.Loss([][]float64{{11, 11}, {0}}, [][]float64{{0, 0}, {0}}, [][]float64{{-1, -1}, {0}}, w, mask)
	mustNil(t, err)
	approx(t, "capped ratio", r.Ratio[0]/math.Exp(10), 1)
	approxRows(t, "capped gradient", r.DLoss, [][]float64{{0, 0}, {0}})
	approx(t, "empty ratio", r.Ratio[1], 1)

	for _, g := range []GSPO{{ClipLow: 1, ClipHigh: 0.1}, {ClipLow: -0.1, ClipHigh: 0.1}, {ClipLow: 0.1, ClipHigh: -1}, {ClipLow: math.NaN()}} {
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "clip_ratio") {
			t.Errorf("%+v: %v", g, err)
		}
	}
	_, err = GSPO{}.Loss([][]float64{{0, 0}}, [][]float64{{0, 0}}, [][]float64{{0, 0}}, [][]float64{{0}}, [][]bool{b(1, 1)})
	wantErr(t, "short weights", err)
}

// TestGSPOPreset: the GSPO preset is GRPO with the paper's clip range and
// policy_loss gspo; its ActorLoss gradient is GSPO's.
func TestGSPOPreset(t *testing.T) {
	p, err := NewPreset("gspo")
	mustNil(t, err)
	if p.Name != "GSPO" || p.PolicyLoss != PolicyLossGSPO || p.ClipLow != 3e-4 || p.ClipHigh != 4e-4 ||
		p.LossAgg != SeqMeanTokenMean || p.Estimator != EstimatorGRPO {
		t.Fatalf("GSPO preset %+v", p)
	}
	p.EntropyCoeff = 0
	// m = 1e-4 for both sequences: s = e^1e-4 inside [1 − 3e-4, 1 + 4e-4].
	bt := ActorBatch{
		LogProb:    [][]float64{{-1 + 1e-4, -2 + 1e-4}, {-1 + 2e-4, -3}},
		OldLogProb: [][]float64{{-1, -2}, {-1, -3}},
		Advantages: [][]float64{{2, 2}, {-1, -1}},
		Mask:       [][]bool{b(1, 1), b(1, 1)},
	}
	res, err := p.ActorLoss(bt)
	mustNil(t, err)
	s0 := math.Exp((bt.LogProb[0][0] - bt.OldLogProb[0][0] + bt.LogProb[0][1] - bt.OldLogProb[0][1]) / 2)
	s1 := math.Exp((bt.LogProb[1][0] - bt.OldLogProb[1][0]) / 2)
	// Two sequences of two tokens: w = ¼; gradient (s/2)·Σ_t ¼·(−A).
	approxRows(t, "dL/dlogp", res.DLogProb, [][]float64{{-s0 / 2, -s0 / 2}, {s1 / 4, s1 / 4}})
	approx(t, "pg_loss", res.PGLoss, (-2*s0+s1)/2)
	if res.PGClipFracLower != 0 || res.RolloutIS != nil {
		t.Errorf("clipfrac_lower %v, rollout_is %v", res.PGClipFracLower, res.RolloutIS)
	}
}
