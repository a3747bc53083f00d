package tinkerapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	wire "github.com/agentrl/agentrl/client/tinker"
)

// TestRouting checks the routing answers: 404 and 405 in the {"detail":
// ...} body (405 with Allow, before the key check), the key on every route
// but healthz, HEAD on GET routes, and 503 once closed.
func TestRouting(t *testing.T) {
	s, err := New(tinyPolicy(t), Options{Dir: t.TempDir(), APIKey: "k", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	serve := func(method, path string, key bool, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if key {
			req.Header.Set("X-API-Key", "k")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	api := wire.APIPrefix + "/"
	cases := []struct {
		method, path string
		key          bool
		status       int
		allow        string
	}{
		{"GET", api + "healthz", false, 200, ""},
		{"HEAD", api + "healthz", false, 200, ""},
		{"POST", api + "healthz", false, 405, "GET"},
		{"GET", api + "get_server_capabilities", false, 401, ""},
		{"GET", api + "get_server_capabilities", true, 200, ""},
		{"GET", api + "create_session", false, 405, "POST"},
		{"POST", api + "create_session", false, 401, ""},
		{"POST", api + "client/config", true, 200, ""},
		{"GET", api + "samplers/sampling_nope", true, 404, ""},
		{"GET", api + "samplers/sampling_nope", false, 401, ""},
		{"POST", api + "samplers/sampling_nope", false, 405, "GET"},
		{"GET", api + "samplers/", true, 404, ""},
		{"GET", api + "samplers/a/b", true, 404, ""},
		{"POST", api + "nope", true, 404, ""},
		{"GET", wire.APIPrefix, true, 404, ""},
		{"GET", "/v1/models", true, 404, ""},
	}
	for _, c := range cases {
		rec := serve(c.method, c.path, c.key, "{}")
		name := c.method + " " + c.path
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d: %s", name, rec.Code, c.status, rec.Body)
			continue
		}
		if got := rec.Header().Get("Allow"); got != c.allow {
			t.Errorf("%s: Allow %q, want %q", name, got, c.allow)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		var e wire.ErrorBody
		if c.status >= 400 && (json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Detail == "") {
			t.Errorf("%s: error body %s", name, rec.Body)
		}
	}
	s.Close()
	if rec := serve(http.MethodGet, api+"healthz", false, ""); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("healthz once closed: %d %s", rec.Code, rec.Body)
	}
}
