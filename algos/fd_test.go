package algos

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Finite-difference checks of every derivative this package returns. Points
// where a clip/clamp decision flips within ±h are skipped (the loss has a kink
// there); each test also requires that most points were checked.

const fdH = 1e-6

func fdClose(analytic, numeric float64) bool {
	return math.Abs(analytic-numeric) <= 1e-5*math.Max(1, math.Abs(numeric))
}

func TestFDPPOToken(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	clips := []PPOClip{{0.2, 0.28, 3}, {0.2, 0.2, 0}, {0.1, 0.5, 1.5}}
	checked := 0
	for range 3000 {
		c := clips[rng.IntN(len(clips))]
		logp, old := rng.NormFloat64(), rng.NormFloat64()
		adv := 3 * rng.NormFloat64()
		lo, mid, hi := c.Token(logp-fdH, old, adv), c.Token(logp, old, adv), c.Token(logp+fdH, old, adv)
		if lo.Clipped != hi.Clipped || lo.ClippedLower != hi.ClippedLower || lo.Clipped != mid.Clipped {
			continue
		}
		num := (hi.Loss - lo.Loss) / (2 * fdH)
		if !fdClose(mid.DLogp, num) {
			t.Fatalf("PPO %+v logp=%v old=%v A=%v: analytic %v numeric %v", c, logp, old, adv, mid.DLogp, num)
		}
		checked++
	}
	if checked < 2500 {
		t.Errorf("only %d points checked", checked)
	}
}

func TestFDKL(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []KLKind{KL1, KLAbs, KL2, KL3} {
		checked := 0
		for range 1000 {
			logp, ref := 1.5*rng.NormFloat64(), 1.5*rng.NormFloat64()
			vlo, _, _ := k.KL(logp-fdH, ref)
			v, d, _ := k.KL(logp, ref)
			vhi, _, _ := k.KL(logp+fdH, ref)
			if (k == KL3 && (vlo == 10 || vhi == 10 || v == 10)) || (k == KLAbs && math.Abs(logp-ref) < 2*fdH) {
				continue
			}
			num := (vhi - vlo) / (2 * fdH)
			if !fdClose(d, num) {
				t.Fatalf("%s logp=%v ref=%v: analytic %v numeric %v", k, logp, ref, d, num)
			}
			checked++
		}
		if checked < 800 {
			t.Errorf("%s: only %d points checked", k, checked)
		}
	}
}

func TestFDValueLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for range 2000 {
		v, old, ret := rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
		lo, mid, hi := ValueLossToken(v-fdH, old, ret, 0.5), ValueLossToken(v, old, ret, 0.5), ValueLossToken(v+fdH, old, ret, 0.5)
		if lo.Clipped != hi.Clipped || lo.Clipped != mid.Clipped || math.Abs(math.Abs(v-old)-0.5) < 2*fdH {
			continue
		}
		num := (hi.Loss - lo.Loss) / (2 * fdH)
		if !fdClose(mid.DValue, num) {
			t.Fatalf("value v=%v old=%v R=%v: analytic %v numeric %v", v, old, ret, mid.DValue, num)
		}
		checked++
	}
	if checked < 1800 {
		t.Errorf("only %d points checked", checked)
	}
}

// randomBatch builds a ragged batch with a random mask.
func randomBatch(rng *rand.Rand) ActorBatch {
	rows := 2 + rng.IntN(3)
	var bt ActorBatch
	for range rows {
		n := 1 + rng.IntN(5)
		var lp, old, ref, adv, ent []float64
		var m []bool
		for range n {
			lp = append(lp, -math.Abs(rng.NormFloat64()))
			old = append(old, -math.Abs(rng.NormFloat64()))
			ref = append(ref, -math.Abs(rng.NormFloat64()))
			adv = append(adv, rng.NormFloat64())
			ent = append(ent, 2*rng.Float64())
			m = append(m, rng.IntN(4) != 0)
		}
		bt.LogProb = append(bt.LogProb, lp)
		bt.OldLogProb = append(bt.OldLogProb, old)
		bt.RefLogProb = append(bt.RefLogProb, ref)
		bt.Advantages = append(bt.Advantages, adv)
		bt.Entropy = append(bt.Entropy, ent)
		bt.Mask = append(bt.Mask, m)
	}
	return bt
}

func TestFDActorAndCriticLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	kinds := []KLKind{KL1, KL2, KL3, KLAbs}
	checked := 0
	for iter := range 150 {
		p, _ := NewPreset(PresetNames()[iter%4])
		p.EntropyCoeff = 0.05
		p.UseKLLoss, p.KLLossCoef, p.KLLossType = true, 0.3, kinds[iter%len(kinds)]
		bt := randomBatch(rng)
		res, err := p.ActorLoss(bt)
		mustNil(t, err)
		for i := range bt.Mask {
			for tk := range bt.Mask[i] {
				x := bt.LogProb[i][tk]
				lo, hi := p.Clip().Token(x-fdH, bt.OldLogProb[i][tk], bt.Advantages[i][tk]), p.Clip().Token(x+fdH, bt.OldLogProb[i][tk], bt.Advantages[i][tk])
				klo, _, _ := p.KLLossType.KL(x-fdH, bt.RefLogProb[i][tk])
				khi, _, _ := p.KLLossType.KL(x+fdH, bt.RefLogProb[i][tk])
				smooth := lo.Clipped == hi.Clipped && lo.ClippedLower == hi.ClippedLower && klo != 10 && khi != 10 &&
					math.Abs(x-bt.RefLogProb[i][tk]) > 2*fdH
				bt.LogProb[i][tk] = x + fdH
				up, _ := p.ActorLoss(bt)
				bt.LogProb[i][tk] = x - fdH
				down, _ := p.ActorLoss(bt)
				bt.LogProb[i][tk] = x
				num := (up.Loss - down.Loss) / (2 * fdH)
				if smooth && !fdClose(res.DLogProb[i][tk], num) {
					t.Fatalf("%s dL/dlogp[%d][%d]: analytic %v numeric %v", p.Name, i, tk, res.DLogProb[i][tk], num)
				}
				if !bt.Mask[i][tk] && (num != 0 || res.DLogProb[i][tk] != 0) {
					t.Fatalf("out-of-mask gradient at [%d][%d]", i, tk)
				}
				if smooth {
					checked++
				}

				h := bt.Entropy[i][tk]
				bt.Entropy[i][tk] = h + fdH
				up, _ = p.ActorLoss(bt)
				bt.Entropy[i][tk] = h - fdH
				down, _ = p.ActorLoss(bt)
				bt.Entropy[i][tk] = h
				if num := (up.Loss - down.Loss) / (2 * fdH); !fdClose(res.DEntropy[i][tk], num) {
					t.Fatalf("%s dL/dH[%d][%d]: analytic %v numeric %v", p.Name, i, tk, res.DEntropy[i][tk], num)
				}
			}
		}

		// Critic on the same shapes: values = LogProb, old values = OldLogProb,
		// returns = Advantages.
		cr, err := p.CriticLoss(bt.LogProb, bt.OldLogProb, bt.Advantages, bt.Mask)
		mustNil(t, err)
		for i := range bt.Mask {
			for tk := range bt.Mask[i] {
				v := bt.LogProb[i][tk]
				lo := ValueLossToken(v-fdH, bt.OldLogProb[i][tk], bt.Advantages[i][tk], p.ClipRangeValue)
				hi := ValueLossToken(v+fdH, bt.OldLogProb[i][tk], bt.Advantages[i][tk], p.ClipRangeValue)
				bt.LogProb[i][tk] = v + fdH
				up, _ := p.CriticLoss(bt.LogProb, bt.OldLogProb, bt.Advantages, bt.Mask)
				bt.LogProb[i][tk] = v - fdH
				down, _ := p.CriticLoss(bt.LogProb, bt.OldLogProb, bt.Advantages, bt.Mask)
				bt.LogProb[i][tk] = v
				num := (up.Loss - down.Loss) / (2 * fdH)
				if lo.Clipped == hi.Clipped && !fdClose(cr.DValue[i][tk], num) {
					t.Fatalf("%s dL/dv[%d][%d]: analytic %v numeric %v", p.Name, i, tk, cr.DValue[i][tk], num)
				}
			}
		}
	}
	if checked < 500 {
		t.Errorf("only %d actor points checked", checked)
	}
}
