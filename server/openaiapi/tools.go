package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/constrain"
	"github.com/agentrl/agentrl/text/toolcall"
)

// Tool calls and structured output in chat (see the package doc, Tools):
// the request's tools, tool_choice, parallel_tool_calls and
// response_format are checked into a chatTools, which renders the prompt,
// builds each choice's constraint and reads each reply's calls.

// toolChoice values.
const (
	choiceNone     = "none"
	choiceAuto     = "auto"
	choiceRequired = "required"
	choiceNamed    = "named"
)

// chatTools is the checked tool and format part of a chat request.
type chatTools struct {
	tools  []policy.Tool
	choice string // none, auto, required, named
	named  string // the function tool_choice names
	// parallel is parallel_tool_calls: false keeps a reply's first call.
	parallel bool
	format   string // the call format the replies are parsed in
	parser   toolcall.Parser
	// native: the chat template renders the tools; otherwise they are
	// described in the system message (toolcall.Describe).
	native policy.ToolRenderer
	// grammar, when set, constrains every choice: the forced call, or the
	// response_format's JSON.
	grammar *constrain.Grammar
	// json is response_format json_object or json_schema.
	json bool
}

// wireTool is a tool of a request.
type wireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// responseFormat is the response_format field.
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// isNull reports whether a raw field is absent or null.
func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// checkTools reads tools, tool_choice, parallel_tool_calls and
// response_format; sm is the model that samples (it must apply
// constraints when one is needed).
func (s *Server) checkTools(req *chatRequest, sm *servedModel) (*chatTools, error) {
	ct := &chatTools{choice: choiceNone, parallel: boolOr(req.ParallelToolCalls, true)}
	if !isNull(req.Tools) {
		var list []wireTool
		if err := json.Unmarshal(req.Tools, &list); err != nil {
			return nil, badRequest("tools", "tools must be a list of {\"type\": \"function\", \"function\": {...}}: %v", err)
		}
		seen := map[string]bool{}
		for i, t := range list {
			switch {
			case t.Type != "function":
				return nil, badRequest("tools", "tools[%d]: type must be \"function\", got %q", i, t.Type)
			case t.Function == nil || t.Function.Name == "":
				return nil, badRequest("tools", "tools[%d]: function.name is required", i)
			case seen[t.Function.Name]:
				return nil, badRequest("tools", "tools[%d]: the function name %q is given twice", i, t.Function.Name)
			}
			seen[t.Function.Name] = true
			f := t.Function
			params := bytes.TrimSpace(f.Parameters)
			if isNull(params) {
				params = nil
			} else if obj := (map[string]any)(nil); json.Unmarshal(params, &obj) != nil || obj == nil {
				return nil, badRequest("tools", "tools[%d] (%s): function.parameters must be a JSON schema object, got %s", i, f.Name, clip(params))
			}
			ct.tools = append(ct.tools, policy.Tool{Name: f.Name, Description: f.Description, Parameters: json.RawMessage(params)})
		}
	}
	if len(ct.tools) > 0 {
		ct.choice = choiceAuto
	}
	if !isNull(req.ToolChoice) {
		if err := ct.readChoice(req.ToolChoice); err != nil {
			return nil, err
		}
	}
	if !isNull(req.ResponseFormat) {
		if err := s.readResponseFormat(ct, req.ResponseFormat); err != nil {
			return nil, err
		}
	}
	ct.format = s.opts.ToolCallParser
	if tr, ok := s.p.(policy.ToolRenderer); ok && tr.ToolCallFormat() != "" {
		ct.native = tr
		if ct.format == "" {
			ct.format = tr.ToolCallFormat()
		}
	}
	if ct.format == "" {
		ct.format = "compact"
	}
	var err error
	if ct.parser, err = toolcall.New(ct.format); err != nil {
		return nil, err
	}
	if ct.choice == choiceRequired || ct.choice == choiceNamed {
		if ct.json {
			return nil, badRequest("response_format", "response_format %s cannot be combined with tool_choice %q: both constrain the reply", "json", ct.choice)
		}
		tools := ct.tools
		if ct.choice == choiceNamed {
			for _, t := range ct.tools {
				if t.Name == ct.named {
					tools = []policy.Tool{t}
				}
			}
		}
		// required with parallel calls: one or more; otherwise one.
		maxCalls := 1
		if ct.choice == choiceRequired && ct.parallel {
			maxCalls = 0
		}
		g, err := constrain.ToolCallsN(ct.format, tools, maxCalls)
		if err != nil {
			return nil, badRequest("tools", "tool_choice %q needs a call the arguments' schema decides: %v", ct.choice, err)
		}
		ct.grammar = g
	}
	if ct.grammar != nil {
		if cs, ok := sm.p.(policy.ConstrainedSampler); !ok || !cs.AppliesConstraints() || s.vocab == nil {
			param := "tool_choice"
			if ct.json {
				param = "response_format"
			}
			return nil, badRequest(param, "%s needs constrained decoding, which this model's policy does not apply", param)
		}
	}
	return ct, nil
}

// readChoice reads tool_choice: "none", "auto", "required" or {"type":
// "function", "function": {"name"}}.
func (ct *chatTools) readChoice(raw json.RawMessage) error {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		switch str {
		case choiceNone:
			ct.choice = choiceNone
			return nil
		case choiceAuto, choiceRequired:
			if len(ct.tools) == 0 {
				return badRequest("tool_choice", "tool_choice %q needs tools", str)
			}
			ct.choice = str
			return nil
		}
		return badRequest("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}, got %q", str)
	}
	var named struct {
		Type     string `json:"type"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function == nil || named.Function.Name == "" {
		return badRequest("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}, got %s", clip(raw))
	}
	name := named.Function.Name
	for _, t := range ct.tools {
		if t.Name == name {
			ct.choice, ct.named = choiceNamed, name
			return nil
		}
	}
	return badRequest("tool_choice", "tool_choice names the function %q, which is not among the tools", name)
}

// readResponseFormat reads response_format: text, json_object or
// json_schema.
func (s *Server) readResponseFormat(ct *chatTools, raw json.RawMessage) error {
	var rf responseFormat
	if err := json.Unmarshal(raw, &rf); err != nil {
		return badRequest("response_format", "response_format must be an object with a type: %v", err)
	}
	var v *constrain.Value
	switch rf.Type {
	case "text":
		return nil
	case "json_object":
		v = constrain.AnyObject()
	case "json_schema":
		if rf.JSONSchema == nil || isNull(rf.JSONSchema.Schema) {
			return badRequest("response_format", "response_format json_schema needs json_schema.schema")
		}
		var err error
		if v, err = constrain.Compile(rf.JSONSchema.Schema, constrain.CompileOptions{}); err != nil {
			return badRequest("response_format", "response_format json_schema: %v", err)
		}
	default:
		return badRequest("response_format", "response_format type must be \"text\", \"json_object\" or \"json_schema\", got %q", rf.Type)
	}
	g, err := constrain.JSON(v)
	if err != nil {
		return badRequest("response_format", "response_format: %v", err)
	}
	ct.json, ct.grammar = true, g
	return nil
}

// clip shortens a raw value for an error message.
func clip(raw []byte) string {
	if len(raw) > 80 {
		return string(raw[:80]) + "..."
	}
	return string(raw)
}

// render renders the conversation with the tools offered: through the chat
// template when it has tools, otherwise described in the system message,
// the assistant's calls written in the call format and the tool results
// given as a user message.
func (s *Server) renderTools(ctx context.Context, ct *chatTools, msgs []policy.Message, gen, special bool) ([]int, error) {
	if len(ct.tools) == 0 && !hasToolMessages(msgs) {
		return s.renderChat(ctx, msgs, gen, special)
	}
	if ct.native != nil {
		ids, err := ct.native.RenderChatTools(ctx, msgs, ct.tools, gen)
		if err != nil {
			return nil, badRequest("messages", "rendering the chat template: %v", err)
		}
		return s.withPrefix(ctx, ids, special)
	}
	parser := ct.parser
	var out []policy.Message
	if len(ct.tools) > 0 {
		desc := toolcall.Describe(ct.tools)
		if len(msgs) > 0 && msgs[0].Role == policy.RoleSystem {
			sys := msgs[0]
			sys.Content = strings.TrimRight(sys.Content, "\n") + "\n" + desc
			out = append(out, sys)
			msgs = msgs[1:]
		} else {
			out = append(out, policy.Message{Role: policy.RoleSystem, Content: desc})
		}
	}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		switch {
		case m.Role == policy.RoleTool:
			var b strings.Builder
			for ; i < len(msgs) && msgs[i].Role == policy.RoleTool; i++ {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				name := msgs[i].Name
				if name == "" {
					name = callName(msgs[:i], msgs[i].ToolCallID)
				}
				fmt.Fprintf(&b, "Result of %s:\n%s", name, msgs[i].Content)
			}
			i--
			out = append(out, policy.Message{Role: policy.RoleUser, Content: b.String()})
		case len(m.ToolCalls) > 0:
			calls := make([]toolcall.Call, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				calls[j] = c.Call
			}
			text := parser.Format(calls)
			if m.Content != "" {
				text = m.Content + "\n" + text
			}
			out = append(out, policy.Message{Role: m.Role, Content: text})
		default:
			out = append(out, m)
		}
	}
	return s.renderChat(ctx, out, gen, special)
}

// callName is the name of the call id among the assistant messages.
func callName(msgs []policy.Message, id string) string {
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == id && id != "" {
				return c.Name
			}
		}
	}
	return "the tool"
}

func hasToolMessages(msgs []policy.Message) bool {
	for _, m := range msgs {
		if m.Role == policy.RoleTool || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// constraint returns a fresh constraint of choice for a reply of at most
// maxTokens tokens (nil when the request has none).
func (s *Server) constraint(ct *chatTools, stops []int, maxTokens int) (policy.Constraint, error) {
	if ct.grammar == nil {
		return nil, nil
	}
	if len(stops) == 0 {
		// The constrained text ends where a stop token may come; with
		// none, nothing could follow it.
		return nil, badRequest("ignore_eos", "a constrained reply (tool_choice %q or response_format) needs a stop token: ignore_eos without stop_token_ids leaves none", ct.choice)
	}
	seq, err := ct.grammar.Start(s.constrainVocab(), stops, maxTokens)
	if errors.Is(err, constrain.ErrBudget) {
		param := "tool_choice"
		if ct.json {
			param = "response_format"
		}
		return nil, badRequest("max_tokens", "max_tokens %d is too small for the reply %s asks for, which needs at least %d tokens", maxTokens, param, ct.grammar.MinLen()+1)
	}
	if err != nil {
		return nil, err
	}
	return seq, nil
}

// constrainVocab is the base policy's vocabulary indexed for constraints,
// built on first use: every token that is not special, by its bytes.
func (s *Server) constrainVocab() *constrain.Vocab {
	s.cvOnce.Do(func() {
		v := s.vocab
		s.cvocab = constrain.NewVocab(v.VocabSize(), func(id int) []byte {
			if v.IsSpecialToken(id) {
				return nil
			}
			b, err := v.TokenBytes(id)
			if err != nil {
				return nil
			}
			return b
		})
	})
	return s.cvocab
}

// constrainCache holds the constraint vocabulary of a server.
type constrainCache struct {
	cvOnce sync.Once
	cvocab *constrain.Vocab
}

// replyCalls reads the calls of a reply: the content left and the calls
// with fresh ids. With tool_choice auto, a reply whose calls do not parse
// is all content, as vLLM's parsers return it; with required or a named
// function the reply must be a valid call (constrained decoding makes it
// one) and an error is returned otherwise.
func (ct *chatTools) replyCalls(text string) (string, []policy.ToolCall, error) {
	if ct.parser == nil || ct.choice == choiceNone {
		return text, nil, nil
	}
	content, calls, ok := ct.parser.Parse(text)
	forced := ct.choice == choiceRequired || ct.choice == choiceNamed
	if !ok || len(calls) == 0 {
		if forced {
			return "", nil, fmt.Errorf("the reply is not a tool call in the %s format: %q", ct.format, clip([]byte(text)))
		}
		return text, nil, nil
	}
	if !ct.parallel {
		calls = calls[:1]
	}
	out := make([]policy.ToolCall, len(calls))
	for i, c := range calls {
		if forced {
			if err := toolcall.Check(ct.tools, c); err != nil {
				return "", nil, fmt.Errorf("the forced tool call does not fit its tool: %v", err)
			}
		}
		out[i] = policy.ToolCall{ID: httpapi.NewID("chatcmpl-tool-"), Call: c}
	}
	return content, out, nil
}

// finishReason is the finish_reason of a choice that made calls, as vLLM
// reports it: "tool_calls" for auto and required, the sample's own for a
// named function (as OpenAI).
func (ct *chatTools) finishReason(finish string, calls []policy.ToolCall) string {
	if len(calls) == 0 || ct.choice == choiceNamed {
		return finish
	}
	if finish == policy.FinishStop || ct.choice == choiceAuto {
		return "tool_calls"
	}
	return finish
}
