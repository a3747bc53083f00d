package chattemplate

import (
	"strings"
	"testing"
)

// FuzzTemplate parses arbitrary templates and renders those that parse
// with a small conversation: nothing may panic (an "internal error" is a
// recovered panic) and errors must be *Error values.
func FuzzTemplate(f *testing.F) {
	for _, c := range constructCases {
		f.Add(c.src)
	}
	for _, s := range []string{
		"{%- for m in messages[::-1] %}{{ m.content.split('</think>')[-1].lstrip('\\n') }}{% endfor %}",
		"{% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{{ ns.a|tojson(indent=2) }}",
		"{{ x }", "{% if %}", "{#", "{{ '\\", "{% raw %}", "{%- generation -%}x{% endgeneration %}",
		"{{ a(b=1, *c, **d) }}", "{{ x[1:2:3] }}", "{{ 1 if 2 }}", "{% macro m(a=1) %}{{ caller() }}{% endmacro %}{% call m() %}x{% endcall %}",
	} {
		f.Add(s)
	}
	ctx := Context{
		Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}, {Role: "assistant", Content: "<think>r</think>a", ToolCalls: []ToolCall{{Name: "f", Arguments: Object{{"k", 1}}}}}, {Role: "tool", Content: "t"}},
		Tools:    []any{Object{{"name", "f"}}},
		Vars:     map[string]any{"n": 3, "l": []any{1, "a", nil, 2.5}},
	}
	f.Fuzz(func(t *testing.T, src string) {
		old := maxSteps
		maxSteps = 20_000
		defer func() { maxSteps = old }()
		tmpl, err := Parse(src)
		if err != nil {
			checkError(t, src, err)
			return
		}
		if _, err := tmpl.Render(ctx); err != nil {
			checkError(t, src, err)
		}
	})
}

func checkError(t *testing.T, src string, err error) {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("%q: error %T %v is not an *Error", src, err, err)
	}
	if strings.Contains(e.Message, "internal error") {
		t.Fatalf("%q: %v", src, err)
	}
}
