package tinkerapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/native"
)

// The loss functions, per token t of a datum, with lp the model's
// log-probability of target_tokens[t], w its weight (loss mask; default
// 1), A the advantage and q the sampler's log-probability. They follow
// SkyRL's skyrl/tinker/loss_fns.py (cross_entropy_loss,
// importance_sampling_loss, ppo_loss) and Tinker's loss documentation, and
// the loss of a call is their plain sum over tokens and data (no mean),
// the SDK's own reading (training_client.py: "Backend CE is
// L = sum(-logprobs * weights)", which forward_backward_custom relies on):
//
//	cross_entropy:        −w·lp
//	importance_sampling:  −w·r·A, r = exp(lp − q)
//	ppo:                  −w·min(r·A, clip(r, lo, hi)·A)
//
// with lo, hi = loss_fn_config's clip_low_threshold and
// clip_high_threshold (default 0.8 and 1.2: Tinker's ε = 0.2). A token of
// weight 0 contributes exactly 0 (SkyRL's safe_loss_mask).
const (
	defaultClipLow  = 0.8
	defaultClipHigh = 1.2
)

// lossConfigKeys are the loss_fn_config keys each loss reads (SkyRL's
// server refuses others).
var lossConfigKeys = map[string][]string{
	wire.LossCrossEntropy:       nil,
	wire.LossImportanceSampling: nil,
	wire.LossPPO:                {"clip_low_threshold", "clip_high_threshold"},
}

// lossInputKeys are the loss_fn_inputs each loss reads.
var lossInputKeys = map[string][]string{
	wire.LossCrossEntropy:       {wire.InputTargetTokens, wire.InputWeights},
	wire.LossImportanceSampling: {wire.InputTargetTokens, wire.InputWeights, wire.InputAdvantages, wire.InputLogprobs},
	wire.LossPPO:                {wire.InputTargetTokens, wire.InputWeights, wire.InputAdvantages, wire.InputLogprobs},
}

// loss is a checked loss function and its configuration.
type loss struct {
	fn     string
	lo, hi float64
}

// at returns the loss of one token and its derivative in lp.
func (l loss) at(lp, w, a, q float64) (elem, dlp float64) {
	if w == 0 {
		return 0, 0
	}
	switch l.fn {
	case wire.LossImportanceSampling:
		r := math.Exp(lp - q)
		return -w * r * a, -w * r * a
	case wire.LossPPO:
		r := math.Exp(lp - q)
		unclipped, clipped := r*a, math.Min(math.Max(r, l.lo), l.hi)*a
		if unclipped <= clipped {
			// The unclipped term is the minimum (and, with r inside
			// [lo, hi], equal to the clipped one): its gradient flows.
			return -w * unclipped, -w * r * a
		}
		return -w * clipped, 0 // clip(r) is flat outside [lo, hi]
	default:
		return -w * lp, -w
	}
}

// datum is a checked training example: the sequence the model reads
// (model_input followed by the last target token, so that position t+1
// holds target_tokens[t]) and the per-token loss inputs.
type datum struct {
	seq      []int
	w, a, lq []float64 // weights, advantages, sampler log-probs; len(seq)-1 each (a, lq nil for cross_entropy)
}

// fbInput is a checked forward or forward_backward input.
type fbInput struct {
	loss loss
	data []datum
}

// resultBytes bounds the JSON of the input's result: two per-token
// outputs of every datum, and their framing.
func (in *fbInput) resultBytes() int64 {
	var n int64
	for _, d := range in.data {
		n += 2*perValueBytes*int64(len(d.seq)) + 256
	}
	return n + smallResultBytes
}

// prepare checks a forward or forward_backward input against the model:
// the loss, its configuration and inputs, the tokens and the context.
func (s *Server) prepare(in wire.ForwardBackwardInput) (*fbInput, error) {
	keys, ok := lossConfigKeys[in.LossFn]
	if !ok {
		return nil, badRequest("loss_fn %q is not supported (want %s, %s or %s)", in.LossFn,
			wire.LossCrossEntropy, wire.LossImportanceSampling, wire.LossPPO)
	}
	l := loss{fn: in.LossFn, lo: defaultClipLow, hi: defaultClipHigh}
	for _, k := range slices.Sorted(maps.Keys(in.LossFnConfig)) {
		v := in.LossFnConfig[k]
		switch {
		case !slices.Contains(keys, k) && len(keys) == 0:
			return nil, badRequest("loss_fn %q does not accept loss_fn_config keys; got %q", in.LossFn, k)
		case !slices.Contains(keys, k):
			return nil, badRequest("invalid loss_fn_config key %q for loss_fn %q (allowed: %s)", k, in.LossFn, strings.Join(keys, ", "))
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return nil, badRequest("loss_fn_config %s must be finite and not negative, got %v", k, v)
		case k == "clip_low_threshold":
			l.lo = v
		default:
			l.hi = v
		}
	}
	if l.lo > l.hi {
		return nil, badRequest("loss_fn_config: clip_low_threshold %v exceeds clip_high_threshold %v", l.lo, l.hi)
	}
	switch n := len(in.Data); {
	case n == 0:
		return nil, badRequest("no data: forward and forward_backward need at least one datum")
	case n > s.opts.MaxData:
		return nil, badRequest("%d data in one request exceed the limit of %d: split them into several requests", n, s.opts.MaxData)
	}
	// The tokens of the whole request, counted before any tensor is
	// expanded.
	tokens := 0
	for i, d := range in.Data {
		for _, c := range d.ModelInput.Chunks {
			tokens += len(c.Tokens)
		}
		if tokens > s.opts.MaxRequestTokens {
			return nil, badRequest("data 0..%d hold more than %d tokens, this server's limit per request (MaxRequestTokens): split the data into several requests", i, s.opts.MaxRequestTokens)
		}
	}
	maxSeq, vocab := s.base.Info().MaxContext, s.base.VocabSize()
	out := &fbInput{loss: l, data: make([]datum, len(in.Data))}
	for i, d := range in.Data {
		dd, err := prepareDatum(d, l.fn, maxSeq, vocab)
		if err != nil {
			return nil, badRequest("datum %d: %v", i, err)
		}
		out.data[i] = dd
	}
	return out, nil
}

func prepareDatum(d wire.Datum, fn string, maxSeq, vocab int) (datum, error) {
	x, err := d.ModelInput.Tokens()
	if err != nil {
		return datum{}, fmt.Errorf("model_input: %w (images are not supported)", err)
	}
	n := len(x)
	if n == 0 {
		return datum{}, errors.New("model_input has no tokens")
	}
	allowed := lossInputKeys[fn]
	for _, k := range slices.Sorted(maps.Keys(d.LossFnInputs)) {
		if !slices.Contains(allowed, k) {
			return datum{}, fmt.Errorf("loss_fn_inputs key %q is not read by %s (it reads %s)", k, fn, strings.Join(allowed, ", "))
		}
	}
	tt, ok := d.LossFnInputs[wire.InputTargetTokens]
	if !ok {
		return datum{}, errors.New("loss_fn_inputs has no target_tokens")
	}
	// The shape is checked against the input before the tensor is
	// expanded: a sparse one may declare any size.
	if k, err := tt.Len(); err != nil {
		return datum{}, fmt.Errorf("target_tokens: %w", err)
	} else if k != n {
		return datum{}, fmt.Errorf("target_tokens has %d values for %d input tokens", k, n)
	}
	targets, err := tt.IntValues()
	if err != nil {
		return datum{}, fmt.Errorf("target_tokens: %w", err)
	}
	// The model scores the sequence it reads: position t predicts the
	// token at t+1, so only the input shifted by one can be a target.
	for t := 0; t+1 < n; t++ {
		if targets[t] != x[t+1] {
			return datum{}, fmt.Errorf("target_tokens[%d] is %d but model_input[%d] is %d: the targets must be the input shifted by one "+
				"(target_tokens[t] = model_input[t+1]), as this server scores the sequence the model reads", t, targets[t], t+1, x[t+1])
		}
	}
	seq := append(slices.Clip(x), targets[n-1])
	if len(seq) > maxSeq {
		return datum{}, fmt.Errorf("%d input tokens and the last target need %d positions, more than the model's context of %d", n, len(seq), maxSeq)
	}
	for t, id := range seq {
		if id < 0 || id >= vocab {
			return datum{}, fmt.Errorf("token id %d at position %d is outside the vocabulary [0, %d)", id, t, vocab)
		}
	}
	dd := datum{seq: seq}
	if dd.w, err = floatInput(d.LossFnInputs, wire.InputWeights, n, false); err != nil {
		return datum{}, err
	}
	if dd.w == nil {
		dd.w = make([]float64, n)
		for t := range dd.w {
			dd.w[t] = 1
		}
	}
	if fn != wire.LossCrossEntropy {
		if dd.a, err = floatInput(d.LossFnInputs, wire.InputAdvantages, n, true); err != nil {
			return datum{}, err
		}
		if dd.lq, err = floatInput(d.LossFnInputs, wire.InputLogprobs, n, true); err != nil {
			return datum{}, err
		}
	}
	return dd, nil
}

// floatInput returns loss input key, n finite values; nil when it is
// absent and not required.
func floatInput(in map[string]wire.TensorData, key string, n int, required bool) ([]float64, error) {
	td, ok := in[key]
	if !ok {
		if required {
			return nil, fmt.Errorf("loss_fn_inputs has no %s", key)
		}
		return nil, nil
	}
	if k, err := td.Len(); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	} else if k != n {
		return nil, fmt.Errorf("%s has %d values for %d input tokens", key, k, n)
	}
	v, err := td.Dense()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	for t, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s[%d] is %v", key, t, x)
		}
	}
	return v, nil
}

// errNaN reports NaN log-probabilities: the weights have diverged.
var errNaN = errors.New("the model's log-probabilities are NaN: its weights have diverged")

// runForward runs the data through m in passes of at most
// MaxForwardTokens tokens and returns the per-datum log-probabilities and
// losses. With backward, each pass's gradient is added into m's (they
// accumulate until optim_step).
func (s *Server) runForward(ctx context.Context, m *native.Model, in *fbInput, backward bool) (wire.ForwardBackwardOutput, error) {
	res := wire.ForwardBackwardOutput{LossFnOutputType: "ArrayRecord", LossFnOutputs: make([]map[string]wire.TensorData, len(in.data))}
	var sum float64
	nan := false
	for a := 0; a < len(in.data); {
		b, tokens := a, 0
		for b < len(in.data) && (b == a || tokens+len(in.data[b].seq) <= s.opts.MaxForwardTokens) {
			tokens += len(in.data[b].seq)
			b++
		}
		chunk := in.data[a:b]
		batch := native.Batch{Tokens: make([][]int, len(chunk)), Mask: make([][]bool, len(chunk))}
		for i, d := range chunk {
			batch.Tokens[i] = d.seq
			mask := make([]bool, len(d.seq))
			for t := 1; t < len(mask); t++ {
				mask[t] = true
			}
			batch.Mask[i] = mask
		}
		out, err := m.Forward(ctx, batch)
		if err != nil {
			return res, err
		}
		var grads [][]float32
		if backward {
			grads = make([][]float32, len(chunk))
		}
		for i, d := range chunk {
			n := len(d.seq) - 1
			lps, elems := make([]float64, n), make([]float64, n)
			if backward {
				grads[i] = make([]float32, n+1)
			}
			for t := range n {
				lp := float64(out.LogProb[i][t+1])
				nan = nan || math.IsNaN(lp)
				var av, qv float64
				if d.a != nil {
					av, qv = d.a[t], d.lq[t]
				}
				e, g := in.loss.at(lp, d.w[t], av, qv)
				lps[t], elems[t] = wireFloat(lp), wireFloat(e)
				sum += e
				if backward {
					grads[i][t+1] = float32(g)
				}
			}
			res.LossFnOutputs[a+i] = map[string]wire.TensorData{"logprobs": wire.Floats(lps), "elementwise_loss": wire.Floats(elems)}
		}
		if backward {
			if err := m.Backward(ctx, native.OutputGrads{LogProb: grads}); err != nil {
				return res, err
			}
		}
		a = b
	}
	if nan {
		// The gradient, NaN too, is left for optim_step to skip.
		return res, errNaN
	}
	res.Metrics = map[string]float64{"loss:sum": wireFloat(sum)}
	return res, nil
}

// wireFloat maps ±Inf, which JSON cannot carry, to ±MaxFloat32 (the SDK
// reads these values as float32).
func wireFloat(x float64) float64 {
	switch {
	case math.IsInf(x, 1):
		return math.MaxFloat32
	case math.IsInf(x, -1):
		return -math.MaxFloat32
	}
	return x
}

func (s *Server) forward(r *http.Request, body []byte) (any, error) {
	if isProto(r) {
		return s.forwardBackward(r, body)
	}
	var req wire.ForwardRequest
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	return s.submitForward(req.ModelID, req.SeqID, req.ForwardInput, false)
}

// forwardBackward serves forward_backward, whose body is JSON or, from
// SDK 0.25.0, protobuf; a protobuf one with forward_only set is a forward
// pass (the SDK's forward).
func (s *Server) forwardBackward(r *http.Request, body []byte) (any, error) {
	var req wire.ForwardBackwardRequest
	backward := true
	if isProto(r) {
		forwardOnly, err := req.UnmarshalProto(body)
		if err != nil {
			return nil, errorf(http.StatusUnprocessableEntity, "%v", err)
		}
		backward = !forwardOnly
	} else if err := decode(body, &req); err != nil {
		return nil, err
	}
	return s.submitForward(req.ModelID, req.SeqID, req.ForwardBackwardInput, backward)
}

// isProto reports whether a request's body is protobuf.
func isProto(r *http.Request) bool {
	mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), wire.ContentTypeProto)
}

// submitForward queues a forward pass, with backward its gradient too. A
// retry is told by the request's JSON form, whichever dialect carried it.
func (s *Server) submitForward(modelID string, seq *int, in wire.ForwardBackwardInput, backward bool) (any, error) {
	mod, err := s.getModel(modelID)
	if err != nil {
		return nil, err
	}
	checked, err := s.prepare(in)
	if err != nil {
		return nil, err
	}
	kind := "forward"
	var payload any = wire.ForwardRequest{ModelID: modelID, ForwardInput: in}
	if backward {
		kind, payload = "forward_backward", wire.ForwardBackwardRequest{ModelID: modelID, ForwardBackwardInput: in}
	}
	return s.submit(mod, kind, seq, payload, checked.resultBytes(), nil, func(ctx context.Context, mod *model) (any, error) {
		return s.runForward(ctx, mod.m, checked, backward)
	}, nil)
}

// defaultAdam are the SDK's AdamParams defaults (types/optim_step_request.py),
// for fields a body leaves out.
func defaultAdam() wire.AdamParams {
	return wire.AdamParams{LearningRate: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
}

func checkAdam(p wire.AdamParams) error {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	switch {
	case bad(p.LearningRate) || p.LearningRate < 0:
		return badRequest("adam_params.learning_rate must be finite and ≥ 0, got %v", p.LearningRate)
	case bad(p.Beta1) || p.Beta1 < 0 || p.Beta1 >= 1:
		return badRequest("adam_params.beta1 must be in [0, 1), got %v", p.Beta1)
	case bad(p.Beta2) || p.Beta2 < 0 || p.Beta2 >= 1:
		return badRequest("adam_params.beta2 must be in [0, 1), got %v", p.Beta2)
	case bad(p.Eps) || p.Eps <= 0:
		return badRequest("adam_params.eps must be finite and > 0, got %v", p.Eps)
	case bad(p.WeightDecay) || p.WeightDecay < 0:
		return badRequest("adam_params.weight_decay must be finite and ≥ 0, got %v", p.WeightDecay)
	case bad(p.GradClipNorm) || p.GradClipNorm < 0:
		return badRequest("adam_params.grad_clip_norm must be finite and ≥ 0, got %v", p.GradClipNorm)
	}
	return nil
}

func (s *Server) optimStep(_ *http.Request, body []byte) (any, error) {
	req := wire.OptimStepRequest{AdamParams: defaultAdam()}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if err := checkAdam(req.AdamParams); err != nil {
		return nil, err
	}
	mod, err := s.getModel(req.ModelID)
	if err != nil {
		return nil, err
	}
	seq := req.SeqID
	req.SeqID = nil
	p := req.AdamParams
	return s.submit(mod, "optim_step", seq, req, 0, nil, func(_ context.Context, mod *model) (any, error) {
		return s.runOptimStep(mod, p)
	}, nil)
}

// runOptimStep applies the accumulated gradient as the in-process learner
// does (train/inprocess/learner.go's nativeStep): the global norm clipped to
// grad_clip_norm when it is > 0, then one AdamW update with the request's
// settings; the gradient is then cleared. A non-finite gradient is not
// applied: it is cleared, and the metrics say so.
func (s *Server) runOptimStep(mod *model, p wire.AdamParams) (any, error) {
	m := mod.m
	if mod.opt == nil {
		mod.opt = native.NewAdamW(m, float32(p.Beta1), float32(p.Beta2), float32(p.Eps), float32(p.WeightDecay))
	}
	o := mod.opt
	o.Beta1, o.Beta2, o.Eps, o.WeightDecay = float32(p.Beta1), float32(p.Beta2), float32(p.Eps), float32(p.WeightDecay)
	norm := native.ClipGradNorm(m, p.GradClipNorm)
	metrics := map[string]float64{}
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		m.ZeroGrad()
		s.log.Warn("tinker optim_step skipped: the gradient is not finite", "model_id", mod.id, "grad_norm", norm)
		metrics["skipped:sum"] = 1
		metrics["step:max"] = float64(o.Steps())
		return wire.OptimStepResponse{Metrics: metrics}, nil
	}
	if err := o.Update(m, float32(p.LearningRate)); err != nil {
		return nil, err
	}
	m.ZeroGrad()
	metrics["grad_norm:mean"] = norm
	metrics["skipped:sum"] = 0
	metrics["step:max"] = float64(o.Steps())
	return wire.OptimStepResponse{Metrics: metrics}, nil
}
