package tinkerapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wire "github.com/agentrl/agentrl/client/tinker"
)

// heapBound is the most live heap the hostile-input test lets the server
// hold: the tiny model and its copies take a few MiB; before the limits,
// the same requests held gigabytes or killed the process.
const heapBound = 256 << 20

// watchHeap samples the live heap until the returned func is called,
// which returns the peak. The soft memory limit at the bound makes the
// collector keep garbage out of the samples, so what is measured is what
// the server holds.
func watchHeap(t *testing.T, bound int64) func() uint64 {
	t.Helper()
	old := debug.SetMemoryLimit(bound)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	runtime.GC()
	var peak atomic.Uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}

// TestHostileInputs sends, scaled down, the requests that exhausted the
// server's memory or state, then checks that it still serves and that
// the process's heap stayed within heapBound.
func TestHostileInputs(t *testing.T) {
	base := tinyPolicy(t)
	ts := start(t, base, Options{MaxFutureBytes: 4 << 20, DiskQuota: 4 << 20, MaxRequestTokens: 4096})
	peak := watchHeap(t, heapBound)
	id := ts.newModel(t, loraConfig())

	// F1: tensors whose declared shape is not their data.
	ts.detail(t, "forward", sparseTargets(id), http.StatusBadRequest)
	for _, shape := range []string{`[4294967296,4294967296]`, `[3,6148914691236517206]`, `[-1]`} {
		body := `{"model_id":"` + id + `","forward_input":{"loss_fn":"cross_entropy","data":[{"model_input":{"chunks":[{"type":"encoded_text","tokens":[1]}]},` +
			`"loss_fn_inputs":{"target_tokens":{"data":[1],"dtype":"int64","shape":` + shape + `}}}]}}`
		ts.detail(t, "forward_backward", body, http.StatusBadRequest)
	}

	// F3: results nobody retrieves, with prompt log-probs and
	// alternatives, from many clients at once.
	heavy := asampleBody()
	heavy.NumSamples, heavy.SamplingParams.MaxTokens, heavy.TopKPromptLogprobs = 8, 8, 20
	heavy.Prompt = wire.TokensInput(make([]int, 40))
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if st, _ := ts.do(t, http.MethodPost, "asample", heavy); st == http.StatusTooManyRequests {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if refused.Load() == 0 {
		t.Error("800 unretrieved sample results were all accepted")
	}
	// Models beyond MaxModels, each a copy of the base.
	for range defaultMaxModels + 3 {
		ts.do(t, http.MethodPost, "create_model", wire.CreateModelRequest{SessionID: ts.session(t), BaseModel: "tiny", LoraConfig: fullConfig()})
	}
	// Bodies beyond what a route takes.
	if st, _ := ts.do(t, http.MethodPost, "forward", `{"model_id":"`+id+`","x":"`+strings.Repeat("0", 8<<20)+`"}`); st != http.StatusRequestEntityTooLarge {
		t.Errorf("an 8 MiB forward body: status %d", st)
	}
	if st, _ := ts.do(t, http.MethodPost, "telemetry", `{"events":"`+strings.Repeat("x", 2<<20)+`"}`); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB telemetry body: status %d", st)
	}
	// Sessions and sampling sessions without end.
	for range maxSessions + 50 {
		ts.do(t, http.MethodPost, "create_session", wire.CreateSessionRequest{})
	}
	// Saves beyond the disk quota.
	for i := range 40 {
		ts.do(t, http.MethodPost, "save_weights_for_sampler", wire.SaveWeightsForSamplerRequest{ModelID: id, Path: strp(fmt.Sprint("w", i))})
	}

	// Still serving: health, a training step and a sample.
	if st, raw := ts.do(t, http.MethodGet, "healthz", nil); st != http.StatusOK {
		t.Fatalf("healthz: %d %s", st, raw)
	}
	ts.mu.Lock()
	ts.sweepLocked(time.Now(), true) // results retrieved by nobody stay; the retrieved go
	nfut, nsess := len(ts.futures), len(ts.sessions)
	ts.mu.Unlock()
	if nfut > defaultMaxFutures || nsess > maxSessions {
		t.Errorf("%d futures, %d sessions held", nfut, nsess)
	}
	ts.run(t, "forward_backward", fbRequest(id, nil, examples(1, 2, 8, base.VocabSize())), nil)
	var sr wire.SampleResponse
	// The earlier results still hold the byte budget: retrieve until a
	// new sample fits.
	for {
		status, raw := ts.do(t, http.MethodPost, "asample", asampleBody())
		if status == http.StatusOK {
			var fr wire.FutureResponse
			if err := json.Unmarshal(raw, &fr); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ts.result(t, fr.RequestID), &sr); err != nil || len(sr.Sequences) != 1 {
				t.Fatalf("asample: %v %+v", err, sr)
			}
			break
		}
		if status != http.StatusTooManyRequests {
			t.Fatalf("asample: %d %s", status, raw)
		}
		ts.mu.Lock()
		var ready string
		for fid, f := range ts.futures {
			if !f.finished.IsZero() {
				ready = fid
				break
			}
		}
		ts.mu.Unlock()
		ts.result(t, ready)
	}
	if p := peak(); p > heapBound {
		t.Fatalf("the live heap peaked at %d MiB, over the bound of %d MiB", p>>20, heapBound>>20)
	} else {
		t.Logf("live heap peak %.1f MiB", float64(p)/(1<<20))
	}
}
