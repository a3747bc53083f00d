package openaichat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/policy"
)

func TestChat(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"<think>a</think><answer>Up</answer>"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	m := New(srv.URL+"/v1", "", "m")
	reply, err := m.Chat(context.Background(), []policy.Message{{Role: "user", Content: "hi"}}, policy.Sampling{Temperature: 0, TopP: 1, MaxTokens: 16, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if reply != "<think>a</think><answer>Up</answer>" {
		t.Errorf("reply %q", reply)
	}
	if got["model"] != "m" || got["max_completion_tokens"] != 16.0 || got["seed"] != 3.0 {
		t.Errorf("request %v", got)
	}
	if temp, ok := got["temperature"].(float64); !ok || temp <= 0 || temp > 1e-5 {
		t.Errorf("greedy decoding sent temperature %v; want a tiny positive value", got["temperature"])
	}
}

func TestChatErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), "empty") {
			w.Write([]byte(`{"id":"x","choices":[]}`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"bad temperature","type":"invalid_request_error"}}`))
	}))
	defer srv.Close()
	if _, err := New(srv.URL+"/v1", "", "m").Chat(context.Background(), nil, policy.Sampling{}); err == nil || !strings.Contains(err.Error(), "bad temperature") {
		t.Errorf("err = %v, want the server's message", err)
	}
	if _, err := New(srv.URL+"/v1", "empty", "m").Chat(context.Background(), nil, policy.Sampling{}); err == nil || !strings.Contains(err.Error(), "no choices") {
		t.Errorf("err = %v, want no choices", err)
	}
}
