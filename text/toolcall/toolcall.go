// Package toolcall reads the tool calls a model writes in its reply, in
// the formats model families are trained on, and checks their arguments
// against the tools' JSON schemas.
//
// A Parser splits a reply into its text content and its calls. The
// formats:
//
//   - hermes: Qwen2.5, Qwen3 and other Hermes-style templates, a JSON
//     object {"name": …, "arguments": {…}} inside <tool_call>…</tool_call>,
//     one block per call, text around them being content;
//   - llama3_json: Llama 3.1–3.3's JSON tool calling, the whole reply a
//     JSON object {"name": …, "parameters": {…}} (optionally after
//     <|python_tag|>), several separated by ";";
//   - compact: the embedded model's own, <call>name {…}</call>, short for
//     a small model to learn.
//
// As vLLM's parsers do with tool_choice "auto", a reply whose calls do not
// parse is returned as content, with no calls.
package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Call is one tool call of a reply.
type Call struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments is a JSON object.
	Arguments json.RawMessage `json:"arguments"`
}

// A Parser splits a reply into its text content and its tool calls.
type Parser interface {
	// Parse returns the reply's content (the text that is not a call,
	// trimmed) and its calls, in order. ok is false when the reply holds
	// something shaped like a call that does not parse (the caller may
	// treat the whole reply as content, or the call as invalid).
	Parse(reply string) (content string, calls []Call, ok bool)
	// Format writes calls as the model would, for demonstrations.
	Format(calls []Call) string
}

// Formats are the names New takes.
var Formats = []string{"hermes", "llama3_json", "compact"}

// New returns the parser of a format.
func New(format string) (Parser, error) {
	switch format {
	case "hermes":
		return tagged{open: "<tool_call>", close: "</tool_call>", re: hermesRE, argsKey: "arguments"}, nil
	case "compact":
		return compact{}, nil
	case "llama3_json":
		return llamaJSON{}, nil
	}
	return nil, fmt.Errorf("toolcall: unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
}

// Detect guesses the format a chat template expects its model to write
// calls in: hermes where it shows <tool_call> tags, llama3_json where it
// asks for a {"name": …, "parameters": …} object; "" when it shows none.
func Detect(chatTemplate string) string {
	switch {
	case strings.Contains(chatTemplate, "<tool_call>"):
		return "hermes"
	case strings.Contains(chatTemplate, `"parameters"`) || strings.Contains(chatTemplate, "<|python_tag|>"):
		return "llama3_json"
	}
	return ""
}

var hermesRE = regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)

// tagged is a format of calls as JSON objects between tags.
type tagged struct {
	open, close string
	re          *regexp.Regexp
	argsKey     string
}

func (t tagged) Parse(reply string) (string, []Call, bool) {
	if !strings.Contains(reply, t.open) {
		return strings.TrimSpace(reply), nil, true
	}
	var calls []Call
	for _, m := range t.re.FindAllStringSubmatch(reply, -1) {
		c, err := parseObject(m[1], t.argsKey)
		if err != nil {
			return strings.TrimSpace(reply), nil, false
		}
		calls = append(calls, c)
	}
	rest := t.re.ReplaceAllString(reply, "")
	if strings.Contains(rest, t.open) { // an unclosed call
		return strings.TrimSpace(reply), nil, false
	}
	return strings.TrimSpace(rest), calls, true
}

func (t tagged) Format(calls []Call) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteByte('\n')
		}
		obj := marshal(struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"arguments"`
		}{c.Name, orEmpty(c.Arguments)})
		b.WriteString(t.open + "\n" + string(obj) + "\n" + t.close)
	}
	return b.String()
}

// compact is <call>name {…}</call>.
type compact struct{}

var compactRE = regexp.MustCompile(`(?s)<call>\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*(\{.*?\})?\s*</call>`)

func (compact) Parse(reply string) (string, []Call, bool) {
	if !strings.Contains(reply, "<call>") {
		return strings.TrimSpace(reply), nil, true
	}
	var calls []Call
	for _, m := range compactRE.FindAllStringSubmatch(reply, -1) {
		args := json.RawMessage("{}")
		if m[2] != "" {
			if !isObject(m[2]) {
				return strings.TrimSpace(reply), nil, false
			}
			args = json.RawMessage(m[2])
		}
		calls = append(calls, Call{Name: m[1], Arguments: compactJSON(args)})
	}
	rest := compactRE.ReplaceAllString(reply, "")
	if len(calls) == 0 || strings.Contains(rest, "<call>") {
		return strings.TrimSpace(reply), nil, false
	}
	return strings.TrimSpace(rest), calls, true
}

func (compact) Format(calls []Call) string {
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "<call>%s %s</call>", c.Name, compactJSON(orEmpty(c.Arguments)))
	}
	return b.String()
}

// llamaJSON is Llama 3.1's JSON tool calling.
type llamaJSON struct{}

func (llamaJSON) Parse(reply string) (string, []Call, bool) {
	text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reply), "<|python_tag|>"))
	if !strings.HasPrefix(text, "{") {
		return strings.TrimSpace(reply), nil, true
	}
	var calls []Call
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return strings.TrimSpace(reply), nil, false
		}
		c, err := parseObject(string(raw), "parameters")
		if err != nil {
			return strings.TrimSpace(reply), nil, false
		}
		calls = append(calls, c)
		rest := strings.TrimSpace(text[dec.InputOffset():])
		if rest == "" {
			return "", calls, true
		}
		if !strings.HasPrefix(rest, ";") {
			return strings.TrimSpace(reply), nil, false
		}
		text = strings.TrimSpace(rest[1:])
		dec = json.NewDecoder(strings.NewReader(text))
	}
}

func (llamaJSON) Format(calls []Call) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		obj := marshal(struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"parameters"`
		}{c.Name, orEmpty(c.Arguments)})
		parts[i] = string(obj)
	}
	return strings.Join(parts, "; ")
}

// parseObject reads {"name": …, argsKey: {…} or a JSON string of one}
// ("arguments" also accepted for "parameters" and the other way round).
func parseObject(s, argsKey string) (Call, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &obj); err != nil {
		return Call{}, err
	}
	var name string
	if err := json.Unmarshal(obj["name"], &name); err != nil || name == "" {
		return Call{}, errors.New("toolcall: a call without a name")
	}
	args, ok := obj[argsKey]
	if !ok {
		args, ok = obj[map[string]string{"arguments": "parameters", "parameters": "arguments"}[argsKey]]
	}
	if !ok || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var str string
	if json.Unmarshal(args, &str) == nil { // arguments as a JSON string
		args = json.RawMessage(str)
	}
	if !isObject(string(args)) {
		return Call{}, errors.New("toolcall: arguments are not a JSON object")
	}
	return Call{Name: name, Arguments: compactJSON(args)}, nil
}

func isObject(s string) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &obj) == nil && obj != nil
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// marshal writes v as JSON without escaping <, > and &, which the
// model wrote as they are.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("{}")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}
