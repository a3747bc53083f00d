package openaiapi_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// heapBound is the most live heap TestHostileInputs lets the server hold.
// Before the request budgets, the scaled-down log-prob request alone built
// a reply of tens of MiB and the full-size one 6 GB of RSS.
const heapBound = 192 << 20

// watchHeap samples the live heap until the returned func is called,
// which returns the peak. The soft memory limit at the bound makes the
// collector keep garbage out of the samples.
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

// TestHostileInputs sends, scaled down, what once exhausted the server:
// a request for a reply of hundreds of MB, adapters with an absurd rank
// or NaN weights, more adapters than the cap, an oversized body; then
// checks that the server still serves and that the heap stayed within
// heapBound.
func TestHostileInputs(t *testing.T) {
	b := nativeBase(t)
	root := t.TempDir()
	for i := range 6 {
		writeAdapter(t, b, filepath.Join(root, fmt.Sprint("ok", i)), uint64(i+1), loraCfg)
	}
	// r: 10^9 in adapter_config.json, over real rank-4 weights.
	huge := filepath.Join(root, "huge")
	writeAdapter(t, b, huge, 7, loraCfg)
	editConfig(t, huge, func(c map[string]any) { c["r"] = 1e9 })
	// Every weight NaN.
	nan := filepath.Join(root, "nan")
	m := b.p.Lock().Clone()
	b.p.Unlock()
	if err := m.EnableLoRA(loraCfg); err != nil {
		t.Fatal(err)
	}
	for i := range m.LoRA().Params() {
		m.LoRA().Params()[i] = float32(math.NaN())
	}
	if err := native.SavePEFT(nan, m, b.dir); err != nil {
		t.Fatal(err)
	}

	url, _ := loraServer(t, b, root, openaiapi.Options{})
	peak := watchHeap(t, heapBound)

	// F2, scaled: 64 prompts of 400 ids, echoed, logprobs and
	// prompt_logprobs 20.
	body := map[string]any{"prompt": idPrompts(64, 400), "max_tokens": 16, "echo": true, "logprobs": 20, "prompt_logprobs": 20, "n": 2}
	if status, out := post(t, url, "/v1/completions", body); status != http.StatusBadRequest {
		t.Errorf("the log-prob request: %d %v", status, out)
	}
	body = map[string]any{"prompt": idPrompts(256, 4), "max_tokens": 1000, "n": 4}
	if status, out := post(t, url, "/v1/completions", body); status != http.StatusBadRequest {
		t.Errorf("1024 sequences of 1000 tokens: %d %v", status, out)
	}
	// F5 and F12: refused adapters.
	for _, name := range []string{"huge", "nan"} {
		st, reply := postText(t, url, "/v1/load_lora_adapter", loadBody(name, name, false))
		if st != http.StatusBadRequest {
			t.Errorf("adapter %s: %d %s", name, st, reply)
		}
	}
	// F10: adapters past the cap.
	refused := 0
	for i := range 6 {
		if st, _ := postText(t, url, "/v1/load_lora_adapter", loadBody(fmt.Sprint("ok", i), fmt.Sprint("ok", i), false)); st == http.StatusBadRequest {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d of 6 adapters refused, want 2 (the cap is 4)", refused)
	}
	// A body over the limit.
	if st, _ := postText(t, url, "/v1/completions", `{"prompt":"`+strings.Repeat("a", 2<<20)+`"}`); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB body: %d", st)
	}

	// Still serving.
	if status, _ := get(t, url+"/health"); status != http.StatusOK {
		t.Fatalf("/health: %d", status)
	}
	status, out := post(t, url, "/v1/completions", map[string]any{"prompt": "hello", "max_tokens": 4, "logprobs": 2})
	if status != http.StatusOK {
		t.Fatalf("a normal completion: %d %v", status, out)
	}
	status, out = post(t, url, "/v1/completions", map[string]any{"model": "ok0", "prompt": "hello", "max_tokens": 4})
	if status != http.StatusOK {
		t.Fatalf("a completion of an adapter: %d %v", status, out)
	}
	if p := peak(); p > heapBound {
		t.Fatalf("the live heap peaked at %d MiB, over %d MiB", p>>20, heapBound>>20)
	} else {
		t.Logf("live heap peak %.1f MiB", float64(p)/(1<<20))
	}
}

// editConfig rewrites dir's adapter_config.json.
func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, native.PEFTConfigFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	edit(c)
	raw, _ = json.Marshal(c)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
