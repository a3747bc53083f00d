// Package openaichat evaluates agents against any OpenAI-compatible chat
// endpoint through the go-openai client. It implements rollout.ChatModel:
// text in, text out, with no token ids or log-probs, which is enough to
// measure a model but not to train it (use client/vllm for that).
package openaichat

import (
	"context"
	"errors"
	"fmt"
	"math"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentrl/agentrl/policy"
)

// Model is a chat model behind an OpenAI-compatible endpoint.
type Model struct {
	client *openai.Client
	name   string
}

// New returns a Model for the named model at baseURL (for example
// "http://127.0.0.1:8000/v1"). apiKey may be empty for local servers.
func New(baseURL, apiKey, model string) *Model {
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = baseURL
	return &Model{client: openai.NewClientWithConfig(cfg), name: model}
}

// minTemperature stands in for greedy decoding: go-openai omits a zero
// temperature from the request, and the server would then apply its own
// default instead.
const minTemperature = 1e-6

// Chat returns the first choice's reply.
func (m *Model) Chat(ctx context.Context, messages []policy.Message, sp policy.Sampling) (string, error) {
	req := openai.ChatCompletionRequest{
		Model:               m.name,
		MaxCompletionTokens: sp.MaxTokens,
		Temperature:         float32(math.Max(sp.Temperature, minTemperature)),
		TopP:                float32(sp.TopP),
	}
	seed := int(sp.Seed & math.MaxInt32)
	req.Seed = &seed
	for _, msg := range messages {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content})
	}
	resp, err := m.client.CreateChatCompletion(ctx, req)
	if err != nil {
		return "", fmt.Errorf("chat completion: %w", err)
	}
	if len(resp.Choices) == 0 {
		return "", errors.New("chat completion: no choices in the reply")
	}
	return resp.Choices[0].Message.Content, nil
}
