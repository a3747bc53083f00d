package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/algos"
)

// tinyConfig is small enough for finite differences yet exercises GQA, QKV
// bias, the value head and (optionally) an untied LM head.
func tinyConfig(tied bool) Config {
	return Config{
		Vocab: 11, DModel: 16, Layers: 2, Heads: 4, KVHeads: 2, DFF: 24, MaxSeq: 16,
		RopeTheta: 10000, QKVBias: true, TieEmbeddings: tied, ValueHead: true,
	}
}

// randomBatch returns sequences of the given lengths with random tokens and
// a random loss mask (t = 0 never selected).
func randomBatch(rng *rand.Rand, vocab int, lens ...int) Batch {
	var b Batch
	for _, n := range lens {
		s := make([]int, n)
		m := make([]bool, n)
		for t := range s {
			s[t] = rng.IntN(vocab)
			m[t] = t > 0 && rng.Float64() < 0.8
		}
		b.Tokens = append(b.Tokens, s)
		b.Mask = append(b.Mask, m)
	}
	return b
}

func ragged(rng *rand.Rand, b Batch, lo, hi float64) [][]float32 {
	out := make([][]float32, len(b.Tokens))
	for i, s := range b.Tokens {
		out[i] = make([]float32, len(s))
		for t := range s {
			out[i][t] = float32(lo + (hi-lo)*rng.Float64())
		}
	}
	return out
}

// lossFunc evaluates a scalar loss from a forward pass and fills grads.
type lossFunc func(out *Outputs, g *OutputGrads) float64

// checkGradients compares Backward with central finite differences along a
// random direction in every trained tensor (every parameter tensor, or the
// adapters of a model with adapters), and on the single entry with
// the largest gradient of each tensor. The forward runs in float32, so the
// loss carries rounding noise of about 1e-7 relative; with a step of 1e-3 that
// is about 2e-4 absolute in a finite difference. The tolerance is 1e-2
// relative plus 1e-3 absolute; a wrong backward is off by far more.
func checkGradients(t *testing.T, m *Model, b Batch, loss lossFunc) {
	t.Helper()
	checkGradientsOpt(t, m, b, loss, false)
}

// checkGradientsOpt is checkGradients; with curved, the finite difference
// is taken with steps eps and eps/2, and the backward is compared with
// the second with the tolerance widened by their difference, an estimate
// of the error of the step (the central difference's error falls as
// eps²): for models whose loss curves too much along a random direction
// for one step (the Gemma layout, whose norms on every output and
// embedding scale make it steep), while a step much smaller would drown
// in float32's rounding.
func checkGradientsOpt(t *testing.T, m *Model, b Batch, loss lossFunc, curved bool) {
	t.Helper()
	ctx := context.Background()
	eval := func() float64 {
		out, err := m.Forward(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		var g OutputGrads
		return loss(out, &g)
	}
	m.ZeroGrad()
	out, err := m.Forward(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var g OutputGrads
	loss(out, &g)
	if err := m.Backward(ctx, g); err != nil {
		t.Fatal(err)
	}
	params, g0, tensors := m.trainable()
	grads := append([]float32(nil), g0...)
	rng := rand.New(rand.NewPCG(7, 7))
	eps := gcEps
	for _, ti := range tensors {
		p := params[ti.Offset : ti.Offset+ti.Size]
		gr := grads[ti.Offset : ti.Offset+ti.Size]
		// Directional derivative along u.
		u := make([]float64, len(p))
		var an float64
		for i := range u {
			u[i] = rng.NormFloat64()
			an += u[i] * float64(gr[i])
		}
		orig := append([]float32(nil), p...)
		central := func(eps float64) float64 {
			for i := range p {
				p[i] = orig[i] + float32(eps*u[i])
			}
			lp := eval()
			for i := range p {
				p[i] = orig[i] - float32(eps*u[i])
			}
			lm := eval()
			copy(p, orig)
			return (lp - lm) / (2 * eps)
		}
		fd, slack := central(eps), 0.0
		if curved {
			half := central(eps / 2)
			fd, slack = half, math.Abs(fd-half)
		}
		if !close(an, fd, 1e-2, 1e-3+slack) {
			t.Errorf("%s: directional derivative: backward %.6g, finite difference %.6g", ti.Name, an, fd)
		}
		// Largest single entry.
		k := 0
		for i := range gr {
			if math.Abs(float64(gr[i])) > math.Abs(float64(gr[k])) {
				k = i
			}
		}
		single := func(eps float64) float64 {
			p[k] = orig[k] + float32(eps)
			lp := eval()
			p[k] = orig[k] - float32(eps)
			lm := eval()
			p[k] = orig[k]
			return (lp - lm) / (2 * eps)
		}
		fd, slack = single(eps), 0
		if curved {
			half := single(eps / 2)
			fd, slack = half, math.Abs(fd-half)
		}
		if !close(float64(gr[k]), fd, 1e-2, 1e-3+slack) {
			t.Errorf("%s[%d]: backward %.6g, finite difference %.6g", ti.Name, k, gr[k], fd)
		}
	}
}

func close(a, b, rel, abs float64) bool {
	return math.Abs(a-b) <= abs+rel*math.Max(math.Abs(a), math.Abs(b))
}

// TestGradientOutputs checks the backward of each model output (log-prob,
// entropy, value) separately, through every parameter tensor, for tied and
// untied heads.
func TestGradientOutputs(t *testing.T) {
	for _, tied := range []bool{true, false} {
		m, err := New(tinyConfig(tied), 1)
		if err != nil {
			t.Fatal(err)
		}
		// Larger weights than the default init make the attention and MLP
		// nonlinear enough for the check to mean something.
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range m.Params() {
			m.Params()[i] += float32(rng.NormFloat64() * 0.15)
		}
		b := randomBatch(rng, 11, 5, 9, 7)
		coef := ragged(rng, b, -1, 1)
		for _, which := range []string{"logprob", "entropy", "value"} {
			t.Run(fmt.Sprintf("tied=%v/%s", tied, which), func(t *testing.T) {
				checkGradients(t, m, b, func(out *Outputs, g *OutputGrads) float64 {
					var src [][]float32
					switch which {
					case "logprob":
						src = out.LogProb
						g.LogProb = coef
					case "entropy":
						src = out.Entropy
						g.Entropy = coef
					case "value":
						src = out.Value
						g.Value = coef
					}
					var l float64
					for i := range src {
						for t2, x := range src[i] {
							l += float64(coef[i][t2]) * float64(x)
						}
					}
					return l
				})
			})
		}
	}
}

// TestGradientLearnerObjective runs the gradient check through the
// learner's own objectives (package algos): the PPO clipped surrogate with
// both clip branches taken, the entropy bonus, the KL loss (k1 and k3) and
// the clipped value loss on the value head.
func TestGradientLearnerObjective(t *testing.T) {
	m, err := New(tinyConfig(true), 2)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range m.Params() {
		m.Params()[i] += float32(rng.NormFloat64() * 0.15)
	}
	b := randomBatch(rng, 11, 6, 10, 8)
	out, err := m.Forward(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	// Old log-probs and values a fixed offset away so some ratios clip.
	old, oldV := Float64s(ragged(rng, b, -0.5, 0.5)), Float64s(ragged(rng, b, -0.5, 0.5))
	for i := range old {
		for t2 := range old[i] {
			old[i][t2] += float64(out.LogProb[i][t2])
			oldV[i][t2] += float64(out.Value[i][t2])
		}
	}
	adv, ref, ret := Float64s(ragged(rng, b, -1, 1)), Float64s(ragged(rng, b, -3, -1)), Float64s(ragged(rng, b, -1, 1))
	for _, kl := range []algos.KLKind{algos.KL1, algos.KL3} {
		p := algos.PresetPPO()
		p.EntropyCoeff, p.UseKLLoss, p.KLLossCoef, p.KLLossType, p.ClipRangeValue = 0.1, true, 0.3, kl, 0.2
		var clipFrac float64
		checkGradients(t, m, b, func(out *Outputs, g *OutputGrads) float64 {
			actor, err := p.ActorLoss(algos.ActorBatch{LogProb: Float64s(out.LogProb), OldLogProb: old, RefLogProb: ref,
				Advantages: adv, Entropy: Float64s(out.Entropy), Mask: b.Mask})
			if err != nil {
				t.Fatal(err)
			}
			critic, err := p.CriticLoss(Float64s(out.Value), oldV, ret, b.Mask)
			if err != nil {
				t.Fatal(err)
			}
			dv := Float32s(critic.DValue)
			for i := range dv {
				for t2 := range dv[i] {
					dv[i][t2] *= 0.5
				}
			}
			*g = OutputGrads{LogProb: Float32s(actor.DLogProb), Entropy: Float32s(actor.DEntropy), Value: dv}
			clipFrac = actor.PGClipFrac
			return actor.Loss + 0.5*critic.Loss
		})
		if clipFrac == 0 || clipFrac == 1 {
			t.Errorf("clip fraction %v: want both clipped and unclipped tokens", clipFrac)
		}
	}
}

const gcEps = 1e-3
