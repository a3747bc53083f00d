package native

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// prefixBatches returns the same data twice: with two shared prompts in
// Prefixes, and with each prompt copied in front of its sequences.
func prefixBatches(rng *rand.Rand, vocab int) (shared, flat Batch) {
	prompts := [][]int{randTokens(rng, 9, vocab), randTokens(rng, 4, vocab)}
	shared.Prefixes = prompts
	for i, n := range []int{5, 1, 8, 6, 3} {
		p := []int{0, 0, 1, -1, 1}[i]
		s := randTokens(rng, n, vocab)
		m := make([]bool, n)
		for t := range m {
			m[t] = rng.Float64() < 0.8
		}
		m[0] = p >= 0 // position 0 is only predictable after a prefix
		shared.Tokens = append(shared.Tokens, s)
		shared.Mask = append(shared.Mask, m)
		shared.Prefix = append(shared.Prefix, p)
		if p >= 0 {
			full := append(slices.Clone(prompts[p]), s...)
			fm := append(make([]bool, len(prompts[p])), m...)
			flat.Tokens = append(flat.Tokens, full)
			flat.Mask = append(flat.Mask, fm)
		} else {
			flat.Tokens = append(flat.Tokens, s)
			flat.Mask = append(flat.Mask, m)
		}
	}
	return shared, flat
}

// TestSharedPrefixMatchesFlat: sharing a prompt changes neither the outputs
// nor the gradients, only the work.
func TestSharedPrefixMatchesFlat(t *testing.T) {
	ctx := context.Background()
	cfg := tinyConfig(false)
	cfg.MaxSeq = 32
	m := testModel(t, cfg, 11)
	rng := rand.New(rand.NewPCG(6, 6))
	shared, flat := prefixBatches(rng, cfg.Vocab)
	coefs := func(b Batch) OutputGrads {
		r := rand.New(rand.NewPCG(8, 8))
		var g OutputGrads
		for i := range b.Tokens {
			off := len(b.Tokens[i]) - len(shared.Tokens[i])
			lp, en, va := make([]float32, len(b.Tokens[i])), make([]float32, len(b.Tokens[i])), make([]float32, len(b.Tokens[i]))
			for t := off; t < len(lp); t++ {
				lp[t], en[t], va[t] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			g.LogProb, g.Entropy, g.Value = append(g.LogProb, lp), append(g.Entropy, en), append(g.Value, va)
		}
		return g
	}
	run := func(b Batch) (out [3][][]float32, grads []float32) {
		m.ZeroGrad()
		o, err := m.Forward(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Tokens {
			off := len(b.Tokens[i]) - len(shared.Tokens[i])
			out[0] = append(out[0], slices.Clone(o.LogProb[i][off:]))
			out[1] = append(out[1], slices.Clone(o.Entropy[i][off:]))
			out[2] = append(out[2], slices.Clone(o.Value[i][off:]))
		}
		if err := m.Backward(ctx, coefs(b)); err != nil {
			t.Fatal(err)
		}
		return out, slices.Clone(m.Grads())
	}
	so, sg := run(shared)
	fo, fg := run(flat)
	for k := range so {
		for i := range so[k] {
			for t2 := range so[k][i] {
				if d := math.Abs(float64(so[k][i][t2] - fo[k][i][t2])); d > 1e-5 {
					t.Fatalf("output %d seq %d pos %d: shared %g, flat %g", k, i, t2, so[k][i][t2], fo[k][i][t2])
				}
			}
		}
	}
	if so[0][0][0] == 0 {
		t.Error("position 0 after a prefix was not computed")
	}
	for i := range sg {
		if !close(float64(sg[i]), float64(fg[i]), 1e-4, 1e-6) {
			t.Fatalf("grad %d: shared %g, flat %g", i, sg[i], fg[i])
		}
	}
}

func TestGradientSharedPrefix(t *testing.T) {
	m, err := New(tinyConfig(true), 4)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range m.Params() {
		m.Params()[i] += float32(rng.NormFloat64() * 0.15)
	}
	b, _ := prefixBatches(rng, 11)
	coef := ragged(rng, b, -1, 1)
	checkGradients(t, m, b, func(out *Outputs, g *OutputGrads) float64 {
		g.LogProb, g.Entropy = coef, coef
		var l float64
		for i := range out.LogProb {
			for t2 := range out.LogProb[i] {
				l += float64(coef[i][t2]) * float64(out.LogProb[i][t2]+out.Entropy[i][t2])
			}
		}
		return l
	})
}

func TestPrefixValidation(t *testing.T) {
	m := testModel(t, sampleConfig(), 1)
	ctx := context.Background()
	for i, b := range []Batch{
		{Tokens: [][]int{{1}}, Prefix: []int{0}},
		{Tokens: [][]int{{1}}, Prefixes: [][]int{{}}, Prefix: []int{0}},
		{Tokens: [][]int{{1}}, Prefixes: [][]int{{99}}, Prefix: []int{0}},
		{Tokens: [][]int{{1}, {2}}, Prefixes: [][]int{{1}}, Prefix: []int{0}},
		{Tokens: [][]int{make([]int, 60)}, Prefixes: [][]int{make([]int, 10)}, Prefix: []int{0}},
	} {
		if _, err := m.Forward(ctx, b); err == nil {
			t.Errorf("bad batch %d accepted", i)
		}
	}
}
