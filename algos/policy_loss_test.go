package algos

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// legacyActorLoss is ActorLoss as it was before policy_loss and
// rollout_is existed (PPO only, no importance weights), kept as the
// reference that the default settings must reproduce bit for bit.
func legacyActorLoss(p Preset, b ActorBatch) (ActorLossResult, error) {
	if err := p.Validate(); err != nil {
		return ActorLossResult{}, err
	}
	w, err := p.aggWeights(b.Mask)
	if err != nil {
		return ActorLossResult{}, err
	}
	pg, err := PPOLoss(p.Clip(), b.LogProb, b.OldLogProb, b.Advantages, b.Mask)
	if err != nil {
		return ActorLossResult{}, err
	}
	r := ActorLossResult{PGClipFrac: pg.ClipFrac, PGClipFracLower: pg.ClipFracLower, PPOKL: pg.ApproxKL,
		DLogProb: zerosLike(b.Mask), DEntropy: zerosLike(b.Mask)}
	r.PGLoss, _ = Aggregate(pg.Loss, w)
	for i := range w {
		for t := range w[i] {
			r.DLogProb[i][t] = w[i][t] * pg.DLogp[i][t]
		}
	}
	r.Loss = r.PGLoss
	if p.EntropyCoeff != 0 {
		lossH, aggH, dH, err := EntropyBonus(p.EntropyCoeff, b.Entropy, w)
		if err != nil {
			return ActorLossResult{}, err
		}
		r.Loss += lossH
		r.Entropy = aggH
		r.DEntropy = dH
	}
	// The KL term's gradient is added even when it is off (all zeros),
	// which turns the −0 of clipped tokens into +0.
	dKL := zerosLike(b.Mask)
	if p.UseKLLoss {
		kl, dkl, err := KLTokens(p.KLLossType, b.LogProb, b.RefLogProb, b.Mask)
		if err != nil {
			return ActorLossResult{}, err
		}
		r.KLLoss, _ = Aggregate(kl, w)
		r.Loss += p.KLLossCoef * r.KLLoss
		for i := range w {
			for t := range w[i] {
				dKL[i][t] = p.KLLossCoef * w[i][t] * dkl[i][t]
			}
		}
	}
	for i := range dKL {
		for t := range dKL[i] {
			r.DLogProb[i][t] += dKL[i][t]
		}
	}
	return r, nil
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// sameActorResult reports whether two results agree bit for bit.
func sameActorResult(a, b ActorLossResult) bool {
	for _, f := range [][2]float64{{a.Loss, b.Loss}, {a.PGLoss, b.PGLoss}, {a.PGClipFrac, b.PGClipFrac},
		{a.PGClipFracLower, b.PGClipFracLower}, {a.PPOKL, b.PPOKL}, {a.Entropy, b.Entropy}, {a.KLLoss, b.KLLoss}} {
		if !sameBits(f[0], f[1]) {
			return false
		}
	}
	for _, m := range [][2][][]float64{{a.DLogProb, b.DLogProb}, {a.DEntropy, b.DEntropy}} {
		if len(m[0]) != len(m[1]) {
			return false
		}
		for i := range m[0] {
			if len(m[0][i]) != len(m[1][i]) {
				return false
			}
			for t := range m[0][i] {
				if !sameBits(m[0][i][t], m[1][i][t]) {
					return false
				}
			}
		}
	}
	return (a.RolloutIS == nil) == (b.RolloutIS == nil)
}

// TestDefaultActorLossUnchanged: with policy_loss and rollout_is at their
// defaults, every preset's ActorLoss is bit-identical to the loss before
// they existed, on random batches with and without sampler log-probs (they
// are read only when rollout_is is on), and so is rollout_is on without
// sampler log-probs (weights 1), or with sampler log-probs equal to the
// old ones (every ω exactly 1).
func TestDefaultActorLossUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	kinds := []KLKind{KL1, KL2, KL3, KLAbs}
	for iter := range 400 {
		p, err := NewPreset(PresetNames()[iter%len(PresetNames())])
		mustNil(t, err)
		if iter%3 == 0 {
			p.UseKLLoss, p.KLLossCoef, p.KLLossType = true, 0.2, kinds[iter%len(kinds)]
		}
		p.MicroBatchWeighting = iter%4 == 0
		bt := randomBatch(rng)
		want, err := legacyActorLoss(p, bt)
		mustNil(t, err)
		got, err := p.ActorLoss(bt)
		mustNil(t, err)
		if !sameActorResult(got, want) {
			t.Fatalf("%s: default ActorLoss changed:\n got  %+v\n want %+v", p.Name, got, want)
		}
		withSampler := withSampler(rng, bt)
		if got, _ := p.ActorLoss(withSampler); !sameActorResult(got, want) {
			t.Fatalf("%s: sampler log-probs changed the loss with rollout_is off", p.Name)
		}
		p.PolicyLoss = "" // reads as ppo
		if got, _ := p.ActorLoss(bt); !sameActorResult(got, want) {
			t.Fatalf("%s: policy_loss \"\" differs from ppo", p.Name)
		}

		cs := offPolicyCorrections()
		setCorrection(&p, cs[1+iter%(len(cs)-1)])
		if got, _ := p.ActorLoss(bt); !sameActorResult(got, want) || got.RolloutIS != nil {
			t.Fatalf("%s: rollout_is without sampler log-probs changed the loss", p.Name)
		}
		same := bt
		same.SamplerLogProb = bt.OldLogProb
		got, err = p.ActorLoss(same)
		mustNil(t, err)
		want.RolloutIS = got.RolloutIS
		if !sameActorResult(got, want) || got.RolloutIS == nil {
			t.Fatalf("%s: rollout_is with π_sampler = π_old changed the loss:\n got  %+v\n want %+v", p.Name, got, want)
		}
		for i, row := range bt.Mask {
			for tk, m := range row {
				if m && got.RolloutIS.Weights[i][tk] != 1 {
					t.Fatalf("ω[%d][%d] = %v with π_sampler = π_old", i, tk, got.RolloutIS.Weights[i][tk])
				}
			}
		}
	}
}

// TestActorLossRolloutISByHand: TIS on a PPO batch; the policy term of
// each token is scaled by its weight, the entropy term is not, and the
// metrics join actor/*.
func TestActorLossRolloutISByHand(t *testing.T) {
	p := PresetPPO() // token-mean
	setCorrection(&p, &RolloutCorrection{Level: ISToken, Mode: ISTruncate, Threshold: 2})
	bt := ActorBatch{
		LogProb:        [][]float64{{-1, -1, -1}},
		OldLogProb:     [][]float64{{-1, -1, -1}},
		SamplerLogProb: [][]float64{{-1 - math.Log(3), -1 + math.Log(2), -1}}, // ρ = 3, ½, 1
		Advantages:     [][]float64{{1, 1, -2}},
		Entropy:        [][]float64{{0.5, 0.5, 0.5}},
		Mask:           [][]bool{b(1, 1, 1)},
	}
	res, err := p.ActorLoss(bt)
	mustNil(t, err)
	// r = 1 everywhere: ℓ = −A, ∂ℓ/∂logp = −A; ω = 2, ½, 1; w = ⅓.
	approxRows(t, "dL/dlogp", res.DLogProb, [][]float64{{-2.0 / 3, -0.5 / 3, 2.0 / 3}})
	approx(t, "pg_loss", res.PGLoss, (-2-0.5+2)/3.0)
	approxRows(t, "dL/dH", res.DEntropy, [][]float64{{-0.001 / 3, -0.001 / 3, -0.001 / 3}})
	m := res.Metrics()
	approx(t, "rollout_is_mean", m["mismatch/rollout_is_mean"], 4.5/3)
	approx(t, "rollout_is_ratio_fraction_high", m["mismatch/rollout_is_ratio_fraction_high"], 1.0/3)
	if m["actor/pg_loss"] != res.PGLoss {
		t.Errorf("metrics %v", m)
	}
	if len(m) != 7+9 {
		t.Errorf("%d metrics: %v", len(m), m)
	}
	// IS off: the seven actor metrics only.
	p.RolloutIS = false
	res, _ = p.ActorLoss(bt)
	if len(res.Metrics()) != 7 {
		t.Errorf("metrics without rollout_is: %v", res.Metrics())
	}
}

// TestPolicyLossPresetValidate: the new keys are validated with errors
// naming them, and rollout_is settings only when it is on.
func TestPolicyLossPresetValidate(t *testing.T) {
	for _, name := range PolicyLossPresetNames() {
		p, err := NewPreset(name)
		mustNil(t, err)
		mustNil(t, p.Validate())
		if p.Name != name {
			t.Errorf("NewPreset(%q).Name = %q", name, p.Name)
		}
	}
	if _, err := NewPreset("trpo"); err == nil || !strings.Contains(err.Error(), "GSPO") {
		t.Errorf("unknown preset error %v does not list GSPO", err)
	}
	for _, name := range PresetNames() {
		p, _ := NewPreset(name)
		if p.PolicyLoss != PolicyLossPPO || p.RolloutIS || p.RolloutISLevel != ISToken || p.RolloutISMode != ISTruncate ||
			p.RolloutISThreshold != 2 || p.RolloutISThresholdLower != 0 || p.RolloutISVetoThreshold != 1e-4 {
			t.Errorf("%s defaults: %+v", name, p)
		}
	}
	for _, c := range []struct {
		key string
		fix func(*Preset)
	}{
		{"policy_loss", func(p *Preset) { p.PolicyLoss = "vanilla" }},
		{"rollout_is_level", func(p *Preset) { p.RolloutIS, p.RolloutISLevel = true, "" }},
		{"rollout_is_mode", func(p *Preset) { p.RolloutIS, p.RolloutISMode = true, "drop" }},
		{"rollout_is_threshold", func(p *Preset) { p.RolloutIS, p.RolloutISThreshold = true, -1 }},
		{"rollout_is_threshold_lower", func(p *Preset) { p.RolloutIS, p.RolloutISThresholdLower = true, 5 }},
		{"rollout_is_veto_threshold", func(p *Preset) { p.RolloutIS, p.RolloutISVetoThreshold = true, 2 }},
		{"clip_ratio_low", func(p *Preset) { p.PolicyLoss, p.ClipLow = PolicyLossGSPO, 1 }},
	} {
		p := PresetGRPO()
		c.fix(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: error %v", c.key, err)
		}
		if _, err := p.ActorLoss(ActorBatch{}); err == nil {
			t.Errorf("%s: ActorLoss accepted the preset", c.key)
		}
	}
	// Off, the correction's settings are not read.
	p := PresetGRPO()
	p.RolloutISLevel, p.RolloutISThreshold = "bogus", -1
	mustNil(t, p.Validate())
	// On, malformed sampler log-probs are an error.
	setCorrection(&p, &RolloutCorrection{Level: ISToken, Mode: ISMask, Threshold: 2})
	bt := ActorBatch{LogProb: [][]float64{{-1}}, OldLogProb: [][]float64{{-1}}, Advantages: [][]float64{{1}},
		Entropy: [][]float64{{1}}, Mask: [][]bool{b(1)}, SamplerLogProb: [][]float64{{math.NaN()}}}
	if _, err := p.ActorLoss(bt); err == nil || !strings.Contains(err.Error(), "rollout_is") {
		t.Errorf("NaN sampler log-prob: %v", err)
	}
}
