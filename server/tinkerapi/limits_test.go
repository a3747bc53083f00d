package tinkerapi

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// sparseTargets is one datum whose target_tokens is a sparse tensor of
// one value in a [1, 10^12] shape: 8 TB once dense.
func sparseTargets(model string) string {
	return `{"model_id":"` + model + `","forward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"type":"encoded_text","tokens":[1]}]},` +
		`"loss_fn_inputs":{"target_tokens":{"data":[1],"dtype":"int64","shape":[1,1000000000000],"sparse_crow_indices":[0,1],"sparse_col_indices":[0]}}}]}}`
}

// TestHugeSparseShapeIsRefused sends the request that once brought the
// server down with a fatal out-of-memory error: a forward whose sparse
// target_tokens declares a [1, 10^12] shape. It must be a 400 that names
// the mismatch, and the server must go on serving.
func TestHugeSparseShapeIsRefused(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{})
	id := ts.newModel(t, fullConfig())
	for _, route := range []string{"forward", "forward_backward"} {
		body := sparseTargets(id)
		if route == "forward_backward" {
			body = strings.Replace(body, `"forward_input"`, `"forward_backward_input"`, 1)
		}
		d := ts.detail(t, route, body, http.StatusBadRequest)
		if !strings.Contains(d, "target_tokens") {
			t.Errorf("%s: detail %q does not name target_tokens", route, d)
		}
	}
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{
		Data: data(examples(1, 2, 8, base.VocabSize())), LossFn: wire.LossCrossEntropy}}, nil)
}

// asampleBody is a cheap sample request of the base model.
func asampleBody() wire.SampleRequest {
	return wire.SampleRequest{NumSamples: 1, Prompt: wire.TokensInput([]int{tokenizer.BOSID, 'h', 'i'}),
		SamplingParams: wire.SamplingParams{MaxTokens: 1, Temperature: 1, TopK: -1, TopP: 1}, BaseModel: strp("tiny")}
}

// TestFuturesAreBounded checks that results nobody retrieves cannot pile
// up: past MaxFutures (here at its default), new work is refused with 429
// until results are retrieved, and a retrieved result makes room.
func TestFuturesAreBounded(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{})
	var ids []string
	for range defaultMaxFutures {
		ids = append(ids, ts.submit(t, "asample", asampleBody()))
	}
	d := ts.detail(t, "asample", asampleBody(), http.StatusTooManyRequests)
	if !strings.Contains(d, "retrieve") {
		t.Errorf("detail %q does not say to retrieve the results", d)
	}
	ts.result(t, ids[0])
	ts.submit(t, "asample", asampleBody())
}

// TestFutureBytesAreBounded checks MaxFutureBytes: pending requests count
// at the size their results can reach, and a request whose result could
// never fit is a 400.
func TestFutureBytesAreBounded(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{MaxFutureBytes: 64 << 10})
	big := asampleBody()
	big.NumSamples, big.SamplingParams.MaxTokens = 64, 60
	if d := ts.detail(t, "asample", big, http.StatusBadRequest); !strings.Contains(d, "MaxFutureBytes") {
		t.Errorf("detail %q", d)
	}
	// A finished result counts its own size, some 150 bytes, so a few
	// hundred unretrieved ones fill 64 KiB, however fast they finish.
	accepted := 0
	for {
		status, raw := ts.do(t, http.MethodPost, "asample", asampleBody())
		if status == http.StatusTooManyRequests {
			break
		}
		if status != http.StatusOK || accepted > 1000 {
			t.Fatalf("status %d after %d requests: %s", status, accepted, raw)
		}
		accepted++
	}
	if accepted < 4 {
		t.Fatalf("only %d requests fit in 64 KiB", accepted)
	}
	ts.mu.Lock()
	held := ts.futureBytes
	ts.mu.Unlock()
	if held > 64<<10 {
		t.Fatalf("%d bytes of results held, over MaxFutureBytes", held)
	}
}

// TestRetrievedFuturesAreFreed checks that a retrieved result is freed
// once the grace for a lost reply has passed, by the sweeper, without new
// requests to trigger it.
func TestRetrievedFuturesAreFreed(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{})
	id := ts.submit(t, "asample", asampleBody())
	ts.result(t, id)
	ts.result(t, id) // a retry of a lost reply still finds it
	ts.mu.Lock()
	ts.futures[id].retrieved = time.Now().Add(-2 * retrievedGrace)
	ts.sweepLocked(time.Now(), false)
	_, kept := ts.futures[id]
	bytes := ts.futureBytes
	ts.mu.Unlock()
	if kept || bytes != 0 {
		t.Fatalf("retrieved future kept %v, %d bytes accounted", kept, bytes)
	}
}

// TestModelsAreBounded checks MaxModels (at its default) and
// unload_model, which frees a model for another.
func TestModelsAreBounded(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{})
	var ids []string
	for range defaultMaxModels {
		ids = append(ids, ts.newModel(t, loraConfig()))
	}
	req := wire.CreateModelRequest{SessionID: ts.session(t), BaseModel: "tiny", LoraConfig: loraConfig()}
	if d := ts.detail(t, "create_model", req, http.StatusTooManyRequests); !strings.Contains(d, "unload_model") {
		t.Errorf("detail %q does not point to unload_model", d)
	}
	var ur wire.UnloadModelResponse
	ts.run(t, "unload_model", wire.UnloadModelRequest{ModelID: ids[0]}, &ur)
	if ur.ModelID != ids[0] || ur.Type != "unload_model" {
		t.Fatalf("unload_model result %+v", ur)
	}
	ts.detail(t, "get_info", wire.GetInfoRequest{ModelID: ids[0]}, http.StatusNotFound)
	ts.detail(t, "optim_step", wire.OptimStepRequest{ModelID: ids[0], AdamParams: adam}, http.StatusNotFound)
	ts.newModel(t, loraConfig())
}

// TestModelQueueIsBounded checks MaxQueuedRequests: requests that wait
// for a missing seq_id pile up in the model's queue until it is full.
func TestModelQueueIsBounded(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{MaxQueuedRequests: 3, SeqGapWait: time.Minute})
	id := ts.newModel(t, fullConfig())
	for seq := 2; seq < 5; seq++ { // seq_id 1 never comes
		ts.submit(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(seq)})
	}
	ts.detail(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(5)}, http.StatusTooManyRequests)
}

// TestSampleQueueIsBounded checks MaxQueuedSamples.
func TestSampleQueueIsBounded(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{MaxQueuedSamples: 8})
	ts.sampleMu.Lock()
	ts.sampleSeqs = 8 // as if the sampler were behind by 8 sequences
	ts.sampleMu.Unlock()
	ts.detail(t, "asample", asampleBody(), http.StatusTooManyRequests)
	ts.sampleMu.Lock()
	ts.sampleSeqs = 0
	ts.sampleMu.Unlock()
	ts.run(t, "asample", asampleBody(), nil)
}

// TestBodiesSizedToTheModel checks that body limits follow what a route
// can take: a forward body beyond MaxRequestTokens' worth, any other
// body beyond 1 MiB, are 413 however large MaxRequestBytes is; and the
// tokens of a forward request are bounded.
func TestBodiesSizedToTheModel(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{MaxRequestTokens: 64})
	id := ts.newModel(t, fullConfig())
	pad := strings.Repeat(" ", 64*bytesPerToken+smallBodyBytes)
	if st, raw := ts.do(t, http.MethodPost, "forward", `{"model_id":"`+id+`"}`+pad); st != http.StatusRequestEntityTooLarge {
		t.Errorf("forward: status %d: %s", st, raw)
	}
	if st, raw := ts.do(t, http.MethodPost, "create_session", `{}`+strings.Repeat(" ", smallBodyBytes)); st != http.StatusRequestEntityTooLarge {
		t.Errorf("create_session: status %d: %s", st, raw)
	}
	exs := examples(4, 5, 30, base.VocabSize())
	for i := range exs {
		exs[i].seq, exs[i].w = make([]int, 30), make([]float64, 29)
	}
	d := ts.detail(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data(exs), LossFn: wire.LossCrossEntropy}}, http.StatusBadRequest)
	if !strings.Contains(d, "MaxRequestTokens") {
		t.Errorf("detail %q", d)
	}
	ts.run(t, "forward", wire.ForwardRequest{ModelID: id, ForwardInput: wire.ForwardBackwardInput{Data: data(exs[:2]), LossFn: wire.LossCrossEntropy}}, nil)
}

// TestDiskQuota checks that saves stop at the quota, counting what the
// state directory held at start, as a user error.
func TestDiskQuota(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old"), make([]byte, 200<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := start(t, tinyPolicy(t), Options{Dir: dir, DiskQuota: 600 << 10})
	id := ts.newModel(t, loraConfig())
	var saved int
	for i := range 20 {
		raw := ts.result(t, ts.submit(t, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp(fmt.Sprint("s", i))}))
		if strings.Contains(string(raw), `"error"`) {
			if !strings.Contains(string(raw), "quota") || !strings.Contains(string(raw), `"user"`) {
				t.Fatalf("save %d: %s", i, raw)
			}
			break
		}
		saved++
	}
	if saved == 0 || saved == 20 {
		t.Fatalf("%d saves fit a quota of 600 KiB", saved)
	}
	if used := dirBytes(dir); used > 600<<10 {
		t.Fatalf("the state directory holds %d bytes, over the quota", used)
	}
}

// TestSeqRecordsAreBounded checks that a model keeps maxSeqRecords
// seq_ids, and refuses one below what it forgot.
func TestSeqRecordsAreBounded(t *testing.T) {
	ts := start(t, tinyPolicy(t), Options{})
	id := ts.newModel(t, fullConfig())
	mod, err := ts.getModel(id)
	if err != nil {
		t.Fatal(err)
	}
	mod.mu.Lock()
	for seq := 1; seq <= maxSeqRecords+10; seq++ {
		mod.seqs[seq] = seqRecord{requestID: "req_old"}
		mod.seqOrder = append(mod.seqOrder, seq)
	}
	mod.lastSeq = maxSeqRecords + 10
	mod.mu.Unlock()
	ts.submit(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(maxSeqRecords + 11)})
	mod.mu.Lock()
	n := len(mod.seqs)
	mod.mu.Unlock()
	if n > maxSeqRecords {
		t.Fatalf("%d seq_id records", n)
	}
	ts.detail(t, "optim_step", wire.OptimStepRequest{ModelID: id, AdamParams: adam, SeqID: intp(3)}, http.StatusConflict)
}
