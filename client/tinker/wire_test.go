package tinker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/tinker"
)

// compact returns s as compact JSON, failing the test if it is not JSON.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("bad expected JSON %s: %v", s, err)
	}
	return b.String()
}

// TestWireBodies checks the exact JSON body, method and route of every
// call against the protocol's sources:
//   - routes and methods: the SDK's resources/*.py (service.py: GET
//     healthz and get_server_capabilities, POST create_session,
//     session_heartbeat; models.py: create_model, get_info; training.py:
//     forward_backward, optim_step; weights.py: save_weights,
//     save_weights_for_sampler, load_weights; sampling.py: asample;
//     futures.py: retrieve_future) and SkyRL's api.py (@app.post
//     "/api/v1/forward" with forward_input);
//   - bodies: the SDK's types/*.py (create_session_request.py,
//     session_heartbeat_request.py, create_model_request.py,
//     lora_config.py, get_info_request.py, forward_backward_request.py,
//     forward_backward_input.py, datum.py, encoded_text_chunk.py,
//     tensor_data.py, optim_step_request.py with AdamParams,
//     save_weights_request.py, save_weights_for_sampler_request.py,
//     load_weights_request.py, sample_request.py,
//     _pydantic_types/sampling_params.py, future_retrieve_request.py),
//     which the SDK sends with exclude_none (so "type" is present and
//     unset optionals absent), and SkyRL's request models in api.py;
//   - the SDK's seq_id numbering (lib/public_interfaces/training_client.py:
//     seq_id = request counter + 1, so a model's first request is 1) and
//     model_seq_id (internal_client_holder.py: the session's training
//     client counter, from 0);
//   - the auth header (lib/_auth_token_provider.py: X-API-Key) and the
//     idempotency key (_client.py: X-Idempotency-Key on every non-GET,
//     reused across retries, _base_client.py).
func TestWireBodies(t *testing.T) {
	f := newFake()
	f.apiKey = "tml-secret"
	ts := f.start(t)
	opts := quiet(ts.URL + "/api/v1/") // a trailing /api/v1 is accepted
	opts.APIKey = "tml-secret"
	opts.Tags = []string{"rl"}
	opts.UserMetadata = map[string]any{"run": "t1"}
	c := connect(t, opts)
	ctx := context.Background()

	m, err := c.CreateModel(ctx, "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 32})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID() != "session_1:train:0" || c.SessionID() != "session_1" {
		t.Fatalf("model %q session %q", m.ID(), c.SessionID())
	}
	if _, err := m.Info(ctx); err != nil {
		t.Fatal(err)
	}
	in := tinker.ForwardBackwardInput{
		Data: []tinker.Datum{{
			ModelInput: tinker.TokensInput([]int{1, 2, 3}),
			LossFnInputs: map[string]tinker.TensorData{
				tinker.InputTargetTokens: tinker.Ints([]int{2, 3, 4}),
				tinker.InputWeights:      tinker.Floats([]float64{0, 1, 1}),
			},
		}},
		LossFn: tinker.LossCrossEntropy,
	}
	if _, err := m.Forward(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForwardBackward(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := m.OptimStep(ctx, tinker.DefaultAdam(1e-4)); err != nil {
		t.Fatal(err)
	}
	state, err := m.SaveWeights(ctx, "step-1")
	if err != nil {
		t.Fatal(err)
	}
	samplerPath, err := m.SaveWeightsForSampler(ctx, "step-1")
	if err != nil {
		t.Fatal(err)
	}
	if state != "tinker://session_1:train:0/weights/step-1" || samplerPath != "tinker://session_1:train:0/sampler_weights/step-1" {
		t.Fatalf("paths %q %q", state, samplerPath)
	}
	m2, err := c.ResumeModel(ctx, "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 32}, state)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(7)
	if _, err := c.Sample(ctx, tinker.SampleRequest{
		Prompt:         tinker.TokensInput([]int{5, 6}),
		SamplingParams: tinker.SamplingParams{MaxTokens: 8, Seed: &seed, Stop: []int{9}, Temperature: 0, TopK: -1, TopP: 1},
		ModelPath:      &samplerPath,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capabilities(ctx); err != nil {
		t.Fatal(err)
	}

	datum := `{"model_input":{"chunks":[{"type":"encoded_text","tokens":[1,2,3]}]},
		"loss_fn_inputs":{"target_tokens":{"data":[2,3,4],"dtype":"int64","shape":[3]},
		"weights":{"data":[0,1,1],"dtype":"float32","shape":[3]}}}`
	id1, id2 := m.ID(), m2.ID()
	want := []struct{ method, route, body string }{
		{"GET", "healthz", ""},
		// The SDK's first calls (lib/internal_client_holder.py); the fake
		// has neither route (404), as servers before them.
		{"POST", "client/config", `{"sdk_version":"` + tinker.SDKVersion + `"}`},
		{"POST", "client/dynamic_config", `{"sdk_version":"` + tinker.SDKVersion + `"}`},
		{"POST", "create_session", `{"tags":["rl"],"user_metadata":{"run":"t1"},"sdk_version":"` + tinker.SDKVersion + `","type":"create_session"}`},
		{"POST", "create_model", `{"session_id":"session_1","model_seq_id":0,"base_model":"Qwen/Qwen3-8B","lora_config":{"rank":32},"type":"create_model"}`},
		{"POST", "retrieve_future", `{"request_id":"2","allow_metadata_only":false}`},
		{"POST", "get_info", `{"model_id":"` + id1 + `","type":"get_info"}`},
		{"POST", "forward", `{"model_id":"` + id1 + `","forward_input":{"data":[` + datum + `],"loss_fn":"cross_entropy"},"seq_id":1}`},
		{"POST", "retrieve_future", `{"request_id":"3","allow_metadata_only":false}`},
		{"POST", "forward_backward", `{"model_id":"` + id1 + `","forward_backward_input":{"data":[` + datum + `],"loss_fn":"cross_entropy"},"seq_id":2}`},
		{"POST", "retrieve_future", `{"request_id":"4","allow_metadata_only":false}`},
		{"POST", "optim_step", `{"model_id":"` + id1 + `","adam_params":{"learning_rate":0.0001,"beta1":0.9,"beta2":0.95,"eps":1e-12,"weight_decay":0,"grad_clip_norm":0},"seq_id":3,"type":"optim_step"}`},
		{"POST", "retrieve_future", `{"request_id":"5","allow_metadata_only":false}`},
		{"POST", "save_weights", `{"model_id":"` + id1 + `","path":"step-1","seq_id":4,"type":"save_weights"}`},
		{"POST", "retrieve_future", `{"request_id":"6","allow_metadata_only":false}`},
		{"POST", "save_weights_for_sampler", `{"model_id":"` + id1 + `","path":"step-1","seq_id":5,"type":"save_weights_for_sampler"}`},
		{"POST", "retrieve_future", `{"request_id":"7","allow_metadata_only":false}`},
		{"POST", "create_model", `{"session_id":"session_1","model_seq_id":1,"base_model":"Qwen/Qwen3-8B","lora_config":{"rank":32},"type":"create_model"}`},
		{"POST", "retrieve_future", `{"request_id":"8","allow_metadata_only":false}`},
		// The SDK's LoadWeightsRequest: "a load right after create_model
		// (with seq_id 1)".
		{"POST", "load_weights", `{"model_id":"` + id2 + `","path":"` + state + `","optimizer":true,"seq_id":1,"type":"load_weights"}`},
		{"POST", "retrieve_future", `{"request_id":"9","allow_metadata_only":false}`},
		{"POST", "asample", `{"num_samples":1,"prompt":{"chunks":[{"type":"encoded_text","tokens":[5,6]}]},
			"sampling_params":{"max_tokens":8,"seed":7,"stop":[9],"temperature":0,"top_k":-1,"top_p":1},
			"model_path":"` + samplerPath + `","topk_prompt_logprobs":0,"type":"sample"}`},
		{"POST", "retrieve_future", `{"request_id":"10","allow_metadata_only":false}`},
		{"GET", "get_server_capabilities", ""},
	}
	got := f.requests("")
	if len(got) != len(want) {
		for _, r := range got {
			t.Logf("%s %s %s", r.Method, r.Route, r.Body)
		}
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	keys := map[string]bool{}
	for i, w := range want {
		g := got[i]
		if g.Method != w.method || g.Route != w.route {
			t.Fatalf("request %d: %s %s, want %s %s", i, g.Method, g.Route, w.method, w.route)
		}
		if w.body == "" {
			if len(g.Body) != 0 {
				t.Errorf("%s has a body: %s", w.route, g.Body)
			}
		} else if wb := compact(t, w.body); string(g.Body) != wb {
			t.Errorf("%s body:\n got %s\nwant %s", w.route, g.Body, wb)
		}
		if k := g.Header.Get("X-API-Key"); k != "tml-secret" {
			t.Errorf("%s: X-API-Key %q", w.route, k)
		}
		if g.Method == "POST" && g.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: Content-Type %q", w.route, g.Header.Get("Content-Type"))
		}
		if g.Method == "POST" && g.Route != "retrieve_future" {
			k := g.Header.Get("X-Idempotency-Key")
			if k == "" || keys[k] {
				t.Errorf("%s: X-Idempotency-Key %q missing or reused by another call", w.route, k)
			}
			keys[k] = true
		}
	}
}

// TestHeartbeatBody: session_heartbeat's body (the SDK's
// types/session_heartbeat_request.py).
func TestHeartbeatBody(t *testing.T) {
	f := newFake()
	opts := quiet(f.start(t).URL)
	opts.HeartbeatInterval = 5 * time.Millisecond
	c := connect(t, opts)
	waitFor(t, func() bool { return f.heartbeats() >= 1 })
	c.Close()
	hb := f.requests("session_heartbeat")[0]
	if want := `{"session_id":"session_1","type":"session_heartbeat"}`; hb.Method != "POST" || string(hb.Body) != want {
		t.Fatalf("%s %s, want POST %s", hb.Method, hb.Body, want)
	}
}

// reply makes a fault that answers route with body (and lets the fake
// answer everything else).
func reply(route, body string) func(http.ResponseWriter, *http.Request, string, []byte, http.Handler) bool {
	return func(w http.ResponseWriter, _ *http.Request, r string, _ []byte, _ http.Handler) bool {
		if r != route {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
		return true
	}
}

// resultFor makes a fault that answers every retrieve_future with body.
func resultFor(body string) func(http.ResponseWriter, *http.Request, string, []byte, http.Handler) bool {
	return reply("retrieve_future", body)
}

// TestDecodeRealisticReplies decodes replies as the servers send them:
// SDK-style null optional fields, extra fields, sparse tensors, top-k
// prompt logprob pairs with null rows.
func TestDecodeRealisticReplies(t *testing.T) {
	ctx := context.Background()

	t.Run("get_info with nulls", func(t *testing.T) {
		// The SDK's _pydantic_types/get_info_response.py: every field but
		// model_id and model_data optional.
		f, _, m := setup(t, nil)
		f.fault = reply("get_info", `{"type":"get_info","model_data":{"arch":null,"model_name":"Qwen/Qwen3-8B","tokenizer_id":null},
			"model_id":"`+m.ID()+`","is_lora":null,"lora_rank":null,"model_name":null,"status":"ready"}`)
		info, err := m.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.ModelID != m.ID() || info.IsLoRA != nil || info.LoRARank != nil || info.ModelData.Arch != nil || *info.ModelData.ModelName != "Qwen/Qwen3-8B" {
			t.Fatalf("%+v", info)
		}
	})

	t.Run("capabilities", func(t *testing.T) {
		// The SDK's get_server_capabilities_response.py; SkyRL sends
		// model_name only.
		_, c, _ := setup(t, nil)
		caps, err := c.Capabilities(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(caps.SupportedModels) != 2 || *caps.SupportedModels[0].MaxContextLength != 32768 || caps.SupportedModels[1].MaxContextLength != nil {
			t.Fatalf("%+v", caps)
		}
	})

	t.Run("sparse loss_fn_outputs", func(t *testing.T) {
		// The SDK's tensor_data.py: CSR tensors carry sparse_crow_indices
		// and sparse_col_indices with the dense shape; SkyRL's
		// test_proto_serialization.py: loss_fn_output_type "scalar".
		f, _, m := setup(t, nil)
		f.fault = resultFor(`{"loss_fn_output_type":"scalar","loss_fn_outputs":[
			{"logprobs":{"data":[-0.5,-0.25],"dtype":"float32","shape":[2,3],"sparse_crow_indices":[0,1,2],"sparse_col_indices":[2,0]},
			 "elementwise_loss":{"data":[1,2,3],"dtype":"float32","shape":null}}],
			"metrics":{"loss:sum":6.0,"clip_fraction":0.25}}`)
		out, err := m.ForwardBackward(ctx, batch(1, 2, 3, 4))
		if err != nil {
			t.Fatal(err)
		}
		dense, err := out.LossFnOutputs[0]["logprobs"].Dense()
		if err != nil || !reflect.DeepEqual(dense, []float64{0, 0, -0.5, -0.25, 0, 0}) {
			t.Fatalf("%v %v", dense, err)
		}
		el, err := out.LossFnOutputs[0]["elementwise_loss"].Dense()
		if err != nil || len(el) != 3 || out.Metrics["loss:sum"] != 6 {
			t.Fatalf("%v %v %v", el, err, out.Metrics)
		}
	})

	t.Run("sample with top-k pairs", func(t *testing.T) {
		// SkyRL's types.py SampleOutput: prompt_logprobs entries null where
		// undefined (the first token); topk_prompt_logprobs rows of
		// [token_id, logprob] pairs, null where undefined.
		f, c, _ := setup(t, nil)
		f.fault = resultFor(`{"sequences":[{"stop_reason":"stop","tokens":[7,8],"logprobs":[-0.5,-1.0]}],
			"prompt_logprobs":[null,-1.5,-0.2],
			"topk_prompt_logprobs":[null,[[3,-0.1],[4,-2.5]],[[5,-0.2]]],"prompt_cache_hit_tokens":0}`)
		yes := true
		base := "Qwen/Qwen3-8B"
		resp, err := c.Sample(ctx, tinker.SampleRequest{
			Prompt:             tinker.TokensInput([]int{1, 2, 3}),
			SamplingParams:     tinker.SamplingParams{MaxTokens: 4, Temperature: 1, TopK: -1, TopP: 1},
			BaseModel:          &base,
			PromptLogprobs:     &yes,
			TopKPromptLogprobs: 2,
		})
		if err != nil {
			t.Fatal(err)
		}
		tk := resp.TopKPromptLogprobs
		if resp.PromptLogprobs[0] != nil || *resp.PromptLogprobs[1] != -1.5 || len(tk) != 3 || tk[0] != nil ||
			!reflect.DeepEqual(tk[1], []tinker.TokenLogprob{{Token: 3, Logprob: -0.1}, {Token: 4, Logprob: -2.5}}) {
			t.Fatalf("%+v", resp)
		}
	})

	t.Run("optim_step with null metrics", func(t *testing.T) {
		// The SDK's optim_step_response.py: metrics optional.
		f, _, m := setup(t, nil)
		f.fault = resultFor(`{"metrics":null}`)
		if _, err := m.OptimStep(ctx, tinker.DefaultAdam(1e-5)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestSaveResultWithoutPathIsMalformed(t *testing.T) {
	f, _, m := setup(t, nil)
	f.fault = resultFor(`{"path":null,"type":"save_weights_for_sampler"}`)
	_, err := m.SaveWeightsForSampler(context.Background(), "x")
	if !errors.Is(err, tinker.ErrMalformed) || !strings.Contains(err.Error(), "tinker:// path") {
		t.Fatalf("err = %v", err)
	}
}

func TestNaNIsRefusedBeforeSending(t *testing.T) {
	f, _, m := setup(t, nil)
	in := batch(1, 2, 3)
	in.Data[0].LossFnInputs[tinker.InputWeights] = tinker.Floats([]float64{math.NaN(), 1})
	if _, err := m.ForwardBackward(context.Background(), in); err == nil || !strings.Contains(err.Error(), "encoding request") {
		t.Fatalf("err = %v", err)
	}
	// The failed encoding took no seq_id: the next call is seq_id 1.
	if _, err := m.ForwardBackward(context.Background(), batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	var req tinker.ForwardBackwardRequest
	json.Unmarshal(f.requests("forward_backward")[0].Body, &req)
	if *req.SeqID != 1 {
		t.Fatalf("seq_id %d", *req.SeqID)
	}
}
