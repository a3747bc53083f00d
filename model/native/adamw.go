package native

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/internal/simd"
)

// AdamW is Adam with decoupled weight decay (Loshchilov & Hutter), applied
// to every trained tensor of a model: every tensor, or only the adapters
// while the model has them (EnableLoRA). Weight decay applies only to
// tensors marked Decay (matrices and embeddings, not norms or biases; every
// adapter matrix).
type AdamW struct {
	Beta1       float32 // first-moment decay, e.g. 0.9
	Beta2       float32 // second-moment decay, e.g. 0.95
	Eps         float32 // denominator guard, e.g. 1e-8
	WeightDecay float32 // decoupled decay per unit learning rate, e.g. 0.01

	step int
	m, v []float32 // moments, laid out like the trained parameters
}

// NewAdamW returns an optimizer with zero moments for m's trained
// parameters (Model.NumTrainable): the adapters' if m has them when it is
// made, otherwise all.
func NewAdamW(m *Model, beta1, beta2, eps, weightDecay float32) *AdamW {
	n := m.NumTrainable()
	opt := &AdamW{
		Beta1: beta1, Beta2: beta2, Eps: eps, WeightDecay: weightDecay,
	}
	opt.m, opt.v = residentPair(n)
	return opt
}

// Steps returns the number of updates applied so far.
func (o *AdamW) Steps() int { return o.step }

// Moments returns the first and second moment vectors (laid out like
// Model.Params, or LoRA.Params for a model with adapters); they are the
// optimizer's state, saved in checkpoints.
func (o *AdamW) Moments() (m, v []float32) { return o.m, o.v }

// Update applies one AdamW step with learning rate lr using the model's
// current gradients. It does not clear them.
func (o *AdamW) Update(m *Model, lr float32) error {
	p, g, tensors := m.trainable()
	if len(o.m) != len(p) {
		return fmt.Errorf("native: AdamW has state for %d parameters, model trains %d", len(o.m), len(p))
	}
	o.step++
	m.version++
	bc1 := float32(1 - math.Pow(float64(o.Beta1), float64(o.step)))
	bc2 := float32(1 - math.Pow(float64(o.Beta2), float64(o.step)))
	for _, t := range tensors {
		wd := float32(0)
		if t.Decay {
			wd = o.WeightDecay
		}
		a, b := t.Offset, t.Offset+t.Size
		m.kern.AdamW(p[a:b], g[a:b], o.m[a:b], o.v[a:b], lr, o.Beta1, o.Beta2, o.Eps, wd, bc1, bc2)
	}
	return nil
}

// ClipGradNorm scales the model's gradients (of the trained parameters:
// the adapters' while it has them) so their global L2 norm is at most
// maxNorm (when maxNorm > 0) and returns the norm before clipping. A
// non-finite norm is returned as is and the gradients are left unchanged, so
// the caller can skip the step.
func ClipGradNorm(m *Model, maxNorm float64) float64 {
	// Squares are summed per fixed chunk (float32, simd.Dot) and the chunk
	// sums in order in float64: the same result whatever the number of
	// workers.
	const chunk = 1 << 12
	_, g, _ := m.trainable()
	chunks := (len(g) + chunk - 1) / chunk
	sums := make([]float64, chunks)
	parallelRows(chunks, chunk, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			x := g[c*chunk : min((c+1)*chunk, len(g))]
			sums[c] = float64(simd.Dot(x, x))
		}
	})
	var s float64
	for _, v := range sums {
		s += v
	}
	norm := math.Sqrt(s)
	if maxNorm > 0 && norm > maxNorm && !math.IsInf(norm, 0) && !math.IsNaN(norm) {
		c := float32(maxNorm / norm)
		parallelRows(chunks, chunk, func(lo, hi int) {
			simd.Scale(c, g[lo*chunk:min(hi*chunk, len(g))])
		})
	}
	return norm
}

// Schedule is a learning-rate schedule: linear warmup from 0 to Peak over
// Warmup steps, then constant (Cosine false) or cosine decay to Min at step
// Total (and Min after it).
type Schedule struct {
	Peak   float64
	Min    float64
	Warmup int
	Total  int
	Cosine bool
}

// Validate reports an inconsistent schedule.
func (s Schedule) Validate() error {
	switch {
	case s.Peak <= 0 || s.Min < 0 || s.Min > s.Peak:
		return fmt.Errorf("native: schedule: need 0 ≤ min ≤ peak and peak > 0 (got peak %g, min %g)", s.Peak, s.Min)
	case s.Warmup < 0:
		return errors.New("native: schedule: negative warmup")
	case s.Cosine && s.Total <= s.Warmup:
		return fmt.Errorf("native: schedule: cosine needs total (%d) > warmup (%d)", s.Total, s.Warmup)
	}
	return nil
}

// LR returns the learning rate for the update with 0-based index step.
func (s Schedule) LR(step int) float64 {
	if step < s.Warmup {
		return s.Peak * float64(step+1) / float64(s.Warmup)
	}
	if !s.Cosine {
		return s.Peak
	}
	if step >= s.Total {
		return s.Min
	}
	frac := float64(step-s.Warmup) / float64(s.Total-s.Warmup)
	return s.Min + 0.5*(s.Peak-s.Min)*(1+math.Cos(math.Pi*frac))
}
