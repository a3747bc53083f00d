package tinker_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/tinker"
)

// waitFor polls cond for up to 3 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 300 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not reached in 3s")
}

func TestFutureThatNeverResolves(t *testing.T) {
	f, _, m := setup(t, func(f *fake, o *tinker.Options) {
		f.never["forward_backward"] = true
		o.FutureTimeout = 150 * time.Millisecond
	})
	start := time.Now()
	fut, err := m.ForwardBackwardAsync(context.Background(), batch(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	_, err = fut.Wait(context.Background())
	if !errors.Is(err, tinker.ErrFutureTimeout) || !strings.Contains(err.Error(), "forward_backward request "+fut.RequestID()) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v", d)
	}
	if n := f.count("retrieve_future"); n < 3 {
		t.Fatalf("%d polls: the 408s were not polled again", n)
	}
	// A timed-out Wait is final.
	if _, err2 := fut.Wait(context.Background()); err2 != err {
		t.Fatalf("second Wait: %v", err2)
	}

	// The caller's context ends first: its error, not a timeout; a later
	// Wait may still succeed.
	f.mu.Lock()
	f.never["optim_step"] = true
	f.mu.Unlock()
	step, err := m.OptimStepAsync(context.Background(), tinker.DefaultAdam(1e-5))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = step.Wait(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, tinker.ErrFutureTimeout) || !strings.Contains(err.Error(), step.RequestID()) {
		t.Fatalf("err = %v", err)
	}
	f.mu.Lock()
	f.futures[step.RequestID()].never = false
	f.mu.Unlock()
	if _, err := step.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after a cancelled one: %v", err)
	}
}

// TestPollAgainIsNotARetry: 408 and try_again replies to retrieve_future
// mean "still pending" (SkyRL's api.py returns 408 after its 300 s wait;
// the SDK's try_again_response.py), so they are polled again even with
// retries disabled.
func TestPollAgainIsNotARetry(t *testing.T) {
	f, _, m := setup(t, func(f *fake, o *tinker.Options) {
		f.script["optim_step"] = []string{"408", "try_again", "408", "try_again", "try_again"}
		o.MaxRetries = -1
	})
	resp, err := m.OptimStep(context.Background(), tinker.DefaultAdam(1e-5))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Metrics["step"] != 1 || f.count("retrieve_future") != 1+6 {
		t.Fatalf("%+v after %d polls", resp, f.count("retrieve_future"))
	}
}

func TestServerErrorsAreRetried(t *testing.T) {
	ctx := context.Background()
	var fails atomic.Int32
	f, _, m := setup(t, func(f *fake, _ *tinker.Options) {
		f.script["forward_backward"] = []string{"500", "500"}
	})
	f.fault = func(w http.ResponseWriter, _ *http.Request, route string, _ []byte, _ http.Handler) bool {
		if route == "get_info" && fails.Add(1) <= 2 {
			detail(w, http.StatusServiceUnavailable, "warming up")
			return true
		}
		return false
	}
	if _, err := m.Info(ctx); err != nil || f.count("get_info") != 3 {
		t.Fatalf("%v after %d calls", err, f.count("get_info"))
	}
	if _, err := m.ForwardBackward(ctx, batch(1, 2, 3)); err != nil || f.count("retrieve_future") != 1+3 {
		t.Fatalf("%v after %d polls", err, f.count("retrieve_future"))
	}

	// Persistent: given up after MaxRetries.
	fails.Store(-100)
	f.fault = func(w http.ResponseWriter, _ *http.Request, route string, _ []byte, _ http.Handler) bool {
		if route == "get_info" {
			detail(w, http.StatusBadGateway, "no upstream")
			return true
		}
		return false
	}
	before := f.count("get_info")
	_, err := m.Info(ctx)
	var aerr *tinker.APIError
	if !errors.As(err, &aerr) || aerr.Status != 502 || !aerr.Retryable || aerr.Category != tinker.CategoryServer ||
		!strings.Contains(err.Error(), "no upstream") || !strings.Contains(err.Error(), "6 attempts") {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("get_info") - before; n != 6 {
		t.Fatalf("%d attempts, want 1 + MaxRetries 5", n)
	}
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	var once sync.Once
	f, _, m := setup(t, nil)
	f.fault = func(w http.ResponseWriter, _ *http.Request, route string, _ []byte, _ http.Handler) bool {
		hit := false
		if route == "forward_backward" {
			once.Do(func() {
				hit = true
				w.Header().Set("Retry-After", "1")
				detail(w, http.StatusTooManyRequests, "rate limited")
			})
		}
		return hit
	}
	start := time.Now()
	if _, err := m.ForwardBackward(context.Background(), batch(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 950*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After", d)
	}
	reqs := f.requests("forward_backward")
	if len(reqs) != 2 || string(reqs[0].Body) != string(reqs[1].Body) ||
		reqs[0].Header.Get("X-Idempotency-Key") != reqs[1].Header.Get("X-Idempotency-Key") {
		t.Fatalf("%d attempts; the retry must be byte-identical with the same idempotency key", len(reqs))
	}
}

func TestMalformedReplies(t *testing.T) {
	cases := map[string]struct {
		route, body, want string
	}{
		"invalid JSON on submit":    {"optim_step", `{not json`, `optim_step: invalid character 'n'`},
		"future without request_id": {"optim_step", `{"future_id":"","status":"pending"}`, "no request_id"},
		"invalid result":            {"retrieve_future", `{"metrics": [1,`, "unexpected end of JSON input"},
		"result of the wrong shape": {"retrieve_future", `{"metrics": {"step": "one"}}`, "cannot unmarshal string"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, _, m := setup(t, nil)
			f.fault = reply(tc.route, tc.body)
			before := f.count(tc.route)
			_, err := m.OptimStep(context.Background(), tinker.DefaultAdam(1e-5))
			if !errors.Is(err, tinker.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMalformed with %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "body ") && tc.route != "retrieve_future" || strings.Contains(tc.body, "{not") && !strings.Contains(err.Error(), `"{not json"`) {
				t.Fatalf("err = %v: no body prefix", err)
			}
			if n := f.count(tc.route) - before; n != 1 {
				t.Fatalf("%d calls: a malformed reply was retried", n)
			}
		})
	}
}

func TestOutputsMustMatchTheBatch(t *testing.T) {
	f, _, m := setup(t, nil)
	f.fault = resultFor(`{"loss_fn_output_type":"scalar","loss_fn_outputs":[{},{}],"metrics":{}}`)
	_, err := m.ForwardBackward(context.Background(), batch(1, 2, 3))
	if !errors.Is(err, tinker.ErrMalformed) || !strings.Contains(err.Error(), "2 loss_fn_outputs for 1 data") {
		t.Fatalf("err = %v", err)
	}
}

func TestFailedRequests(t *testing.T) {
	ctx := context.Background()
	base := "Qwen/Qwen3-8B"
	req := tinker.SampleRequest{Prompt: tinker.TokensInput([]int{1, 2}), SamplingParams: tinker.SamplingParams{MaxTokens: 4, Temperature: 1, TopK: -1, TopP: 1}, BaseModel: &base}

	// A user error (the SDK's request_failed_response.py and
	// request_error_category.py): reported, never retried.
	f, c, m := setup(t, func(f *fake, _ *tinker.Options) {
		f.failures["asample"] = &failure{resp: tinker.RequestFailedResponse{Error: "prompt is too long", Category: "user"}, times: -1}
		f.failures["optim_step"] = &failure{resp: tinker.RequestFailedResponse{Error: "optimizer state lost", Category: "server"}, times: -1}
	})
	_, err := c.Sample(ctx, req)
	var aerr *tinker.APIError
	if !errors.As(err, &aerr) || aerr.Category != tinker.CategoryUser || aerr.Retryable || aerr.Status != 0 ||
		aerr.Route != "asample" || aerr.RequestID == "" || !strings.Contains(err.Error(), "prompt is too long") {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("asample"); n != 1 {
		t.Fatalf("%d submissions of a user error", n)
	}
	// A server-side failure of a training write is reported, not
	// resubmitted: the seq_id's future is the failed one.
	if _, err := m.OptimStep(ctx, tinker.DefaultAdam(1e-5)); !errors.As(err, &aerr) || aerr.Category != tinker.CategoryServer || !aerr.Retryable {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("optim_step"); n != 1 {
		t.Fatalf("%d submissions of optim_step", n)
	}

	// A server-side failure of a sample: submitted again.
	f.mu.Lock()
	f.failures["asample"] = &failure{resp: tinker.RequestFailedResponse{Error: "engine restarted", Category: "server"}, times: 1}
	f.mu.Unlock()
	if _, err := c.Sample(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := f.count("asample"); n != 3 {
		t.Fatalf("%d submissions", n)
	}

	// SkyRL's form of a failure: HTTP 400 on retrieve_future (api.py
	// retrieve_future raises HTTPException(400, detail=error)).
	f.mu.Lock()
	f.script["forward_backward"] = []string{"400"}
	f.mu.Unlock()
	_, err = m.ForwardBackward(ctx, batch(1, 2, 3))
	if !errors.As(err, &aerr) || aerr.Status != 400 || aerr.Category != tinker.CategoryUser || aerr.Route != "forward_backward" ||
		!strings.Contains(err.Error(), "exceeds the maximum") {
		t.Fatalf("err = %v", err)
	}
}

func TestServerRestartLosesFutures(t *testing.T) {
	f, _, m := setup(t, nil)
	fut, err := m.ForwardBackwardAsync(context.Background(), batch(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	f.restart()
	_, err = fut.Wait(context.Background())
	var aerr *tinker.APIError
	if !errors.Is(err, tinker.ErrUnknownRequest) || !errors.As(err, &aerr) || aerr.Status != 404 || aerr.Retryable ||
		!strings.Contains(err.Error(), "restarted") || !strings.Contains(err.Error(), "forward_backward (request "+fut.RequestID()+")") {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("retrieve_future"); n != 2 {
		t.Fatalf("%d polls: the 404 was retried", n)
	}
}

// drop closes the connection without a reply.
func drop(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// TestLostReplyAppliesTheStepOnce: the server applies an optim_step but
// its reply is lost; the client re-sends the same body, seq_id included,
// and the server (deduplicating by (model_id, seq_id) like SkyRL's
// create_future) answers with the original future, so the step is
// applied once.
func TestLostReplyAppliesTheStepOnce(t *testing.T) {
	var dropped atomic.Int32
	logs := &countingHandler{}
	f, _, m := setup(t, func(_ *fake, o *tinker.Options) { o.Logger = slog.New(logs) })
	f.fault = func(w http.ResponseWriter, r *http.Request, route string, _ []byte, h http.Handler) bool {
		// Twice: net/http itself re-sends a request with an idempotency
		// key once on a reused connection; the second loss is the
		// client's to retry.
		if route == "optim_step" && dropped.Add(1) <= 2 {
			h.ServeHTTP(httptest.NewRecorder(), r) // applied, reply discarded
			drop(w)
			return true
		}
		return false
	}
	ctx := context.Background()
	resp, err := m.OptimStep(ctx, tinker.DefaultAdam(1e-5))
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests("optim_step")
	if len(reqs) != 3 {
		t.Fatalf("%d attempts", len(reqs))
	}
	for _, r := range reqs[1:] {
		if string(r.Body) != string(reqs[0].Body) || r.Header.Get("X-Idempotency-Key") != reqs[0].Header.Get("X-Idempotency-Key") {
			t.Fatalf("retry differs: %s / %s", reqs[0].Body, r.Body)
		}
	}
	if n := logs.count(slog.LevelWarn); n != 1 {
		t.Fatalf("%d retry warnings: %v", n, logs.msgs)
	}
	if n := f.appliedCount("optim_step"); n != 1 || resp.Metrics["step"] != 1 {
		t.Fatalf("applied %d times, step %v", n, resp.Metrics["step"])
	}
	// The next step takes the next seq_id and is applied.
	if resp, err := m.OptimStep(ctx, tinker.DefaultAdam(1e-5)); err != nil || resp.Metrics["step"] != 2 || f.appliedCount("optim_step") != 2 {
		t.Fatalf("%v %+v", err, resp)
	}
}

func TestSeqConflictIsNotRetried(t *testing.T) {
	f, _, m := setup(t, nil)
	f.fault = func(w http.ResponseWriter, _ *http.Request, route string, _ []byte, _ http.Handler) bool {
		if route == "optim_step" {
			detail(w, http.StatusConflict, "Training request sequence number was reused")
			return true
		}
		return false
	}
	_, err := m.OptimStep(context.Background(), tinker.DefaultAdam(1e-5))
	var aerr *tinker.APIError
	if !errors.Is(err, tinker.ErrSeqConflict) || !errors.As(err, &aerr) || aerr.Status != 409 || aerr.Retryable ||
		!strings.Contains(err.Error(), "seq_id 1") || !strings.Contains(err.Error(), "sequence number was reused") {
		t.Fatalf("err = %v", err)
	}
	if n := f.count("optim_step"); n != 1 {
		t.Fatalf("%d attempts: the 409 was retried", n)
	}
}

// TestSubmissionsInSeqOrder: concurrent calls on one model reach the
// server in seq_id order, each seq_id once.
func TestSubmissionsInSeqOrder(t *testing.T) {
	f, _, m := setup(t, nil)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if i%2 == 0 {
				_, err := m.ForwardBackward(context.Background(), batch(1, 2, 3))
				if err != nil {
					t.Error(err)
				}
				return
			}
			if _, err := m.OptimStep(context.Background(), tinker.DefaultAdam(1e-5)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	next := 1
	for _, r := range f.requests("") {
		if r.Route != "forward_backward" && r.Route != "optim_step" {
			continue
		}
		var head struct {
			SeqID int `json:"seq_id"`
		}
		json.Unmarshal(r.Body, &head)
		if head.SeqID != next {
			t.Fatalf("seq_id %d arrived when %d was due", head.SeqID, next)
		}
		next++
	}
	if next != 21 {
		t.Fatalf("%d submissions", next-1)
	}
}

func TestPipelinedCalls(t *testing.T) {
	f, _, m := setup(t, func(f *fake, _ *tinker.Options) {
		f.script["forward_backward"] = []string{"try_again", "try_again"}
	})
	ctx := context.Background()
	fb, err := m.ForwardBackwardAsync(ctx, batch(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	step, err := m.OptimStepAsync(ctx, tinker.DefaultAdam(1e-5))
	if err != nil {
		t.Fatal(err)
	}
	// Both were submitted before either was waited for.
	if f.count("retrieve_future") != 1 || f.count("forward_backward") != 1 || f.count("optim_step") != 1 {
		t.Fatal("not pipelined")
	}
	if _, err := step.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := fb.Wait(ctx)
	if err != nil || len(out.LossFnOutputs) != 1 {
		t.Fatal(err)
	}
}

// countingHandler counts log records by level.
type countingHandler struct {
	mu     sync.Mutex
	counts map[slog.Level]int
	msgs   []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = map[slog.Level]int{}
	}
	h.counts[r.Level]++
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[l]
}

func TestHeartbeats(t *testing.T) {
	f := newFake()
	opts := quiet(f.start(t).URL)
	opts.HeartbeatInterval = 10 * time.Millisecond
	logs := &countingHandler{}
	opts.Logger = slog.New(logs)
	c := connect(t, opts)
	waitFor(t, func() bool { return f.heartbeats() >= 3 })

	// The session is lost (a restart): 404s, logged as an error once.
	f.restart()
	waitFor(t, func() bool { return f.count("session_heartbeat") >= 10 })
	if n := logs.count(slog.LevelError); n != 1 {
		t.Fatalf("%d error logs for the unknown session: %v", n, logs.msgs)
	}

	// Other failures are warnings, and the client keeps working.
	f.setFault(func(w http.ResponseWriter, _ *http.Request, route string, _ []byte, _ http.Handler) bool {
		if route == "session_heartbeat" {
			detail(w, 503, "busy")
			return true
		}
		return false
	})
	waitFor(t, func() bool { return logs.count(slog.LevelWarn) >= 2 })

	c.Close()
	n := f.count("session_heartbeat")
	time.Sleep(60 * time.Millisecond)
	if m := f.count("session_heartbeat"); m != n {
		t.Fatalf("%d heartbeats after Close", m-n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Capabilities(context.Background()); !errors.Is(err, tinker.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestErrorBodies(t *testing.T) {
	for body, want := range map[string]string{
		`{"detail":"Model not found"}`: "HTTP 404: Model not found",
		`{"detail":[{"type":"missing","loc":["body","adam_params","eps"],"msg":"Field required","input":null}]}`: "HTTP 404: body.adam_params.eps: Field required",
		`{"detail":{"code":"x"}}`: `HTTP 404: {"code":"x"}`,
		`not json at all`:         "HTTP 404: not json at all",
		``:                        "HTTP 404: Not Found",
	} {
		f, _, m := setup(t, nil)
		f.fault = func(w http.ResponseWriter, _ *http.Request, route string, _ []byte, _ http.Handler) bool {
			if route == "get_info" {
				w.WriteHeader(404)
				w.Write([]byte(body))
				return true
			}
			return false
		}
		_, err := m.Info(context.Background())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "tinker: get_info: ") {
			t.Errorf("body %s: err = %v, want %q", body, err, want)
		}
	}
}

func TestNewClientFailures(t *testing.T) {
	if _, err := tinker.NewClient(context.Background(), tinker.Options{BaseURL: "localhost:8000"}); err == nil {
		t.Fatal("a base URL without a scheme was accepted")
	}
	f := newFake()
	f.apiKey = "tml-right"
	opts := quiet(f.start(t).URL)
	opts.APIKey = "tml-wrong"
	_, err := tinker.NewClient(context.Background(), opts)
	var aerr *tinker.APIError
	if !errors.As(err, &aerr) || aerr.Status != 401 || f.count("healthz") != 1 {
		t.Fatalf("err = %v after %d calls", err, f.count("healthz"))
	}
}

// TestCloseAbortsWaits: Close ends a long poll in flight and leaves no
// goroutine of the client behind.
func TestCloseAbortsWaits(t *testing.T) {
	f := newFake()
	f.hold = time.Minute
	f.never["optim_step"] = true
	ts := f.start(t)
	before := runtime.NumGoroutine()
	opts := quiet(ts.URL)
	opts.HeartbeatInterval = 5 * time.Millisecond
	c, err := tinker.NewClient(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.CreateModel(context.Background(), "Qwen/Qwen3-8B", tinker.LoraConfig{Rank: 8})
	if err != nil {
		t.Fatal(err)
	}
	step, err := m.OptimStepAsync(context.Background(), tinker.DefaultAdam(1e-5))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { c.Close() })
	start := time.Now()
	if _, err := step.Wait(context.Background()); !errors.Is(err, tinker.ErrClosed) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if _, err := m.OptimStep(context.Background(), tinker.DefaultAdam(1e-5)); !errors.Is(err, tinker.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	ts.CloseClientConnections()
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
