package chattemplate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/agentrl/agentrl/text/hftok"
)

// Message is one chat message as transformers passes it to a template: a
// dict with role and content, plus reasoning_content, tool_calls, name and
// tool_call_id when set, plus Extra.
type Message struct {
	Role    string
	Content string
	// ReasoningContent is the assistant's reasoning; nil leaves the key
	// out (a template's "is defined" is false), "" passes it empty.
	ReasoningContent *string
	// ToolCalls are an assistant's calls; nil or empty leaves the key out.
	ToolCalls []ToolCall
	// Name and ToolCallID are passed when not empty.
	Name       string
	ToolCallID string
	// Extra holds further keys (sorted); a key here replaces the field
	// of the same name, so Extra{"content": nil} passes content None.
	Extra map[string]any
}

// ToolCall is one tool call of an assistant message, passed as
// {"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}
// (id left out when empty).
type ToolCall struct {
	ID   string
	Type string // "" means "function"
	Name string
	// Arguments are the call's arguments: a string (a template prints it
	// as it is, since "is string" holds), or a JSON-like value (Object,
	// json.RawMessage, map, ...), which templates usually tojson.
	Arguments any
}

func (m Message) value(depth int) (any, error) {
	d := newDict()
	d.set("role", m.Role)
	d.set("content", m.Content)
	if m.ReasoningContent != nil {
		d.set("reasoning_content", *m.ReasoningContent)
	}
	if len(m.ToolCalls) > 0 {
		l := &listV{}
		for _, tc := range m.ToolCalls {
			v, err := tc.value(depth + 1)
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, v)
		}
		d.set("tool_calls", l)
	}
	if m.Name != "" {
		d.set("name", m.Name)
	}
	if m.ToolCallID != "" {
		d.set("tool_call_id", m.ToolCallID)
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := toValue(m.Extra[k], depth+1)
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", k, err)
		}
		d.set(k, v)
	}
	return d, nil
}

func (tc ToolCall) value(depth int) (any, error) {
	d := newDict()
	if tc.ID != "" {
		d.set("id", tc.ID)
	}
	typ := tc.Type
	if typ == "" {
		typ = "function"
	}
	d.set("type", typ)
	f := newDict()
	f.set("name", tc.Name)
	args, err := toValue(tc.Arguments, depth+1)
	if err != nil {
		return nil, fmt.Errorf("tool call %s arguments: %w", tc.Name, err)
	}
	f.set("arguments", args)
	d.set("function", f)
	return d, nil
}

// SpecialTokens are the special token strings transformers passes to
// chat templates (its special_tokens_map); empty ones are not passed.
type SpecialTokens struct {
	BOS, EOS, Unk, Pad string
	Additional         []string // additional_special_tokens
}

// Context is what transformers' apply_chat_template gives a template.
type Context struct {
	Messages []Message
	// Tools are tool definitions (JSON-like values, e.g. json.RawMessage
	// or Object); nil passes tools=None, as transformers does without
	// tools.
	Tools []any
	// Documents are passed as documents (nil: None), for RAG templates.
	Documents []any
	// AddGenerationPrompt is add_generation_prompt.
	AddGenerationPrompt bool
	// EnableThinking, when set, passes enable_thinking (Qwen3's switch).
	EnableThinking *bool
	// Vars are further keyword arguments; they override everything
	// above, the special tokens included.
	Vars map[string]any
}

// Render renders a conversation, as tokenizer.apply_chat_template(
// messages, tools=..., add_generation_prompt=..., tokenize=False,
// **kwargs) does.
func (t *Template) Render(ctx Context) (string, error) {
	return t.RenderContext(context.Background(), ctx)
}

// RenderContext is Render, stopping with an error of KindBudget that
// wraps ctx.Err() when ctx is done (looked at every million or so units
// of work): a deadline on a rendering, in addition to its Limits.
func (t *Template) RenderContext(ctx context.Context, c Context) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", newError(KindRuntime, 0, "internal error: %v", p)
		}
	}()
	vars, err := t.contextVars(c)
	if err != nil {
		return "", err
	}
	return t.execute(ctx, vars)
}

// contextVars builds the template's variables in transformers' way:
// messages, tools, documents, add_generation_prompt, the special tokens,
// then the keyword arguments.
func (t *Template) contextVars(ctx Context) (map[string]any, error) {
	vars := map[string]any{}
	msgs := &listV{items: make([]any, 0, len(ctx.Messages))}
	for i, m := range ctx.Messages {
		v, err := m.value(1)
		if err != nil {
			return nil, fmt.Errorf("chattemplate: messages[%d]: %w", i, err)
		}
		msgs.items = append(msgs.items, v)
	}
	vars["messages"] = msgs
	for _, f := range []struct {
		name string
		v    []any
	}{{"tools", ctx.Tools}, {"documents", ctx.Documents}} {
		if f.v == nil {
			vars[f.name] = nil
			continue
		}
		v, err := toValue(f.v, 0)
		if err != nil {
			return nil, fmt.Errorf("chattemplate: %s: %w", f.name, err)
		}
		vars[f.name] = v
	}
	vars["add_generation_prompt"] = ctx.AddGenerationPrompt
	tok := t.Tokens
	for _, f := range []struct{ name, v string }{{"bos_token", tok.BOS}, {"eos_token", tok.EOS}, {"unk_token", tok.Unk}, {"pad_token", tok.Pad}} {
		if f.v != "" {
			vars[f.name] = f.v
		}
	}
	if len(tok.Additional) > 0 {
		vars["additional_special_tokens"] = strList(tok.Additional)
	}
	if ctx.EnableThinking != nil {
		vars["enable_thinking"] = *ctx.EnableThinking
	}
	for k, v := range ctx.Vars {
		cv, err := toValue(v, 0)
		if err != nil {
			return nil, fmt.Errorf("chattemplate: variable %s: %w", k, err)
		}
		vars[k] = cv
	}
	return vars, nil
}

// ErrNoTemplate is returned by FromConfig for a tokenizer_config.json
// without a chat_template string.
var ErrNoTemplate = errors.New("chattemplate: tokenizer_config.json has no chat_template")

// FromConfig parses the chat template of a tokenizer_config.json (read
// with hftok.LoadConfig) and gives it the config's special tokens.
func FromConfig(cfg hftok.Config) (*Template, error) {
	if cfg.ChatTemplate == "" {
		return nil, ErrNoTemplate
	}
	t, err := Parse(cfg.ChatTemplate)
	if err != nil {
		return nil, err
	}
	t.Tokens = SpecialTokens{BOS: cfg.BOSToken, EOS: cfg.EOSToken, Unk: cfg.UnkToken, Pad: cfg.PadToken, Additional: cfg.AdditionalSpecialTokens}
	return t, nil
}
