package openaiapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// TestRoutes checks the routing answers: the API key on /v1 only, 404 and
// 405 in the OpenAI error envelope (405 with Allow, before the key check),
// HEAD on GET routes, and model ids with slashes.
func TestRoutes(t *testing.T) {
	p := &policytest.Scripted{Reply: func(string, uint64) string { return "ok" }}
	s := openaiapi.New(p, openaiapi.Options{Model: "org/model", APIKey: "k", Logger: quietLogger()})
	defer s.Close()
	key := "Bearer k"
	cases := []struct {
		method, path, auth, body string
		status                   int
		allow                    string
	}{
		{"GET", "/health", "", "", 200, ""},
		{"HEAD", "/health", "", "", 200, ""},
		{"POST", "/health", "", "{}", 405, "GET"},
		{"POST", "/tokenize", "", `{"prompt": "hi"}`, 200, ""},
		{"GET", "/tokenize", "", "", 405, "POST"},
		{"GET", "/v1/models", "", "", 401, ""},
		{"GET", "/v1/models", key, "", 200, ""},
		{"HEAD", "/v1/models", key, "", 200, ""},
		{"POST", "/v1/models", "", "{}", 405, "GET"},
		{"GET", "/v1/models/org/model", key, "", 200, ""},
		{"GET", "/v1/models/org/other", key, "", 404, ""},
		{"GET", "/v1/models/", key, "", 404, ""},
		{"DELETE", "/v1/models/org/model", key, "", 405, "GET"},
		{"GET", "/v1/completions", "", "", 405, "POST"},
		{"PUT", "/v1/chat/completions", key, "{}", 405, "POST"},
		{"POST", "/v1/chat/completions", "", "{}", 401, ""},
		{"POST", "/v1/load_lora_adapter", key, `{"lora_name": "a", "lora_path": "a"}`, 404, ""},
		{"POST", "/v1/embeddings", "", "{}", 404, ""},
		{"GET", "/", "", "", 404, ""},
		{"GET", "/v1", key, "", 404, ""},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		name := c.method + " " + c.path
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d: %s", name, rec.Code, c.status, rec.Body)
			continue
		}
		if got := rec.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s: Allow %q, want %q", name, got, c.allow)
		}
		if rec.Header().Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", name)
		}
		if c.status < 400 {
			continue
		}
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code != c.status {
			t.Errorf("%s: error body %s (%v)", name, rec.Body, err)
		}
	}
}
