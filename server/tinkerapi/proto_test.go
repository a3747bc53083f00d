package tinkerapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	wire "github.com/agentrl/agentrl/client/tinker"
)

// doRaw posts raw bytes to path with the headers and returns the status,
// the reply's Content-Type and its body.
func (ts *testServer) doRaw(t testing.TB, path string, body []byte, header ...string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+wire.APIPrefix+"/"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if ts.key != "" {
		req.Header.Set("X-API-Key", ts.key)
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
	return resp.StatusCode, resp.Header.Get("Content-Type"), raw
}

// submitProto posts a forward_backward request as protobuf (zstd when
// compress) and returns its request id.
func (ts *testServer) submitProto(t testing.TB, req wire.ForwardBackwardRequest, forwardOnly, compress bool) string {
	t.Helper()
	body, err := req.MarshalProto(forwardOnly)
	if err != nil {
		t.Fatal(err)
	}
	h := []string{"Content-Type", wire.ContentTypeProto}
	if compress {
		enc, _ := zstd.NewWriter(nil)
		body = enc.EncodeAll(body, nil)
		enc.Close()
		h = append(h, "Content-Encoding", "zstd")
	}
	status, _, raw := ts.doRaw(t, "forward_backward", body, h...)
	if status != http.StatusOK {
		t.Fatalf("protobuf forward_backward: %d %s", status, raw)
	}
	var fr wire.FutureResponse
	if err := json.Unmarshal(raw, &fr); err != nil || fr.RequestID == "" {
		t.Fatalf("not a future: %s", raw)
	}
	return fr.RequestID
}

// protoResult retrieves a result asking for protobuf, and returns its
// Content-Type and body.
func (ts *testServer) protoResult(t testing.TB, id string) (string, []byte) {
	t.Helper()
	body, _ := json.Marshal(wire.RetrieveFutureRequest{RequestID: id})
	for {
		status, ct, raw := ts.doRaw(t, "retrieve_future", body, "Content-Type", wire.ContentTypeJSON, "Accept", wire.ContentTypeProto)
		switch status {
		case http.StatusOK:
			return ct, raw
		case http.StatusRequestTimeout:
			continue
		}
		t.Fatalf("retrieve_future %s: %d %s", id, status, raw)
	}
}

// TestProtoDialect: the SDK 0.25.0 dialect against the JSON one on two
// models of the same start: a protobuf forward_backward (plain and
// zstd-compressed) and a forward through forward_backward with
// forward_only give the JSON dialect's outputs (to float32, which the
// protobuf carries) and, after optim_step, the same weights; results come
// as protobuf to a client that accepts it, and as JSON otherwise; a
// request re-sent with its seq_id, in either dialect, is the same request.
func TestProtoDialect(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	exs := examples(5, 3, 12, base.VocabSize())
	jsonModel, protoModel := ts.newModel(t, loraConfig()), ts.newModel(t, loraConfig())

	// forward: JSON on its route, protobuf with forward_only.
	var jf wire.ForwardBackwardOutput
	ts.run(t, "forward", wire.ForwardRequest{ModelID: jsonModel, SeqID: intp(1), ForwardInput: fbRequest("", nil, exs).ForwardBackwardInput}, &jf)
	pid := ts.submitProto(t, fbRequest(protoModel, intp(1), exs), true, false)
	ct, raw := ts.protoResult(t, pid)
	var pf wire.ForwardBackwardOutput
	if ct != wire.ContentTypeProto {
		t.Fatalf("forward result as %q", ct)
	}
	if err := pf.UnmarshalProto(raw, len(exs)); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, "forward", jf, pf)

	// forward_backward, then optim_step: the same weights.
	var jb wire.ForwardBackwardOutput
	ts.run(t, "forward_backward", fbRequest(jsonModel, intp(2), exs), &jb)
	pid = ts.submitProto(t, fbRequest(protoModel, intp(2), exs), false, true)
	// Re-sent as it was: the same request.
	if again := ts.submitProto(t, fbRequest(protoModel, intp(2), exs), false, false); again != pid {
		t.Errorf("a re-sent protobuf request got a new id %s (first %s)", again, pid)
	}
	_, raw = ts.protoResult(t, pid)
	var pb wire.ForwardBackwardOutput
	if err := pb.UnmarshalProto(raw, len(exs)); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, "forward_backward", jb, pb)
	// The JSON form of the same request, same seq_id: the same request too.
	if id := ts.submit(t, "forward_backward", fbRequest(protoModel, intp(2), exs)); id != pid {
		t.Errorf("the JSON form of a protobuf request got a new id %s (first %s)", id, pid)
	}
	// Another payload with that seq_id: 409.
	body, _ := fbRequest(protoModel, intp(2), exs[:1]).MarshalProto(false)
	if status, _, raw := ts.doRaw(t, "forward_backward", body, "Content-Type", wire.ContentTypeProto); status != http.StatusConflict {
		t.Errorf("a reused seq_id: %d %s", status, raw)
	}
	for _, id := range []string{jsonModel, protoModel} {
		ts.run(t, "optim_step", wire.OptimStepRequest{ModelID: id, SeqID: intp(3), AdamParams: adam}, nil)
	}
	jw, _ := ts.modelWeights(t, jsonModel)
	pw, _ := ts.modelWeights(t, protoModel)
	// The weights of cross_entropy round to the same float32 gradient.
	if !slices.Equal(jw, pw) {
		t.Errorf("after one step the dialects' weights differ by up to %.3g", maxRelDiff(t, jw, pw))
	}

	// asample: protobuf when accepted, JSON otherwise; the same samples.
	req := asampleBody()
	req.PromptLogprobs, req.SamplingParams.Seed, req.SamplingParams.MaxTokens = boolp(true), i64(4), 6
	var js wire.SampleResponse
	ts.run(t, "asample", req, &js)
	ct, raw = ts.protoResult(t, ts.submit(t, "asample", req))
	var ps wire.SampleResponse
	if ct != wire.ContentTypeProto || ps.UnmarshalProto(raw) != nil {
		t.Fatalf("asample as %q: %x", ct, raw)
	}
	if !slices.Equal(js.Sequences[0].Tokens, ps.Sequences[0].Tokens) || ps.PromptLogprobs[0] != nil || len(ps.PromptLogprobs) != len(js.PromptLogprobs) ||
		float32(*ps.PromptLogprobs[1]) != float32(*js.PromptLogprobs[1]) {
		t.Errorf("asample: JSON %+v, protobuf %+v", js, ps)
	}
	// Other results, and failures, stay JSON whatever is accepted.
	ct, raw = ts.protoResult(t, ts.submit(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: protoModel, Path: strp("s")}))
	if ct != "application/json" || !strings.Contains(string(raw), "tinker://") {
		t.Errorf("save_weights_for_sampler result as %q: %s", ct, raw)
	}
	bad := fbRequest(protoModel, intp(9), exs)
	bad.ForwardBackwardInput.Data[0].ModelInput = wire.TokensInput([]int{base.VocabSize() + 5})
	bad.ForwardBackwardInput.Data[0].LossFnInputs = map[string]wire.TensorData{wire.InputTargetTokens: wire.Ints([]int{1})}
	body, _ = bad.MarshalProto(false)
	if status, _, raw := ts.doRaw(t, "forward_backward", body, "Content-Type", wire.ContentTypeProto); status != http.StatusBadRequest || !strings.Contains(string(raw), "vocabulary") {
		t.Errorf("a bad protobuf request: %d %s", status, raw)
	}
}

// sameOutputs requires two forward outputs to agree to float32.
func sameOutputs(t *testing.T, what string, a, b wire.ForwardBackwardOutput) {
	t.Helper()
	if len(a.LossFnOutputs) != len(b.LossFnOutputs) {
		t.Fatalf("%s: %d and %d outputs", what, len(a.LossFnOutputs), len(b.LossFnOutputs))
	}
	for i := range a.LossFnOutputs {
		for k, ta := range a.LossFnOutputs[i] {
			tb, ok := b.LossFnOutputs[i][k]
			if !ok || len(ta.Data) != len(tb.Data) {
				t.Fatalf("%s: output %d %s: %+v and %+v", what, i, k, ta, tb)
			}
			for j := range ta.Data {
				if float32(ta.Data[j]) != float32(tb.Data[j]) {
					t.Errorf("%s: output %d %s[%d]: JSON %v, protobuf %v", what, i, k, j, ta.Data[j], tb.Data[j])
				}
			}
		}
	}
}

// TestClientConfigAndJSONOnly: client/config, client/dynamic_config and
// get_server_capabilities as a client reads them; with JSONOnly, the
// dialect of servers before protobuf.
func TestClientConfigAndJSONOnly(t *testing.T) {
	base := tinyPolicy(t)
	for _, c := range []struct {
		opts  Options
		flags []string
	}{
		{Options{}, []string{"proto_write_fwdbwd", "fwd_via_fwdbwd"}},
		{Options{CompressForward: true}, []string{"proto_write_fwdbwd", "fwd_via_fwdbwd", "proto_compress_fwdbwd"}},
		{Options{JSONOnly: true}, nil},
	} {
		ts := start(t, base, c.opts)
		var cfg map[string]any
		ts.call(t, "client/config", wire.ClientConfigRequest{SDKVersion: "0.25.0"}, &cfg)
		raw, _ := json.Marshal(cfg)
		for _, f := range c.flags {
			if cfg[f] != true {
				t.Errorf("JSONOnly %v, CompressForward %v: client/config %s has no %s", c.opts.JSONOnly, c.opts.CompressForward, raw, f)
			}
		}
		if cfg["use_pyqwest_transport"] != false {
			t.Errorf("client/config %s does not turn pyqwest off", raw)
		}
		if c.opts.JSONOnly && strings.Contains(string(raw), "proto") {
			t.Errorf("JSONOnly: client/config %s", raw)
		}
		var dyn wire.ClientDynamicConfigResponse
		ts.call(t, "client/dynamic_config", wire.ClientConfigRequest{SDKVersion: "0.25.0"}, &dyn)
		if dyn.RefreshIntervalSec <= 0 {
			t.Errorf("client/dynamic_config %+v", dyn)
		}
		var caps wire.GetServerCapabilitiesResponse
		status, capRaw := ts.do(t, http.MethodGet, "get_server_capabilities", nil)
		if status != 200 || json.Unmarshal(capRaw, &caps) != nil || caps.Engine != "agentrl" {
			t.Errorf("get_server_capabilities: %d %s", status, capRaw)
		}
		if !c.opts.JSONOnly {
			continue
		}
		id := ts.newModel(t, loraConfig())
		body, _ := fbRequest(id, intp(1), examples(1, 1, 6, base.VocabSize())).MarshalProto(false)
		if status, _, raw := ts.doRaw(t, "forward_backward", body, "Content-Type", wire.ContentTypeProto); status != http.StatusUnsupportedMediaType {
			t.Errorf("JSONOnly: a protobuf body: %d %s", status, raw)
		}
		rid := ts.submit(t, "forward_backward", fbRequest(id, intp(1), examples(1, 1, 6, base.VocabSize())))
		if ct, raw := ts.protoResult(t, rid); ct != "application/json" {
			t.Errorf("JSONOnly: a result as %q: %s", ct, raw)
		}
	}
}

// TestZstdBodies: compressed protobuf bodies are read; a body that
// expands past the route's limit is 413 before it is all decompressed,
// one that is not zstd 422, and JSON bodies may not be compressed (415).
func TestZstdBodies(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{MaxRequestTokens: 256})
	id := ts.newModel(t, loraConfig())
	ts.protoResult(t, ts.submitProto(t, fbRequest(id, intp(1), examples(2, 2, 8, base.VocabSize())), false, true))

	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	limit := bytesPerToken*256 + smallBodyBytes
	bomb := enc.EncodeAll(make([]byte, 64*limit), nil) // zeros: a few KiB compressed
	if len(bomb) > limit/8 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	status, _, raw := ts.doRaw(t, "forward_backward", bomb, "Content-Type", wire.ContentTypeProto, "Content-Encoding", "zstd")
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("a zstd bomb: %d %s", status, raw)
	}
	status, _, raw = ts.doRaw(t, "forward_backward", []byte("not zstd at all"), "Content-Type", wire.ContentTypeProto, "Content-Encoding", "zstd")
	if status != http.StatusUnprocessableEntity {
		t.Errorf("a body that is not zstd: %d %s", status, raw)
	}
	status, _, raw = ts.doRaw(t, "forward_backward", enc.EncodeAll([]byte(`{}`), nil), "Content-Type", wire.ContentTypeJSON, "Content-Encoding", "zstd")
	if status != http.StatusUnsupportedMediaType {
		t.Errorf("a compressed JSON body: %d %s", status, raw)
	}
}

// TestHostileProtoInputs sends the protobuf path's hostile requests, many
// at once: zstd bombs (kilobytes that expand to 64 MiB each),
// tensors that declare shapes far beyond their data, more data than a
// request may hold; then checks that the server still trains, and that
// the process's heap stayed within heapBound.
func TestHostileProtoInputs(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{MaxRequestTokens: 4096})
	peak := watchHeap(t, heapBound)
	id := ts.newModel(t, loraConfig())

	// 64 MiB of zeros, compressed as a stream (kept out of this test's
	// own heap).
	var bb bytes.Buffer
	enc, _ := zstd.NewWriter(&bb)
	zeros := make([]byte, 1<<20)
	for range 64 {
		enc.Write(zeros)
	}
	enc.Close()
	bomb := bb.Bytes()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 4 {
				status, _, _ := ts.doRaw(t, "forward_backward", bomb, "Content-Type", wire.ContentTypeProto, "Content-Encoding", "zstd")
				if status != http.StatusRequestEntityTooLarge && status != http.StatusTooManyRequests {
					t.Errorf("a zstd bomb: status %d", status)
				}
			}
		})
	}
	wg.Wait()

	huge := wire.ForwardBackwardRequest{ModelID: id, ForwardBackwardInput: wire.ForwardBackwardInput{LossFn: wire.LossCrossEntropy,
		Data: []wire.Datum{{ModelInput: wire.TokensInput([]int{1}), LossFnInputs: map[string]wire.TensorData{
			wire.InputTargetTokens: {Data: []float64{1}, DType: wire.DTypeInt64, Shape: []int{1 << 30, 1 << 30}}}}}}}
	body, _ := huge.MarshalProto(false)
	if status, _, raw := ts.doRaw(t, "forward_backward", body, "Content-Type", wire.ContentTypeProto); status != http.StatusBadRequest {
		t.Errorf("a declared shape of 2^60 values: %d %s", status, raw)
	}
	many := wire.ForwardBackwardRequest{ModelID: id, ForwardBackwardInput: wire.ForwardBackwardInput{LossFn: wire.LossCrossEntropy,
		Data: make([]wire.Datum, defaultMaxData+1)}}
	body, _ = many.MarshalProto(false)
	if status, _, raw := ts.doRaw(t, "forward_backward", body, "Content-Type", wire.ContentTypeProto); status != http.StatusBadRequest {
		t.Errorf("%d data: %d %s", defaultMaxData+1, status, raw)
	}

	if status, raw := ts.do(t, http.MethodGet, "healthz", nil); status != http.StatusOK {
		t.Fatalf("healthz: %d %s", status, raw)
	}
	ts.protoResult(t, ts.submitProto(t, fbRequest(id, intp(1), examples(1, 2, 8, base.VocabSize())), false, true))
	if p := peak(); p > heapBound {
		t.Fatalf("the live heap peaked at %d MiB, over the bound of %d MiB", p>>20, heapBound>>20)
	} else {
		t.Logf("live heap peak %.1f MiB", float64(p)/(1<<20))
	}
}
