package vllm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// RenderChat implements policy.Policy with the server's chat template
// (POST /tokenize, chat form).
func (c *Client) RenderChat(ctx context.Context, messages []policy.Message, addGenerationPrompt bool) ([]int, error) {
	return c.renderChat(ctx, c.Model(), messages, nil, addGenerationPrompt)
}

// RenderChatTools implements policy.ToolRenderer with the server's chat
// template, the tools sent as /tokenize's tools.
func (c *Client) RenderChatTools(ctx context.Context, messages []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error) {
	return c.renderChat(ctx, c.Model(), messages, tools, addGenerationPrompt)
}

// ToolCallFormat implements policy.ToolRenderer: Options.ToolCallFormat
// (the server's API does not say which parser its model needs).
func (c *Client) ToolCallFormat() string { return c.opts.ToolCallFormat }

func (c *Client) renderChat(ctx context.Context, model string, messages []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error) {
	if messages == nil {
		messages = []policy.Message{}
	}
	data, err := c.post(ctx, nil, "/tokenize", tokenizeChatRequest{
		Model:               model,
		Messages:            messages,
		Tools:               toolcall.APITools(tools),
		AddGenerationPrompt: addGenerationPrompt,
	})
	if err != nil {
		return nil, err
	}
	ids, _, err := parseTokenize(data)
	return ids, err
}

// Encode implements policy.Policy (POST /tokenize, text form, without
// special tokens).
func (c *Client) Encode(ctx context.Context, text string) ([]int, error) {
	ids, _, err := c.tokenizeText(ctx, c.Model(), text)
	return ids, err
}

func (c *Client) tokenizeText(ctx context.Context, model, text string) ([]int, int, error) {
	data, err := c.post(ctx, nil, "/tokenize", tokenizeTextRequest{Model: model, Prompt: text})
	if err != nil {
		return nil, 0, err
	}
	return parseTokenize(data)
}

func parseTokenize(data []byte) ([]int, int, error) {
	var r tokenizeResponse
	if err := decode("/tokenize", data, &r); err != nil {
		return nil, 0, err
	}
	if r.Tokens == nil {
		return nil, 0, malformed("/tokenize: no tokens")
	}
	if r.Count != nil && *r.Count != len(r.Tokens) {
		return nil, 0, malformed("/tokenize: count %d for %d tokens", *r.Count, len(r.Tokens))
	}
	return r.Tokens, r.MaxModelLen, nil
}

// Decode implements policy.Policy (POST /detokenize). Special tokens are
// kept.
func (c *Client) Decode(ctx context.Context, ids []int) (string, error) {
	return c.decodeIDs(ctx, c.Model(), ids)
}

func (c *Client) decodeIDs(ctx context.Context, model string, ids []int) (string, error) {
	if ids == nil {
		ids = []int{}
	}
	data, err := c.post(ctx, nil, "/detokenize", detokenizeRequest{Model: model, Tokens: ids})
	if err != nil {
		return "", err
	}
	var r detokenizeResponse
	if err := decode("/detokenize", data, &r); err != nil {
		return "", err
	}
	if r.Prompt == nil {
		return "", malformed("/detokenize: no prompt")
	}
	return *r.Prompt, nil
}

// LoadLoRA loads the PEFT adapter at path (a path the servers can read)
// under name on every server (POST /v1/load_lora_adapter). The servers need
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora. Use a fresh name
// per policy version, then SetModel(name).
func (c *Client) LoadLoRA(ctx context.Context, name, path string) error {
	if name == "" || path == "" {
		return fmt.Errorf("vllm: LoadLoRA needs a name and a path, got %q and %q", name, path)
	}
	return c.everyServer(ctx, "/v1/load_lora_adapter", loadLoRARequest{Name: name, Path: path})
}

// EnsureLoRA loads the PEFT adapter at path under name on every server
// that does not hold it: a server that answers that it has already loaded
// the name counts as done. It restores an adapter after a server restarted
// (a restarted server holds no adapters) without disturbing the others.
func (c *Client) EnsureLoRA(ctx context.Context, name, path string) error {
	if name == "" || path == "" {
		return fmt.Errorf("vllm: EnsureLoRA needs a name and a path, got %q and %q", name, path)
	}
	errs := c.eachServer(ctx, "/v1/load_lora_adapter", loadLoRARequest{Name: name, Path: path})
	for i, err := range errs {
		var he *HTTPError
		if errors.As(err, &he) && he.StatusCode == http.StatusBadRequest && strings.Contains(he.Message, "already been loaded") {
			errs[i] = nil
		}
	}
	return errors.Join(errs...)
}

// IsModelMissing reports whether err is a server's answer that the model a
// request named does not exist: on a server that restarted, the LoRA
// adapter it no longer holds.
func IsModelMissing(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.StatusCode == http.StatusNotFound && strings.Contains(he.Message, "does not exist")
}

// UnloadLoRA removes the adapter name from every server
// (POST /v1/unload_lora_adapter). Unload an adapter only once no request
// uses it.
func (c *Client) UnloadLoRA(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("vllm: UnloadLoRA needs a name")
	}
	return c.everyServer(ctx, "/v1/unload_lora_adapter", unloadLoRARequest{Name: name})
}

// everyServer posts in to path on every server at once; the error joins the
// failures, each naming its server.
func (c *Client) everyServer(ctx context.Context, path string, in any) error {
	return errors.Join(c.eachServer(ctx, path, in)...)
}

// eachServer posts in to path on every server at once and returns each
// server's error, in the order of Options.BaseURLs.
func (c *Client) eachServer(ctx context.Context, path string, in any) []error {
	errs := make([]error, len(c.bal.eps))
	done := make(chan struct{})
	for i, ep := range c.bal.eps {
		go func() {
			defer func() { done <- struct{}{} }()
			_, errs[i] = c.post(ctx, ep, path, in)
		}()
	}
	for range c.bal.eps {
		<-done
	}
	return errs
}
