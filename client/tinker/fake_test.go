package tinker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
)

// fake is a scripted Tinker API server with SkyRL's semantics
// (skyrl/tinker/api.py): futures answered through retrieve_future, 404 for
// unknown sessions, models and futures, training requests deduplicated by
// (model_id, seq_id) with 409 for a reused seq_id, FastAPI {"detail": …}
// error bodies. Sampling runs a policytest.Scripted policy.
type fake struct {
	local *policytest.Scripted

	mu       sync.Mutex
	nextID   int
	sessions map[string]int // heartbeats received
	models   map[string]*fakeModel
	futures  map[string]*fakeFuture
	seqs     map[string]fakeSeq // "model/seq" → its first request
	applied  map[string]int     // route → requests applied
	ckpts    map[string]int     // tinker:// path → model steps when saved
	seedOf   map[string]int64   // asample future id → its seed
	reqs     []record

	// Behaviour, set before use or under mu.
	apiKey    string
	hold      time.Duration       // a pending poll's wait before 408
	pollDelay time.Duration       // wait before answering a ready result
	script    map[string][]string // route → replies before a new future's result: "408", "try_again", "500", "400"
	never     map[string]bool     // route → its futures never resolve
	failures  map[string]*failure // route → its futures fail
	fault     func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool
	// config is client/config's reply; nil answers 404, as a server
	// without the route. jwt, when set, is the token auth/token trades
	// the API key for (then required on every other route).
	config map[string]any
	jwt    string
	// exchangeKey, when set, is the credential auth/token takes (else
	// apiKey); dynamic is client/dynamic_config's reply (nil: 404); root
	// is GET /'s name ("" : 404).
	exchangeKey string
	dynamic     map[string]any
	root        string
	// proto makes the fake read protobuf forward_backward bodies
	// (zstd-compressed or not) and answer protobuf results to a client
	// that accepts them, as servers do for SDK 0.25.0.
	proto     bool
	inflight  atomic.Int64 // polls being answered
	maxFlight atomic.Int64
}

type fakeModel struct {
	base  string
	rank  int
	steps int
}

type fakeFuture struct {
	route  string
	result []byte
	script []string
	never  bool
	polls  int
}

type fakeSeq struct {
	route string
	body  string
	id    string
}

type failure struct {
	resp  tinker.RequestFailedResponse
	times int // how many futures fail; < 0 all
}

// record is one request the fake received.
type record struct {
	Method, Route string
	Header        http.Header
	Body          []byte
}

func newFake() *fake {
	return &fake{
		local:    &policytest.Scripted{Reply: func(prompt string, seed uint64) string { return fmt.Sprintf("ok %d", seed%100) }},
		sessions: map[string]int{},
		models:   map[string]*fakeModel{},
		futures:  map[string]*fakeFuture{},
		seqs:     map[string]fakeSeq{},
		applied:  map[string]int{},
		ckpts:    map[string]int{},
		seedOf:   map[string]int64{},
		hold:     20 * time.Millisecond,
		script:   map[string][]string{},
		never:    map[string]bool{},
		failures: map[string]*failure{},
	}
}

// start serves f until the test ends.
func (f *fake) start(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return ts
}

// restart drops the state a server keeps in memory, as a restarted one
// would have lost it.
func (f *fake) restart() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions = map[string]int{}
	f.futures = map[string]*fakeFuture{}
	f.seqs = map[string]fakeSeq{}
}

// requests returns the recorded requests to route ("" for all).
func (f *fake) requests(route string) []record {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []record
	for _, r := range f.reqs {
		if route == "" || r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// setFault sets the fault while requests may be in flight.
func (f *fake) setFault(fault func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

func (f *fake) count(route string) int { return len(f.requests(route)) }

func (f *fake) appliedCount(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied[route]
}

func (f *fake) heartbeats() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.sessions {
		n += c
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(v)
	w.Write(b)
}

func detail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"detail": msg})
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route, ok := strings.CutPrefix(r.URL.Path, tinker.APIPrefix+"/")
	if !ok {
		if r.URL.Path == "/" && f.root != "" {
			writeJSON(w, 200, map[string]any{"name": f.root, "version": "0.0.1"})
			return
		}
		detail(w, http.StatusNotFound, "Not Found")
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, record{Method: r.Method, Route: route, Header: r.Header.Clone(), Body: body})
	fault := f.fault
	f.mu.Unlock()
	if fault != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if fault(w, r, route, body, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, route, body) })) {
			return
		}
	}
	f.serve(w, r, route, body)
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request, route string, body []byte) {
	key := r.Header.Get("X-API-Key")
	switch {
	case route == "healthz" && (f.jwt != "" || f.exchangeKey != ""):
		// Health probes need no credential (the client has none yet).
	case route == "auth/token" && f.exchangeKey != "":
		if key != f.exchangeKey {
			detail(w, http.StatusUnauthorized, "Invalid credential")
			return
		}
	case route == "client/config" || route == "auth/token":
		if f.apiKey != "" && key != f.apiKey {
			detail(w, http.StatusUnauthorized, "Invalid API key")
			return
		}
	case f.jwt != "":
		if key != f.jwt {
			detail(w, http.StatusUnauthorized, "Invalid JWT")
			return
		}
	case f.apiKey != "" && key != f.apiKey:
		detail(w, http.StatusUnauthorized, "Invalid API key")
		return
	}
	switch route {
	case "client/config":
		if f.config == nil {
			detail(w, http.StatusNotFound, "Not Found")
			return
		}
		writeJSON(w, 200, f.config)
		return
	case "client/dynamic_config":
		if f.dynamic == nil {
			detail(w, http.StatusNotFound, "Not Found")
			return
		}
		writeJSON(w, 200, f.dynamic)
		return
	case "auth/token":
		if f.jwt == "" {
			detail(w, http.StatusNotFound, "Not Found")
			return
		}
		writeJSON(w, 200, map[string]any{"jwt": f.jwt})
		return
	}
	if mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); mt == tinker.ContentTypeProto {
		if !f.proto || route != "forward_backward" {
			detail(w, 422, "Input should be a valid dictionary or object to extract fields from")
			return
		}
		if r.Header.Get("Content-Encoding") == "zstd" {
			dec, _ := zstd.NewReader(nil)
			raw, err := dec.DecodeAll(body, nil)
			dec.Close()
			if err != nil {
				detail(w, 422, "failed to zstd-decompress request body: "+err.Error())
				return
			}
			body = raw
		}
		var req tinker.ForwardBackwardRequest
		fwdOnly, err := req.UnmarshalProto(body)
		if err != nil {
			detail(w, 422, "Invalid proto forward_backward body: "+err.Error())
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if fwdOnly {
			f.train(w, "forward", body, req)
		} else {
			f.train(w, route, body, req)
		}
		return
	}
	get := route == "healthz" || route == "get_server_capabilities"
	if (r.Method == http.MethodGet) != get {
		detail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if route == "retrieve_future" {
		f.retrieve(w, r, body)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch route {
	case "healthz":
		writeJSON(w, 200, map[string]any{"status": "ok"})
	case "get_server_capabilities":
		writeJSON(w, 200, map[string]any{"supported_models": []any{
			map[string]any{"model_name": "Qwen/Qwen3-8B", "max_context_length": 32768},
			map[string]any{"model_name": "meta-llama/Llama-3.2-1B"},
		}})
	case "create_session":
		var req tinker.CreateSessionRequest
		if json.Unmarshal(body, &req) != nil || req.SDKVersion == "" {
			detail(w, 422, "invalid create_session body")
			return
		}
		f.nextID++
		id := fmt.Sprintf("session_%d", f.nextID)
		f.sessions[id] = 0
		writeJSON(w, 200, map[string]any{"type": "create_session", "info_message": nil, "warning_message": nil, "error_message": nil, "session_id": id})
	case "session_heartbeat":
		var req tinker.SessionHeartbeatRequest
		json.Unmarshal(body, &req)
		if _, ok := f.sessions[req.SessionID]; !ok {
			detail(w, 404, "Session not found")
			return
		}
		f.sessions[req.SessionID]++
		writeJSON(w, 200, map[string]any{"type": "session_heartbeat"})
	case "create_model":
		var req tinker.CreateModelRequest
		if json.Unmarshal(body, &req) != nil || req.LoraConfig == nil {
			detail(w, 422, "invalid create_model body")
			return
		}
		if _, ok := f.sessions[req.SessionID]; !ok {
			detail(w, 404, "Session not found")
			return
		}
		// The hosted service's model id: session and model_seq_id.
		id := fmt.Sprintf("%s:train:%d", req.SessionID, req.ModelSeqID)
		if _, ok := f.models[id]; !ok {
			f.models[id] = &fakeModel{base: req.BaseModel, rank: req.LoraConfig.Rank}
			f.applied[route]++
		}
		rid := f.newFuture(route, map[string]any{"model_id": id, "type": "create_model"})
		writeJSON(w, 200, map[string]any{"model_id": id, "base_model": req.BaseModel, "lora_config": req.LoraConfig, "status": "created", "request_id": rid})
	case "get_info":
		var req tinker.GetInfoRequest
		json.Unmarshal(body, &req)
		m, ok := f.models[req.ModelID]
		if !ok {
			detail(w, 404, "Model not found")
			return
		}
		writeJSON(w, 200, map[string]any{"type": "get_info", "model_id": req.ModelID, "model_data": map[string]any{"arch": nil, "model_name": m.base, "tokenizer_id": nil}, "is_lora": true, "lora_rank": m.rank, "model_name": m.base})
	case "unload_model":
		// SkyRL's unload_model: a future whose result names the model.
		var req tinker.UnloadModelRequest
		json.Unmarshal(body, &req)
		if _, ok := f.models[req.ModelID]; !ok {
			detail(w, 404, "Model not found")
			return
		}
		delete(f.models, req.ModelID)
		rid := f.newFuture(route, map[string]any{"model_id": req.ModelID, "type": "unload_model"})
		writeJSON(w, 200, map[string]any{"request_id": rid, "model_id": req.ModelID})
	case "forward", "forward_backward", "optim_step", "save_weights", "save_weights_for_sampler", "load_weights":
		f.train(w, route, body, nil)
	case "asample":
		f.sample(w, body)
	case "weights_info":
		// SkyRL's: the checkpoint's base model and rank; 404 when it
		// does not exist.
		var req tinker.WeightsInfoRequest
		json.Unmarshal(body, &req)
		if _, ok := f.ckpts[req.TinkerPath]; !ok || !strings.Contains(req.TinkerPath, "/weights/") {
			detail(w, 404, "Checkpoint not found: "+req.TinkerPath)
			return
		}
		model, _, _ := strings.Cut(strings.TrimPrefix(req.TinkerPath, "tinker://"), "/")
		m := f.models[model]
		writeJSON(w, 200, map[string]any{"base_model": m.base, "is_lora": m.rank > 0, "lora_rank": m.rank})
	default:
		detail(w, 404, "Not Found")
	}
}

// train handles a training write: SkyRL's create_future dedup, then the
// route's effect, once. pb is the request when it came as protobuf.
func (f *fake) train(w http.ResponseWriter, route string, body []byte, pb any) {
	var head struct {
		ModelID string `json:"model_id"`
		SeqID   *int   `json:"seq_id"`
	}
	if req, ok := pb.(tinker.ForwardBackwardRequest); ok {
		head.ModelID, head.SeqID = req.ModelID, req.SeqID
	} else if json.Unmarshal(body, &head) != nil {
		detail(w, 422, "invalid body")
		return
	}
	m, ok := f.models[head.ModelID]
	if !ok {
		detail(w, 404, "Model not found")
		return
	}
	var key string
	if head.SeqID != nil {
		key = fmt.Sprintf("%s/%d", head.ModelID, *head.SeqID)
		if prev, ok := f.seqs[key]; ok {
			if prev.route != route || prev.body != string(body) {
				detail(w, 409, "Training request sequence number was reused")
				return
			}
			writeJSON(w, 200, map[string]any{"future_id": prev.id, "status": "pending", "request_id": prev.id})
			return
		}
	}
	var result any
	switch route {
	case "forward", "forward_backward":
		var in tinker.ForwardBackwardInput
		if req, ok := pb.(tinker.ForwardBackwardRequest); ok {
			in = req.ForwardBackwardInput
		} else if route == "forward" {
			var req tinker.ForwardRequest
			json.Unmarshal(body, &req)
			in = req.ForwardInput
		} else {
			var req tinker.ForwardBackwardRequest
			json.Unmarshal(body, &req)
			in = req.ForwardBackwardInput
		}
		out, err := forwardResult(in, m.steps)
		if err != nil {
			detail(w, 422, err.Error())
			return
		}
		result = out
	case "optim_step":
		m.steps++
		result = map[string]any{"metrics": map[string]any{"step": m.steps}}
	case "save_weights", "save_weights_for_sampler":
		var req struct {
			Path string `json:"path"`
		}
		json.Unmarshal(body, &req)
		kind := "weights"
		if route == "save_weights_for_sampler" {
			kind = "sampler_weights"
		}
		path := fmt.Sprintf("tinker://%s/%s/%s", head.ModelID, kind, req.Path)
		f.ckpts[path] = m.steps
		result = map[string]any{"path": path, "type": route}
	case "load_weights":
		var req tinker.LoadWeightsRequest
		json.Unmarshal(body, &req)
		steps, ok := f.ckpts[req.Path]
		if !ok || !strings.Contains(req.Path, "/weights/") {
			detail(w, 404, "Checkpoint not found: "+req.Path)
			return
		}
		m.steps = steps
		result = map[string]any{"type": "load_weights"}
	}
	f.applied[route]++
	rid := f.newFuture(route, result)
	if key != "" {
		f.seqs[key] = fakeSeq{route: route, body: string(body), id: rid}
	}
	writeJSON(w, 200, map[string]any{"future_id": rid, "status": "pending", "request_id": rid})
}

// forwardResult is a cross_entropy forward: per datum, the scripted
// log-prob of each target token after its input token.
func forwardResult(in tinker.ForwardBackwardInput, steps int) (tinker.ForwardBackwardOutput, error) {
	out := tinker.ForwardBackwardOutput{LossFnOutputType: "scalar", Metrics: map[string]float64{}}
	var loss float64
	for i, d := range in.Data {
		toks, err := d.ModelInput.Tokens()
		if err != nil {
			return out, err
		}
		targets, err := d.LossFnInputs[tinker.InputTargetTokens].IntValues()
		if err != nil || len(targets) != len(toks) {
			return out, fmt.Errorf("datum %d: target_tokens: %v (%d for %d tokens)", i, err, len(targets), len(toks))
		}
		weights := slices.Repeat([]float64{1}, len(toks))
		if wt, ok := d.LossFnInputs[tinker.InputWeights]; ok {
			if weights, err = wt.Dense(); err != nil || len(weights) != len(toks) {
				return out, fmt.Errorf("datum %d: weights: %v", i, err)
			}
		}
		lps := make([]float64, len(toks))
		el := make([]float64, len(toks))
		for t := range toks {
			lps[t] = min(policytest.LogProbs(toks[t:t+1], targets[t:t+1])[0]+0.01*float64(steps), 0) // training helps
			el[t] = -weights[t] * lps[t]
			loss += el[t]
		}
		out.LossFnOutputs = append(out.LossFnOutputs, map[string]tinker.TensorData{
			"logprobs":         tinker.Floats(lps),
			"elementwise_loss": tinker.Floats(el),
		})
	}
	out.Metrics["loss:sum"] = loss
	return out, nil
}

// sample answers asample with the scripted policy.
func (f *fake) sample(w http.ResponseWriter, body []byte) {
	var req tinker.SampleRequest
	if err := json.Unmarshal(body, &req); err != nil {
		detail(w, 422, err.Error())
		return
	}
	if (req.ModelPath == nil) == (req.BaseModel == nil) {
		detail(w, 400, "When 'sampling_session_id' is not provided, exactly one of 'base_model' or 'model_path' must be provided")
		return
	}
	if req.ModelPath != nil {
		if _, ok := f.ckpts[*req.ModelPath]; !ok || !strings.Contains(*req.ModelPath, "/sampler_weights/") {
			detail(w, 404, "Checkpoint not found: "+*req.ModelPath)
			return
		}
	}
	sp := req.SamplingParams
	if sp.MaxTokens <= 0 {
		detail(w, 400, "max_tokens must be a positive number")
		return
	}
	prompt, err := req.Prompt.Tokens()
	if err != nil || len(prompt) == 0 {
		detail(w, 400, "bad prompt")
		return
	}
	var seed int64
	if sp.Seed != nil {
		seed = *sp.Seed
	}
	var stops []int
	if ids, ok := sp.Stop.([]any); ok {
		for _, v := range ids {
			stops = append(stops, int(v.(float64)))
		}
	}
	resp := tinker.SampleResponse{Type: "sample"}
	for i := range req.NumSamples {
		// SkyRL's engine seeds sample i with seed + i.
		got, _ := f.local.Sample(context.Background(), []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{MaxTokens: sp.MaxTokens, Seed: uint64(seed) + uint64(i)}}})
		s := got[0]
		reason := tinker.StopReasonLength
		if s.Finish == policy.FinishStop {
			reason = tinker.StopReasonStop
		}
		if k := slices.IndexFunc(s.Tokens, func(t int) bool { return slices.Contains(stops, t) }); k >= 0 {
			s.Tokens, s.LogProbs, reason = s.Tokens[:k+1], s.LogProbs[:k+1], tinker.StopReasonStop
		}
		resp.Sequences = append(resp.Sequences, tinker.SampledSequence{StopReason: reason, Tokens: s.Tokens, Logprobs: s.LogProbs})
	}
	if req.PromptLogprobs != nil && *req.PromptLogprobs {
		resp.PromptLogprobs = []*float64{nil}
		for _, lp := range policytest.LogProbs(prompt[:1], prompt[1:]) {
			resp.PromptLogprobs = append(resp.PromptLogprobs, &lp)
		}
	}
	rid := f.newFuture("asample", resp)
	f.seedOf[rid] = seed
	writeJSON(w, 200, map[string]any{"future_id": rid, "status": "pending", "request_id": rid})
}

// newFuture records a future of route with its result; f.mu is held.
func (f *fake) newFuture(route string, result any) string {
	f.nextID++
	id := fmt.Sprint(f.nextID)
	fu := &fakeFuture{route: route, script: slices.Clone(f.script[route]), never: f.never[route]}
	if fl := f.failures[route]; fl != nil && fl.times != 0 {
		fl.times--
		result = fl.resp
	}
	fu.result, _ = json.Marshal(result)
	f.futures[id] = fu
	return id
}

func (f *fake) retrieve(w http.ResponseWriter, r *http.Request, body []byte) {
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxFlight.Load()
		if n <= m || f.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	var req tinker.RetrieveFutureRequest
	if err := json.Unmarshal(body, &req); err != nil {
		detail(w, 422, err.Error())
		return
	}
	f.mu.Lock()
	fu, ok := f.futures[req.RequestID]
	var step string
	var never bool
	var result []byte
	if ok {
		never, result = fu.never, fu.result
		fu.polls++
		if len(fu.script) > 0 {
			step, fu.script = fu.script[0], fu.script[1:]
		}
	}
	f.mu.Unlock()
	if !ok {
		detail(w, 404, "Future not found")
		return
	}
	switch step {
	case "408":
		detail(w, 408, "Timeout waiting for result")
		return
	case "try_again":
		writeJSON(w, 200, tinker.TryAgainResponse{Type: tinker.TypeTryAgain, RequestID: req.RequestID, QueueState: "active"})
		return
	case "500":
		detail(w, 500, "Unknown error")
		return
	case "400":
		detail(w, 400, "Sequence length 9000 exceeds the maximum of 8192")
		return
	}
	if never {
		select {
		case <-time.After(f.hold):
		case <-r.Context().Done():
		}
		detail(w, 408, "Timeout waiting for result")
		return
	}
	if f.pollDelay > 0 {
		time.Sleep(f.pollDelay)
	}
	if f.proto && strings.Contains(r.Header.Get("Accept"), tinker.ContentTypeProto) {
		if data, ok := protoResult(fu.route, result); ok {
			w.Header().Set("Content-Type", tinker.ContentTypeProto)
			w.Write(data)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(result)
}

// protoResult converts a JSON result of route to protobuf, for the routes
// whose results the SDK reads as protobuf; a failure's result stays JSON.
func protoResult(route string, result []byte) ([]byte, bool) {
	var fail struct {
		Error *string `json:"error"`
	}
	if json.Unmarshal(result, &fail) == nil && fail.Error != nil {
		return nil, false
	}
	switch route {
	case "forward", "forward_backward":
		var out tinker.ForwardBackwardOutput
		if json.Unmarshal(result, &out) != nil {
			return nil, false
		}
		data, err := out.MarshalProto()
		return data, err == nil
	case "asample":
		var out tinker.SampleResponse
		if json.Unmarshal(result, &out) != nil {
			return nil, false
		}
		data, err := out.MarshalProto()
		return data, err == nil
	}
	return nil, false
}

// quiet are test options: fast retries, no heartbeats, no logs, and the
// JSON dialect, which the fake reads unless it has proto set (see
// quietProto for the protobuf one).
func quiet(url string) tinker.Options {
	return tinker.Options{
		BaseURL:           url,
		Wire:              tinker.WireJSON,
		Logger:            slog.New(slog.DiscardHandler),
		RetryBaseDelay:    time.Millisecond,
		RetryMaxDelay:     5 * time.Millisecond,
		HeartbeatInterval: -1,
		FutureTimeout:     10 * time.Second,
		RequestTimeout:    5 * time.Second,
	}
}

// connect starts a client for opts, closed when the test ends.
func connect(t *testing.T, opts tinker.Options) *tinker.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := tinker.NewClient(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// setup starts a fake and a client with a model on it.
func setup(t *testing.T, mod func(*fake, *tinker.Options)) (*fake, *tinker.Client, *tinker.TrainingModel) {
	t.Helper()
	f := newFake()
	opts := quiet(f.start(t).URL)
	if mod != nil {
		mod(f, &opts)
	}
	c := connect(t, opts)
	m, err := c.CreateModel(context.Background(), "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
	if err != nil {
		t.Fatal(err)
	}
	return f, c, m
}

// batch is a one-datum cross_entropy batch over tokens.
func batch(tokens ...int) tinker.ForwardBackwardInput {
	in := tokens[:len(tokens)-1]
	w := slices.Repeat([]float64{1}, len(in))
	return tinker.ForwardBackwardInput{
		Data: []tinker.Datum{{
			ModelInput: tinker.TokensInput(in),
			LossFnInputs: map[string]tinker.TensorData{
				tinker.InputTargetTokens: tinker.Ints(tokens[1:]),
				tinker.InputWeights:      tinker.Floats(w),
			},
		}},
		LossFn: tinker.LossCrossEntropy,
	}
}
