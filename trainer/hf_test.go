package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
)

// TestEvalAndServeHFDir: eval and serve take a Hugging Face model directory
// wherever they take a checkpoint.
func TestEvalAndServeHFDir(t *testing.T) {
	d, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{BF16: true, GenerationEOS: "<|endoftext|>"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, "fl.yaml", "env:\n  name: frozenlake\nrollout:\n  max_turns: 2\n  sampling:\n    max_tokens: 12\n")
	code, out, errOut := runCLI(t, "", "eval", "-config", cfg, "-checkpoint", d.Path, "-episodes", "4")
	if code != 0 {
		t.Fatalf("eval -checkpoint HF dir: exit %d: %s", code, errOut)
	}
	if m := evalLine.FindStringSubmatch(out); m == nil || m[1] != "4" || m[7] != "0" {
		t.Fatalf("unexpected summary %q", out)
	}

	rs := startServe(t, d.Path)
	var reply struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			Logprobs struct {
				Content []struct {
					Logprob float64 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	rs.postJSON(t, "/v1/chat/completions", `{"model": "qwen2-tiny", "messages": [{"role": "user", "content": "Hello there"}],
		"max_tokens": 6, "seed": 4, "logprobs": true}`, &reply)
	p, err := local.LoadCheckpoint(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := p.RenderChat(context.Background(), []policy.Message{{Role: policy.RoleUser, Content: "Hello there"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Model != "qwen2-tiny" || len(reply.Choices) != 1 || reply.Choices[0].Message.Role != "assistant" ||
		reply.Usage.PromptTokens != len(prompt) || reply.Usage.CompletionTokens == 0 ||
		len(reply.Choices[0].Logprobs.Content) != reply.Usage.CompletionTokens {
		t.Fatalf("chat completion %+v, prompt of %d tokens", reply, len(prompt))
	}
	// A text prompt gets what Qwen's post-processor adds (nothing), not a
	// rendering of the chat template, which cannot render no messages.
	var completion struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	rs.postJSON(t, "/v1/completions", `{"model": "qwen2-tiny", "prompt": "Hello there", "max_tokens": 3}`, &completion)
	if ids, _ := p.Encode(context.Background(), "Hello there"); completion.Usage.PromptTokens != len(ids) {
		t.Errorf("text prompt of %d tokens, want %d", completion.Usage.PromptTokens, len(ids))
	}
	rs.stop(t)
}
