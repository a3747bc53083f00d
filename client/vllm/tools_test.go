package vllm_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/toolcall"
)

// TestRenderChatTools: tools and tool-call messages travel through
// /tokenize in the OpenAI shape and render as the served template renders
// them; the format is the configured one.
func TestRenderChatTools(t *testing.T) {
	p := &policytest.Scripted{Reply: func(string, uint64) string { return "" }, ToolFormat: "hermes"}
	ts, _ := fake(t, p, nil)
	opts := quiet(ts.URL)
	opts.ToolCallFormat = "hermes"
	c := connect(t, opts)
	if c.ToolCallFormat() != "hermes" {
		t.Errorf("ToolCallFormat = %q", c.ToolCallFormat())
	}
	var _ policy.ToolRenderer = c
	tools := []policy.Tool{{Name: "search", Description: "Search.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}
	msgs := []policy.Message{
		{Role: policy.RoleUser, Content: "find x"},
		{Role: policy.RoleAssistant, Content: "Looking.", ToolCalls: []policy.ToolCall{{ID: "c1", Call: toolcall.Call{Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}}}},
		{Role: policy.RoleTool, ToolCallID: "c1", Content: "x is 4"},
	}
	ctx := context.Background()
	got, err := c.RenderChatTools(ctx, msgs, tools, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.RenderChatTools(ctx, msgs, tools, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		a, _ := p.Decode(ctx, got)
		b, _ := p.Decode(ctx, want)
		t.Fatalf("served rendering\n%s\nwant\n%s", a, b)
	}
	text, _ := p.Decode(ctx, got)
	for _, w := range []string{`"name":"search"`, "Looking.\n<tool_call>", "<tool_response>\nx is 4\n</tool_response>"} {
		if !strings.Contains(text, w) {
			t.Errorf("rendering lacks %q:\n%s", w, text)
		}
	}
	opts.ToolCallFormat = "xml"
	if _, err := vllmNew(opts); err == nil || !strings.Contains(err.Error(), "ToolCallFormat") {
		t.Errorf("an unknown format was accepted: %v", err)
	}
}

func vllmNew(opts vllm.Options) (*vllm.Client, error) {
	return vllm.New(context.Background(), opts)
}
