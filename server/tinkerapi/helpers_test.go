package tinkerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// tinyConfig is a small model with an untied LM head, QKV biases and
// grouped-query attention, so that every kind of tensor trains.
func tinyConfig(vocab int) native.Config {
	return native.Config{Vocab: vocab, DModel: 32, Layers: 2, Heads: 4, KVHeads: 2, DFF: 48, MaxSeq: 64, QKVBias: true}
}

// tinyPolicy is a random tiny model with the byte-level tokenizer, named
// "tiny".
func tinyPolicy(t testing.TB) *local.Policy {
	t.Helper()
	tok := tokenizer.New()
	m, err := native.New(tinyConfig(tok.VocabSize()), 3)
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.New("tiny", m, tok)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testServer is a Server over HTTP.
type testServer struct {
	*Server
	url string
	key string // sent as X-API-Key when set
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// start serves base with opts (a fresh state directory unless opts.Dir is
// set).
func start(t testing.TB, base *local.Policy, opts Options) *testServer {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	s, err := New(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return &testServer{Server: s, url: hs.URL, key: opts.APIKey}
}

// do sends a request (body a string sent as is, nil for none, or a value
// to marshal) and returns the status and the raw reply.
func (ts *testServer) do(t testing.TB, method, path string, body any, header ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.url+wire.APIPrefix+"/"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ts.key != "" {
		req.Header.Set("X-API-Key", ts.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}

// call posts body to path, requires 200 and decodes the reply into out.
func (ts *testServer) call(t testing.TB, path string, body, out any) {
	t.Helper()
	status, raw := ts.do(t, http.MethodPost, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", path, status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
	}
}

// detail posts body to path, requires the status and returns the detail.
func (ts *testServer) detail(t testing.TB, path string, body any, status int) string {
	t.Helper()
	got, raw := ts.do(t, http.MethodPost, path, body)
	if got != status {
		t.Fatalf("%s: status %d, want %d: %s", path, got, status, raw)
	}
	var eb struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(raw, &eb); err != nil || eb.Detail == "" {
		t.Fatalf("%s: no detail in %s", path, raw)
	}
	return eb.Detail
}

// submit posts a work request and returns its request id.
func (ts *testServer) submit(t testing.TB, path string, body any) string {
	t.Helper()
	var fr wire.FutureResponse
	ts.call(t, path, body, &fr)
	if fr.RequestID == "" || fr.Status != "pending" {
		t.Fatalf("%s: not a future: %+v", path, fr)
	}
	return fr.RequestID
}

// result retrieves a request's result.
func (ts *testServer) result(t testing.TB, id string) []byte {
	t.Helper()
	for {
		status, raw := ts.do(t, http.MethodPost, "retrieve_future", wire.RetrieveFutureRequest{RequestID: id})
		switch status {
		case http.StatusOK:
			return raw
		case http.StatusRequestTimeout:
			continue
		}
		t.Fatalf("retrieve_future %s: status %d: %s", id, status, raw)
	}
}

// run submits a work request, waits for it and decodes its result into
// out, failing on a failed request.
func (ts *testServer) run(t testing.TB, path string, body, out any) {
	t.Helper()
	raw := ts.result(t, ts.submit(t, path, body))
	var fail wire.RequestFailedResponse
	if json.Unmarshal(raw, &fail) == nil && fail.Error != "" {
		t.Fatalf("%s failed: %s", path, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, raw)
		}
	}
}

// failure submits a work request that must fail and returns its result.
func (ts *testServer) failure(t testing.TB, path string, body any) wire.RequestFailedResponse {
	t.Helper()
	raw := ts.result(t, ts.submit(t, path, body))
	var fail wire.RequestFailedResponse
	if err := json.Unmarshal(raw, &fail); err != nil || fail.Error == "" {
		t.Fatalf("%s: want a failure, got %s", path, raw)
	}
	return fail
}

func (ts *testServer) session(t testing.TB) string {
	t.Helper()
	var r wire.CreateSessionResponse
	ts.call(t, "create_session", wire.CreateSessionRequest{Tags: []string{}, SDKVersion: "test"}, &r)
	return r.SessionID
}

func i64(v int64) *int64           { return &v }
func f64(v float64) *float64       { return &v }
func boolp(v bool) *bool           { return &v }
func strp(v string) *string        { return &v }
func intp(v int) *int              { return &v }
func fullConfig() *wire.LoraConfig { return &wire.LoraConfig{Rank: 0} }

// loraConfig is the adapters the tests train: rank 4, alpha 8, seed 11.
func loraConfig() *wire.LoraConfig {
	return &wire.LoraConfig{Rank: 4, Seed: i64(11), Alpha: f64(8), TrainUnembed: boolp(false)}
}

// newModel creates a model on a fresh session and returns its id.
func (ts *testServer) newModel(t testing.TB, lc *wire.LoraConfig) string {
	t.Helper()
	var cm wire.CreateModelResponse
	ts.run(t, "create_model", wire.CreateModelRequest{SessionID: ts.session(t), BaseModel: ts.Model(), LoraConfig: lc}, &cm)
	if cm.ModelID == "" {
		t.Fatal("create_model: no model id")
	}
	return cm.ModelID
}

// example is a datum: its full sequence and per-token weights.
type example struct {
	seq []int     // model_input followed by the last target
	w   []float64 // len(seq)-1
}

// examples draws n sequences of 3..maxLen tokens with random weights
// (some zero).
func examples(seed uint64, n, maxLen, vocab int) []example {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]example, n)
	for i := range out {
		l := 3 + rng.IntN(maxLen-2)
		seq := make([]int, l)
		for j := range seq {
			seq[j] = rng.IntN(vocab)
		}
		w := make([]float64, l-1)
		for j := range w {
			if rng.IntN(4) > 0 {
				w[j] = float64(float32(rng.Float64()*2 - 0.5))
			}
		}
		out[i] = example{seq, w}
	}
	return out
}

// datum is ex as the wire sends it for cross_entropy.
func (ex example) datum() wire.Datum {
	n := len(ex.seq) - 1
	return wire.Datum{
		ModelInput: wire.TokensInput(ex.seq[:n]),
		LossFnInputs: map[string]wire.TensorData{
			wire.InputTargetTokens: wire.Ints(ex.seq[1:]),
			wire.InputWeights:      wire.Floats(ex.w),
		},
	}
}

func data(exs []example) []wire.Datum {
	out := make([]wire.Datum, len(exs))
	for i, ex := range exs {
		out[i] = ex.datum()
	}
	return out
}

func fbRequest(id string, seq *int, exs []example) wire.ForwardBackwardRequest {
	return wire.ForwardBackwardRequest{ModelID: id, SeqID: seq,
		ForwardBackwardInput: wire.ForwardBackwardInput{Data: data(exs), LossFn: wire.LossCrossEntropy}}
}

// adam are the optimizer settings of the tests: clipping that binds, and
// weight decay.
var adam = wire.AdamParams{LearningRate: 3e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradClipNorm: 0.5}

// ref is a model trained directly, the way train/inprocess/learner.go's
// nativeStep trains: ZeroGrad, Forward, Backward of dL/dlogp = −weights,
// ClipGradNorm, AdamW.Update.
type ref struct {
	m   *native.Model
	opt *native.AdamW
}

// newRef copies base's weights, with the adapters lc describes.
func newRef(t testing.TB, base *local.Policy, lc *wire.LoraConfig) *ref {
	t.Helper()
	bm := base.Lock()
	m := bm.Clone()
	base.Unlock()
	if lc.Rank > 0 {
		if err := m.EnableLoRA(native.LoRAConfig{Rank: lc.Rank, Alpha: *lc.Alpha, Targets: native.LoRATargets(), Seed: uint64(*lc.Seed)}); err != nil {
			t.Fatal(err)
		}
	}
	return &ref{m: m}
}

func (r *ref) step(t testing.TB, exs []example, p wire.AdamParams) {
	t.Helper()
	if r.opt == nil {
		r.opt = native.NewAdamW(r.m, float32(p.Beta1), float32(p.Beta2), float32(p.Eps), float32(p.WeightDecay))
	}
	b := native.Batch{}
	var grads [][]float32
	for _, ex := range exs {
		b.Tokens = append(b.Tokens, ex.seq)
		mask := make([]bool, len(ex.seq))
		g := make([]float32, len(ex.seq))
		for t := 1; t < len(ex.seq); t++ {
			mask[t] = true
			g[t] = -float32(ex.w[t-1])
		}
		b.Mask = append(b.Mask, mask)
		grads = append(grads, g)
	}
	ctx := context.Background()
	if _, err := r.m.Forward(ctx, b); err != nil {
		t.Fatal(err)
	}
	r.m.ZeroGrad()
	if err := r.m.Backward(ctx, native.OutputGrads{LogProb: grads}); err != nil {
		t.Fatal(err)
	}
	native.ClipGradNorm(r.m, p.GradClipNorm)
	if err := r.opt.Update(r.m, float32(p.LearningRate)); err != nil {
		t.Fatal(err)
	}
}

// weights returns a copy of a model's trained parameters: the adapters'
// when it has them, else all, and the base weights.
func weightsOf(m *native.Model) (trained, base []float32) {
	base = slices.Clone(m.Params())
	if lo := m.LoRA(); lo != nil {
		return slices.Clone(lo.Params()), base
	}
	return base, base
}

// modelWeights copies a served model's weights on its own worker, after
// every request queued before.
func (ts *testServer) modelWeights(t testing.TB, id string) (trained, base []float32) {
	t.Helper()
	mod, err := ts.getModel(id)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := ts.Server.submit(mod, "test", nil, nil, 0, nil, func(_ context.Context, mod *model) (any, error) {
		trained, base = weightsOf(mod.m)
		return struct{}{}, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.mu.Lock()
	f := ts.futures[fr.RequestID]
	ts.mu.Unlock()
	select {
	case <-f.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the model's worker did not answer")
	}
	return trained, base
}

// maxRelDiff returns the largest |a−b| / max(|a|, |b|, 1e-3) over the
// elements, failing on different lengths.
func maxRelDiff(t testing.TB, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d parameters against %d", len(a), len(b))
	}
	var worst float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		d := math.Abs(x-y) / math.Max(math.Max(math.Abs(x), math.Abs(y)), 1e-3)
		worst = math.Max(worst, d)
	}
	return worst
}

// sameWeights requires a and b to agree to tol (relative).
func sameWeights(t testing.TB, what string, a, b []float32, tol float64) float64 {
	t.Helper()
	d := maxRelDiff(t, a, b)
	if d > tol {
		t.Errorf("%s: parameters differ by up to %.3g (relative), tolerance %.3g", what, d, tol)
	}
	return d
}
