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

// FuzzRequestBodies posts arbitrary bodies to the Tinker routes: no body
// may panic the server or make it answer 500.
func FuzzRequestBodies(f *testing.F) {
	base := tinyPolicy(f)
	ts := start(f, base, Options{MaxFutures: 64, SeqGapWait: -1})
	id := ts.newModel(f, loraConfig())
	for i, s := range fuzzSeeds(id) {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := wire.APIPrefix + "/" + fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
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
