package openaiapi_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/server/openaiapi"
)

// idPrompts returns n token-id prompts of length l.
func idPrompts(n, l int) [][]int {
	out := make([][]int, n)
	for i := range out {
		out[i] = make([]int, l)
		for j := range out[i] {
			out[i][j] = 'a' + (i+j)%26
		}
	}
	return out
}

// TestLogprobBudget scales down the request that once asked a server for
// a 496 MB reply from a body of under 1 MiB: many prompts, echoed, with
// logprobs and prompt_logprobs 20. At the default budget it must be a 400
// that names what asks for the log-probs, before any work.
func TestLogprobBudget(t *testing.T) {
	p := &counting{Policy: tiny(t)}
	ts, _ := start(t, p, openaiapi.Options{})
	body := map[string]any{"prompt": idPrompts(16, 400), "max_tokens": 1, "echo": true, "logprobs": 20, "prompt_logprobs": 20}
	status, out := post(t, ts.URL, "/v1/completions", body)
	e, _ := out["error"].(map[string]any)
	if msg := fmt.Sprint(e["message"]); status != http.StatusBadRequest || e["param"] != "logprobs" || !strings.Contains(msg, "prompt_logprobs") || !strings.Contains(msg, "log-probabilities") {
		t.Fatalf("status %d, error %v", status, e)
	}
	if n := p.calls.Load(); n != 0 {
		t.Fatalf("%d Sample calls for a refused request", n)
	}
	// Within the budget, the same kind of request is served.
	body["prompt"] = idPrompts(2, 40)
	if status, out := post(t, ts.URL, "/v1/completions", body); status != http.StatusOK {
		t.Fatalf("status %d: %v", status, out)
	}
}

// TestRequestBudgets checks both budgets, set by Options, on both routes,
// and the parameter each refusal names.
func TestRequestBudgets(t *testing.T) {
	ts, _ := start(t, tiny(t), openaiapi.Options{MaxRequestTokens: 500, MaxRequestLogprobs: 300})
	for _, tc := range []struct {
		path  string
		body  map[string]any
		param string
	}{
		{"/v1/completions", map[string]any{"prompt": idPrompts(1, 10), "max_tokens": 200, "n": 4}, "max_tokens"},
		{"/v1/completions", map[string]any{"prompt": idPrompts(1, 10), "max_tokens": 20, "logprobs": 20}, "logprobs"},
		{"/v1/completions", map[string]any{"prompt": idPrompts(2, 10), "max_tokens": 1, "prompt_logprobs": 20}, "prompt_logprobs"},
		{"/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 200, "n": 4}, "max_tokens"},
		{"/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_completion_tokens": 200, "n": 4}, "max_completion_tokens"},
		{"/v1/chat/completions", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "max_tokens": 20, "logprobs": true, "top_logprobs": 20}, "top_logprobs"},
	} {
		status, out := post(t, ts.URL, tc.path, tc.body)
		e, _ := out["error"].(map[string]any)
		if status != http.StatusBadRequest || e["param"] != tc.param {
			t.Errorf("%s %v: status %d, error %v; want 400 naming %s", tc.path, tc.body, status, e, tc.param)
		}
	}
	if status, out := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": idPrompts(1, 10), "max_tokens": 10, "logprobs": 5}); status != http.StatusOK {
		t.Fatalf("a request within the budgets: %d %v", status, out)
	}
}

// TestAdapterCap checks MaxAdapters: a new name past the cap is refused
// before the adapter is loaded; replacing one in place, or loading after
// an unload, is not.
func TestAdapterCap(t *testing.T) {
	b := nativeBase(t)
	root := t.TempDir()
	for i := range 3 {
		writeAdapter(t, b, filepath.Join(root, fmt.Sprint("a", i)), uint64(i+1), loraCfg)
	}
	loads := 0
	url, _ := loraServer(t, b, root, openaiapi.Options{MaxAdapters: 2})
	for i := range 2 {
		if st, body := postText(t, url, "/v1/load_lora_adapter", loadBody(fmt.Sprint("a", i), fmt.Sprint("a", i), false)); st != http.StatusOK {
			t.Fatalf("load a%d: %d %s", i, st, body)
		}
		loads++
	}
	st, body := postText(t, url, "/v1/load_lora_adapter", loadBody("a2", "a2", false))
	if st != http.StatusBadRequest || !strings.Contains(errMessage(t, st, body), "limit") {
		t.Fatalf("a third adapter: %d %s", st, body)
	}
	if st, body := postText(t, url, "/v1/load_lora_adapter", loadBody("a1", "a2", true)); st != http.StatusOK {
		t.Fatalf("replacing in place: %d %s", st, body)
	}
	if st, body := postText(t, url, "/v1/unload_lora_adapter", `{"lora_name":"a0"}`); st != http.StatusOK {
		t.Fatalf("unload: %d %s", st, body)
	}
	if st, body := postText(t, url, "/v1/load_lora_adapter", loadBody("a2", "a2", false)); st != http.StatusOK {
		t.Fatalf("loading after an unload: %d %s", st, body)
	}
}
