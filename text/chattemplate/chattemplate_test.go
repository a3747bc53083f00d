package chattemplate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/text/hftok"
)

// fixedNow is the clock of the tests' strftime_now.
var fixedNow = time.Date(2024, 7, 26, 9, 5, 3, 0, time.UTC)

// execCase renders src with vars (a JSON object).
func execCase(src, vars string) (string, error) {
	t, err := Parse(src)
	if err != nil {
		return "", err
	}
	t.Now = func() time.Time { return fixedNow }
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(vars), &m); err != nil {
		return "", err
	}
	args := make(map[string]any, len(m))
	for k, v := range m {
		args[k] = v
	}
	return t.Execute(args)
}

func TestConstructs(t *testing.T) {
	for _, c := range constructCases {
		got, err := execCase(c.src, c.vars)
		switch {
		case c.err != "":
			if err == nil {
				t.Errorf("%s: %q: rendered %q, want an error like %q", c.name, c.src, got, c.err)
			} else if !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %q: error %q, want one containing %q", c.name, c.src, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %q: %v", c.name, c.src, err)
		case got != c.want:
			t.Errorf("%s: %q:\n got %q\nwant %q", c.name, c.src, got, c.want)
		}
	}
}

func TestWhitespaceControl(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"{% if true %}\nx\n{% endif %}\n", "x\n"},
		{"  {% if true %}x{% endif %}", "x"},
		{"\t {% for i in [1, 2] %}\n\t {{ i }}\n\t {% endfor %}\n", "\t 1\n\t 2\n"},
		{"a {{- ' b ' -}} c", "a b c"},
		{"a\n\n{%- if true %}b{% endif %}", "ab"},
		{"{% if true -%}\n\n  b  {%- endif %}|", "b|"},
		{"a\n  {%+ if true %}b{% endif %}", "a\n  b"},
		{"{% if true +%}\nb{% endif %}", "\nb"},
		{"a\r\n{% if true %}\r\nb{% endif %}", "a\nb"},
		{"{# c #}\nx", "x"},
		{"x {# c -#}\n\n  y", "x y"},
		{"  {% raw %}\n {{x}} \n  {% endraw %}\nz", "\n {{x}} \nz"},
		{"{{ 'a' }}\n  {% if true %}\nb{% endif %}", "a\nb"},
		{"{{ x -}}\n  y", "y"},
		{"{% set x = {'a': {'b': 1}} %}{{ x.a.b }}", "1"},
		{"{{ {'a': {'b': 1}} }}", "{'a': {'b': 1}}"},
	} {
		got, err := execCase(c.src, `{}`)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
		} else if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

func TestErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct {
		src  string
		kind ErrorKind
		line int
		msg  string
	}{
		{"line1\n{% if true %}\nx", KindSyntax, 3, "unexpected end of template"},
		{"a\nb\n{% frobnicate %}", KindSyntax, 3, "unknown tag 'frobnicate'"},
		{"{% endif %}", KindSyntax, 1, "unknown tag 'endif'"},
		{"a\n\n{{ x|nosuchfilter }}", KindSyntax, 3, "no filter named 'nosuchfilter'"},
		{"{{ x is nosuchtest }}", KindSyntax, 1, "no test named 'nosuchtest'"},
		{"line1\n{{ f( }}", KindSyntax, 2, "unexpected"},
		{"{% if %}{% endif %}", KindSyntax, 1, "expected an expression"},
		{"{{ 'abc }}", KindSyntax, 1, "string literal"},
		{"{{ x ", KindSyntax, 1, "unexpected end of template"},
		{"{# never", KindSyntax, 1, "comment"},
		{"{% set 1 = 2 %}", KindSyntax, 1, "can't assign"},
		{"{{ x $ y }}", KindSyntax, 1, "unexpected char"},
		{"a\nb\n{{ raise_exception('Bad role: ' ~ 'x') }}", KindRaised, 3, "Bad role: x"},
		{"a\n{% for m in [{}] %}\n{{ m.content.strip() }}\n{% endfor %}", KindRuntime, 3, "'dict object' has no attribute 'content'"},
		{"\n\n\n{{ 'a' + 1 }}", KindRuntime, 4, "can only concatenate str"},
		{"{{ [].append(1) }}", KindRuntime, 1, "unsafe"},
		{"{% macro m(a) %}{% endmacro %}\n{{ m(1, 2) }}", KindRuntime, 2, "takes not more than 1 argument"},
	} {
		_, err := execCase(c.src, `{}`)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error %v, want an *Error", c.src, err)
			continue
		}
		if e.Kind != c.kind || e.Line != c.line || !strings.Contains(e.Message, c.msg) {
			t.Errorf("%q: got %v (kind %v, line %d), want kind %v, line %d, message with %q", c.src, e, e.Kind, e.Line, c.kind, c.line, c.msg)
		}
		if c.kind == KindRaised && e.Message != c.msg {
			t.Errorf("%q: raise_exception message %q, want %q", c.src, e.Message, c.msg)
		}
	}
}

func TestRenderContext(t *testing.T) {
	tmpl, err := Parse(`{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}{% if m.reasoning_content is defined %} r={{ m.reasoning_content }}{% endif %}{% for tc in m.tool_calls %} call {{ tc.function.name }}({{ tc.function.arguments|tojson }}){% endfor %}{% if m.tool_call_id is defined %} id={{ m.tool_call_id }}{% endif %}]{% endfor %}|{{ tools|tojson }}|{{ add_generation_prompt }}|{{ enable_thinking }}|{{ extra }}|{{ additional_special_tokens }}|{{ documents }}`)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Tokens = SpecialTokens{BOS: "<s>", EOS: "</s>", Additional: []string{"<x>"}}
	got, err := tmpl.Render(Context{
		Messages: []Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", Content: "", ReasoningContent: sp("think"), ToolCalls: []ToolCall{{Name: "f", Arguments: Object{{"b", 1}, {"a", []any{true, nil}}}}}},
			{Role: "tool", Content: "out", ToolCallID: "c1"},
		},
		Tools:               []any{json.RawMessage(`{"z": 1, "a": {"y": 2.0, "x": "é"}}`)},
		AddGenerationPrompt: true,
		EnableThinking:      bp(false),
		Vars:                map[string]any{"extra": map[string]int{"k2": 2, "k1": 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `<s>[user:hi][assistant: r=think call f({"b": 1, "a": [true, null]})][tool:out id=c1]|[{"z": 1, "a": {"y": 2.0, "x": "é"}}]|True|False|{'k1': 1, 'k2': 2}|['<x>']|None`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestToolsNoneWithoutTools(t *testing.T) {
	tmpl, err := Parse(`{{ tools is defined }} {{ tools is none }} {{ enable_thinking is defined }} {{ bos_token is defined }}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(Context{})
	if err != nil {
		t.Fatal(err)
	}
	if got != "True True False False" {
		t.Errorf("got %q", got)
	}
}

func TestExecuteConversions(t *testing.T) {
	type point struct {
		X int    `json:"x"`
		Y string `json:"y,omitempty"`
	}
	tmpl, err := Parse(`{{ a|tojson }} {{ b|tojson }} {{ c|tojson }} {{ d }} {{ e }} {{ f|tojson }} {{ g }} {{ h is none }}`)
	if err != nil {
		t.Fatal(err)
	}
	var nilPtr *point
	got, err := tmpl.Execute(map[string]any{
		"a": point{X: 1, Y: "z"},
		"b": []point{{X: 2}},
		"c": map[string]any{"b": uint8(1), "a": float32(0.5)},
		"d": json.Number("12"),
		"e": uint64(1) << 63,
		"f": [2]bool{true, false},
		"g": &point{X: 3},
		"h": nilPtr,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"x": 1, "y": "z"} [{"x": 2}] {"a": 0.5, "b": 1} 12 9.223372036854776e+18 [true, false] {'x': 3} True`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := tmpl.Execute(map[string]any{"a": func() {}}); err == nil {
		t.Error("a func converted without error")
	}
}

func TestFromConfig(t *testing.T) {
	cfg := hftokConfig(`{"bos_token": {"content": "<|begin_of_text|>"}, "eos_token": "<|eot_id|>", "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}"}`)
	tmpl, err := FromConfig(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(Context{Messages: []Message{{Role: "user", Content: "x"}}})
	if err != nil || got != "<|begin_of_text|>x<|eot_id|>" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := FromConfig(*hftokConfig(`{}`)); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("no template: %v", err)
	}
}

// TestRunawayTemplates checks that templates that would run away stop
// with an error.
func TestRunawayTemplates(t *testing.T) {
	for _, src := range []string{
		"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
		"{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
		"{{ 'x' * 100000000 }}",
		"{% set ns = namespace(s='xxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
		"{{ " + strings.Repeat("(", 2000) + "1" + strings.Repeat(")", 2000) + " }}",
	} {
		if _, err := execCase(src, `{}`); err == nil {
			t.Errorf("%.60q: no error", src)
		}
	}
}

func hftokConfig(s string) *hftok.Config {
	c, err := hftok.ParseConfig([]byte(s))
	if err != nil {
		panic(err)
	}
	return c
}
