package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// tinkerRun posts a Tinker work request, waits for its result through
// retrieve_future and decodes it into out, failing on a failed request.
func (rs *runningServe) tinkerRun(t *testing.T, route string, body, out any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var fr wire.FutureResponse
	rs.postJSON(t, wire.APIPrefix+"/"+route, string(data), &fr)
	var raw json.RawMessage
	rs.postJSON(t, wire.APIPrefix+"/retrieve_future", fmt.Sprintf(`{"request_id":%q}`, fr.RequestID), &raw)
	var fail wire.RequestFailedResponse
	if json.Unmarshal(raw, &fail) == nil && fail.Error != "" {
		t.Fatalf("%s failed: %s", route, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("%s: %v: %s", route, err, raw)
	}
}

// TestServeTinker drives the Tinker API of `trainer serve` over HTTP:
// create_session → create_model → forward_backward → optim_step →
// save_weights_for_sampler → asample, beside the OpenAI API on the same
// listener, with the saved weights kept in -tinker-dir.
func TestServeTinker(t *testing.T) {
	dir := writeTinyCheckpoint(t)
	state := filepath.Join(t.TempDir(), "tinker")
	rs := startServe(t, dir, "-tinker-dir", state)
	if !regexp.MustCompile(`tinker_url=http://127\.0\.0\.1:\d+/api/v1`).MatchString(rs.errOut.String()) {
		t.Errorf("the startup line has no Tinker URL:\n%s", rs.errOut.String())
	}

	var sess wire.CreateSessionResponse
	rs.postJSON(t, wire.APIPrefix+"/create_session", `{"tags":[],"sdk_version":"test"}`, &sess)
	var cm wire.CreateModelResponse
	rs.tinkerRun(t, "create_model", wire.CreateModelRequest{SessionID: sess.SessionID, BaseModel: "tiny-ckpt",
		LoraConfig: &wire.LoraConfig{Rank: 4}}, &cm)

	seq := []int{tokenizer.BOSID, 'h', 'e', 'l', 'l', 'o', tokenizer.EndID}
	weights := []float64{0, 1, 1, 1, 1, 1}
	datum := wire.Datum{ModelInput: wire.TokensInput(seq[:len(seq)-1]), LossFnInputs: map[string]wire.TensorData{
		wire.InputTargetTokens: wire.Ints(seq[1:]), wire.InputWeights: wire.Floats(weights)}}
	var losses []float64
	for step := range 3 {
		var fb wire.ForwardBackwardOutput
		rs.tinkerRun(t, "forward_backward", wire.ForwardBackwardRequest{ModelID: cm.ModelID, SeqID: intPtr(2*step + 1),
			ForwardBackwardInput: wire.ForwardBackwardInput{Data: []wire.Datum{datum}, LossFn: wire.LossCrossEntropy}}, &fb)
		losses = append(losses, fb.Metrics["loss:sum"])
		var os wire.OptimStepResponse
		rs.tinkerRun(t, "optim_step", wire.OptimStepRequest{ModelID: cm.ModelID, SeqID: intPtr(2*step + 2),
			AdamParams: wire.AdamParams{LearningRate: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8}}, &os)
	}
	if !(losses[2] < losses[0]) {
		t.Errorf("the loss did not fall: %v", losses)
	}

	var ss wire.SaveWeightsForSamplerResponse
	rs.tinkerRun(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: cm.ModelID, Path: strPtr("trained")}, &ss)
	seed := int64(3)
	var sr wire.SampleResponse
	rs.tinkerRun(t, "asample", wire.SampleRequest{NumSamples: 2, Prompt: wire.TokensInput(seq[:2]), ModelPath: &ss.Path,
		SamplingParams: wire.SamplingParams{MaxTokens: 8, Seed: &seed, Temperature: 1, TopK: -1, TopP: 1}}, &sr)
	if len(sr.Sequences) != 2 || len(sr.Sequences[0].Tokens) == 0 || len(sr.Sequences[0].Tokens) != len(sr.Sequences[0].Logprobs) {
		t.Fatalf("asample: %+v", sr)
	}

	// The OpenAI API answers on the same listener.
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	req, _ := http.NewRequest(http.MethodGet, rs.base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) == 0 || models.Data[0].ID != "tiny-ckpt" {
		t.Errorf("/v1/models: %+v", models)
	}

	rs.stop(t)
	if _, err := os.Stat(filepath.Join(state, cm.ModelID, "sampler_weights", "trained")); err != nil {
		t.Errorf("the saved weights did not outlive the server in -tinker-dir: %v", err)
	}
}

// TestServeTinkerTempDir checks the default state directory: temporary,
// logged, and removed at exit; and -tinker=false.
func TestServeTinkerTempDir(t *testing.T) {
	dir := writeTinyCheckpoint(t)
	rs := startServe(t, dir)
	m := regexp.MustCompile(`tinker_dir=(\S+)`).FindStringSubmatch(rs.errOut.String())
	if m == nil || !regexp.MustCompile(`do not outlive the server`).MatchString(rs.errOut.String()) {
		t.Fatalf("no temporary state directory logged:\n%s", rs.errOut.String())
	}
	if _, err := os.Stat(m[1]); err != nil {
		t.Fatalf("state directory: %v", err)
	}
	var h wire.HealthResponse
	resp, err := http.Get(rs.base + wire.APIPrefix + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.Status != "ok" {
		t.Errorf("healthz: %+v", h)
	}
	rs.stop(t)
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the temporary state directory outlived the server: %v", err)
	}

	off := startServe(t, dir, "-tinker=false")
	resp, err = http.Get(off.base + wire.APIPrefix + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("-tinker=false: /api/v1/healthz answers %d", resp.StatusCode)
	}
	off.stop(t)
}

// TestServeTinkerDialects drives `trainer serve` with agentrl's Tinker
// client in the SDK 0.25.0 dialect (protobuf forward bodies, zstd with
// -tinker-zstd, protobuf results) and, with -tinker-json-only, in the
// JSON one it falls back to: the same training step and samples.
func TestServeTinkerDialects(t *testing.T) {
	dir := writeTinyCheckpoint(t)
	seq := []int{tokenizer.BOSID, 'h', 'e', 'l', 'l', 'o', tokenizer.EndID}
	in := wire.ForwardBackwardInput{LossFn: wire.LossCrossEntropy, Data: []wire.Datum{{ModelInput: wire.TokensInput(seq[:len(seq)-1]),
		LossFnInputs: map[string]wire.TensorData{wire.InputTargetTokens: wire.Ints(seq[1:]), wire.InputWeights: wire.Floats([]float64{0, 1, 1, 1, 1, 1})}}}}
	type outcome struct {
		wire     string
		loss     float64
		samples  []int
		prompt   int
		compress bool
	}
	run := func(flag string) outcome {
		rs := startServe(t, dir, flag)
		defer rs.stop(t)
		ctx := context.Background()
		c, err := wire.NewClient(ctx, wire.Options{BaseURL: rs.base, APIKey: "k", HeartbeatInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		loraSeed := int64(5)
		m, err := c.CreateModel(ctx, "tiny-ckpt", wire.LoraConfig{Rank: 4, Seed: &loraSeed})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Forward(ctx, in); err != nil {
			t.Fatal(err)
		}
		fb, err := m.ForwardBackward(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.OptimStep(ctx, wire.AdamParams{LearningRate: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8}); err != nil {
			t.Fatal(err)
		}
		path, err := m.SaveWeightsForSampler(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		seed, yes := int64(3), true
		sr, err := c.Sample(ctx, wire.SampleRequest{Prompt: wire.TokensInput(seq[:3]), ModelPath: &path, PromptLogprobs: &yes,
			SamplingParams: wire.SamplingParams{MaxTokens: 6, Seed: &seed, Temperature: 1, TopK: -1, TopP: 1}})
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := c.ServerConfig()
		return outcome{c.WireDialect(), fb.Metrics["loss:sum"], sr.Sequences[0].Tokens, len(sr.PromptLogprobs), cfg.ProtoCompressFwdBwd}
	}
	proto, json := run("-tinker-zstd"), run("-tinker-json-only")
	if proto.wire != wire.WireProto || !proto.compress || json.wire != wire.WireJSON {
		t.Fatalf("dialects: %+v, %+v", proto, json)
	}
	if float32(proto.loss) != float32(json.loss) || !slices.Equal(proto.samples, json.samples) || proto.prompt != 3 || json.prompt != 3 {
		t.Errorf("protobuf %+v, JSON %+v", proto, json)
	}
}

func intPtr(v int) *int       { return &v }
func strPtr(v string) *string { return &v }
