package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/toolcall"
)

// toolWalkEnv is walkEnv played through a tool: move(direction), with an
// expert that walks right.
type toolWalkEnv struct{ walkEnv }

func init() {
	envs.MustRegister("rollout-toolwalk", envs.Registration[walkConfig]{
		Default: func() walkConfig { return walkConfig{} },
		New:     func(walkConfig) (envs.Env, error) { return &toolWalkEnv{walkEnv{hang: make(chan struct{})}}, nil },
	})
}

var moveTool = toolcall.Tool{Name: "move", Description: "Take one step.",
	Parameters: json.RawMessage(`{"type": "object", "properties": {"direction": {"type": "string", "enum": ["Left", "Right", "Wait"]}}, "required": ["direction"]}`)}

func (e *toolWalkEnv) Tools() []toolcall.Tool { return []toolcall.Tool{moveTool} }

func (e *toolWalkEnv) ActionOf(c toolcall.Call) (string, error) {
	var args struct{ Direction string }
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return "", err
	}
	if args.Direction == "Wait" {
		return "", errors.New("waiting is not allowed here")
	}
	return args.Direction, nil
}

func (e *toolWalkEnv) CallOf(action string) (toolcall.Call, error) {
	return toolcall.Call{Name: "move", Arguments: json.RawMessage(fmt.Sprintf(`{"direction":%q}`, action))}, nil
}

func (e *toolWalkEnv) Advise(maxActions int, _ *rand.Rand) (envs.Advice, error) {
	n := min(maxActions, e.goal-e.pos)
	return envs.Advice{Actions: slices.Repeat([]string{"Right"}, n), Rationale: "The goal is to the right."}, nil
}

func moves(format string, dirs ...string) string {
	p, err := toolcall.New(format)
	if err != nil {
		panic(err)
	}
	calls := make([]toolcall.Call, len(dirs))
	for i, d := range dirs {
		calls[i] = toolcall.Call{Name: "move", Arguments: json.RawMessage(fmt.Sprintf(`{"direction":%q}`, d))}
	}
	return p.Format(calls)
}

// toolConfig plays with tools; the byte-level test tokenizer spends a
// token per byte of a call.
func toolConfig() Config {
	cfg := DefaultConfig()
	cfg.Tools = true
	cfg.Sampling.MaxTokens = 1024
	return cfg
}

func toolEngine(t *testing.T, cfg Config, p policy.Policy) *Engine {
	t.Helper()
	f, err := envs.NewFactory("rollout-toolwalk", nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), cfg, p, f)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// checkTokenExact asserts that a trajectory's tokens are the rendering of
// its transcript with the tools offered, its replies in the loss mask.
func checkTokenExact(t *testing.T, p *policytest.Scripted, tr Trajectory, tools []policy.Tool) {
	t.Helper()
	want, err := p.RenderChatTools(context.Background(), tr.Messages, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Tokens, want) {
		got, _ := p.Decode(context.Background(), tr.Tokens)
		w, _ := p.Decode(context.Background(), want)
		t.Fatalf("tokens are not the transcript's rendering:\n got %q\nwant %q", got, w)
	}
	for _, turn := range tr.Turns {
		for i := turn.ReplyStart; i < turn.ReplyEnd; i++ {
			if !tr.LossMask[i] {
				t.Fatalf("reply token %d is not in the loss mask", i)
			}
		}
	}
}

// TestToolsWithTheTemplatesCalls: a policy whose template has tools gets
// the environment's tools through it, its calls become steps, each call is
// answered by a tool message, and the tokens are exactly the transcript
// rendered with the tools.
func TestToolsWithTheTemplatesCalls(t *testing.T) {
	cfg := toolConfig()
	var prompts []string
	p := &policytest.Scripted{ToolFormat: "hermes", Reply: func(prompt string, _ uint64) string {
		prompts = append(prompts, prompt)
		return "Right is closer.</think>\n" + moves("hermes", "Right", "Right")
	}}
	trajs, err := toolEngine(t, cfg, p).Run(context.Background(), []uint64{0, 3}, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompts[0], "# Tools\n") || !strings.Contains(prompts[0], `"name":"move"`) {
		t.Errorf("the tools are not offered through the template:\n%s", prompts[0])
	}
	for _, tr := range trajs {
		if tr.Err != "" || !tr.Success {
			t.Fatalf("seed %d: err %q, success %v", tr.Seed, tr.Err, tr.Success)
		}
		if goal := 2 + int(tr.Seed%4); tr.Actions != goal {
			t.Errorf("seed %d: %d actions for a goal at %d", tr.Seed, tr.Actions, goal)
		}
		checkTokenExact(t, p, tr, []policy.Tool{moveTool})
		var tools, assistants int
		for _, m := range tr.Messages {
			switch {
			case m.Role == policy.RoleTool:
				tools++
				if !strings.HasPrefix(m.ToolCallID, "call_") || m.Name != "move" || !strings.HasPrefix(m.Content, "at ") {
					t.Errorf("tool message %+v", m)
				}
			case m.Role == policy.RoleAssistant:
				assistants++
				if len(m.ToolCalls) != 2 || m.ToolCalls[0].ID == m.ToolCalls[1].ID || strings.Contains(m.Content, "<tool_call>") {
					t.Errorf("assistant message %+v: want two calls with distinct ids, the calls out of the content", m)
				}
			}
		}
		// Every turn but the last is answered by its two tool messages;
		// the solving turn ends the episode.
		if tools != 2*(assistants-1) {
			t.Errorf("seed %d: %d tool messages for %d replies", tr.Seed, tools, assistants)
		}
		for _, turn := range tr.Turns {
			if !turn.FormatOK || turn.Invalid != 0 {
				t.Errorf("seed %d: turn %+v", tr.Seed, turn)
			}
		}
	}
}

// TestToolsCompact: without a tool template (or with tool_format:
// compact) the tools are described in the system prompt, calls are
// written <call>name {…}</call> and answered in one user message.
func TestToolsCompact(t *testing.T) {
	for _, c := range []struct {
		name   string
		p      *policytest.Scripted
		format string
	}{
		{"no tool template", &policytest.Scripted{}, ""},
		{"tool_format compact", &policytest.Scripted{ToolFormat: "hermes"}, ToolsCompact},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := toolConfig()
			cfg.ToolFormat = c.format
			c.p.Reply = func(string, uint64) string { return "go</think>" + moves("compact", "Right") }
			trajs, err := toolEngine(t, cfg, c.p).Run(context.Background(), []uint64{1}, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			tr := trajs[0]
			if tr.Err != "" || !tr.Success || tr.Actions != 3 {
				t.Fatalf("err %q success %v actions %d", tr.Err, tr.Success, tr.Actions)
			}
			checkTokenExact(t, c.p, tr, nil)
			if sys := tr.Messages[0]; sys.Role != policy.RoleSystem || !strings.Contains(sys.Content, toolcall.Describe([]toolcall.Tool{moveTool})) {
				t.Errorf("system message does not describe the tools: %q", sys.Content)
			}
			if m := tr.Messages[3]; m.Role != policy.RoleUser || !strings.HasPrefix(m.Content, "Result of move:\nat 1") {
				t.Errorf("call answered by %+v", m)
			}
		})
	}
}

// TestMalformedCallsAreInvalidSteps: a reply with no call that parses is a
// format failure (the penalty applies); a call of an unknown tool, with
// arguments the schema refuses or that make no action is an invalid step
// answered with the reason; calls past the per-turn cap are not run. No
// episode fails.
func TestMalformedCallsAreInvalidSteps(t *testing.T) {
	replies := []string{
		`no call at all`,
		`<tool_call>{"name": "move", "arguments": {"direction": "Right"</tool_call>`,
		moves("hermes", "Right", "Right", "Right"),
		`<tool_call>{"name": "jump", "arguments": {}}</tool_call>`,
		`<tool_call>{"name": "move", "arguments": {"direction": "Up"}}</tool_call>`,
		`<tool_call>{"name": "move", "arguments": {"direction": "Wait"}}</tool_call>`,
		moves("hermes", "Right"),
	}
	cfg := toolConfig()
	cfg.Think, cfg.MaxTurns = false, len(replies)
	turn := 0
	p := &policytest.Scripted{ToolFormat: "hermes", Reply: func(string, uint64) string {
		turn++
		return replies[turn-1]
	}}
	trajs, err := toolEngine(t, cfg, p).Run(context.Background(), []uint64{3}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Err != "" || len(tr.Turns) != len(replies) {
		t.Fatalf("err %q, %d turns", tr.Err, len(tr.Turns))
	}
	// The replies are trained as sampled, though the template writes the
	// calls of some differently (the drift check sees it).
	for i, turn := range tr.Turns {
		got, _ := p.Decode(context.Background(), tr.Tokens[turn.ReplyStart:turn.ReplyEnd])
		if got != replies[i]+"<|end|>" {
			t.Errorf("turn %d trained %q, sampled %q", i+1, got, replies[i])
		}
	}
	if !tr.RerenderChecked || tr.RerenderDrift == 0 {
		t.Errorf("re-render drift %d (checked %v): the template writes calls differently from some replies", tr.RerenderDrift, tr.RerenderChecked)
	}
	for i, want := range []struct {
		format            bool
		invalid, executed int
	}{{false, 0, 0}, {false, 0, 0}, {true, 0, 2}, {true, 1, 0}, {true, 1, 0}, {true, 1, 0}, {true, 0, 1}} {
		got := tr.Turns[i]
		if got.FormatOK != want.format || got.Invalid != want.invalid || got.Executed != want.executed {
			t.Errorf("turn %d (%q): format %v invalid %d executed %d, want %+v", i+1, replies[i], got.FormatOK, got.Invalid, got.Executed, want)
		}
	}
	if want := 5 * cfg.FormatPenalty; abs(tr.Penalty-want) > 1e-9 {
		t.Errorf("penalty %v, want %v (two format failures, three invalid steps)", tr.Penalty, want)
	}
	var results []string
	for _, m := range tr.Messages {
		if m.Role == policy.RoleTool {
			results = append(results, m.Content)
		}
	}
	for _, want := range []string{`no tool is named "jump"`, "direction", "waiting is not allowed here", "not run: at most 2 calls per turn"} {
		if !slices.ContainsFunc(results, func(r string) bool { return strings.Contains(r, want) }) {
			t.Errorf("no tool result says %q: %q", want, results)
		}
	}
}

func TestToolsNeedAToolUser(t *testing.T) {
	cfg := toolConfig()
	trajs, err := newEngine(t, cfg, fixedReply("x")).Run(context.Background(), []uint64{0}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(trajs[0].Err, "declares no tools") {
		t.Errorf("err %q, want the environment named as having no tools", trajs[0].Err)
	}
	bad := DefaultConfig()
	bad.ToolFormat = ToolsCompact
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "without tools") {
		t.Errorf("tool_format without tools: %v", err)
	}
	bad.Tools, bad.ToolFormat = true, "hermes"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "tool_format") {
		t.Errorf("tool_format hermes: %v", err)
	}
	bad.ToolFormat, bad.HistoryWindow = "", 1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "compact") {
		t.Errorf("history_window with template tools: %v", err)
	}
}

// TestToolDemonstrations: the expert's demonstrations, the random baseline
// and a chat model play through compact calls, and a chat model's run
// equals the token engine's.
func TestToolDemonstrations(t *testing.T) {
	cfg := toolConfig()
	factory, err := envs.NewFactory("rollout-toolwalk", nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds := []uint64{0, 1, 2, 3}
	demos, err := Demonstrate(context.Background(), cfg, factory, seeds, DemoOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range demos {
		if tr.Err != "" || !tr.Success || tr.Turns[0].Reply != "<think>The goal is to the right.</think>"+moves("compact", "Right", "Right") {
			t.Errorf("seed %d: err %q success %v first reply %q", tr.Seed, tr.Err, tr.Success, tr.Turns[0].Reply)
		}
	}
	random, err := RunRandom(context.Background(), cfg, factory, seeds, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range random {
		if tr.Err != "" || !tr.Turns[0].FormatOK {
			t.Errorf("random seed %d: err %q turn %+v", tr.Seed, tr.Err, tr.Turns[0])
		}
	}
	reply := "one step</think>" + moves("compact", "Right")
	chat, err := RunChat(context.Background(), cfg, chatFunc(func(context.Context, []policy.Message, policy.Sampling) (string, error) {
		return reply, nil
	}), factory, seeds)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := toolEngine(t, cfg, fixedReply(reply)).Run(context.Background(), seeds, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range seeds {
		if !reflect.DeepEqual(chat[i].Messages, tok[i].Messages) || chat[i].Score != tok[i].Score || !chat[i].Success {
			t.Errorf("seed %d: chat and token engines differ:\n%+v\n%+v", seeds[i], chat[i].Messages, tok[i].Messages)
		}
	}
}

// TestToolsCompactWithAHistoryWindow: in the compact form, call results
// are user messages, so a history window keeps the prefix and the last
// turns: each reply is sampled after the results of the calls before it.
func TestToolsCompactWithAHistoryWindow(t *testing.T) {
	cfg := toolConfig()
	cfg.ToolFormat, cfg.HistoryWindow = ToolsCompact, 1
	var prompts []string
	p := &policytest.Scripted{Reply: func(prompt string, _ uint64) string {
		prompts = append(prompts, prompt)
		return "go</think>" + moves("compact", "Right")
	}}
	trajs, err := toolEngine(t, cfg, p).Run(context.Background(), []uint64{2}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Err != "" || !tr.Success || tr.Actions != 4 {
		t.Fatalf("err %q success %v actions %d", tr.Err, tr.Success, tr.Actions)
	}
	checkTokenExact(t, p, tr, nil)
	last := prompts[len(prompts)-1]
	if !strings.Contains(last, "Result of move:\nat 3, goal 4") || strings.Contains(last, "at 1, goal 4") || !strings.Contains(last, "move: Take one step.") {
		t.Errorf("the last prompt is not the prefix and the last turn:\n%s", last)
	}
}
