package tinker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentrl/agentrl/client/tinker"
)

// quietProto are quiet's options in the default dialect (WireAuto).
func quietProto(url string) tinker.Options {
	o := quiet(url)
	o.Wire = ""
	return o
}

// fwdBody decodes a recorded protobuf forward_backward body.
func fwdBody(t *testing.T, r record) (tinker.ForwardBackwardRequest, bool) {
	t.Helper()
	body := r.Body
	if r.Header.Get("Content-Encoding") == "zstd" {
		dec, _ := zstd.NewReader(nil)
		defer dec.Close()
		var err error
		if body, err = dec.DecodeAll(body, nil); err != nil {
			t.Fatal(err)
		}
	}
	var req tinker.ForwardBackwardRequest
	only, err := req.UnmarshalProto(body)
	if err != nil {
		t.Fatalf("%s body: %v", r.Route, err)
	}
	return req, only
}

// TestWireProto: against a server that reads protobuf, forward and
// forward_backward go as the SDK 0.25.0 sends them (lib/public_interfaces/
// training_client.py, resources/training.py): protobuf bodies to
// forward_backward, forward with forward_only set, seq_ids 1, 2, …; the
// results of forward, forward_backward and asample are asked for as
// protobuf (api_future_impl.py), the others as JSON, and each is read in
// whichever form comes. The outputs equal the JSON dialect's to float32.
func TestWireProto(t *testing.T) {
	ctx := context.Background()
	results := map[bool][]tinker.ForwardBackwardOutput{}
	for _, proto := range []bool{false, true} {
		f := newFake()
		f.proto = proto
		f.config = map[string]any{"pjwt_auth_enabled": false}
		opts := quiet(f.start(t).URL)
		if proto {
			opts = quietProto(opts.BaseURL)
		}
		c := connect(t, opts)
		m, err := c.CreateModel(ctx, "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
		if err != nil {
			t.Fatal(err)
		}
		fw, err := m.Forward(ctx, batch(1, 2, 3, 4))
		if err != nil {
			t.Fatal(err)
		}
		fb, err := m.ForwardBackward(ctx, batch(5, 6, 7))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.OptimStep(ctx, tinker.DefaultAdam(1e-4)); err != nil {
			t.Fatal(err)
		}
		results[proto] = []tinker.ForwardBackwardOutput{fw, fb}
		if !proto {
			if c.WireDialect() != tinker.WireJSON || f.count("forward") != 1 {
				t.Fatalf("JSON dialect: %s, %d forward requests", c.WireDialect(), f.count("forward"))
			}
			continue
		}
		if c.WireDialect() != tinker.WireProto || f.count("forward") != 0 {
			t.Fatalf("dialect %s, %d JSON forward requests", c.WireDialect(), f.count("forward"))
		}
		fbs := f.requests("forward_backward")
		if len(fbs) != 2 {
			t.Fatalf("%d forward_backward requests", len(fbs))
		}
		for i, r := range fbs {
			if ct := r.Header.Get("Content-Type"); ct != tinker.ContentTypeProto || r.Header.Get("Content-Encoding") != "" {
				t.Errorf("request %d: Content-Type %q, Content-Encoding %q", i, ct, r.Header.Get("Content-Encoding"))
			}
			req, only := fwdBody(t, r)
			if only != (i == 0) || req.SeqID == nil || *req.SeqID != i+1 || req.ModelID != m.ID() || req.ForwardBackwardInput.LossFn != tinker.LossCrossEntropy {
				t.Errorf("request %d: forward_only %v, %+v", i, only, req)
			}
		}
		for _, r := range f.requests("retrieve_future") {
			var rr tinker.RetrieveFutureRequest
			json.Unmarshal(r.Body, &rr)
			want := "application/json"
			if rr.RequestID != "2" && rr.RequestID != "5" { // create_model, optim_step (1 is the session)
				want = "application/x-protobuf, application/json"
			}
			if got := r.Header.Get("Accept"); got != want {
				t.Errorf("retrieve_future %s: Accept %q, want %q", rr.RequestID, got, want)
			}
		}
	}
	for i := range results[false] {
		a, b := results[false][i], results[true][i]
		for d := range a.LossFnOutputs {
			for k, ta := range a.LossFnOutputs[d] {
				tb := b.LossFnOutputs[d][k]
				if len(ta.Data) != len(tb.Data) || tb.DType != ta.DType {
					t.Fatalf("output %d %s: %+v vs %+v", i, k, ta, tb)
				}
				for j := range ta.Data {
					if float32(ta.Data[j]) != float32(tb.Data[j]) {
						t.Errorf("output %d %s[%d]: JSON %v, protobuf %v", i, k, j, ta.Data[j], tb.Data[j])
					}
				}
			}
		}
		if a.Metrics["loss:sum"] != b.Metrics["loss:sum"] {
			t.Errorf("loss:sum: JSON %v, protobuf %v", a.Metrics["loss:sum"], b.Metrics["loss:sum"])
		}
	}
}

// TestWireAutoFallsBackToJSON: a server that predates protobuf refuses
// the first protobuf body (SkyRL before its PR 2021 answers FastAPI's 422,
// agentrl's before this 415); the client resends the same request as JSON
// with the same seq_id, and speaks JSON from then on.
func TestWireAutoFallsBackToJSON(t *testing.T) {
	for _, status := range []int{http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType} {
		f := newFake()
		opts := quietProto(f.start(t).URL)
		f.fault = func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool {
			if strings.Contains(r.Header.Get("Content-Type"), "protobuf") {
				detail(w, status, "not JSON")
				return true
			}
			return false
		}
		c := connect(t, opts)
		ctx := context.Background()
		m, err := c.CreateModel(ctx, "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Forward(ctx, batch(1, 2, 3)); err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if _, err := m.ForwardBackward(ctx, batch(1, 2, 3)); err != nil {
			t.Fatal(err)
		}
		if c.WireDialect() != tinker.WireJSON || f.count("forward_backward") != 2 || f.count("forward") != 1 {
			t.Fatalf("%d: dialect %s; %d forward_backward (one protobuf refused, one JSON), %d forward requests", status, c.WireDialect(), f.count("forward_backward"), f.count("forward"))
		}
		var fw tinker.ForwardRequest
		json.Unmarshal(f.requests("forward")[0].Body, &fw)
		var fb tinker.ForwardBackwardRequest
		json.Unmarshal(f.requests("forward_backward")[1].Body, &fb)
		if *fw.SeqID != 1 || *fb.SeqID != 2 {
			t.Fatalf("%d: seq_ids %d, %d", status, *fw.SeqID, *fb.SeqID)
		}
	}

	// A refusal of another kind, or once protobuf has been accepted, is
	// the call's error.
	f := newFake()
	f.proto = true
	c := connect(t, quietProto(f.start(t).URL))
	m, _ := c.CreateModel(context.Background(), "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
	if _, err := m.Forward(context.Background(), batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	f.setFault(func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool {
		if route == "forward_backward" {
			detail(w, http.StatusUnprocessableEntity, "bad")
			return true
		}
		return false
	})
	if _, err := m.ForwardBackward(context.Background(), batch(1, 2, 3)); !isHTTP(err, 422) || c.WireDialect() != tinker.WireProto {
		t.Fatalf("err %v, dialect %s", err, c.WireDialect())
	}
}

func isHTTP(err error, status int) bool {
	var aerr *tinker.APIError
	return errors.As(err, &aerr) && aerr.Status == status
}

// TestZstdWhenAsked: with proto_compress_fwdbwd in client/config, the
// protobuf body goes zstd-compressed (Content-Encoding: zstd), as the SDK
// sends it; the client speaks protobuf from the start.
func TestZstdWhenAsked(t *testing.T) {
	f := newFake()
	f.proto = true
	f.config = map[string]any{"proto_compress_fwdbwd": true}
	c := connect(t, quietProto(f.start(t).URL))
	if c.WireDialect() != tinker.WireProto {
		t.Fatalf("dialect %s", c.WireDialect())
	}
	m, _ := c.CreateModel(context.Background(), "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
	long := make([]int, 600)
	for i := range long {
		long[i] = i % 7
	}
	if _, err := m.ForwardBackward(context.Background(), batch(long...)); err != nil {
		t.Fatal(err)
	}
	r := f.requests("forward_backward")[0]
	req, _ := fwdBody(t, r)
	if r.Header.Get("Content-Encoding") != "zstd" || len(req.ForwardBackwardInput.Data[0].ModelInput.Chunks[0].Tokens) != 599 {
		t.Fatalf("Content-Encoding %q, %+v", r.Header.Get("Content-Encoding"), req)
	}
	if raw, _ := req.MarshalProto(false); len(r.Body) >= len(raw) {
		t.Errorf("compressed %d bytes to %d", len(raw), len(r.Body))
	}
	// The JSON dialect never compresses.
	f2 := newFake()
	f2.config = map[string]any{"proto_compress_fwdbwd": true}
	c2 := connect(t, quiet(f2.start(t).URL))
	m2, _ := c2.CreateModel(context.Background(), "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
	if _, err := m2.ForwardBackward(context.Background(), batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if r := f2.requests("forward_backward")[0]; r.Header.Get("Content-Encoding") != "" {
		t.Errorf("JSON body compressed")
	}
}

// jwtWith returns an unsigned JWT expiring at exp.
func jwtWith(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"u","exp":%d}`, exp.Unix()))) + ".sig"
}

// TestAuth: as the SDK (lib/_auth_token_provider.py, lib/_jwt_auth.py,
// lib/internal_client_holder.py): the key in X-API-Key, client/config
// asked with it; with pjwt_auth_enabled the key is exchanged (POST
// auth/token) for a JWT that every later request carries, and exchanged
// again when it comes within 5 minutes of its expiry; with
// credential_default_source credential_cmd the credential exchanged is
// TINKER_CREDENTIAL_CMD's output; without a key, the command's output is
// the key.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	t.Run("JWT exchange", func(t *testing.T) {
		f := newFake()
		f.apiKey, f.jwt = "tml-key", jwtWith(time.Now().Add(time.Hour))
		f.config = map[string]any{"pjwt_auth_enabled": true}
		opts := quiet(f.start(t).URL)
		opts.APIKey = "tml-key"
		c := connect(t, opts)
		m, err := c.CreateModel(ctx, "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.ForwardBackward(ctx, batch(1, 2, 3)); err != nil {
			t.Fatal(err)
		}
		if n := f.count("auth/token"); n != 1 {
			t.Errorf("%d exchanges", n)
		}
		for _, r := range f.requests("") {
			want := f.jwt
			switch r.Route {
			case "healthz", "client/config", "auth/token":
				want = "tml-key"
			}
			if got := r.Header.Get("X-API-Key"); got != want {
				t.Errorf("%s: X-API-Key %q, want %q", r.Route, got, want)
			}
		}
	})
	t.Run("short-lived JWT renewed", func(t *testing.T) {
		f := newFake()
		f.apiKey, f.jwt = "tml-key", jwtWith(time.Now().Add(2*time.Minute))
		f.config = map[string]any{"pjwt_auth_enabled": true}
		opts := quiet(f.start(t).URL)
		opts.APIKey = "tml-key"
		c := connect(t, opts)
		if _, err := c.Capabilities(ctx); err != nil {
			t.Fatal(err)
		}
		if n := f.count("auth/token"); n < 2 {
			t.Errorf("a JWT expiring in 2 minutes was exchanged %d times", n)
		}
	})
	t.Run("credential command for the exchange", func(t *testing.T) {
		f := newFake()
		f.apiKey, f.exchangeKey, f.jwt = "tml-key", "tml-from-cmd", jwtWith(time.Now().Add(time.Hour))
		f.config = map[string]any{"pjwt_auth_enabled": true, "credential_default_source": "credential_cmd"}
		opts := quiet(f.start(t).URL)
		opts.APIKey, opts.CredentialCmd = "tml-key", "echo tml-from-cmd"
		c := connect(t, opts)
		if _, err := c.Capabilities(ctx); err != nil {
			t.Fatal(err)
		}
		opts.CredentialCmd = ""
		if _, err := tinker.NewClient(ctx, opts); err == nil || !strings.Contains(err.Error(), "TINKER_CREDENTIAL_CMD") {
			t.Errorf("no command: %v", err)
		}
	})
	t.Run("credential command as the key", func(t *testing.T) {
		f := newFake()
		f.apiKey = "tml-from-cmd"
		opts := quiet(f.start(t).URL)
		opts.CredentialCmd = "printf 'tml-from-cmd\\n'"
		c := connect(t, opts)
		if _, err := c.Capabilities(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("dynamic config", func(t *testing.T) {
		f := newFake()
		f.dynamic = map[string]any{"refresh_interval_sec": 60, "new_flag": true}
		c := connect(t, quiet(f.start(t).URL))
		if got := c.DynamicConfig().RefreshIntervalSec; got != 60 {
			t.Errorf("refresh_interval_sec %d", got)
		}
		c2 := connect(t, quiet(newFake().start(t).URL)) // 404: the defaults
		if got := c2.DynamicConfig().RefreshIntervalSec; got != 300 {
			t.Errorf("default refresh_interval_sec %d", got)
		}
	})
}

// TestDetectEngine tells the engines apart by what they report: hosted
// Tinker by its client/config flags, SkyRL by its client/config and GET /,
// and its backends by the prompt log-probs they return (JAX: one fewer).
func TestDetectEngine(t *testing.T) {
	ctx := context.Background()
	for name, c := range map[string]struct {
		config  map[string]any
		root    string
		shifted bool
		want    tinker.Engine
	}{
		"hosted":      {config: map[string]any{"pjwt_auth_enabled": false, "credential_default_source": "api_key", "sample_dispatch_bytes_semaphore_size": 10485760}, want: tinker.EngineTinker},
		"hosted JWT":  {config: map[string]any{"pjwt_auth_enabled": true}, want: tinker.EngineTinker},
		"skyrl jax":   {config: map[string]any{"pjwt_auth_enabled": false}, root: "Tinker API Mock", shifted: true, want: tinker.EngineSkyRLJAX},
		"skyrl train": {config: map[string]any{"pjwt_auth_enabled": false}, root: "Tinker API Mock", want: tinker.EngineSkyRLTrain},
		"skyrl root":  {root: "Tinker API Mock", want: tinker.EngineSkyRLTrain},
		"unknown":     {want: tinker.EngineUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			f.config, f.root = c.config, c.root
			if c.config["pjwt_auth_enabled"] == true {
				f.jwt = jwtWith(time.Now().Add(time.Hour))
			}
			if c.shifted {
				f.fault = editSample(f, -1, func(r *tinker.SampleResponse) { r.PromptLogprobs = r.PromptLogprobs[1:] })
			}
			cl := connect(t, quiet(f.start(t).URL))
			rep, err := cl.DetectEngine(ctx, "Qwen/Qwen3-8B", []int{1, 2, 3})
			if err != nil || rep.Engine != c.want || len(rep.Evidence) == 0 {
				t.Fatalf("%+v, %v; want %s", rep, err, c.want)
			}
			t.Log(rep.Evidence)
		})
	}
}

// TestSaveRetriedAfterLostReply: SkyRL's server does not deduplicate
// save_weights or save_weights_for_sampler by seq_id (its create_checkpoint
// runs before create_future), so a retry whose first attempt arrived
// meets 409 "already exists". For save_weights the client confirms the
// checkpoint is the one asked for (weights_info on its path, waiting
// through 425) and returns its path; for the sampler's it saves again
// under another name. A 409 on a first attempt stays an error.
func TestSaveRetriedAfterLostReply(t *testing.T) {
	ctx := context.Background()
	f, _, m := setup(t, nil)
	// The first attempt is applied and its reply lost; the retry finds
	// the name taken.
	attempts := map[string]int{}
	tooEarly := 1
	f.fault = func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool {
		switch route {
		case "save_weights", "save_weights_for_sampler":
			attempts[route]++
			if attempts[route] == 1 {
				h.ServeHTTP(httptestDiscard{}, r)
				detail(w, http.StatusBadGateway, "connection reset")
				return true
			}
			if attempts[route] == 2 {
				detail(w, http.StatusConflict, "Checkpoint 'c1' already exists for model '"+m.ID()+"'")
				return true
			}
		case "weights_info":
			if tooEarly > 0 {
				tooEarly--
				detail(w, http.StatusTooEarly, "Checkpoint is still being created")
				return true
			}
		}
		return false
	}
	path, err := m.SaveWeights(ctx, "c1")
	if err != nil || path != "tinker://"+m.ID()+"/weights/c1" {
		t.Fatalf("%q %v", path, err)
	}
	if n := f.count("weights_info"); n != 2 {
		t.Errorf("%d weights_info requests (one 425)", n)
	}
	sp, err := m.SaveWeightsForSampler(ctx, "v1")
	if err != nil || sp != "tinker://"+m.ID()+"/sampler_weights/v1-r" {
		t.Fatalf("sampler: %q %v", sp, err)
	}

	// Taken before: not a retry, so not confirmed.
	f2, _, m2 := setup(t, nil)
	f2.fault = func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool {
		if route == "save_weights" {
			detail(w, http.StatusConflict, "Checkpoint 'c1' already exists for model '"+m2.ID()+"'")
			return true
		}
		return false
	}
	if _, err := m2.SaveWeights(ctx, "c1"); !errors.Is(err, tinker.ErrSeqConflict) || f2.count("weights_info") != 0 {
		t.Fatalf("a name taken before: %v", err)
	}
	// Confirmed against the wrong model: an error.
	f3, _, m3 := setup(t, nil)
	n := 0
	f3.fault = func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool {
		switch route {
		case "save_weights":
			if n++; n == 1 {
				detail(w, http.StatusBadGateway, "connection reset")
				return true
			}
			detail(w, http.StatusConflict, "Checkpoint 'c1' already exists for model '"+m3.ID()+"'")
			return true
		case "weights_info":
			writeJSON(w, 200, map[string]any{"base_model": "other/model", "is_lora": true, "lora_rank": 8})
			return true
		}
		return false
	}
	if _, err := m3.SaveWeights(ctx, "c1"); err == nil || !strings.Contains(err.Error(), "other/model") {
		t.Fatalf("wrong checkpoint confirmed: %v", err)
	}
}

// httptestDiscard is a ResponseWriter that drops the reply.
type httptestDiscard struct{}

func (httptestDiscard) Header() http.Header         { return http.Header{} }
func (httptestDiscard) Write(b []byte) (int, error) { return len(b), nil }
func (httptestDiscard) WriteHeader(int)             {}
