package algos

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Finite-difference checks of the policy losses of policy_loss.go and of
// the rollout importance weights inside ActorLoss. The weights ω are
// constants of the log-probs being trained, so PPO's and GSPO's gradients
// are the loss's derivatives. CISPO's stop-gradient weight r̂ is checked
// along the direction that moves logp, logp_old and logp_sampler of a
// token together, which leaves r and ρ (hence r̂ and ω) unchanged: the
// derivative there is exactly the stop-gradient one. GSPO-token's is
// checked against the PPO surrogate it equals with sg[s_i] frozen (no dual
// clip, old log-prob logp − log s_i). A point is skipped where the
// analytic gradient jumps within ±h (a clip decision flips).

// withSampler adds sampler log-probs near the old ones, with an occasional
// catastrophic token, so that weights are truncated, masked and vetoed.
func withSampler(rng *rand.Rand, bt ActorBatch) ActorBatch {
	bt.SamplerLogProb = make([][]float64, len(bt.OldLogProb))
	for i, row := range bt.OldLogProb {
		bt.SamplerLogProb[i] = make([]float64, len(row))
		for t, old := range row {
			d := 0.6 * rng.NormFloat64()
			if rng.IntN(40) == 0 {
				d = 12 // ρ = e^−12 < 1e-4
			}
			bt.SamplerLogProb[i][t] = old + d
		}
	}
	return bt
}

// offPolicyCorrections are the corrections the checks run under.
func offPolicyCorrections() []*RolloutCorrection {
	geo := RolloutCorrection{Level: ISGeometric, Mode: ISTruncate, Threshold: 1.5, VetoThreshold: 1e-4}
	seq := RolloutCorrection{Level: ISSequence, Mode: ISMask, Threshold: 3, ThresholdLower: 0.2}
	tis, icepop := TIS(2), IcePop()
	tis.VetoThreshold = 1e-4
	return []*RolloutCorrection{nil, &tis, &icepop, &seq, &geo}
}

// setCorrection turns the preset's rollout_is on with c (off for nil).
func setCorrection(p *Preset, c *RolloutCorrection) {
	p.RolloutIS = c != nil
	if c != nil {
		p.RolloutISLevel, p.RolloutISMode = c.Level, c.Mode
		p.RolloutISThreshold, p.RolloutISThresholdLower, p.RolloutISVetoThreshold = c.Threshold, c.ThresholdLower, c.VetoThreshold
	}
}

// fdActor checks ActorLoss's ∂L/∂logp on every token of bt by central
// differences; withOld also moves the token's old and sampler log-probs.
// It returns the number of points checked and of those with a non-zero
// policy gradient.
func fdActor(t *testing.T, p Preset, bt ActorBatch, withOld bool) (checked, nonzero int) {
	t.Helper()
	res, err := p.ActorLoss(bt)
	mustNil(t, err)
	parts, err := p.ActorGradParts(bt)
	mustNil(t, err)
	move := func(i, tk int, h float64) {
		bt.LogProb[i][tk] += h
		if withOld {
			bt.OldLogProb[i][tk] += h
			if bt.SamplerLogProb != nil {
				bt.SamplerLogProb[i][tk] += h
			}
		}
	}
	eval := func(i, tk int, h float64) ActorLossResult {
		saved := [3]float64{bt.LogProb[i][tk], bt.OldLogProb[i][tk], 0}
		if bt.SamplerLogProb != nil {
			saved[2] = bt.SamplerLogProb[i][tk]
		}
		move(i, tk, h)
		r, err := p.ActorLoss(bt)
		mustNil(t, err)
		bt.LogProb[i][tk], bt.OldLogProb[i][tk] = saved[0], saved[1]
		if bt.SamplerLogProb != nil {
			bt.SamplerLogProb[i][tk] = saved[2]
		}
		return r
	}
	for i := range bt.Mask {
		for tk := range bt.Mask[i] {
			up, down := eval(i, tk, fdH), eval(i, tk, -fdH)
			num := (up.Loss - down.Loss) / (2 * fdH)
			g := res.DLogProb[i][tk]
			if !bt.Mask[i][tk] {
				if num != 0 || g != 0 {
					t.Fatalf("%s: out-of-mask gradient at [%d][%d]: %v, numeric %v", p.Name, i, tk, g, num)
				}
				continue
			}
			if !near(up.DLogProb[i][tk], down.DLogProb[i][tk], 1e-4) {
				continue // a kink within ±h
			}
			if !fdClose(g, num) {
				t.Fatalf("%s (%s, rollout_is %v %s/%s): dL/dlogp[%d][%d] analytic %v numeric %v",
					p.Name, p.PolicyLoss, p.RolloutIS, p.RolloutISLevel, p.RolloutISMode, i, tk, g, num)
			}
			checked++
			if parts.Task[i][tk] != 0 {
				nonzero++
			}
		}
	}
	return checked, nonzero
}

func TestFDPolicyLossesWithRolloutIS(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	modes := []LossAggMode{TokenMean, SeqMeanTokenMean, SeqMeanTokenSum}
	kinds := []KLKind{KL1, KL2, KL3, KLAbs}
	for _, loss := range []PolicyLoss{PolicyLossPPO, PolicyLossGSPO, PolicyLossCISPO} {
		checked, nonzero := 0, 0
		for iter := range 120 {
			p := PresetGRPO()
			p.Name, p.PolicyLoss, p.LossAgg = string(loss), loss, modes[iter%len(modes)]
			p.MicroBatchWeighting = iter%5 == 0
			p.EntropyCoeff = 0.05
			p.UseKLLoss, p.KLLossCoef, p.KLLossType = iter%2 == 0, 0.3, kinds[iter%len(kinds)]
			if loss == PolicyLossCISPO {
				p.ClipLow, p.ClipHigh = 1, 0.2
			}
			cs := offPolicyCorrections()
			setCorrection(&p, cs[iter%len(cs)])
			bt := withSampler(rng, randomBatch(rng))
			c, nz := fdActor(t, p, bt, loss == PolicyLossCISPO)
			checked, nonzero = checked+c, nonzero+nz
		}
		if checked < 400 || nonzero < checked/3 {
			t.Errorf("%s: %d points checked, %d with a policy gradient", loss, checked, nonzero)
		}
	}
}

func TestFDGSPOToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	checked, nonzero := 0, 0
	for iter := range 200 {
		p := PresetGRPO()
		p.PolicyLoss, p.ClipLow, p.ClipHigh = PolicyLossGSPOToken, 0.1, 0.15
		p.LossAgg = []LossAggMode{TokenMean, SeqMeanTokenMean, SeqMeanTokenSum}[iter%3]
		cs := offPolicyCorrections()
		setCorrection(&p, cs[iter%len(cs)])
		bt := withSampler(rng, randomBatch(rng))
		parts, err := p.ActorGradParts(bt)
		mustNil(t, err)
		// The weights of the policy term, and the frozen sequence ratios.
		w, err := p.LossWeights(bt.Mask)
		mustNil(t, err)
		if p.RolloutIS {
			is, err := RolloutISWeights(p.Correction(), bt.OldLogProb, bt.SamplerLogProb, bt.Mask)
			mustNil(t, err)
			for i := range w {
				for tk := range w[i] {
					w[i][tk] *= is.Weights[i][tk]
				}
			}
		}
		g, err := GSPO{ClipLow: p.ClipLow, ClipHigh: p.ClipHigh}.Loss(bt.LogProb, bt.OldLogProb, bt.Advantages, w, bt.Mask)
		mustNil(t, err)
		surrogate := PPOClip{ClipLow: p.ClipLow, ClipHigh: p.ClipHigh}
		for i := range bt.Mask {
			for tk, m := range bt.Mask[i] {
				if !m {
					if parts.Task[i][tk] != 0 {
						t.Fatalf("out-of-mask gradient at [%d][%d]", i, tk)
					}
					continue
				}
				x, a := bt.LogProb[i][tk], bt.Advantages[i][tk]
				oldEff := x - math.Log(g.Ratio[i])
				lo, hi := surrogate.Token(x-fdH, oldEff, a), surrogate.Token(x+fdH, oldEff, a)
				if lo.Clipped != hi.Clipped {
					continue
				}
				num := w[i][tk] * (hi.Loss - lo.Loss) / (2 * fdH)
				if !fdClose(parts.Task[i][tk], num) {
					t.Fatalf("GSPO-token [%d][%d]: analytic %v numeric %v", i, tk, parts.Task[i][tk], num)
				}
				checked++
				if num != 0 {
					nonzero++
				}
			}
		}
	}
	if checked < 800 || nonzero < checked/3 {
		t.Errorf("%d points checked, %d with a gradient", checked, nonzero)
	}
}
