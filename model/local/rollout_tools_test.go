package local

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/text/toolcall"
)

// counterEnv reaches 3 by add(n) calls: the smallest environment with a
// tool.
type counterEnv struct{ n int }

type counterConfig struct{}

func init() {
	envs.MustRegister("local-tools-counter", envs.Registration[counterConfig]{
		Default: func() counterConfig { return counterConfig{} },
		New:     func(counterConfig) (envs.Env, error) { return &counterEnv{}, nil },
	})
}

func (e *counterEnv) Reset(uint64) (string, error) { e.n = 0; return e.Render(), nil }
func (e *counterEnv) Render() string               { return fmt.Sprintf("The counter is %d.", e.n) }
func (e *counterEnv) Instruction() string          { return "Bring the counter to 3." }
func (e *counterEnv) Actions() []string            { return nil }

func (e *counterEnv) Step(a string) (envs.StepResult, error) {
	var k int
	if _, err := fmt.Sscanf(a, "add %d", &k); err != nil {
		return envs.StepResult{Observation: "Unknown action.", Info: envs.Info{}}, nil
	}
	e.n += k
	done := e.n == 3
	return envs.StepResult{Observation: e.Render(), Done: done, Reward: map[bool]float64{true: 1}[done],
		Info: envs.Info{Success: done, ActionValid: true, ActionEffective: true}}, nil
}

func (e *counterEnv) Tools() []toolcall.Tool {
	return []toolcall.Tool{{Name: "add", Description: "Add to the counter.",
		Parameters: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`)}}
}

func (e *counterEnv) ActionOf(c toolcall.Call) (string, error) {
	var args struct{ N int }
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		return "", err
	}
	return fmt.Sprintf("add %d", args.N), nil
}

func (e *counterEnv) CallOf(action string) (toolcall.Call, error) {
	var k int
	if _, err := fmt.Sscanf(action, "add %d", &k); err != nil {
		return toolcall.Call{}, err
	}
	return toolcall.Call{Name: "add", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))}, nil
}

// cannedReplies is a Hugging Face policy whose replies are chosen text,
// tokenized as the model would have sampled it.
type cannedReplies struct {
	*Policy
	reply string
}

func (c cannedReplies) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	ids, err := c.Encode(ctx, c.reply)
	if err != nil {
		return nil, err
	}
	ids = append(ids, c.Info().StopTokens[0])
	out := make([]policy.Sample, len(reqs))
	for i := range out {
		out[i] = policy.Sample{Tokens: ids, LogProbs: make([]float64, len(ids)), Finish: policy.FinishStop}
	}
	return out, nil
}

// TestRolloutToolsWithRealTemplates: multi-turn tool episodes with real
// chat templates (Qwen3's <tool_call>, Llama 3.2's JSON calls answered by
// ipython messages) are token-exact: the tokens played are the whole
// transcript rendered with the tools, though each turn only added its
// reply and a rendered delta.
func TestRolloutToolsWithRealTemplates(t *testing.T) {
	for _, tt := range []struct{ name, reply string }{
		{"qwen3", "<think>\nOne more.\n</think>\n\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"n\": 1}}\n</tool_call>"},
		{"llama3_2", `{"name": "add", "parameters": {"n": 1}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := hftest.Write(filepath.Join(t.TempDir(), tt.name), hftest.Options{TokenizerFrom: lenmlDir(t, tt.name)})
			if err != nil {
				t.Fatal(err)
			}
			hf, err := LoadHF(d.Path, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			p := cannedReplies{hf, tt.reply}
			cfg := rollout.DefaultConfig()
			cfg.Tools, cfg.Think, cfg.MaxTurns = true, false, 4
			f, err := envs.NewFactory("local-tools-counter", nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := rollout.New(context.Background(), cfg, p, f)
			if err != nil {
				t.Fatal(err)
			}
			trajs, err := e.Run(context.Background(), []uint64{1}, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			tr := trajs[0]
			if tr.Err != "" || !tr.Success || len(tr.Turns) != 3 {
				t.Fatalf("err %q success %v turns %d", tr.Err, tr.Success, len(tr.Turns))
			}
			want, err := hf.RenderChatTools(context.Background(), tr.Messages, (&counterEnv{}).Tools(), false)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Tokens, want) {
				got, _ := hf.Decode(context.Background(), tr.Tokens)
				w, _ := hf.Decode(context.Background(), want)
				t.Fatalf("tokens played are not the transcript's rendering:\n got %q\nwant %q", got, w)
			}
			text, _ := hf.Decode(context.Background(), tr.Tokens)
			if n := strings.Count(text, "The counter is 2."); n != 1 {
				t.Errorf("the second call's result appears %d times:\n%s", n, text)
			}
			for _, turn := range tr.Turns {
				if !turn.FormatOK || turn.Executed != 1 {
					t.Errorf("turn %+v", turn)
				}
			}
		})
	}
}
