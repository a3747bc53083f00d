package openaiapi_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// Serve a policy over the OpenAI API and ask it a question with a plain
// HTTP request. Any OpenAI client works the same way, with the server's
// /v1 URL as its base URL.
func ExampleNew() {
	// A scripted policy stands in for a model here: it answers from the
	// rendered prompt. model/local's policies serve the same way.
	p := &policytest.Scripted{Reply: func(prompt string, _ uint64) string {
		if strings.Contains(prompt, "2+2") {
			return "4"
		}
		return "I don't know."
	}}
	srv := openaiapi.New(p, openaiapi.Options{Model: "scripted", APIKey: "secret"})
	defer srv.Close()
	ts := httptest.NewServer(srv) // or http.ListenAndServe(addr, srv)
	defer ts.Close()

	body := `{"model": "scripted", "messages": [{"role": "user", "content": "What is 2+2?"}], "max_tokens": 16}`
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var reply struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status)
	fmt.Println(reply.Choices[0].Message.Content, reply.Choices[0].FinishReason)
	// Output:
	// 200 OK
	// 4 stop
}
