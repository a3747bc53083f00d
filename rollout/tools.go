package rollout

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// toolMode is how an engine offers an environment's tools (Config.Tools).
type toolMode struct {
	parser toolcall.Parser
	// native renders tools, calls and results with the policy's chat
	// template; nil describes the tools in the system prompt and answers
	// the calls in a user message (the compact form).
	native policy.ToolRenderer
}

// newToolMode returns the engine's tool mode, nil without tools. p may be
// nil (text-level play: demonstrations, baselines, chat models), which
// takes the compact form.
func newToolMode(cfg *Config, p policy.Policy) (*toolMode, error) {
	if !cfg.Tools {
		return nil, nil
	}
	if tr, ok := p.(policy.ToolRenderer); ok && cfg.ToolFormat == "" {
		if f := tr.ToolCallFormat(); f != "" {
			parser, err := toolcall.New(f)
			if err != nil {
				return nil, fmt.Errorf("tools: the policy's call format: %w", err)
			}
			return &toolMode{parser: parser, native: tr}, nil
		}
	}
	parser, err := toolcall.New(ToolsCompact)
	if err != nil {
		return nil, err
	}
	return &toolMode{parser: parser}, nil
}

// openTools finds the episode's tools; the environment must declare some.
func openTools(ep *episode, name string) error {
	tu, ok := ep.env.(envs.ToolUser)
	if !ok {
		return fmt.Errorf("rollout.tools: environment %q declares no tools (it does not implement envs.ToolUser)", name)
	}
	ep.toolUser, ep.tools = tu, tu.Tools()
	if len(ep.tools) == 0 {
		return fmt.Errorf("rollout.tools: environment %q declares an empty tool list", name)
	}
	return nil
}

// pendingCall is one call of a reply and what became of it.
type pendingCall struct {
	call policy.ToolCall
	// action is the call's action; err says why it has none.
	action string
	err    error
	// result answers the call: the step's observation, or why it did not
	// run.
	result string
}

var leadingThinkRE = regexp.MustCompile(`(?s)^\s*<think>(.*?)</think>`)

// readCalls takes a tool-mode reply apart: its reasoning (in think mode),
// its calls and their actions. The reply's format is right when the
// reasoning is in place and at least one call parses; a call that names
// no tool, fails its schema or makes no action is rejected (an invalid
// step, answered with the reason); calls past MaxActionsPerTurn are not
// run, as extra actions are not.
func (m *toolMode) readCalls(cfg *Config, ep *episode, turn int, reply string) (policy.Message, Parsed, []pendingCall) {
	msg := policy.Message{Role: policy.RoleAssistant, Content: reply}
	var p Parsed
	head, rest := "", reply
	if cfg.Think {
		loc := leadingThinkRE.FindStringSubmatchIndex(reply)
		if loc == nil {
			return msg, p, nil
		}
		head, rest = reply[:loc[1]], reply[loc[1]:]
		p.Think = strings.TrimSpace(specialStrings.Replace(reply[loc[2]:loc[3]]))
	}
	content, calls, ok := m.parser.Parse(rest)
	if !ok || len(calls) == 0 {
		return msg, p, nil
	}
	p.FormatOK = true
	pending := make([]pendingCall, len(calls))
	for i, c := range calls {
		pc := &pending[i]
		pc.call = policy.ToolCall{ID: fmt.Sprintf("call_%d_%d", turn, i+1), Call: c}
		if i >= cfg.MaxActionsPerTurn {
			p.Extra++
			pc.err = fmt.Errorf("not run: at most %d calls per turn", cfg.MaxActionsPerTurn)
			pc.result = pc.err.Error()
			continue
		}
		if pc.err = toolcall.Check(ep.tools, c); pc.err == nil {
			pc.action, pc.err = ep.toolUser.ActionOf(c)
		}
		if pc.err != nil {
			p.Rejected++
			pc.result = "error: " + strings.TrimPrefix(pc.err.Error(), "toolcall: ")
			continue
		}
		p.Actions = append(p.Actions, pc.action)
	}
	if m.native != nil {
		// The template writes the calls from ToolCalls.
		msg.Content = strings.TrimSpace(head + content)
		for _, pc := range pending {
			msg.ToolCalls = append(msg.ToolCalls, pc.call)
		}
	}
	return msg, p, pending
}

// answer fills in the results of the calls that became actions, from the
// results act recorded for the turn's actions in order, and returns the
// messages that answer the calls: one tool message per call with a tool
// template, one user message holding every result otherwise.
func (m *toolMode) answer(pending []pendingCall, results []string) []policy.Message {
	k := 0
	for i := range pending {
		if pending[i].err == nil {
			if k < len(results) {
				pending[i].result = results[k]
			}
			k++
		}
	}
	if m.native != nil {
		out := make([]policy.Message, len(pending))
		for i, pc := range pending {
			out[i] = policy.Message{Role: policy.RoleTool, ToolCallID: pc.call.ID, Name: pc.call.Name, Content: pc.result}
		}
		return out
	}
	var b strings.Builder
	for i, pc := range pending {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Result of %s:\n%s", pc.call.Name, pc.result)
	}
	return []policy.Message{{Role: policy.RoleUser, Content: b.String()}}
}

// render renders a conversation with the episode's tools offered when the
// template has them.
func (m *toolMode) render(ctx context.Context, p policy.Policy, ep *episode, msgs []policy.Message, gen bool) ([]int, error) {
	if m != nil && m.native != nil {
		return m.native.RenderChatTools(ctx, msgs, ep.tools, gen)
	}
	return p.RenderChat(ctx, msgs, gen)
}

// writeCalls writes actions as the compact calls of a demonstration or a
// baseline's reply.
func writeCalls(ep *episode, actions []string) (string, error) {
	calls := make([]toolcall.Call, len(actions))
	for i, a := range actions {
		c, err := ep.toolUser.CallOf(a)
		if err != nil {
			return "", fmt.Errorf("tools: action %q: %w", a, err)
		}
		calls[i] = c
	}
	parser, err := toolcall.New(ToolsCompact)
	if err != nil {
		return "", err
	}
	return parser.Format(calls), nil
}

// toolTurn returns the ids that follow a finished assistant message that
// made calls, to add their tool messages and the generation prompt (and
// "<think>" in think mode): the rendering of [user, assistant with the
// calls, tool messages] after the assistant message's end marker. Like
// userTurn it never renders the history again, and it looks at the
// assistant message only as it renders with the tool messages after it
// (Qwen3's template, for one, writes an empty reasoning block into a
// final assistant message but not into one that tool messages follow).
func (t *chatTemplate) toolTurn(ctx context.Context, tr policy.ToolRenderer, tools []policy.Tool, calls []policy.ToolCall, answers []policy.Message) ([]int, error) {
	if len(t.assistantEnd) == 0 {
		return nil, errors.New("chat template: no end-of-message tokens after an assistant message, so tool messages cannot be added as a delta")
	}
	msgs := append([]policy.Message{canonical[0], {Role: policy.RoleAssistant, Content: probeAssistant, ToolCalls: calls}}, answers...)
	after, err := tr.RenderChatTools(ctx, msgs, tools, true)
	if err != nil {
		return nil, err
	}
	// The assistant message begins at its content, or, for templates that
	// write no content beside calls (Llama 3's), after the generation
	// prompt that follows the user message.
	at := index(after, t.content)
	if at < 0 {
		head, err := tr.RenderChatTools(ctx, msgs[:1], tools, true)
		if err != nil {
			return nil, err
		}
		if len(head) <= len(after) && slices.Equal(after[:len(head)], head) {
			at = len(head)
		}
	}
	end := -1
	if at >= 0 {
		end = index(after[at:], t.assistantEnd)
	}
	if end < 0 {
		return nil, fmt.Errorf("chat template: an assistant message with tool calls does not end with the %d end-of-message tokens of one without, so tool messages cannot be added as a delta", len(t.assistantEnd))
	}
	return append(slices.Clone(after[at+end+len(t.assistantEnd):]), t.thinkOpen...), nil
}
