package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// TrainingModel is one model being trained on the server. It is safe for
// concurrent use. It owns the model's seq_id counter: each training call
// takes the next number once, and its submission, retries included, is
// sent before the next call's, so that the server sees requests in seq_id
// order, as the SDK sends them.
type TrainingModel struct {
	c         *Client
	id        string
	baseModel string
	lora      LoraConfig
	// turn is a one-slot semaphore: holding it, a call takes its seq_id
	// and submits. A channel rather than a mutex so that waiting for the
	// turn respects ctx.
	turn chan struct{}
	seq  int // the last seq_id taken
}

func newTrainingModel(c *Client, id, baseModel string, lora LoraConfig) *TrainingModel {
	return &TrainingModel{c: c, id: id, baseModel: baseModel, lora: lora, turn: make(chan struct{}, 1)}
}

// ID returns the server's model id.
func (m *TrainingModel) ID() string { return m.id }

// BaseModel returns the base model the model was created on.
func (m *TrainingModel) BaseModel() string { return m.baseModel }

// DefaultAdam returns AdamParams with the SDK's defaults (beta1 0.9,
// beta2 0.95, eps 1e-12, no weight decay or clipping) and learningRate.
func DefaultAdam(learningRate float64) AdamParams {
	return AdamParams{LearningRate: learningRate, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
}

// Info asks the server about the model (get_info).
func (m *TrainingModel) Info(ctx context.Context) (GetInfoResponse, error) {
	var resp GetInfoResponse
	if err := m.c.postJSON(ctx, "get_info", GetInfoRequest{ModelID: m.id, Type: "get_info"}, &resp); err != nil {
		return resp, err
	}
	return resp, nil
}

// submitSeq takes the model's turn and next seq_id, encodes the request
// body(seq) as JSON and submits it. A submission that fails leaves its
// seq_id used: the server may have recorded it, and a number is never
// sent with two different payloads.
func submitSeq[T any](ctx context.Context, m *TrainingModel, route string, body func(seq int) any, dec func([]byte) (T, error)) (*Future[T], error) {
	return submitSeqCall(ctx, m, route, func(seq int) (call, error) {
		data, err := json.Marshal(body(seq))
		if err != nil {
			return call{}, fmt.Errorf("tinker: %s: encoding request: %w", route, err)
		}
		return call{method: http.MethodPost, route: route, body: data}, nil
	}, nil, "", dec, nil)
}

// submitSeqCall is submitSeq for a request built by build(seq), whose
// result is asked for with accept and decoded by dec or decProto. When
// again, if set, says of a failure that the server refused the request
// unread, it is built and sent once more with the same seq_id.
func submitSeqCall[T any](ctx context.Context, m *TrainingModel, route string, build func(seq int) (call, error), again func(error) bool, accept string, dec, decProto func([]byte) (T, error)) (*Future[T], error) {
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("tinker: %s: %w", route, context.Cause(ctx))
	}
	defer func() { <-m.turn }()
	if m.c.closed.Load() {
		return nil, ErrClosed
	}
	seq := m.seq + 1 // the SDK's first request of a model is seq_id 1
	cl, err := build(seq)
	if err != nil {
		return nil, err
	}
	m.seq = seq
	f, err := submitCall(ctx, m.c, route, cl, accept, dec, decProto)
	if err != nil && again != nil && again(err) {
		if cl, err = build(seq); err != nil {
			return nil, err
		}
		f, err = submitCall(ctx, m.c, route, cl, accept, dec, decProto)
	}
	if err != nil {
		if errors.Is(err, ErrSeqConflict) {
			return nil, fmt.Errorf("model %s seq_id %d: %w", m.id, seq, err)
		}
		return nil, err
	}
	return f, nil
}

func checkBatch(route string, in ForwardBackwardInput) error {
	if len(in.Data) == 0 {
		return fmt.Errorf("tinker: %s: no data", route)
	}
	if in.LossFn == "" {
		return fmt.Errorf("tinker: %s: no loss_fn", route)
	}
	return nil
}

// outputValuesPerToken bounds the values a forward result may declare,
// summed over its tensors, per input token of the batch (with a floor of
// MaxTensorElements): per-token outputs hold a few values per token (one
// per output, or k+1 with k alternatives), so a reply that declares more
// is malformed, and is refused before anything expands it.
const outputValuesPerToken = 64

// decodeOutput returns the decoders, JSON and protobuf, of a forward or
// forward_backward result for the batch in.
func decodeOutput(route string, in ForwardBackwardInput) (dec, decProto func([]byte) (ForwardBackwardOutput, error)) {
	n := len(in.Data)
	tokens := 0
	for _, d := range in.Data {
		for _, c := range d.ModelInput.Chunks {
			tokens += len(c.Tokens)
		}
	}
	budget := max(MaxTensorElements, outputValuesPerToken*tokens)
	check := func(out ForwardBackwardOutput) (ForwardBackwardOutput, error) {
		if len(out.LossFnOutputs) != n {
			return out, malformed(route, "%d loss_fn_outputs for %d data", len(out.LossFnOutputs), n)
		}
		// The shapes are the server's word: check them against the data
		// they come with, and their sum against the batch, before a
		// caller's Dense allocates what they declare.
		total := 0
		for i, outs := range out.LossFnOutputs {
			for k, t := range outs {
				v, err := t.Len()
				if err != nil {
					return out, malformed(route, "loss_fn_outputs[%d][%q]: %v", i, k, err)
				}
				if total += v; total > budget {
					return out, malformed(route, "loss_fn_outputs declare more than %d values for a batch of %d tokens", budget, tokens)
				}
			}
		}
		return out, nil
	}
	dec = func(data []byte) (ForwardBackwardOutput, error) {
		var out ForwardBackwardOutput
		if err := decode(route, data, &out); err != nil {
			return out, err
		}
		return check(out)
	}
	decProto = func(data []byte) (ForwardBackwardOutput, error) {
		var out ForwardBackwardOutput
		if err := out.UnmarshalProto(data, n); err != nil {
			return out, malformed(route, "%v", err)
		}
		return check(out)
	}
	return dec, decProto
}

// submitForward submits a forward (forwardOnly) or forward_backward pass
// in the client's dialect: protobuf to forward_backward, zstd-compressed
// when the server asks, or JSON to forward or forward_backward. In
// WireAuto, a first protobuf body that the server cannot read (415, 422)
// switches the client to JSON, and the same request goes again as JSON
// with the same seq_id: the server refused it before recording it.
func (m *TrainingModel) submitForward(ctx context.Context, route string, in ForwardBackwardInput) (*Future[ForwardBackwardOutput], error) {
	if err := checkBatch(route, in); err != nil {
		return nil, err
	}
	c := m.c
	forwardOnly := route == "forward"
	dec, decProto := decodeOutput(route, in)
	tried := int32(-1) // the dialect the seq_id went out in
	build := func(seq int) (call, error) {
		d := c.dialect.Load()
		tried = d
		if d == dialectJSON {
			var v any = ForwardBackwardRequest{ModelID: m.id, ForwardBackwardInput: in, SeqID: &seq}
			if forwardOnly {
				v = ForwardRequest{ModelID: m.id, ForwardInput: in, SeqID: &seq}
			}
			data, err := json.Marshal(v)
			if err != nil {
				return call{}, fmt.Errorf("tinker: %s: encoding request: %w", route, err)
			}
			return call{method: http.MethodPost, route: route, body: data}, nil
		}
		data, err := ForwardBackwardRequest{ModelID: m.id, ForwardBackwardInput: in, SeqID: &seq}.MarshalProto(forwardOnly)
		if err != nil {
			return call{}, fmt.Errorf("tinker: %s: encoding request: %w", route, err)
		}
		cl := call{method: http.MethodPost, route: "forward_backward", body: data, contentType: ContentTypeProto}
		if c.config.ProtoCompressFwdBwd {
			cl.body, cl.encoding = compressZstd(data), "zstd"
		}
		return cl, nil
	}
	// A first protobuf body refused unread: the server predates protobuf.
	// Resent as JSON with the same seq_id, which it did not record.
	again := func(err error) bool {
		if tried != dialectUnknown || !(isStatus(err, http.StatusUnsupportedMediaType) || isStatus(err, http.StatusUnprocessableEntity)) {
			return false
		}
		c.log.Info("tinker: the server does not read protobuf forward bodies; sending JSON, as SDKs up to 0.24.1 did", "route", route, "err", err)
		c.dialect.CompareAndSwap(dialectUnknown, dialectJSON)
		return true
	}
	f, err := submitSeqCall(ctx, m, route, build, again, c.resultAccept(), dec, decProto)
	if err == nil && tried == dialectUnknown {
		c.dialect.CompareAndSwap(dialectUnknown, dialectProto)
	}
	return f, err
}

// ForwardAsync submits a forward pass (loss and per-token outputs, no
// gradient).
func (m *TrainingModel) ForwardAsync(ctx context.Context, in ForwardBackwardInput) (*Future[ForwardBackwardOutput], error) {
	return m.submitForward(ctx, "forward", in)
}

// Forward runs a forward pass and waits for its outputs.
func (m *TrainingModel) Forward(ctx context.Context, in ForwardBackwardInput) (ForwardBackwardOutput, error) {
	f, err := m.ForwardAsync(ctx, in)
	if err != nil {
		return ForwardBackwardOutput{}, err
	}
	return f.Wait(ctx)
}

// ForwardBackwardAsync submits a forward and backward pass, which adds
// the batch's gradients to the model's accumulated ones.
func (m *TrainingModel) ForwardBackwardAsync(ctx context.Context, in ForwardBackwardInput) (*Future[ForwardBackwardOutput], error) {
	return m.submitForward(ctx, "forward_backward", in)
}

// ForwardBackward runs a forward and backward pass and waits for its
// outputs.
func (m *TrainingModel) ForwardBackward(ctx context.Context, in ForwardBackwardInput) (ForwardBackwardOutput, error) {
	f, err := m.ForwardBackwardAsync(ctx, in)
	if err != nil {
		return ForwardBackwardOutput{}, err
	}
	return f.Wait(ctx)
}

// OptimStepAsync submits an optimizer step over the accumulated
// gradients.
func (m *TrainingModel) OptimStepAsync(ctx context.Context, p AdamParams) (*Future[OptimStepResponse], error) {
	return submitSeq(ctx, m, "optim_step", func(seq int) any {
		return OptimStepRequest{ModelID: m.id, AdamParams: p, SeqID: &seq, Type: "optim_step"}
	}, func(data []byte) (OptimStepResponse, error) {
		var r OptimStepResponse
		err := decode("optim_step", data, &r)
		return r, err
	})
}

// OptimStep applies an optimizer step and waits for it.
func (m *TrainingModel) OptimStep(ctx context.Context, p AdamParams) (OptimStepResponse, error) {
	f, err := m.OptimStepAsync(ctx, p)
	if err != nil {
		return OptimStepResponse{}, err
	}
	return f.Wait(ctx)
}

// decodePath returns the decoder of a result that carries a tinker://
// path.
func decodePath(route string) func([]byte) (string, error) {
	return func(data []byte) (string, error) {
		var r struct {
			Path *string `json:"path"`
		}
		if err := decode(route, data, &r); err != nil {
			return "", err
		}
		if r.Path == nil || !strings.HasPrefix(*r.Path, "tinker://") {
			return "", malformed(route, "result has no tinker:// path (body %s)", snippet(data))
		}
		return *r.Path, nil
	}
}

func checkName(route, name string) error {
	if name == "" {
		return fmt.Errorf("tinker: %s: empty checkpoint name", route)
	}
	return nil
}

// SaveWeights saves the weights and optimizer state under name and
// returns their tinker://<model>/weights/<name> path, for ResumeModel.
//
// A server that does not deduplicate save_weights by seq_id (SkyRL's)
// answers a retry whose first attempt arrived with 409 "already exists".
// When the 409 answers a retry, the first attempt is what made the
// checkpoint: SaveWeights then asks the server about
// tinker://<model>/weights/<name> (weights_info, waiting while it is still
// being written) and returns that path when the checkpoint is there, of
// this model's base model and LoRA rank. A 409 on the first attempt (the
// name was taken before) is an error.
func (m *TrainingModel) SaveWeights(ctx context.Context, name string) (string, error) {
	if err := checkName("save_weights", name); err != nil {
		return "", err
	}
	f, err := submitSeq(ctx, m, "save_weights", func(seq int) any {
		return SaveWeightsRequest{ModelID: m.id, Path: &name, SeqID: &seq, Type: "save_weights"}
	}, decodePath("save_weights"))
	if err != nil {
		if retriedExists(err) {
			path, cerr := m.confirmCheckpoint(ctx, name)
			if cerr != nil {
				return "", fmt.Errorf("%w (it answered a retry, but the checkpoint could not be confirmed as this call's: %v)", err, cerr)
			}
			m.c.log.Info("tinker: save_weights was retried and the server had saved the first attempt already", "model_id", m.id, "path", path)
			return path, nil
		}
		return "", err
	}
	return f.Wait(ctx)
}

// confirmCheckpoint checks that the training checkpoint name of m exists
// (weights_info), waiting up to FutureTimeout while the server reports it
// still being written (425), and returns its path.
func (m *TrainingModel) confirmCheckpoint(ctx context.Context, name string) (string, error) {
	path := "tinker://" + m.id + "/weights/" + name
	body, _ := json.Marshal(WeightsInfoRequest{TinkerPath: path})
	var deadline time.Time
	if m.c.opts.FutureTimeout > 0 {
		deadline = time.Now().Add(m.c.opts.FutureTimeout)
	}
	for wait := m.c.opts.RetryBaseDelay; ; wait = min(2*wait, m.c.opts.RetryMaxDelay) {
		data, err := m.c.do(ctx, http.MethodPost, "weights_info", body)
		if err == nil {
			var info WeightsInfoResponse
			if err := decode("weights_info", data, &info); err != nil {
				return "", err
			}
			if info.BaseModel != "" && info.BaseModel != m.baseModel {
				return "", fmt.Errorf("%s is of base model %s, this model's is %s", path, info.BaseModel, m.baseModel)
			}
			if info.LoRARank != nil && *info.LoRARank != m.lora.Rank {
				return "", fmt.Errorf("%s has LoRA rank %d, this model's is %d", path, *info.LoRARank, m.lora.Rank)
			}
			return path, nil
		}
		if !isStatus(err, http.StatusTooEarly) {
			return "", err
		}
		if !deadline.IsZero() && time.Now().Add(wait).After(deadline) {
			return "", fmt.Errorf("%s was still being written after %v: %w", path, m.c.opts.FutureTimeout, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", context.Cause(ctx)
		}
	}
}

// SaveWeightsForSampler saves the weights alone under name and returns
// their tinker://<model>/sampler_weights/<name> path (SkyRL's:
// tinker://<model>/<name>), to sample from (a SampleRequest's ModelPath,
// Sampler.SetModelPath).
//
// A server that does not deduplicate the route by seq_id (SkyRL's)
// answers a retry whose first attempt arrived with 409 "already exists";
// the path of that first save cannot be asked for, so the same weights
// are saved again under name + "-r" (no other request runs in between: a
// model's calls are sent in order) and that path is returned.
func (m *TrainingModel) SaveWeightsForSampler(ctx context.Context, name string) (string, error) {
	if err := checkName("save_weights_for_sampler", name); err != nil {
		return "", err
	}
	for try := 0; ; try++ {
		f, err := submitSeq(ctx, m, "save_weights_for_sampler", func(seq int) any {
			return SaveWeightsForSamplerRequest{ModelID: m.id, Path: &name, SeqID: &seq, Type: "save_weights_for_sampler"}
		}, decodePath("save_weights_for_sampler"))
		if err != nil && try == 0 && retriedExists(err) {
			m.c.log.Info("tinker: save_weights_for_sampler was retried and the server had saved the first attempt already; saving again under another name", "model_id", m.id, "name", name+"-r")
			name += "-r"
			continue
		}
		if err != nil {
			return "", err
		}
		return f.Wait(ctx)
	}
}

// retriedExists reports a 409 "already exists" that answered a retry: the
// call's first attempt reached the server, which made the checkpoint and
// refuses the same name again.
func retriedExists(err error) bool {
	var aerr *APIError
	return errors.As(err, &aerr) && aerr.Status == http.StatusConflict && aerr.attempts > 1 &&
		strings.Contains(strings.ToLower(aerr.Message), "already exists")
}

// LoadWeights loads the weights saved at path (a tinker://…/weights/…
// path) and, with optimizer, the optimizer state. Servers permit it only
// as a model's first request; ResumeModel does that.
func (m *TrainingModel) LoadWeights(ctx context.Context, path string, optimizer bool) error {
	if path == "" {
		return errors.New("tinker: load_weights: empty path")
	}
	f, err := submitSeq(ctx, m, "load_weights", func(seq int) any {
		return LoadWeightsRequest{ModelID: m.id, Path: path, Optimizer: optimizer, SeqID: &seq, Type: "load_weights"}
	}, func(data []byte) (LoadWeightsResponse, error) {
		var r LoadWeightsResponse
		err := decode("load_weights", data, &r)
		return r, err
	})
	if err != nil {
		return err
	}
	_, err = f.Wait(ctx)
	return err
}

// Unload asks the server to free the model (unload_model): its weights,
// optimizer state and queued requests. Weights already saved stay
// loadable; the model's id is unknown to the server afterwards.
func (m *TrainingModel) Unload(ctx context.Context) error {
	// Submitted in the model's turn, after the calls already submitted.
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("tinker: unload_model: %w", context.Cause(ctx))
	}
	body, err := json.Marshal(UnloadModelRequest{ModelID: m.id, Type: "unload_model"})
	if err != nil {
		<-m.turn
		return fmt.Errorf("tinker: unload_model: encoding request: %w", err)
	}
	f, err := submit(ctx, m.c, "unload_model", body, func(data []byte) (UnloadModelResponse, error) {
		var r UnloadModelResponse
		err := decode("unload_model", data, &r)
		return r, err
	})
	<-m.turn
	if err != nil {
		return err
	}
	_, err = f.Wait(ctx)
	return err
}
