package toolcall

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func calls(pairs ...string) []Call {
	var out []Call
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Call{Name: pairs[i], Arguments: json.RawMessage(pairs[i+1])})
	}
	return out
}

func TestParse(t *testing.T) {
	tests := []struct {
		format, reply string
		content       string
		calls         []Call
		ok            bool
	}{
		// Hermes / Qwen.
		{"hermes", "plain text", "plain text", nil, true},
		{"hermes", "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x y\"}}\n</tool_call>", "", calls("search", `{"query":"x y"}`), true},
		{"hermes", "Let me look.\n<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{\"n\":1}}</tool_call>", "Let me look.", calls("a", `{}`, "b", `{"n":1}`), true},
		{"hermes", `<tool_call>{"name":"a","arguments":"{\"k\": 2}"}</tool_call>`, "", calls("a", `{"k":2}`), true},
		{"hermes", `<tool_call>{"name":"a"}</tool_call>`, "", calls("a", `{}`), true},
		{"hermes", `<tool_call>{"name":"a","parameters":{"k":1}}</tool_call>`, "", calls("a", `{"k":1}`), true},
		{"hermes", `<tool_call>{"name":"a","arguments":{"k":1}</tool_call>`, `<tool_call>{"name":"a","arguments":{"k":1}</tool_call>`, nil, false},
		{"hermes", `<tool_call>{"name":"a","arguments":{}}`, `<tool_call>{"name":"a","arguments":{}}`, nil, false},
		{"hermes", `<tool_call>{"arguments":{}}</tool_call>`, `<tool_call>{"arguments":{}}</tool_call>`, nil, false},
		{"hermes", `<tool_call>{"name":"a","arguments":[1]}</tool_call>`, `<tool_call>{"name":"a","arguments":[1]}</tool_call>`, nil, false},
		// Llama 3.1 JSON.
		{"llama3_json", "The answer is 4.", "The answer is 4.", nil, true},
		{"llama3_json", `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", calls("get_weather", `{"city":"Paris"}`), true},
		{"llama3_json", `<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": [1, 2]}}`, "", calls("a", `{}`, "b", `{"x":[1,2]}`), true},
		{"llama3_json", `{"name": "a", "parameters": {}} trailing`, `{"name": "a", "parameters": {}} trailing`, nil, false},
		{"llama3_json", `{"name": "a", "parameters": `, `{"name": "a", "parameters":`, nil, false},
		// Compact.
		{"compact", "no calls", "no calls", nil, true},
		{"compact", `<call>search {"query": "red fox"}</call>`, "", calls("search", `{"query":"red fox"}`), true},
		{"compact", `think first <call>answer {"text":"42"}</call><call>stop</call>`, "think first", calls("answer", `{"text":"42"}`, "stop", `{}`), true},
		{"compact", `<call>search {"query": </call>`, `<call>search {"query": </call>`, nil, false},
		{"compact", `<call>search {"q":1}`, `<call>search {"q":1}`, nil, false},
	}
	for _, tt := range tests {
		p, err := New(tt.format)
		if err != nil {
			t.Fatal(err)
		}
		content, got, ok := p.Parse(tt.reply)
		if content != tt.content || ok != tt.ok || !reflect.DeepEqual(got, tt.calls) {
			t.Errorf("%s.Parse(%q) = %q, %s, %v; want %q, %s, %v", tt.format, tt.reply, content, show(got), ok, tt.content, show(tt.calls), tt.ok)
		}
	}
}

func show(cs []Call) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+string(c.Arguments))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestFormatRoundTrip: what Format writes, Parse reads back, for every format.
func TestFormatRoundTrip(t *testing.T) {
	in := calls("search", `{"query":"who \"quoted\" <this>?","k":3}`, "answer", `{}`, "nested", `{"a":{"b":[1,2,{"c":null}]}}`)
	for _, f := range Formats {
		p, _ := New(f)
		text := p.Format(in)
		content, out, ok := p.Parse(text)
		if !ok || content != "" || !reflect.DeepEqual(out, in) {
			t.Errorf("%s: Format wrote %q; Parse read %q, %s, %v", f, text, content, show(out), ok)
		}
	}
}

func TestNewUnknown(t *testing.T) {
	if _, err := New("mistral"); err == nil || !strings.Contains(err.Error(), "hermes") {
		t.Fatalf("New(mistral) error = %v, want one listing the known formats", err)
	}
}

func TestDetect(t *testing.T) {
	for tmpl, want := range map[string]string{
		`{%- if tools %}<tools>{{ tool }}</tools> ... <tool_call>\n{"name": ...}</tool_call>{%- endif %}`:        "hermes",
		`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}`: "llama3_json",
		`{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}`:                                      "",
	} {
		if got := Detect(tmpl); got != want {
			t.Errorf("Detect(%.40q…) = %q, want %q", tmpl, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	tools := []Tool{
		{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":20},"k":{"type":"integer","minimum":1,"maximum":10}},"required":["query"],"additionalProperties":false}`)},
		{Name: "answer", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":["string","null"]},"unit":{"enum":["m","km"]},"tags":{"type":"array","items":{"type":"string"},"maxItems":2},"mode":{"anyOf":[{"const":"fast"},{"type":"integer"}]}}}`)},
		{Name: "free"},
	}
	tests := []struct {
		call Call
		want string // "" for valid, else a substring of the error
	}{
		{Call{"search", json.RawMessage(`{"query":"fox"}`)}, ""},
		{Call{"search", json.RawMessage(`{"query":"fox","k":3}`)}, ""},
		{Call{"search", json.RawMessage(`{"k":3}`)}, `lacks the required "query"`},
		{Call{"search", json.RawMessage(`{"query":""}`)}, "at least 1 characters"},
		{Call{"search", json.RawMessage(`{"query":"this query is far too long to pass"}`)}, "at most 20 characters"},
		{Call{"search", json.RawMessage(`{"query":"fox","k":2.5}`)}, "must be of type integer"},
		{Call{"search", json.RawMessage(`{"query":"fox","k":11}`)}, "at most 10"},
		{Call{"search", json.RawMessage(`{"query":"fox","page":2}`)}, `"page", which its schema does not allow`},
		{Call{"search", json.RawMessage(`[1]`)}, "must be of type object"},
		{Call{"answer", json.RawMessage(`{"text":null,"unit":"km","tags":["a"],"mode":"fast"}`)}, ""},
		{Call{"answer", json.RawMessage(`{"mode":7}`)}, ""},
		{Call{"answer", json.RawMessage(`{"unit":"mi"}`)}, "must be one of"},
		{Call{"answer", json.RawMessage(`{"tags":["a",1]}`)}, "arguments.tags[1] must be of type string"},
		{Call{"answer", json.RawMessage(`{"tags":["a","b","c"]}`)}, "at most 2 items"},
		{Call{"answer", json.RawMessage(`{"mode":"slow"}`)}, "none of its alternatives"},
		{Call{"free", json.RawMessage(`{"anything":[1,{"x":true}]}`)}, ""},
		{Call{"free", json.RawMessage(`{broken`)}, "arguments"},
		{Call{"nope", json.RawMessage(`{}`)}, `no tool is named "nope"`},
	}
	for _, tt := range tests {
		err := Check(tools, tt.call)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%s) = %v, want nil", show([]Call{tt.call}), err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%s) = %v, want an error with %q", show([]Call{tt.call}), err, tt.want)
		}
	}
}

// FuzzParse: no reply makes a parser panic, and whatever it reports as
// calls are named and carry JSON objects that Format/Parse keep.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`<tool_call>{"name":"a","arguments":{}}</tool_call>`,
		`{"name": "a", "parameters": {}}; {"name": "b"}`,
		`<call>x {"a":1}</call>`, `<call>`, `<tool_call>`, `{`, `<|python_tag|>{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		for _, format := range Formats {
			p, _ := New(format)
			_, cs, ok := p.Parse(reply)
			if !ok && cs != nil {
				t.Fatalf("%s: calls returned with ok false", format)
			}
			for _, c := range cs {
				if c.Name == "" || !isObject(string(c.Arguments)) {
					t.Fatalf("%s: call %s from %q", format, show([]Call{c}), reply)
				}
			}
			if len(cs) > 0 && format != "compact" {
				if _, back, ok := p.Parse(p.Format(cs)); !ok || !reflect.DeepEqual(back, cs) {
					t.Fatalf("%s: %s does not survive Format/Parse: %s", format, show(cs), show(back))
				}
			}
		}
	})
}

func ExampleDescribe() {
	fmt.Println(Describe([]Tool{
		{Name: "search", Description: "Search the corpus.", Parameters: json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}}}`)},
		{Name: "answer"},
	}))
	// Output:
	// Tools you can call, one per line as name: description; arguments schema:
	// search: Search the corpus.; arguments {"type":"object","properties":{"query":{"type":"string"}}}
	// answer
	// Call a tool by writing <call>search {"argument":"value"}</call>.
}
