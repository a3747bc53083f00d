package policy

import (
	"encoding/json"
	"testing"

	"github.com/agentrl/agentrl/text/toolcall"
)

// TestMessageJSON: a message with tool calls has the OpenAI API's shape,
// and both spellings of the arguments read back.
func TestMessageJSON(t *testing.T) {
	m := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Call: toolcall.Call{Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)}}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"query\":\"x\"}"}}]}`
	if string(b) != want {
		t.Fatalf("Marshal = %s\nwant      %s", b, want)
	}
	for _, in := range []string{want, `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"search","arguments":{"query":"x"}}}]}`} {
		var back Message
		if err := json.Unmarshal([]byte(in), &back); err != nil {
			t.Fatal(err)
		}
		if len(back.ToolCalls) != 1 || back.ToolCalls[0].ID != "c1" || back.ToolCalls[0].Name != "search" || string(back.ToolCalls[0].Arguments) != `{"query":"x"}` {
			t.Errorf("Unmarshal(%s) = %+v", in, back)
		}
	}
	var bad Message
	if err := json.Unmarshal([]byte(`{"role":"assistant","tool_calls":[{"type":"retrieval","function":{"name":"x"}}]}`), &bad); err == nil {
		t.Error("a tool call of type retrieval was accepted")
	}
}
