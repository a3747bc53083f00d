package chattemplate

import (
	"runtime"
	"strings"
	"testing"
)

// fuzzLimits are the limits of the fuzzed renderings: small, so that a
// template that escapes them shows.
var fuzzLimits = Limits{Alloc: 1 << 20, Output: 1 << 20, Work: 2_000_000}

// maxFuzzAlloc bounds what a fuzzed rendering may allocate in all: its
// values (with the growth of the buffers that build strings), its output
// (its buffer doubling), and the small allocations of each of its
// at most 20000 steps (scopes, arguments, call frames).
const maxFuzzAlloc = 2*(1<<20) + 4*(1<<20) + 20_000*1024 + 4<<20

// FuzzTemplate parses arbitrary templates and renders those that parse
// with a small conversation: nothing may panic (an "internal error" is a
// recovered panic), errors must be *Error values, and a rendering must
// allocate no more than its limits allow (maxFuzzAlloc).
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
	for _, c := range hostileCases {
		f.Add(c.src)
	}
	for _, s := range []string{
		"{{ ('%9s' * 9)|format(*range(9)) }}", "{{ 'x'|center(99999) * 99 }}", "{{ (l * 999)|tojson(indent='  ') }}",
		"{% set ns = namespace(s='ab') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
	} {
		f.Add(s)
	}
	ctx := Context{
		Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}, {Role: "assistant", Content: "<think>r</think>a", ToolCalls: []ToolCall{{Name: "f", Arguments: Object{{"k", 1}}}}}, {Role: "tool", Content: "t"}},
		Tools:    []any{Object{{"name", "f"}}},
		Vars:     map[string]any{"n": 3, "l": []any{1, "a", nil, 2.5}},
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			checkError(t, src, err)
			return
		}
		tmpl.Limits = fuzzLimits
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = tmpl.Render(ctx)
		runtime.ReadMemStats(&after)
		if err != nil {
			checkError(t, src, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > maxFuzzAlloc {
			t.Fatalf("%q: allocated %d bytes, above %d", src, n, maxFuzzAlloc)
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
