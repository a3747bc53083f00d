package openaiapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentrl/agentrl/server/openaiapi"
)

// FuzzRequests posts arbitrary bodies to the completion, chat and
// tokenizer routes: no body may panic the server or make it answer 500,
// and no reply may outgrow what the request budgets allow (128 bytes per
// token or log-prob, with room for an echoed prompt).
func FuzzRequests(f *testing.F) {
	const budget = 1024
	s := openaiapi.New(tiny(f), openaiapi.Options{Logger: quietLogger(), MaxN: 4, MaxRequestTokens: budget, MaxRequestLogprobs: budget})
	f.Cleanup(func() { s.Close() })
	paths := []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}
	for i, seed := range []string{
		`{"prompt":"hello","max_tokens":4,"logprobs":2,"echo":true,"prompt_logprobs":1}`,
		`{"prompt":[[1,2,3],[4,5]],"max_tokens":2,"n":2,"stop":["a"],"return_token_ids":true}`,
		`{"prompt":[104,105],"max_tokens":0,"echo":true,"logprobs":20}`,
		`{"prompt":["a","b"],"max_tokens":1000000000000,"n":-1,"logprobs":1e3}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"logprobs":true,"top_logprobs":5}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_completion_tokens":null,"stream":true}`,
		`{"prompt":"hi","stream":true,"stream_options":{"include_usage":true},"max_tokens":2}`,
		`{"messages":[],"n":1e400}`,
		`{"tokens":[1,2,99999999999]}`,
		`{"prompt":[[]],"seed":-1,"temperature":"x"}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":60,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"integer","minimum":-3,"maximum":9}},"required":["a"]}}}],"tool_choice":"required"}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":50,"stream":true,"tools":[{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}],"max_tokens":4}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":30,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"enum":[1,"a",null]}}}}`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := paths[int(route)%len(paths)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body)
		}
		if n, bound := rec.Body.Len(), 128*2*budget+8*len(body)+64<<10; n > bound {
			t.Fatalf("%s %q: a reply of %d bytes (bound %d)", path, body, n, bound)
		}
	})
}
