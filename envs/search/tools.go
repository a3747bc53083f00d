package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/text/toolcall"
)

// The tools' argument names.
const (
	argQuery = "query"
	argText  = "text"
)

var _ envs.ToolUser = (*Env)(nil)

// tools are the environment's tools; their order is the order Describe and
// chat templates list them in.
var tools = []toolcall.Tool{
	{
		Name:        VerbSearch,
		Description: "Search the documents; returns the best matches (BM25)",
		Parameters:  schema(argQuery, "words to match, best a name"),
	},
	{
		Name:        VerbAnswer,
		Description: "Submit the final answer; ends the episode",
		Parameters:  schema(argText, "the answer, as short as possible"),
	},
}

// schema is the JSON schema of an arguments object with one required
// string. It is kept short, as the embedded model reads it in every
// prompt; ActionOf checks the rest (no other argument, a length, no
// brackets).
func schema(name, description string) json.RawMessage {
	s := map[string]any{
		"type": "object",
		"properties": map[string]any{
			name: map[string]any{"type": "string", "description": description},
		},
		"required": []string{name},
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a constant map of strings and numbers always marshals
	}
	return b
}

// Tools implements envs.ToolUser: search(query) shows the top_k passages
// that best match the query and answer(text) submits the answer, the same
// actions as search[query] and answer[text].
func (e *Env) Tools() []toolcall.Tool {
	out := make([]toolcall.Tool, len(tools))
	for i, t := range tools {
		t.Parameters = bytes.Clone(t.Parameters)
		out[i] = t
	}
	return out
}

// ActionOf implements envs.ToolUser: a search or answer call becomes the
// action search[query] or answer[text] in canonical form (whitespace
// collapsed). The arguments must be a JSON object holding exactly the
// tool's one string argument, non-empty, at most MaxArgLen bytes once
// whitespace is collapsed, with no brackets or control characters (the
// action text could not carry them).
func (e *Env) ActionOf(call toolcall.Call) (string, error) {
	var arg string
	switch call.Name {
	case VerbSearch:
		arg = argQuery
	case VerbAnswer:
		arg = argText
	default:
		return "", fmt.Errorf("search: no tool is named %q (the tools are %s and %s)", call.Name, VerbSearch, VerbAnswer)
	}
	v, err := stringArg(call.Arguments, arg)
	if err != nil {
		return "", fmt.Errorf("search: %s: %w", call.Name, err)
	}
	return Action{Verb: call.Name, Arg: v}.String(), nil
}

// stringArg reads the one string argument name of args and checks it as
// an action's argument.
func stringArg(args json.RawMessage, name string) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return "", fmt.Errorf("arguments must be a JSON object {%q: string}", name)
	}
	for k := range m {
		if k != name {
			return "", fmt.Errorf("unknown argument %q (the only one is %q)", k, name)
		}
	}
	raw, ok := m[name]
	if !ok {
		return "", fmt.Errorf("missing the required argument %q", name)
	}
	var s string
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("argument %q must be a string", name)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("argument %q is not valid UTF-8", name)
	}
	for _, r := range s {
		switch {
		case r == '[' || r == ']':
			return "", fmt.Errorf("argument %q may not contain square brackets", name)
		case unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r':
			return "", fmt.Errorf("argument %q may not contain control characters (%U)", name, r)
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	switch {
	case s == "":
		return "", fmt.Errorf("argument %q is empty", name)
	case len(s) > MaxArgLen:
		return "", fmt.Errorf("argument %q is %d bytes long, more than %d", name, len(s), MaxArgLen)
	}
	return s, nil
}

// CallOf implements envs.ToolUser, ActionOf's inverse: search[query] is
// the call search {"query": query} and answer[text] (or finish[text]) the
// call answer {"text": text}, whitespace collapsed. Text ParseAction
// rejects is an error.
func (e *Env) CallOf(action string) (toolcall.Call, error) {
	a, ok := ParseAction(action)
	if !ok {
		return toolcall.Call{}, errors.New("search: not an action: want search[query] or answer[text] with a non-empty argument without brackets")
	}
	arg := argQuery
	if a.Verb == VerbAnswer {
		arg = argText
	}
	b, err := json.Marshal(map[string]string{arg: a.Arg})
	if err != nil {
		return toolcall.Call{}, fmt.Errorf("search: %w", err)
	}
	return toolcall.Call{Name: a.Verb, Arguments: b}, nil
}
