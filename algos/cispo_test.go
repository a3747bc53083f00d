package algos

import (
	"math"
	"strings"
	"testing"
)

// TestCISPOTokenByHand: r̂ = clamp(r, 1 − ε_low, 1 + ε_high), ℓ = −r̂·A·logp,
// ∂ℓ/∂logp = −r̂·A, as verl's compute_policy_loss_cispo.
func TestCISPOTokenByHand(t *testing.T) {
	for _, c := range []struct {
		name               string
		cfg                CISPO
		logp, old, adv     float64
		weight, loss, grad float64
		clipped            bool
	}{
		// r = e^0.5 ≈ 1.6487 capped at 1.2: the token keeps a gradient (PPO would drop it).
		{"above, capped", CISPO{1, 0.2}, -1, -1.5, 2, 1.2, -1.2 * 2 * -1, -1.2 * 2, true},
		// r = e^−0.5 ≈ 0.6065: no lower clip with ε_low = 1 ...
		{"below, no lower clip", CISPO{1, 0.2}, -1.5, -1, 2, math.Exp(-0.5), -math.Exp(-0.5) * 2 * -1.5, -math.Exp(-0.5) * 2, false},
		// ... or with verl's example ε_low = 10 ...
		{"below, ε_low 10", CISPO{10, 0.2}, -1.5, -1, -1, math.Exp(-0.5), -math.Exp(-0.5) * -1 * -1.5, math.Exp(-0.5), false},
		// ... but 0.8 with ε_low = 0.2.
		{"below, floored", CISPO{0.2, 0.2}, -1.5, -1, -1, 0.8, -0.8 * -1 * -1.5, 0.8, true},
		{"inside", CISPO{1, 0.2}, -0.9, -1, 1, math.Exp(0.1), math.Exp(0.1) * 0.9, -math.Exp(0.1), false},
	} {
		tok := c.cfg.Token(c.logp, c.old, c.adv)
		approx(t, c.name+" weight", tok.Weight, c.weight)
		approx(t, c.name+" loss", tok.Loss, c.loss)
		approx(t, c.name+" grad", tok.DLogp, c.grad)
		if tok.Clipped != c.clipped {
			t.Errorf("%s: clipped %v", c.name, tok.Clipped)
		}
	}
}

// TestCISPOPreset: the CISPO preset, its validation (clip_ratio_low ≥ 1
// allowed for cispo alone) and its ActorLoss: token-mean weights times
// −r̂·A, and verl's metrics.
func TestCISPOPreset(t *testing.T) {
	p, err := NewPreset("CISPO")
	mustNil(t, err)
	if p.Name != "CISPO" || p.PolicyLoss != PolicyLossCISPO || p.ClipLow != 1 || p.ClipHigh != 0.2 || p.LossAgg != TokenMean {
		t.Fatalf("CISPO preset %+v", p)
	}
	p.EntropyCoeff = 0
	bt := ActorBatch{
		LogProb:    [][]float64{{-1, -1.5}, {-0.9, 0}},
		OldLogProb: [][]float64{{-1.5, -1}, {-1, 0}},
		Advantages: [][]float64{{2, 2}, {1, 0}},
		Mask:       [][]bool{b(1, 1), b(1, 0)},
	}
	res, err := p.ActorLoss(bt)
	mustNil(t, err)
	e := math.Exp
	approxRows(t, "dL/dlogp", res.DLogProb, [][]float64{{-1.2 * 2 / 3, -e(-0.5) * 2 / 3}, {-e(0.1) / 3, 0}})
	approx(t, "pg_loss", res.PGLoss, (1.2*2*1+e(-0.5)*2*1.5+e(0.1)*0.9)/3)
	approx(t, "clipfrac", res.PGClipFrac, 1.0/3)
	approx(t, "ppo_kl", res.PPOKL, (-0.5+0.5-0.1)/3)
	if res.PGClipFracLower != 0 {
		t.Errorf("clipfrac_lower %v", res.PGClipFracLower)
	}

	q := p
	q.ClipLow = -0.1
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "clip_ratio_low") {
		t.Errorf("negative clip_ratio_low: %v", err)
	}
	q = p
	q.ClipRatioC = 0.5
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "clip_ratio_c") {
		t.Errorf("clip_ratio_c 0.5: %v", err)
	}
	q = p
	q.PolicyLoss = PolicyLossPPO
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "clip_ratio_low") {
		t.Errorf("ppo with clip_ratio_low 1: %v", err)
	}
}
