package vllm_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/client/vllm/vllmtest"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
)

// Example samples a reply over HTTP, token ids in and out, and scores it
// back. A vllmtest server stands in for vLLM; in production BaseURLs point
// at `vllm serve` instances.
func Example() {
	model := &policytest.Scripted{Reply: func(prompt string, seed uint64) string { return "<answer>Right</answer>" }}
	srv := httptest.NewServer(vllmtest.New(model))
	defer srv.Close()

	ctx := context.Background()
	c, err := vllm.New(ctx, vllm.Options{
		BaseURLs: []string{srv.URL + "/v1"},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	info := c.Info()
	fmt.Println(info.Name, info.MaxContext)

	// The server's chat template renders the prompt.
	prompt, err := c.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: "Where now?"}}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	samples, err := c.Sample(ctx, []policy.Request{{
		Prompt:   prompt,
		Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 64, Seed: 42},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := samples[0]
	if s.Err != nil {
		fmt.Println(s.Err)
		return
	}
	text, _ := c.Decode(ctx, s.Tokens)
	fmt.Printf("%q %s, %d tokens\n", text, s.Finish, len(s.Tokens))

	// Teacher forcing reproduces the sampled log-probs.
	scores, err := c.Score(ctx, []policy.ScoreRequest{{Prompt: prompt, Continuation: s.Tokens}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(slices.Equal(scores[0], s.LogProbs))
	// Output:
	// test-model 4096
	// "<answer>Right</answer><|end|>" stop, 8 tokens
	// true
}
