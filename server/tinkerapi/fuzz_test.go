package tinkerapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	wire "github.com/agentrl/agentrl/client/tinker"
)

// fuzzRoutes are the POST routes FuzzRequestBodies sends bodies to.
var fuzzRoutes = []string{"forward", "forward_backward", "asample", "create_model", "optim_step",
	"save_weights", "load_weights", "unload_model", "retrieve_future", "create_sampling_session", "get_info", "weights_info"}

// fuzzSeeds are request bodies, valid and hostile, for the fuzz targets.
func fuzzSeeds(model string) []string {
	return []string{
		sparseTargets(model),
		`{"model_id":"` + model + `","forward_backward_input":{"loss_fn":"ppo","loss_fn_config":{"clip_low_threshold":0.8},"data":[{"model_input":{"chunks":[{"type":"encoded_text","tokens":[1,2,3]}]},` +
			`"loss_fn_inputs":{"target_tokens":{"data":[2,3,4],"dtype":"int64"},"advantages":{"data":[1,1,1],"dtype":"float32"},"logprobs":{"data":[-1,-1,-1],"dtype":"float32","shape":[3]}}}]}}`,
		`{"model_id":"` + model + `","forward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"type":"encoded_text","tokens":[1]}]},` +
			`"loss_fn_inputs":{"target_tokens":{"data":[1],"dtype":"int64","shape":[4294967296,4294967296]}}}]}}`,
		`{"num_samples":2,"prompt":{"chunks":[{"type":"encoded_text","tokens":[1,2]}]},"sampling_params":{"max_tokens":3,"stop":["a",1]},"base_model":"tiny","topk_prompt_logprobs":5}`,
		`{"num_samples":1000000,"prompt":{"chunks":[]},"sampling_params":{"max_tokens":-1},"model_path":"tinker://x/y"}`,
		`{"session_id":"s","base_model":"tiny","lora_config":{"rank":1000000000}}`,
		`{"model_id":"` + model + `","adam_params":{"learning_rate":1e309}}`,
		`{"model_id":"` + model + `","path":"../../etc"}`,
		`{"request_id":"req_x"}`,
		`[1,2,3]`, `null`, `{"model_id":` + `"` + model + `","seq_id":-9223372036854775808}`,
	}
}

// protoSeeds are protobuf forward_backward bodies, valid and hostile, for
// the fuzz targets: the SDK's encoding of a cross_entropy and a ppo batch
// (forward-only too), and ones whose tensors declare shapes far beyond
// their data.
func protoSeeds(model string) [][]byte {
	seq := 1
	var out [][]byte
	for _, r := range []wire.ForwardBackwardRequest{
		fbRequest(model, &seq, examples(3, 2, 6, 256)),
		{ModelID: model, ForwardBackwardInput: wire.ForwardBackwardInput{LossFn: wire.LossPPO, LossFnConfig: map[string]float64{"clip_low_threshold": 0.8},
			Data: []wire.Datum{{ModelInput: wire.TokensInput([]int{1, 2, 3}), LossFnInputs: map[string]wire.TensorData{
				wire.InputTargetTokens: wire.Ints([]int{2, 3, 4}), wire.InputAdvantages: wire.Floats([]float64{1, 1, 1}),
				wire.InputLogprobs: {Data: []float64{-1}, DType: wire.DTypeFloat32, Shape: []int{1, 3}, SparseCrowIndices: []int{0, 1}, SparseColIndices: []int{2}}}}}}},
		{ModelID: model, ForwardBackwardInput: wire.ForwardBackwardInput{LossFn: wire.LossCrossEntropy,
			Data: []wire.Datum{{ModelInput: wire.TokensInput([]int{1}), LossFnInputs: map[string]wire.TensorData{
				wire.InputTargetTokens: {Data: []float64{1}, DType: wire.DTypeInt64, Shape: []int{1 << 30, 1 << 30}}}}}}},
	} {
		for _, fo := range []bool{false, true} {
			b, err := r.MarshalProto(fo)
			if err != nil {
				panic(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// FuzzRequestBodies posts arbitrary bodies to the Tinker routes, as JSON
// or (odd route numbers, on the forward routes) as protobuf: no body may
// panic the server or make it answer 500.
func FuzzRequestBodies(f *testing.F) {
	base := tinyPolicy(f)
	ts := start(f, base, Options{MaxFutures: 64, SeqGapWait: -1})
	id := ts.newModel(f, loraConfig())
	for i, s := range fuzzSeeds(id) {
		f.Add(uint8(2*i), []byte(s))
	}
	for _, b := range protoSeeds(id) {
		f.Add(uint8(1), b)
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := wire.APIPrefix + "/" + fuzzRoutes[int(route/2)%len(fuzzRoutes)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if route%2 == 1 {
			req.Header.Set("Content-Type", wire.ContentTypeProto)
		}
		rec := httptest.NewRecorder()
		ts.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body)
		}
	})
}

// FuzzForwardInput decodes arbitrary forward_backward bodies and checks
// them as the server does before queueing: no panic, and the memory that
// checking allocates stays within a constant factor of the body, whatever
// shapes the tensors declare.
func FuzzForwardInput(f *testing.F) {
	base := tinyPolicy(f)
	s, err := New(base, Options{Dir: f.TempDir(), Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	for _, seed := range fuzzSeeds("m") {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req wire.ForwardBackwardRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s.prepare(req.ForwardBackwardInput)
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(64*len(body)+1<<20); got > bound {
			t.Fatalf("checking a %d-byte body allocated %d bytes (bound %d)", len(body), got, bound)
		}
	})
}

// FuzzForwardProto decodes arbitrary protobuf forward_backward bodies and
// checks them as the server does before queueing: no panic, and the
// memory that decoding and checking allocate stays within a constant
// factor of the body (every value decoded comes from its bytes; declared
// shapes are checked against the data, not expanded).
func FuzzForwardProto(f *testing.F) {
	base := tinyPolicy(f)
	s, err := New(base, Options{Dir: f.TempDir(), Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	for _, seed := range protoSeeds("m") {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var req wire.ForwardBackwardRequest
		if _, err := req.UnmarshalProto(body); err == nil {
			s.prepare(req.ForwardBackwardInput)
		}
		runtime.ReadMemStats(&after)
		// An empty submessage is 2 bytes of the body and a few dozen of
		// Go structures: the factor is larger than JSON's.
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(256*len(body)+1<<20); got > bound {
			t.Fatalf("decoding and checking a %d-byte body allocated %d bytes (bound %d)", len(body), got, bound)
		}
	})
}
