package toolcall

import (
	"encoding/json"
	"strings"
)

// Describe writes the system-prompt text that offers tools to a model
// whose chat template has no tools of its own (the embedded model's, Gemma
// 3's): one line per tool with its name, description and argument schema,
// and how to call one in the compact format. The text depends only on the
// tools, so prompts built with it are reproducible.
func Describe(tools []Tool) string {
	var b strings.Builder
	b.WriteString("Tools you can call, one per line as name: description; arguments schema:\n")
	for _, t := range tools {
		b.WriteString(t.Name)
		if t.Description != "" {
			b.WriteString(": " + t.Description)
		}
		if len(t.Parameters) > 0 {
			b.WriteString("; arguments ")
			b.Write(compactJSON(t.Parameters))
		}
		b.WriteByte('\n')
	}
	example := Call{Name: "name", Arguments: json.RawMessage(`{"argument":"value"}`)}
	if len(tools) > 0 {
		example.Name = tools[0].Name
	}
	b.WriteString("Call a tool by writing " + compact{}.Format([]Call{example}) + ".")
	return b.String()
}
