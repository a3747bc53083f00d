package vllm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/client/vllm/vllmtest"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
)

// scripted replies with text that depends on the prompt and the seed.
func scripted() *policytest.Scripted {
	return &policytest.Scripted{Reply: func(prompt string, seed uint64) string {
		return fmt.Sprintf("reply %d to %d bytes", seed%1000, len(prompt))
	}}
}

// fake starts a vLLM stand-in for p, optionally wrapped by mw.
func fake(t *testing.T, p policy.Policy, mw func(http.Handler) http.Handler) (*httptest.Server, *vllmtest.Server) {
	t.Helper()
	s := vllmtest.New(p)
	var h http.Handler = s
	if mw != nil {
		h = mw(s)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts, s
}

// quiet are test options: no logging, fast retries.
func quiet(urls ...string) vllm.Options {
	return vllm.Options{
		BaseURLs: urls,
		Logger:   slog.New(slog.DiscardHandler),
		Retry:    vllm.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	}
}

func connect(t *testing.T, opts vllm.Options) *vllm.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := vllm.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// faultFunc sees a /v1/completions request, decoded, with the fake h and
// the number of earlier requests with the same body; it either answers
// (true) or lets the fake answer.
type faultFunc func(h http.Handler, w http.ResponseWriter, r *http.Request, req *vllmtest.CompletionRequest, seen int) bool

// faulty wraps a handler with a faultFunc and counts the /v1/completions
// requests it receives.
type faulty struct {
	f     faultFunc
	calls atomic.Int64
	mu    sync.Mutex
	seen  map[string]int
}

func (fl *faulty) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			h.ServeHTTP(w, r)
			return
		}
		fl.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req vllmtest.CompletionRequest
		if err := json.Unmarshal(body, &req); err != nil {
			vllmtest.WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		fl.mu.Lock()
		if fl.seen == nil {
			fl.seen = map[string]int{}
		}
		n := fl.seen[string(body)]
		fl.seen[string(body)]++
		fl.mu.Unlock()
		if fl.f == nil || !fl.f(h, w, r, &req, n) {
			h.ServeHTTP(w, r)
		}
	})
}

// completionFault wraps a handler with f.
func completionFault(f faultFunc) func(http.Handler) http.Handler {
	return (&faulty{f: f}).wrap
}

// tamper runs the fake and lets edit change its JSON reply.
func tamper(h http.Handler, w http.ResponseWriter, r *http.Request, edit func(resp map[string]any)) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var resp map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != http.StatusOK {
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	edit(resp)
	data, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

// requests are sampling requests over a few rendered prompts.
func requests(t *testing.T, p policy.Policy, n int, sp policy.Sampling) []policy.Request {
	t.Helper()
	reqs := make([]policy.Request, n)
	for i := range reqs {
		ids, err := p.RenderChat(context.Background(), []policy.Message{{Role: policy.RoleUser, Content: fmt.Sprintf("question %d", i%3)}}, true)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = policy.Request{Prompt: ids, Sampling: sp}
		reqs[i].Sampling.Seed = uint64(100 + i)
	}
	return reqs
}
