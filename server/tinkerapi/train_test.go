package tinkerapi

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/native"
)

// equivTol is the relative tolerance of the equivalence tests: float32
// rounding. The server runs the same operations in the same order as the
// reference, so the weights agree exactly in practice.
const equivTol = 1e-6

// TestTrainingEqualsNativeStep checks that forward_backward(cross_entropy)
// + optim_step through HTTP updates every parameter as the in-process
// learner's step does (ZeroGrad, Forward, Backward of −weights,
// ClipGradNorm, AdamW), for full training (rank 0) and for adapters, over
// two steps (so the optimizer's moments and step count matter too).
func TestTrainingEqualsNativeStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		lc   *wire.LoraConfig
	}{{"full", fullConfig()}, {"lora", loraConfig()}} {
		t.Run(tc.name, func(t *testing.T) {
			base := tinyPolicy(t)
			ts := start(t, base, Options{})
			id := ts.newModel(t, tc.lc)
			r := newRef(t, base, tc.lc)
			vocab := base.VocabSize()
			for step := range 2 {
				exs := examples(uint64(step+1), 3, 20, vocab)
				var fb wire.ForwardBackwardOutput
				ts.run(t, "forward_backward", fbRequest(id, intp(2*step+1), exs), &fb)
				var os wire.OptimStepResponse
				ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(2*step + 2)}, &os)
				if os.Metrics["step:max"] != float64(step+1) || os.Metrics["skipped:sum"] != 0 || !(os.Metrics["grad_norm:mean"] > 0) {
					t.Errorf("step %d: metrics %v", step, os.Metrics)
				}
				r.step(t, exs, adam)
				got, gotBase := ts.modelWeights(t, id)
				want, wantBase := weightsOf(r.m)
				if step == 0 {
					start, _ := weightsOf(newRef(t, base, tc.lc).m)
					if maxRelDiff(t, got, start) == 0 {
						t.Fatal("the step changed no parameter")
					}
				}
				d := sameWeights(t, "trained", got, want, equivTol)
				sameWeights(t, "base", gotBase, wantBase, 0)
				t.Logf("step %d: max relative difference %.3g over %d trained parameters", step, d, len(got))
			}
			if tc.lc.Rank > 0 {
				// The adapters train; the base weights stay.
				_, now := ts.modelWeights(t, id)
				orig := base.Lock().Params()
				sameWeights(t, "frozen base", now, orig, 0)
				base.Unlock()
			}
		})
	}
}

// TestForwardOutputs checks forward's per-token outputs against the
// model's own Forward, and that forward leaves the gradient alone.
func TestForwardOutputs(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	id := ts.newModel(t, fullConfig())
	exs := examples(5, 4, 30, base.VocabSize())
	var out wire.ForwardBackwardOutput
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data(exs), LossFn: wire.LossCrossEntropy}}, &out)
	if len(out.LossFnOutputs) != len(exs) || out.LossFnOutputType == "" {
		t.Fatalf("outputs %+v", out)
	}
	r := newRef(t, base, fullConfig())
	var sum float64
	for i, ex := range exs {
		o, err := r.m.Forward(context.Background(), native.Batch{Tokens: [][]int{ex.seq}})
		if err != nil {
			t.Fatal(err)
		}
		lps, _ := out.LossFnOutputs[i]["logprobs"].Dense()
		els, _ := out.LossFnOutputs[i]["elementwise_loss"].Dense()
		if len(lps) != len(ex.w) || len(els) != len(ex.w) {
			t.Fatalf("datum %d: %d logprobs, %d losses for %d tokens", i, len(lps), len(els), len(ex.w))
		}
		for t2 := range ex.w {
			want := float64(o.LogProb[0][t2+1])
			if math.Abs(lps[t2]-want) > 1e-5 {
				t.Errorf("datum %d token %d: logprob %v, want %v", i, t2, lps[t2], want)
			}
			if e := -ex.w[t2] * lps[t2]; math.Abs(els[t2]-e) > 1e-5 {
				t.Errorf("datum %d token %d: loss %v, want %v", i, t2, els[t2], e)
			}
			sum += els[t2]
		}
	}
	if math.Abs(out.Metrics["loss:sum"]-sum) > 1e-4 {
		t.Errorf("loss:sum %v, want the sum %v", out.Metrics["loss:sum"], sum)
	}

	// A forward between forward_backward and optim_step changes nothing.
	train := examples(6, 2, 16, base.VocabSize())
	ts.run(t, "forward_backward", fbRequest(id, nil, train), nil)
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data(exs), LossFn: wire.LossCrossEntropy}}, nil)
	ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)
	r.step(t, train, adam)
	got, _ := ts.modelWeights(t, id)
	want, _ := weightsOf(r.m)
	sameWeights(t, "after forward", got, want, equivTol)
}

// TestGradientAccumulates checks that two forward_backward calls before an
// optim_step add their gradients: the step equals one of their data
// together.
func TestGradientAccumulates(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{MaxForwardTokens: 8}) // every datum its own pass
	id := ts.newModel(t, loraConfig())
	exs := examples(7, 4, 12, base.VocabSize())
	ts.run(t, "forward_backward", fbRequest(id, intp(1), exs[:2]), nil)
	ts.run(t, "forward_backward", fbRequest(id, intp(2), exs[2:]), nil)
	ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(3)}, nil)
	r := newRef(t, base, loraConfig())
	r.step(t, exs, adam)
	got, _ := ts.modelWeights(t, id)
	want, _ := weightsOf(r.m)
	// Summed in another order: float32 rounding of the gradient, which
	// AdamW's normalisation can magnify for tiny moments.
	d := maxRelDiff(t, got, want)
	if d > 1e-3 {
		t.Errorf("accumulated gradients: parameters differ by up to %.3g", d)
	}
	t.Logf("max relative difference %.3g", d)
}

// TestPolicyLosses checks importance_sampling and ppo: their outputs per
// token, and their gradients through the update they make.
func TestPolicyLosses(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	vocab := base.VocabSize()
	ex := examples(9, 1, 12, vocab)[0]
	n := len(ex.seq) - 1
	// The model's own log-probabilities, for the sampler's.
	id := ts.newModel(t, fullConfig())
	var fwd wire.ForwardBackwardOutput
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data([]example{ex}), LossFn: wire.LossCrossEntropy}}, &fwd)
	lp, _ := fwd.LossFnOutputs[0]["logprobs"].Dense()
	adv := make([]float64, n)
	q := make([]float64, n)
	for i := range n {
		adv[i] = float64(1 - 2*(i%2)) // 1, -1, …: with the ratios, every case of ppo's min
		// Ratios exp(lp − q) of 0.5, 1 and 2 in turn.
		q[i] = lp[i] - math.Log([]float64{0.5, 1, 2}[i%3])
	}
	datum := wire.Datum{ModelInput: wire.TokensInput(ex.seq[:n]), LossFnInputs: map[string]wire.TensorData{
		wire.InputTargetTokens: wire.Ints(ex.seq[1:]), wire.InputAdvantages: wire.Floats(adv), wire.InputLogprobs: wire.Floats(q)}}
	ppoCfg := map[string]float64{"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}
	for _, tc := range []struct {
		fn   string
		cfg  map[string]float64
		elem func(r, a float64) float64
		grad func(r, a float64) float64
	}{
		{wire.LossImportanceSampling, nil, func(r, a float64) float64 { return -r * a }, func(r, a float64) float64 { return -r * a }},
		{wire.LossPPO, ppoCfg, func(r, a float64) float64 { return -math.Min(r*a, math.Min(math.Max(r, 0.9), 1.1)*a) },
			func(r, a float64) float64 {
				if r*a <= math.Min(math.Max(r, 0.9), 1.1)*a {
					return -r * a
				}
				return 0
			}},
	} {
		t.Run(tc.fn, func(t *testing.T) {
			id := ts.newModel(t, fullConfig())
			var out wire.ForwardBackwardOutput
			ts.run(t, "forward_backward", wire.ForwardBackwardRequest{ModelID: id, ForwardBackwardInput: wire.ForwardBackwardInput{
				Data: []wire.Datum{datum}, LossFn: tc.fn, LossFnConfig: tc.cfg}}, &out)
			els, _ := out.LossFnOutputs[0]["elementwise_loss"].Dense()
			w := make([]float64, n)
			for i := range n {
				r := []float64{0.5, 1, 2}[i%3]
				if want := tc.elem(r, adv[i]); math.Abs(els[i]-want) > 1e-4 {
					t.Errorf("token %d: loss %v, want %v", i, els[i], want)
				}
				// The update equals cross_entropy's with weights −dL/dlp.
				w[i] = -float64(float32(tc.grad(r, adv[i])))
			}
			ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)
			rf := newRef(t, base, fullConfig())
			rf.step(t, []example{{ex.seq, w}}, adam)
			got, _ := ts.modelWeights(t, id)
			want, _ := weightsOf(rf.m)
			// The test's ratios are the nominal ones, the server's recomputed
			// from float32 log-probs: their float32 gradients may differ in
			// the last bit.
			d := maxRelDiff(t, got, want)
			if d > 1e-5 {
				t.Errorf("update differs from the formula's by up to %.3g", d)
			}
			t.Logf("max relative difference %.3g", d)
		})
	}
}

// TestSequenceOrder checks that a model's training requests run in seq_id
// order even when they arrive out of it.
func TestSequenceOrder(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{SeqGapWait: 2 * time.Second})
	id := ts.newModel(t, fullConfig())
	exs := examples(3, 2, 10, base.VocabSize())
	// optim_step (seq 2) first: run first it would find no gradient.
	step := ts.submit(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(2)})
	fb := ts.submit(t, "forward_backward", fbRequest(id, intp(1), exs))
	ts.result(t, fb)
	ts.result(t, step)
	r := newRef(t, base, fullConfig())
	r.step(t, exs, adam)
	got, _ := ts.modelWeights(t, id)
	want, _ := weightsOf(r.m)
	sameWeights(t, "reordered", got, want, equivTol)
}

// TestIdempotentRetry checks that a training request re-sent with its
// seq_id and payload runs once and answers the original request id, and
// that reusing a seq_id for another payload is a 409.
func TestIdempotentRetry(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	id := ts.newModel(t, fullConfig())
	exs := examples(4, 2, 10, base.VocabSize())
	first := ts.submit(t, "forward_backward", fbRequest(id, intp(1), exs))
	again := ts.submit(t, "forward_backward", fbRequest(id, intp(1), exs))
	if again != first {
		t.Errorf("retry got request id %s, want the original %s", again, first)
	}
	ts.result(t, first)
	if retry := ts.submit(t, "forward_backward", fbRequest(id, intp(1), exs)); retry != first {
		t.Errorf("retry after completion got %s, want %s", retry, first)
	}
	d := ts.detail(t, "forward_backward", fbRequest(id, intp(1), exs[:1]), http.StatusConflict)
	if !strings.Contains(d, "sequence number was reused") {
		t.Errorf("409 detail %q", d)
	}
	ts.detail(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(1)}, http.StatusConflict)
	ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(2)}, nil)
	if retry := ts.submit(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(2)}); retry == first {
		t.Error("a retried optim_step got the forward_backward's id")
	}
	// One forward_backward and one step were applied.
	r := newRef(t, base, fullConfig())
	r.step(t, exs, adam)
	got, _ := ts.modelWeights(t, id)
	want, _ := weightsOf(r.m)
	sameWeights(t, "after retries", got, want, equivTol)
}

// TestNonFiniteGradient checks that an optim_step with an infinite
// gradient leaves the weights alone, says so, and clears the gradient.
func TestNonFiniteGradient(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	id := ts.newModel(t, fullConfig())
	exs := examples(8, 2, 10, base.VocabSize())
	huge := []example{{exs[0].seq, make([]float64, len(exs[0].w))}}
	for i := range huge[0].w {
		huge[0].w[i] = 3e38
	}
	before, _ := ts.modelWeights(t, id)
	ts.run(t, "forward_backward", fbRequest(id, nil, huge), nil)
	ts.run(t, "forward_backward", fbRequest(id, nil, huge), nil) // 3e38 twice overflows
	var os wire.OptimStepResponse
	ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, &os)
	if os.Metrics["skipped:sum"] != 1 {
		t.Fatalf("metrics %v: the step was not skipped", os.Metrics)
	}
	after, _ := ts.modelWeights(t, id)
	sameWeights(t, "skipped step", after, before, 0)
	// The gradient was cleared: the next step is the first one's.
	ts.run(t, "forward_backward", fbRequest(id, nil, exs), nil)
	ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam}, nil)
	r := newRef(t, base, fullConfig())
	r.step(t, exs, adam)
	got, _ := ts.modelWeights(t, id)
	want, _ := weightsOf(r.m)
	sameWeights(t, "after a skipped step", got, want, equivTol)
}
