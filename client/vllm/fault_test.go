package vllm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/client/vllm/vllmtest"
	"github.com/agentrl/agentrl/policy"
)

// sampleWithFault samples n requests through a fake wrapped by fault and
// returns the samples, the reference samples and the completions count.
func sampleWithFault(t *testing.T, n int, opts func(*vllm.Options), fault faultFunc) (got, want []policy.Sample, calls int) {
	t.Helper()
	p := scripted()
	fl := &faulty{f: fault}
	ts, _ := fake(t, p, fl.wrap)
	o := quiet(ts.URL)
	if opts != nil {
		opts(&o)
	}
	c := connect(t, o)
	reqs := requests(t, p, n, policy.Sampling{Temperature: 1, MaxTokens: 32})
	got, err := c.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, _ = p.Sample(context.Background(), reqs)
	return got, want, int(fl.calls.Load())
}

// only applies fault to the request with the given seed.
func only(seed int64, fault func(h http.Handler, w http.ResponseWriter, r *http.Request, seen int) bool) faultFunc {
	return func(h http.Handler, w http.ResponseWriter, r *http.Request, req *vllmtest.CompletionRequest, seen int) bool {
		if req.Seed == nil || *req.Seed != seed {
			return false
		}
		return fault(h, w, r, seen)
	}
}

// checkOthers fails unless every sample but bad equals want.
func checkOthers(t *testing.T, got, want []policy.Sample, bad int) {
	t.Helper()
	for i := range got {
		if i != bad && !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("sample %d was affected: %+v", i, got[i])
		}
	}
}

func TestRetriedServerErrorGivesOneResult(t *testing.T) {
	for _, status := range []int{500, 502, 503} {
		got, want, calls := sampleWithFault(t, 4, nil, func(_ http.Handler, w http.ResponseWriter, r *http.Request, _ *vllmtest.CompletionRequest, seen int) bool {
			if seen == 0 {
				vllmtest.WriteError(w, status, "engine hiccup")
				return true
			}
			return false
		})
		if !reflect.DeepEqual(got, want) || calls != 8 {
			t.Fatalf("status %d: %d calls; got %+v", status, calls, got)
		}
	}
}

func TestPersistentServerErrorFailsOneRequest(t *testing.T) {
	got, want, calls := sampleWithFault(t, 3, nil, only(101, func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ int) bool {
		vllmtest.WriteError(w, 503, "overloaded")
		return true
	}))
	var herr *vllm.HTTPError
	if err := got[1].Err; !errors.As(err, &herr) || herr.StatusCode != 503 || !strings.Contains(err.Error(), "overloaded") || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("Err = %v", err)
	}
	if len(got[1].Tokens) != 0 || calls != 2+3 {
		t.Fatalf("tokens %v, %d calls", got[1].Tokens, calls)
	}
	checkOthers(t, got, want, 1)
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	start := time.Now()
	got, want, calls := sampleWithFault(t, 1, nil, func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ *vllmtest.CompletionRequest, seen int) bool {
		if seen == 0 {
			w.Header().Set("Retry-After", "1")
			vllmtest.WriteError(w, http.StatusTooManyRequests, "slow down")
			return true
		}
		return false
	})
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("retried after %v, before Retry-After", d)
	}
	if !reflect.DeepEqual(got, want) || calls != 2 {
		t.Fatalf("%d calls; got %+v", calls, got)
	}
}

func TestBadRequestIsNotRetried(t *testing.T) {
	got, want, calls := sampleWithFault(t, 3, nil, only(102, func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ int) bool {
		vllmtest.WriteError(w, http.StatusBadRequest, "This model's maximum context length is 4096 tokens.")
		return true
	}))
	var herr *vllm.HTTPError
	if err := got[2].Err; !errors.As(err, &herr) || herr.StatusCode != 400 || !strings.Contains(err.Error(), "maximum context length") {
		t.Fatalf("Err = %v", err)
	}
	if calls != 3 {
		t.Fatalf("%d calls: the 400 was retried", calls)
	}
	checkOthers(t, got, want, 2)
}

func TestMalformedRepliesFailOneRequest(t *testing.T) {
	type fault = func(h http.Handler, w http.ResponseWriter, r *http.Request, seen int) bool
	cases := map[string]struct {
		fault fault
		want  string
	}{
		"invalid JSON": {func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ int) bool {
			w.Write([]byte("{not json"))
			return true
		}, "invalid character"},
		"truncated JSON": {func(h http.Handler, w http.ResponseWriter, r *http.Request, _ int) bool {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			b := rec.Body.Bytes()
			w.Write(b[:len(b)-1]) // a complete HTTP reply whose JSON is cut
			return true
		}, "unexpected end of JSON input"},
		"wrong number of choices": {edit(func(resp map[string]any) {
			ch := resp["choices"].([]any)
			resp["choices"] = append(ch, ch[0])
		}), "2 choices for n=1"},
		"no choices": {edit(func(resp map[string]any) {
			resp["choices"] = []any{}
		}), "0 choices for n=1"},
		"length mismatch": {edit(func(resp map[string]any) {
			ch := resp["choices"].([]any)[0].(map[string]any)
			ch["token_ids"] = append(ch["token_ids"].([]any), 5.0)
		}), "token_logprobs for"},
		"missing token_ids": {edit(func(resp map[string]any) {
			delete(resp["choices"].([]any)[0].(map[string]any), "token_ids")
		}), "no token_ids"},
		"missing logprobs": {edit(func(resp map[string]any) {
			resp["choices"].([]any)[0].(map[string]any)["logprobs"] = nil
		}), "no logprobs"},
		"null logprob": {edit(func(resp map[string]any) {
			lp := resp["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
			lp["token_logprobs"].([]any)[0] = nil
		}), "is null"},
		"unknown finish_reason": {edit(func(resp map[string]any) {
			resp["choices"].([]any)[0].(map[string]any)["finish_reason"] = "abort"
		}), `unknown finish_reason "abort"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, want, calls := sampleWithFault(t, 3, nil, only(101, tc.fault))
			if err := got[1].Err; !errors.Is(err, vllm.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Err = %v, want ErrMalformed with %q", err, tc.want)
			}
			if calls != 3 {
				t.Fatalf("%d calls: a malformed reply was retried", calls)
			}
			checkOthers(t, got, want, 1)
		})
	}
}

// edit makes a fault that lets the fake answer, then edits its reply.
func edit(f func(resp map[string]any)) func(http.Handler, http.ResponseWriter, *http.Request, int) bool {
	return func(h http.Handler, w http.ResponseWriter, r *http.Request, _ int) bool {
		tamper(h, w, r, f)
		return true
	}
}

func TestAttemptTimeoutIsRetriedThenFails(t *testing.T) {
	start := time.Now()
	got, want, calls := sampleWithFault(t, 2, func(o *vllm.Options) {
		o.AttemptTimeout = 100 * time.Millisecond
		o.Retry.MaxAttempts = 2
	}, only(100, func(_ http.Handler, _ http.ResponseWriter, r *http.Request, _ int) bool {
		<-r.Context().Done() // hang until the client gives up
		return true
	}))
	if err := got[0].Err; err == nil || !strings.Contains(err.Error(), "attempt timed out after 100ms") || !strings.Contains(err.Error(), "2 attempts") {
		t.Fatalf("Err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	if calls != 1+2 {
		t.Fatalf("%d calls", calls)
	}
	checkOthers(t, got, want, 0)
}

func TestDroppedConnectionIsRetried(t *testing.T) {
	drop := func(w http.ResponseWriter) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	// Dropped before the reply, then served.
	got, want, calls := sampleWithFault(t, 2, nil, func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ *vllmtest.CompletionRequest, seen int) bool {
		if seen == 0 {
			drop(w)
			return true
		}
		return false
	})
	if !reflect.DeepEqual(got, want) || calls != 4 {
		t.Fatalf("%d calls; got %+v", calls, got)
	}
	// Dropped in the middle of the body, every time: a network error,
	// retried, then reported.
	got, want, calls = sampleWithFault(t, 2, nil, only(101, func(h http.Handler, w http.ResponseWriter, r *http.Request, _ int) bool {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return true
		}
		body := rec.Body.Bytes()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ")
		buf.WriteString(strconvItoa(len(body)) + "\r\n\r\n")
		buf.Write(body[:len(body)/2])
		buf.Flush()
		conn.Close()
		return true
	}))
	if err := got[1].Err; err == nil || errors.Is(err, vllm.ErrMalformed) || !strings.Contains(err.Error(), "unexpected EOF") || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("Err = %v", err)
	}
	if calls != 1+3 {
		t.Fatalf("%d calls", calls)
	}
	checkOthers(t, got, want, 1)
}

func strconvItoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCallerDeadlineEndsTheCall(t *testing.T) {
	p := scripted()
	ts, _ := fake(t, p, completionFault(func(_ http.Handler, _ http.ResponseWriter, r *http.Request, _ *vllmtest.CompletionRequest, _ int) bool {
		<-r.Context().Done()
		return true
	}))
	c := connect(t, quiet(ts.URL))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Sample(ctx, requests(t, p, 3, policy.Sampling{Temperature: 1, MaxTokens: 8}))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	_, err = c.Score(ctx, []policy.ScoreRequest{{Prompt: []int{1}, Continuation: []int{2}}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Score err = %v", err)
	}
}

func TestResponseSizeCap(t *testing.T) {
	got, _, calls := sampleWithFault(t, 1, func(o *vllm.Options) { o.MaxResponseBytes = 1000 }, func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ *vllmtest.CompletionRequest, _ int) bool {
		w.Write([]byte(`{"id": "` + strings.Repeat("x", 2000) + `"}`))
		return true
	})
	if err := got[0].Err; err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") || calls != 1 {
		t.Fatalf("Err = %v, %d calls", err, calls)
	}
}

func TestErrorBodies(t *testing.T) {
	for body, want := range map[string]string{
		`{"error": {"message": "bad seed", "type": "BadRequestError", "code": 400}}`: "HTTP 400: bad seed",
		`{"error": "Unauthorized"}`:                                "HTTP 400: Unauthorized",
		`{"object": "error", "message": "old style", "code": 400}`: "HTTP 400: old style",
		`{"detail": [{"loc": ["body"], "msg": "field required"}]}`: "field required",
		`plain text`: "HTTP 400: plain text",
		``:           "HTTP 400: Bad Request",
	} {
		got, _, _ := sampleWithFault(t, 1, nil, func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ *vllmtest.CompletionRequest, _ int) bool {
			w.WriteHeader(400)
			w.Write([]byte(body))
			return true
		})
		if err := got[0].Err; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("body %s: Err = %v, want %q", body, err, want)
		}
	}
}

func TestScoreFaults(t *testing.T) {
	cases := map[string]struct {
		edit func(resp map[string]any)
		want string
	}{
		"prompt ids differ": {func(resp map[string]any) {
			ch := resp["choices"].([]any)[0].(map[string]any)
			ch["prompt_token_ids"].([]any)[0] = 99.0
		}, "prompt_token_ids"},
		"prompt_logprobs at the top level": {func(resp map[string]any) {
			ch := resp["choices"].([]any)[0].(map[string]any)
			resp["prompt_logprobs"] = ch["prompt_logprobs"]
			delete(ch, "prompt_logprobs")
		}, "0 prompt_logprobs for 3 prompt tokens"},
		"token missing": {func(resp map[string]any) {
			ch := resp["choices"].([]any)[1].(map[string]any)
			ch["prompt_logprobs"].([]any)[2] = map[string]any{"77": map[string]any{"logprob": -1.0}}
		}, "no entry for token"},
		"choices repeated": {func(resp map[string]any) {
			ch := resp["choices"].([]any)
			ch[1] = ch[0]
		}, "repeated"},
		"too few choices": {func(resp map[string]any) {
			resp["choices"] = resp["choices"].([]any)[:1]
		}, "1 choices for 2 scored prompts"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := scripted()
			fl := &faulty{f: func(h http.Handler, w http.ResponseWriter, r *http.Request, _ *vllmtest.CompletionRequest, _ int) bool {
				tamper(h, w, r, tc.edit)
				return true
			}}
			ts, _ := fake(t, p, fl.wrap)
			c := connect(t, quiet(ts.URL))
			_, err := c.Score(context.Background(), []policy.ScoreRequest{{Prompt: []int{1, 2}, Continuation: []int{3}}, {Prompt: []int{4}, Continuation: []int{5, 6}}})
			if !errors.Is(err, vllm.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMalformed with %q", err, tc.want)
			}
			if n := fl.calls.Load(); n != 1 {
				t.Fatalf("%d calls", n)
			}
		})
	}
}

// TestNoGoroutineLeak checks that after Close no goroutine of the client,
// nor any connection (whose server side would keep one), is left: only the
// two servers' accept loops, started before the count, remain.
func TestNoGoroutineLeak(t *testing.T) {
	settle := func(limit int) int {
		n := runtime.NumGoroutine()
		for i := 0; i < 100 && n > limit; i++ {
			time.Sleep(20 * time.Millisecond)
			n = runtime.NumGoroutine()
		}
		return n
	}
	p := scripted()
	var hangs atomic.Int32
	h := completionFault(func(h http.Handler, w http.ResponseWriter, r *http.Request, req *vllmtest.CompletionRequest, seen int) bool {
		switch {
		case req.Seed != nil && *req.Seed == 101:
			hangs.Add(1)
			<-r.Context().Done()
			return true
		case req.Seed != nil && *req.Seed == 102 && seen == 0:
			vllmtest.WriteError(w, 500, "once")
			return true
		}
		return false
	})(vllmtest.New(p))
	ts := httptest.NewServer(h)
	defer ts.Close()
	ts2 := httptest.NewServer(h)
	defer ts2.Close()
	before := runtime.NumGoroutine()

	o := quiet(ts.URL, ts2.URL)
	o.AttemptTimeout = 50 * time.Millisecond
	c, err := vllm.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	reqs := requests(t, p, 6, policy.Sampling{Temperature: 1, MaxTokens: 16})
	got, err := c.Sample(context.Background(), reqs)
	if err != nil || got[0].Err != nil || got[1].Err == nil || got[2].Err != nil {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := c.Score(context.Background(), []policy.ScoreRequest{{Prompt: reqs[0].Prompt, Continuation: got[0].Tokens}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	c.Sample(ctx, reqs)
	cancel()
	if hangs.Load() == 0 {
		t.Fatal("the hanging fault never ran")
	}
	c.Close()
	if _, err := c.Sample(context.Background(), reqs); !errors.Is(err, vllm.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if after := settle(before); after > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// TestOutageIsWaitedOut: a server that answers 503 for a while (a restart)
// is waited for past Retry.MaxAttempts within Retry.Outage, and the
// request then succeeds once; without Outage it fails after its attempts.
func TestOutageIsWaitedOut(t *testing.T) {
	down := func(until time.Time) faultFunc {
		return func(_ http.Handler, w http.ResponseWriter, _ *http.Request, _ *vllmtest.CompletionRequest, _ int) bool {
			if time.Now().Before(until) {
				vllmtest.WriteError(w, http.StatusServiceUnavailable, "restarting")
				return true
			}
			return false
		}
	}
	got, want, calls := sampleWithFault(t, 2, func(o *vllm.Options) { o.Retry.Outage = 10 * time.Second },
		down(time.Now().Add(300*time.Millisecond)))
	if !reflect.DeepEqual(got, want) || calls <= 2*3 {
		t.Fatalf("within the outage budget: %d calls; got %+v", calls, got)
	}
	got, _, _ = sampleWithFault(t, 2, nil, down(time.Now().Add(time.Minute)))
	if got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "3 attempts") {
		t.Fatalf("without an outage budget: Err = %v", got[0].Err)
	}
	got, _, _ = sampleWithFault(t, 1, func(o *vllm.Options) { o.Retry.Outage = 200 * time.Millisecond },
		down(time.Now().Add(time.Minute)))
	if got[0].Err == nil || !strings.Contains(got[0].Err.Error(), "Retry.Outage") {
		t.Fatalf("past the outage budget: Err = %v", got[0].Err)
	}
}

// TestEnsureLoRAAndMissingModels: a request naming an adapter the server
// does not hold is IsModelMissing; EnsureLoRA loads it where it is missing
// and counts "already loaded" as done.
func TestEnsureLoRAAndMissingModels(t *testing.T) {
	var loads atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loads.Add(1)
		if loads.Load() == 1 {
			vllmtest.WriteError(w, http.StatusBadRequest, "The lora adapter 'a' has already been loaded.")
			return
		}
		w.Write([]byte("ok"))
	})
	ts1, _ := fake(t, scripted(), func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/load_lora_adapter" {
				h(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	c := connect(t, quiet(ts1.URL))
	if err := c.EnsureLoRA(context.Background(), "a", "/adapters/a"); err != nil {
		t.Errorf("already loaded: %v", err)
	}
	if err := c.EnsureLoRA(context.Background(), "a", "/adapters/a"); err != nil {
		t.Errorf("loaded: %v", err)
	}
	c.SetModel("missing-adapter")
	p := scripted()
	got, err := c.Sample(context.Background(), requests(t, p, 1, policy.Sampling{Temperature: 1, MaxTokens: 4}))
	if err != nil {
		t.Fatal(err)
	}
	if !vllm.IsModelMissing(got[0].Err) {
		t.Errorf("a request for a model the server lacks: %v, want IsModelMissing", got[0].Err)
	}
	if vllm.IsModelMissing(errors.New("does not exist")) || vllm.IsModelMissing(nil) {
		t.Error("IsModelMissing of errors that are not a server's 404")
	}
}
