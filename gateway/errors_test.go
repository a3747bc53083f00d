package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/gateway"
)

func do(t *testing.T, method, url, header, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(gateway.EpisodeHeader, header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

const chatBody = `{"model":"scripted","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`

// TestProtocolErrors checks the answers to misuse: clear statuses and
// messages, never a recorded or scored episode by mistake.
func TestProtocolErrors(t *testing.T) {
	pol := calculatorPolicy(t)
	g := gateway.New(pol, gateway.Options{MaxRequests: 2, Logger: quiet()})
	srv := httptest.NewServer(g)
	defer srv.Close()
	defer g.Close()

	// No step open: a claim waits, then 204.
	if st, _ := do(t, "POST", srv.URL+"/v1/episodes/claim?wait=0.05", "", ""); st != http.StatusNoContent {
		t.Errorf("claim with no tasks: %d, want 204", st)
	}
	if st, _ := do(t, "POST", srv.URL+"/v1/episodes/claim?wait=-1", "", ""); st != http.StatusBadRequest {
		t.Errorf("claim with a bad wait: %d, want 400", st)
	}
	if err := g.Open(1, nil, 2); err == nil {
		t.Error("Open with no tasks: no error")
	}
	if err := g.Open(1, tasks(1), 2); err != nil {
		t.Fatal(err)
	}
	// An untagged request is served, not recorded.
	if st, body := do(t, "POST", srv.URL+"/v1/chat/completions", "", chatBody); st != http.StatusOK {
		t.Fatalf("untagged request: %d %s", st, body)
	}
	// A request for an episode not claimed yet, or unknown, is refused.
	for _, id := range []string{"s1-t0-e0", "nope"} {
		if st, body := do(t, "POST", srv.URL+"/v1/chat/completions", id, chatBody); st != http.StatusBadRequest || !strings.Contains(body, id) {
			t.Errorf("request for %s: %d %s, want 400 naming it", id, st, body)
		}
	}
	_, body := do(t, "POST", srv.URL+"/v1/episodes/claim", "", "")
	var c struct{ Episode string }
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Episode != "s1-t0-e0" {
		t.Fatalf("claim: %s (%v)", body, err)
	}
	ep := srv.URL + "/v1/episodes/" + c.Episode
	// Reward before any model request: dropped, not scored.
	for _, b := range []string{`{}`, `{"reward": "x"}`, `not json`} {
		if st, _ := do(t, "POST", ep+"/reward", "", b); st != http.StatusBadRequest {
			t.Errorf("reward %s: %d, want 400", b, st)
		}
	}
	if st, _ := do(t, "POST", ep+"/answer", "", `{"answer":"1"}`); st != http.StatusNotFound {
		t.Errorf("answer without a verifier: %d, want 404", st)
	}
	if st, body := do(t, "POST", ep+"/reward", "", `{"reward": 1}`); st != http.StatusConflict || !strings.Contains(body, "dropped") {
		t.Errorf("reward with no model request: %d %s, want 409 dropped", st, body)
	}
	if st, _ := do(t, "POST", ep+"/reward", "", `{"reward": 1}`); st != http.StatusConflict {
		t.Errorf("second report: %d, want 409", st)
	}
	// n > 1 for one episode is refused (one sequence per request).
	_, body = do(t, "POST", srv.URL+"/v1/episodes/claim", "", "")
	if err := json.Unmarshal([]byte(body), &c); err != nil || c.Episode != "s1-t0-e1" {
		t.Fatalf("claim: %s (%v)", body, err)
	}
	nBody := strings.Replace(chatBody, `"max_tokens":8`, `"max_tokens":8,"n":2`, 1)
	if st, body := do(t, "POST", srv.URL+"/v1/chat/completions", c.Episode, nBody); st != http.StatusBadRequest || !strings.Contains(body, "one at a time") {
		t.Errorf("n=2 for one episode: %d %s", st, body)
	}
	// The deadline: two requests, the third refused and the episode dropped.
	for i, want := range []int{200, 200, 400} {
		if st, body := do(t, "POST", srv.URL+"/v1/chat/completions", c.Episode, chatBody); st != want {
			t.Errorf("request %d: %d %s, want %d", i, st, body, want)
		}
	}
	if st, _ := do(t, "POST", srv.URL+"/v1/episodes/"+c.Episode+"/reward", "", `{"reward": 1}`); st != http.StatusConflict {
		t.Errorf("reward after the deadline: %d, want 409", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := g.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != 2 || len(st.Trajectories) != 0 {
		t.Errorf("dropped %d, scored %d; want 2 and 0 (%v)", st.Dropped, len(st.Trajectories), st.Reasons)
	}
	if s := g.Stats(); s.Untagged != 1 || s.Scored != 0 || s.Dropped != 2 {
		t.Errorf("stats %+v", s)
	}
	// Once the step is closed its episodes are unknown.
	if st, _ := do(t, "POST", ep+"/reward", "", `{"reward": 1}`); st != http.StatusNotFound {
		t.Errorf("reward after the step: %d, want 404", st)
	}
	g.Close()
	if st, _ := do(t, "POST", srv.URL+"/v1/episodes/claim?wait=1", "", ""); st != http.StatusGone {
		t.Errorf("claim after Close: %d, want 410", st)
	}
}

// TestParseConfig reads the gateway section beside the trainer's.
func TestParseConfig(t *testing.T) {
	cfg, gc, err := gateway.ParseConfig([]byte(tinyGatewayConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	if gc.Listen != "127.0.0.1:0" || gc.MaxRequests != 4 || gc.StepTimeout != time.Minute || cfg.Env.Name != "countdown" {
		t.Errorf("got %+v, env %q", gc, cfg.Env.Name)
	}
	data, err := os.ReadFile("../configs/gateway/countdown.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, gc, err := gateway.ParseConfig(data, nil); err != nil || gc.Listen != "127.0.0.1:8400" || gc.MaxRequests != 8 || cfg.Env.Name != "countdown" {
		t.Errorf("the shipped config: %+v, env %q, %v", gc, cfg.Env.Name, err)
	}
	if _, _, err := gateway.ParseConfig([]byte(tinyGatewayConfig+"  bogus: 1\n"), nil); err == nil {
		t.Error("an unknown gateway key: no error")
	}
	if _, _, err := gateway.ParseConfig([]byte("gateway: [1]\n"), nil); err == nil {
		t.Error("a malformed gateway section: no error")
	}
}

// TestUpdateHoldsRequests checks the hot swap: a request made while the
// weights change waits for the change.
func TestUpdateHoldsRequests(t *testing.T) {
	g := gateway.New(calculatorPolicy(t), gateway.Options{Logger: quiet()})
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()
	done := make(chan int, 1)
	var swapped atomicBool
	err := g.Update(func() error {
		go func() {
			// Not do: t.Fatal belongs to the test's goroutine.
			st := 0
			if resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody)); err == nil {
				st = resp.StatusCode
				resp.Body.Close()
			}
			if !swapped.get() {
				st = -1
			}
			done <- st
		}()
		select {
		case st := <-done:
			t.Errorf("a request finished during the update (%d)", st)
		case <-time.After(300 * time.Millisecond):
		}
		swapped.set()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := <-done; st != http.StatusOK {
		t.Errorf("the request held during the update: %d, want 200 after it", st)
	}
}

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (b *atomicBool) get() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.v }
func (b *atomicBool) set()      { b.mu.Lock(); b.v = true; b.mu.Unlock() }
