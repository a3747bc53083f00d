package tinkerapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
)

// TestRoutes walks every route's happy path.
func TestRoutes(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})

	status, raw := ts.do(t, http.MethodGet, "healthz", nil)
	var h wire.HealthResponse
	if status != http.StatusOK || json.Unmarshal(raw, &h) != nil || h.Status != "ok" {
		t.Fatalf("healthz: %d %s", status, raw)
	}
	status, raw = ts.do(t, http.MethodGet, "get_server_capabilities", nil)
	var caps wire.GetServerCapabilitiesResponse
	if status != http.StatusOK || json.Unmarshal(raw, &caps) != nil || len(caps.SupportedModels) != 1 ||
		caps.SupportedModels[0].ModelName != "tiny" || caps.SupportedModels[0].MaxContextLength == nil || *caps.SupportedModels[0].MaxContextLength != 64 {
		t.Fatalf("get_server_capabilities: %d %s", status, raw)
	}
	var cc wire.ClientConfigResponse
	ts.call(t, "client/config", `{"sdk_version":"0.1"}`, &cc)
	if cc.PJWTAuthEnabled || cc.ParallelFwdBwdChunks || cc.FwdBwdMaxChunkLen != defaultMaxData {
		t.Errorf("client/config: %+v", cc)
	}
	var tr wire.TelemetryResponse
	ts.call(t, "telemetry", `{"events":[],"platform":"x","sdk_version":"0","session_id":"s"}`, &tr)
	if tr.Status != "accepted" {
		t.Errorf("telemetry: %+v", tr)
	}

	sid := ts.session(t)
	var hb wire.SessionHeartbeatResponse
	ts.call(t, "session_heartbeat", wire.SessionHeartbeatRequest{SessionID: sid}, &hb)
	if hb.Type != "session_heartbeat" {
		t.Errorf("session_heartbeat: %+v", hb)
	}

	var fr wire.FutureResponse
	ts.call(t, "create_model", wire.CreateModelRequest{SessionID: sid, BaseModel: "tiny", LoraConfig: &wire.LoraConfig{Rank: 2}}, &fr)
	if fr.ModelID == nil || fr.FutureID != fr.RequestID || fr.Status != "pending" {
		t.Fatalf("create_model: %+v", fr)
	}
	var cm wire.CreateModelResponse
	if err := json.Unmarshal(ts.result(t, fr.RequestID), &cm); err != nil || cm.ModelID != *fr.ModelID {
		t.Fatalf("create_model result %+v (%v)", cm, err)
	}
	id := cm.ModelID
	if !strings.HasPrefix(id, "model_") || len(id) != len("model_")+16 {
		t.Errorf("model id %q", id)
	}

	var info wire.GetInfoResponse
	ts.call(t, "get_info", wire.GetInfoRequest{ModelID: id}, &info)
	lc := info.LoraConfig
	if info.ModelID != id || info.IsLoRA == nil || !*info.IsLoRA || info.LoRARank == nil || *info.LoRARank != 2 ||
		info.ModelName == nil || *info.ModelName != "tiny" || lc == nil || lc.Alpha == nil || *lc.Alpha != DefaultLoRAAlpha ||
		lc.Seed == nil || *lc.Seed < 0 || lc.TrainUnembed == nil || *lc.TrainUnembed || !*lc.TrainAttn || !*lc.TrainMLP {
		t.Errorf("get_info: %+v (lora %+v)", info, lc)
	}

	exs := examples(1, 2, 12, base.VocabSize())
	var fwd wire.ForwardBackwardOutput
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data(exs), LossFn: wire.LossCrossEntropy}}, &fwd)
	var fb wire.ForwardBackwardOutput
	ts.run(t, "forward_backward", fbRequest(id, intp(1), exs), &fb)
	if len(fb.LossFnOutputs) != 2 || fb.Metrics["loss:sum"] != fwd.Metrics["loss:sum"] {
		t.Errorf("forward_backward %v against forward %v", fb.Metrics, fwd.Metrics)
	}
	var os wire.OptimStepResponse
	ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(2)}, &os)

	var sw wire.SaveWeightsResponse
	ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: id, Path: strp("first"), SeqID: intp(3)}, &sw)
	if sw.Path != "tinker://"+id+"/weights/first" {
		t.Errorf("save_weights path %q", sw.Path)
	}
	var generated wire.SaveWeightsResponse
	ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: id}, &generated)
	if !strings.HasPrefix(generated.Path, "tinker://"+id+"/weights/") || generated.Path == sw.Path {
		t.Errorf("generated save_weights path %q", generated.Path)
	}
	var ss wire.SaveWeightsForSamplerResponse
	ts.run(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, SamplingSessionSeqID: intp(0), SeqID: intp(4)}, &ss)
	if ss.Path != "tinker://"+id+"/sampler_weights/ss0_seq4" || ss.SamplingSessionID == nil {
		t.Fatalf("save_weights_for_sampler: %+v", ss)
	}

	var wi wire.WeightsInfoResponse
	ts.call(t, "weights_info", wire.WeightsInfoRequest{TinkerPath: sw.Path}, &wi)
	if wi.BaseModel != "tiny" || !wi.IsLoRA || wi.LoRARank == nil || *wi.LoRARank != 2 {
		t.Errorf("weights_info: %+v", wi)
	}

	prompt := wire.TokensInput([]int{1, 2, 3})
	params := wire.SamplingParams{MaxTokens: 5, Seed: i64(1), Temperature: 1, TopK: -1, TopP: 1}
	for _, req := range []wire.SampleRequest{
		{NumSamples: 2, Prompt: prompt, SamplingParams: params, BaseModel: strp("tiny")},
		{NumSamples: 1, Prompt: prompt, SamplingParams: params, ModelPath: &ss.Path},
		{NumSamples: 1, Prompt: prompt, SamplingParams: params, ModelPath: strp("tinker://" + id + "/ss0_seq4")},
		{NumSamples: 1, Prompt: prompt, SamplingParams: params, SamplingSessionID: ss.SamplingSessionID, SeqID: intp(0)},
	} {
		var sr wire.SampleResponse
		ts.run(t, "asample", req, &sr)
		if len(sr.Sequences) != req.NumSamples {
			t.Fatalf("asample: %d sequences for %d", len(sr.Sequences), req.NumSamples)
		}
		for _, sq := range sr.Sequences {
			if len(sq.Tokens) == 0 || len(sq.Tokens) != len(sq.Logprobs) || (sq.StopReason != "length" && sq.StopReason != "stop") {
				t.Errorf("asample sequence %+v", sq)
			}
		}
	}

	var cs wire.CreateSamplingSessionResponse
	ts.call(t, "create_sampling_session", wire.CreateSamplingSessionRequest{SessionID: sid, ModelPath: &ss.Path}, &cs)
	status, raw = ts.do(t, http.MethodGet, "samplers/"+cs.SamplingSessionID, nil)
	var gs wire.GetSamplerResponse
	if status != http.StatusOK || json.Unmarshal(raw, &gs) != nil || gs.BaseModel != "tiny" || gs.ModelPath == nil || *gs.ModelPath != ss.Path {
		t.Errorf("samplers/{id}: %d %s", status, raw)
	}
	var bs wire.CreateSamplingSessionResponse
	ts.call(t, "create_sampling_session", wire.CreateSamplingSessionRequest{SessionID: sid, BaseModel: strp("tiny")}, &bs)
	var sr wire.SampleResponse
	ts.run(t, "asample", wire.SampleRequest{NumSamples: 1, Prompt: prompt, SamplingParams: params, SamplingSessionID: &bs.SamplingSessionID}, &sr)

	// load_weights into a fresh model set up alike.
	id2 := ts.newModel(t, &wire.LoraConfig{Rank: 2})
	var lw wire.LoadWeightsResponse
	ts.run(t, "load_weights", wire.LoadWeightsRequest{ModelID: id2, Path: sw.Path, Optimizer: true}, &lw)
	if lw.Path == nil || *lw.Path != sw.Path {
		t.Errorf("load_weights: %+v", lw)
	}
}

// TestErrors checks the refusals: unknown things, malformed and oversized
// bodies, content types, routes and methods.
func TestErrors(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{MaxRequestBytes: 64 << 10, MaxData: 4})
	id := ts.newModel(t, fullConfig())
	sid := ts.session(t)
	exs := examples(2, 1, 10, base.VocabSize())

	for _, tc := range []struct {
		path string
		body any
	}{
		{"retrieve_future", wire.RetrieveFutureRequest{RequestID: "req_nope"}},
		{"forward_backward", fbRequest("model_nope", nil, exs)},
		{"forward", wire.ForwardRequest{ModelID: "model_nope", ForwardInput: wire.ForwardBackwardInput{Data: data(exs), LossFn: wire.LossCrossEntropy}}},
		{"optim_step", wire.OptimStepRequest{ModelID: "model_nope", AdamParams: adam}},
		{"get_info", wire.GetInfoRequest{ModelID: "model_nope"}},
		{"save_weights", wire.SaveWeightsRequest{ModelID: "model_nope"}},
		{"session_heartbeat", wire.SessionHeartbeatRequest{SessionID: "session_nope"}},
		{"create_model", wire.CreateModelRequest{SessionID: "session_nope", BaseModel: "tiny", LoraConfig: fullConfig()}},
		{"create_sampling_session", wire.CreateSamplingSessionRequest{SessionID: "session_nope", BaseModel: strp("tiny")}},
		{"asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput([]int{1}), SamplingParams: wire.SamplingParams{MaxTokens: 2}, SamplingSessionID: strp("sampling_nope")}},
		{"asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput([]int{1}), SamplingParams: wire.SamplingParams{MaxTokens: 2}, ModelPath: strp("tinker://" + id + "/sampler_weights/none")}},
		{"load_weights", wire.LoadWeightsRequest{ModelID: id, Path: "tinker://" + id + "/weights/none"}},
		{"weights_info", wire.WeightsInfoRequest{TinkerPath: "tinker://" + id + "/weights/none"}},
	} {
		ts.detail(t, tc.path, tc.body, http.StatusNotFound)
	}
	status, raw := ts.do(t, http.MethodGet, "samplers/sampling_nope", nil)
	if status != http.StatusNotFound {
		t.Errorf("samplers/unknown: %d %s", status, raw)
	}

	long := examples(3, 1, 10, base.VocabSize())[0]
	long.seq = make([]int, 65) // 64 inputs and the last target: 65 positions, context 64
	long.w = make([]float64, 64)
	edge := example{seq: make([]int, 64), w: make([]float64, 63)} // exactly the context
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data([]example{edge}), LossFn: wire.LossCrossEntropy}}, nil)
	unshifted := exs[0].datum()
	unshifted.LossFnInputs[wire.InputTargetTokens] = wire.Ints(exs[0].seq[:len(exs[0].seq)-1])
	image := exs[0].datum()
	image.ModelInput.Chunks = append(image.ModelInput.Chunks, wire.Chunk{Type: "image"})
	noTargets := exs[0].datum()
	delete(noTargets.LossFnInputs, wire.InputTargetTokens)
	badWeights := exs[0].datum()
	badWeights.LossFnInputs[wire.InputWeights] = wire.Floats([]float64{1})
	noAdv := exs[0].datum()
	badID := exs[0].datum()
	badID.ModelInput = wire.TokensInput([]int{1, 99999})
	badID.LossFnInputs = map[string]wire.TensorData{wire.InputTargetTokens: wire.Ints([]int{99999, 2})}
	fbIn := func(fn string, cfg map[string]float64, d ...wire.Datum) wire.ForwardBackwardRequest {
		return wire.ForwardBackwardRequest{ModelID: id, ForwardBackwardInput: wire.ForwardBackwardInput{Data: d, LossFn: fn, LossFnConfig: cfg}}
	}
	ce := wire.LossCrossEntropy
	for _, tc := range []struct {
		name, path string
		body       any
		want       string
	}{
		{"too long", "forward_backward", fbRequest(id, nil, []example{long}), "context of 64"},
		{"too many data", "forward_backward", fbRequest(id, nil, examples(4, 5, 8, base.VocabSize())), "exceed the limit of 4"},
		{"no data", "forward_backward", fbIn(ce, nil), "no data"},
		{"unshifted targets", "forward_backward", fbIn(ce, nil, unshifted), "shifted by one"},
		{"image chunk", "forward_backward", fbIn(ce, nil, image), "images are not supported"},
		{"no target_tokens", "forward_backward", fbIn(ce, nil, noTargets), "no target_tokens"},
		{"weights length", "forward_backward", fbIn(ce, nil, badWeights), "weights has 1 values"},
		{"vocabulary", "forward_backward", fbIn(ce, nil, badID), "outside the vocabulary"},
		{"loss_fn", "forward_backward", fbIn("dpo", nil, exs[0].datum()), "not supported"},
		{"ce config", "forward_backward", fbIn(ce, map[string]float64{"clip_low_threshold": 0.9}, exs[0].datum()), "does not accept"},
		{"ppo config", "forward_backward", fbIn(wire.LossPPO, map[string]float64{"value_clip": 0.2}, exs[0].datum()), "invalid loss_fn_config key"},
		{"ppo inputs", "forward_backward", fbIn(wire.LossPPO, nil, noAdv), "no advantages"},
		{"unused input", "forward_backward", fbIn(ce, nil, func() wire.Datum {
			d := exs[0].datum()
			d.LossFnInputs[wire.InputAdvantages] = wire.Floats(exs[0].w)
			return d
		}()), "not read by cross_entropy"},
		{"adam", "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: wire.AdamParams{LearningRate: 1, Beta1: 1, Beta2: 0.9, Eps: 1e-8}}, "beta1"},
		{"lora_config missing", "create_model", wire.CreateModelRequest{SessionID: sid, BaseModel: "tiny"}, "lora_config is required"},
		{"negative rank", "create_model", wire.CreateModelRequest{SessionID: sid, BaseModel: "tiny", LoraConfig: &wire.LoraConfig{Rank: -1}}, "negative"},
		{"nothing to train", "create_model", wire.CreateModelRequest{SessionID: sid, BaseModel: "tiny",
			LoraConfig: &wire.LoraConfig{Rank: 2, TrainAttn: boolp(false), TrainMLP: boolp(false)}}, "nothing to train"},
		{"base model", "create_model", wire.CreateModelRequest{SessionID: sid, BaseModel: "Qwen/Qwen3-8B", LoraConfig: fullConfig()}, "not served here"},
		{"save path", "save_weights", wire.SaveWeightsRequest{ModelID: id, Path: strp("../escape")}, "letters, digits"},
		{"load path", "load_weights", wire.LoadWeightsRequest{ModelID: id, Path: "tinker://" + id + "/sampler_weights/x"}, "tinker://<model_id>/weights/<name>"},
		{"sample source", "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput([]int{1}), SamplingParams: wire.SamplingParams{MaxTokens: 2}}, "exactly one of"},
		{"sample max_tokens", "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput([]int{1}), SamplingParams: wire.SamplingParams{TopP: 1}, BaseModel: strp("tiny")}, "max_tokens"},
		{"sample image", "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.ModelInput{Chunks: []wire.Chunk{{Type: "image"}}},
			SamplingParams: wire.SamplingParams{MaxTokens: 2, TopP: 1}, BaseModel: strp("tiny")}, "images are not supported"},
		{"sample prompt length", "asample", wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput(make([]int, 64)),
			SamplingParams: wire.SamplingParams{MaxTokens: 2, TopP: 1}, BaseModel: strp("tiny")}, "no room"},
		{"mixed stop", "asample", `{"num_samples":1,"prompt":{"chunks":[{"type":"encoded_text","tokens":[1]}]},"base_model":"tiny",
			"sampling_params":{"max_tokens":2,"stop":[1,"x"]}}`, "not mixed"},
		{"sampling source", "create_sampling_session", wire.CreateSamplingSessionRequest{SessionID: sid}, "Exactly one"},
		{"malformed", "create_session", `{"tags":`, "malformed JSON"},
		{"empty", "create_session", ``, "empty request body"},
		{"not an object", "create_session", `[1]`, "JSON object"},
		{"wrong type", "get_info", `{"model_id":5}`, `field "model_id"`},
		{"trailing", "create_session", `{"tags":[]} {}`, "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := ts.detail(t, tc.path, tc.body, http.StatusBadRequest); !strings.Contains(d, tc.want) {
				t.Errorf("detail %q does not mention %q", d, tc.want)
			}
		})
	}

	ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: id, Path: strp("taken")}, nil)
	ts.detail(t, "save_weights", wire.SaveWeightsRequest{ModelID: id, Path: strp("taken")}, http.StatusConflict)

	d := ts.detail(t, "create_session", strings.Repeat(" ", 65<<10)+"{}", http.StatusRequestEntityTooLarge)
	if !strings.Contains(d, "limit") {
		t.Errorf("413 detail %q", d)
	}
	// Protobuf is read on the forward routes only; a body that is not the
	// SDK's message is a 422, as SkyRL's server answers.
	status, raw = ts.do(t, http.MethodPost, "create_session", "\x0a\x03abc", "Content-Type", "application/x-protobuf")
	if status != http.StatusUnsupportedMediaType || !strings.Contains(string(raw), "protobuf") {
		t.Errorf("protobuf body to create_session: %d %s", status, raw)
	}
	status, raw = ts.do(t, http.MethodPost, "forward_backward", "\x0a\x03ab", "Content-Type", "application/x-protobuf")
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(raw), "protobuf") {
		t.Errorf("truncated protobuf body: %d %s", status, raw)
	}
	status, raw = ts.do(t, http.MethodPost, "forward_backward", "\x0a\x03abc", "Content-Type", "application/x-protobuf")
	if status != http.StatusNotFound || !strings.Contains(string(raw), "abc") {
		t.Errorf("protobuf body for an unknown model: %d %s", status, raw)
	}
	status, _ = ts.do(t, http.MethodPost, "create_session", `{"tags":[]}`, "Content-Encoding", "zstd")
	if status != http.StatusUnsupportedMediaType {
		t.Errorf("zstd body: %d", status)
	}
	status, _ = ts.do(t, http.MethodPost, "nope", `{}`)
	if status != http.StatusNotFound {
		t.Errorf("unknown route: %d", status)
	}
	status, _ = ts.do(t, http.MethodGet, "create_session", nil)
	if status != http.StatusMethodNotAllowed {
		t.Errorf("GET create_session: %d", status)
	}
	status, _ = ts.do(t, http.MethodPost, "healthz", `{}`)
	if status != http.StatusMethodNotAllowed {
		t.Errorf("POST healthz: %d", status)
	}

	// Failures inside a request are results, not HTTP errors.
	other := ts.newModel(t, loraConfig())
	var sw wire.SaveWeightsResponse
	ts.run(t, "save_weights", wire.SaveWeightsRequest{ModelID: other, Path: strp("adapters")}, &sw)
	if d := ts.detail(t, "load_weights", wire.LoadWeightsRequest{ModelID: id, Path: sw.Path}, http.StatusBadRequest); !strings.Contains(d, "LoRA adapters of rank 4") {
		t.Errorf("loading adapters into a full model: %q", d)
	}
	third := ts.newModel(t, &wire.LoraConfig{Rank: 4, Seed: i64(1)})
	if d := ts.detail(t, "load_weights", wire.LoadWeightsRequest{ModelID: third, Path: sw.Path}, http.StatusBadRequest); !strings.Contains(d, "alpha") {
		t.Errorf("loading adapters of another alpha: %q", d)
	}
}

// TestRetrieveTimeout checks retrieve_future's long-poll: a request that
// is not done within RetrieveWait answers 408, and a later poll gets the
// result.
func TestRetrieveTimeout(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{RetrieveWait: 50 * time.Millisecond, SeqGapWait: 400 * time.Millisecond})
	id := ts.newModel(t, fullConfig())
	// seq_id 5 waits for 1..4 to arrive, for SeqGapWait.
	rid := ts.submit(t, "forward_backward", fbRequest(id, intp(5), examples(1, 1, 8, base.VocabSize())))
	start := time.Now()
	d := ts.detail(t, "retrieve_future", wire.RetrieveFutureRequest{RequestID: rid}, http.StatusRequestTimeout)
	if el := time.Since(start); el < 40*time.Millisecond || !strings.Contains(d, "Timeout") {
		t.Errorf("408 after %v: %q", el, d)
	}
	var out wire.ForwardBackwardOutput
	if err := json.Unmarshal(ts.result(t, rid), &out); err != nil || len(out.LossFnOutputs) != 1 {
		t.Errorf("the result after the 408s: %+v %v", out, err)
	}
}

// TestAuth checks the API key: the SDK's X-API-Key header or a bearer
// token on every route but healthz.
func TestAuth(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{APIKey: "tml-secret"})
	anon := &testServer{Server: ts.Server, url: ts.url}
	if status, _ := anon.do(t, http.MethodGet, "healthz", nil); status != http.StatusOK {
		t.Errorf("healthz without a key: %d", status)
	}
	if status, _ := anon.do(t, http.MethodGet, "get_server_capabilities", nil); status != http.StatusUnauthorized {
		t.Errorf("capabilities without a key: %d", status)
	}
	if status, _ := anon.do(t, http.MethodPost, "create_session", `{"tags":[]}`, "X-API-Key", "wrong"); status != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d", status)
	}
	if status, _ := anon.do(t, http.MethodPost, "create_session", `{"tags":[]}`, "Authorization", "Bearer tml-secret"); status != http.StatusOK {
		t.Errorf("a bearer token: %d", status)
	}
	ts.session(t) // X-API-Key
}

// TestCloseReleasesPolls checks that Close answers held retrieve_future
// calls and fails queued requests.
func TestCloseReleasesPolls(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{SeqGapWait: time.Hour})
	id := ts.newModel(t, fullConfig())
	rid := ts.submit(t, "forward_backward", fbRequest(id, intp(9), examples(1, 1, 8, base.VocabSize())))
	done := make(chan int, 1)
	go func() {
		status, _ := ts.do(t, http.MethodPost, "retrieve_future", wire.RetrieveFutureRequest{RequestID: rid})
		done <- status
	}()
	time.Sleep(50 * time.Millisecond)
	ts.Close()
	select {
	case status := <-done:
		if status != http.StatusServiceUnavailable {
			t.Errorf("held poll after Close: %d", status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the poll")
	}
	ts.mu.Lock()
	f := ts.futures[rid]
	ts.mu.Unlock()
	<-f.done
	if !strings.Contains(string(f.result), "closed") {
		t.Errorf("queued request after Close: %s", f.result)
	}
}
