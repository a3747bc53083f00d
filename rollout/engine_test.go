package rollout

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// walkEnv: reach cell Goal on a line by Left/Right; "Hang" blocks forever,
// "Crash" returns an error.
type walkEnv struct {
	pos, goal int
	hang      chan struct{}
}

type walkConfig struct{}

func init() {
	envs.MustRegister("rollout-walk", envs.Registration[walkConfig]{
		Default: func() walkConfig { return walkConfig{} },
		New:     func(walkConfig) (envs.Env, error) { return &walkEnv{hang: make(chan struct{})}, nil },
	})
}

func (e *walkEnv) Reset(seed uint64) (string, error) {
	e.pos, e.goal = 0, 2+int(seed%4)
	return e.Render(), nil
}

func (e *walkEnv) Step(a string) (envs.StepResult, error) {
	switch a {
	case "Hang":
		<-e.hang
	case "Crash":
		return envs.StepResult{}, errors.New("boom")
	case "Left", "Right":
		old := e.pos
		if a == "Left" {
			e.pos = max(0, e.pos-1)
		} else {
			e.pos++
		}
		done := e.pos == e.goal
		r := -0.1
		if done {
			r = 1
		}
		return envs.StepResult{Observation: e.Render(), Reward: r, Done: done,
			Info: envs.Info{Success: done, ActionValid: true, ActionEffective: old != e.pos, Metrics: map[string]float64{"pos": float64(e.pos)}}}, nil
	case "Wait":
		return envs.StepResult{Observation: e.Render(), Info: envs.Info{}}, nil // env-level invalid
	}
	return envs.StepResult{}, fmt.Errorf("unexpected action %q", a)
}

func (e *walkEnv) Render() string      { return fmt.Sprintf("at %d, goal %d", e.pos, e.goal) }
func (e *walkEnv) Instruction() string { return "Walk right to the goal." }
func (e *walkEnv) Actions() []string   { return []string{"Left", "Right", "Wait", "Hang", "Crash"} }

func newEngine(t *testing.T, cfg Config, p policy.Policy) *Engine {
	t.Helper()
	f, err := envs.NewFactory("rollout-walk", nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), cfg, p, f)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func fixedReply(reply string) *policytest.Scripted {
	return &policytest.Scripted{Reply: func(string, uint64) string { return reply }}
}

func TestTrajectoryTokensAreTheConversation(t *testing.T) {
	p := fixedReply("I step right twice.</think><answer>Right || right || Right</answer>")
	e := newEngine(t, DefaultConfig(), p)
	trajs, err := e.Run(context.Background(), []uint64{0, 1, 2}, 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(trajs) != 6 || p.SampleCalls > DefaultConfig().MaxTurns {
		t.Fatalf("%d trajectories in %d sample calls", len(trajs), p.SampleCalls)
	}
	tok := tokenizer.New()
	for _, tr := range trajs {
		if tr.Err != "" {
			t.Fatalf("unexpected error: %s", tr.Err)
		}
		if len(tr.Tokens) != len(tr.LossMask) || len(tr.Tokens) != len(tr.LogProbs) {
			t.Fatalf("lengths differ: %d %d %d", len(tr.Tokens), len(tr.LossMask), len(tr.LogProbs))
		}
		// The token ids are exactly the chat template's rendering of the
		// transcript: prompts were extended, never re-tokenized.
		msgs := make([]tokenizer.Message, len(tr.Messages))
		for i, m := range tr.Messages {
			msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
		}
		want, _ := tok.Render(msgs, false)
		if !slices.Equal(tr.Tokens, want) {
			t.Fatalf("tokens differ from the rendered transcript\n got %v\nwant %v", tr.Tokens, want)
		}
		masked := 0
		for _, turn := range tr.Turns {
			reply := tr.Tokens[turn.ReplyStart:turn.ReplyEnd]
			if got := policytest.LogProbs(tr.Tokens[:turn.ReplyStart], reply); !slices.Equal(got, tr.LogProbs[turn.ReplyStart:turn.ReplyEnd]) {
				t.Errorf("behaviour log-probs differ from the policy's")
			}
			for i := turn.ReplyStart; i < turn.ReplyEnd; i++ {
				if !tr.LossMask[i] {
					t.Fatalf("reply token %d not in the loss mask", i)
				}
			}
			masked += turn.ReplyEnd - turn.ReplyStart
			if tr.Tokens[turn.PromptEnd-1] != tokenizer.ThinkID {
				t.Errorf("prompt does not end with <think>")
			}
			think, _ := tok.Decode(tr.Tokens[turn.ThinkStart:turn.ThinkEnd])
			if think != "I step right twice." {
				t.Errorf("think span decodes to %q", think)
			}
			if len(turn.Actions) != 2 || turn.Executed > 2 {
				t.Errorf("per-turn cap not applied: %+v", turn)
			}
		}
		n := 0
		for _, m := range tr.LossMask {
			if m {
				n++
			}
		}
		if n != masked {
			t.Errorf("loss mask covers %d tokens, replies %d", n, masked)
		}
		// Goal at 2..5, two steps a turn: solved at the expected turn with
		// the expected return.
		goal := 2 + int(tr.Seed%4)
		if !tr.Success || !tr.Done || tr.Actions != goal {
			t.Errorf("seed %d: success %v after %d actions", tr.Seed, tr.Success, tr.Actions)
		}
		if want := 1 - 0.1*float64(goal-1); abs(tr.Score-want) > 1e-9 || tr.Penalty != 0 {
			t.Errorf("seed %d: score %v, want %v", tr.Seed, tr.Score, want)
		}
		if tr.EnvMetrics["pos"] <= 0 {
			t.Errorf("env metrics not averaged: %v", tr.EnvMetrics)
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	reply := func(prompt string, seed uint64) string {
		return fmt.Sprintf("seed %d</think><answer>%s</answer>", seed%5, []string{"Left", "Right"}[seed%2])
	}
	run := func() []Trajectory {
		e := newEngine(t, DefaultConfig(), &policytest.Scripted{Reply: reply})
		trajs, err := e.Run(context.Background(), []uint64{3, 4}, 3, 11)
		if err != nil {
			t.Fatal(err)
		}
		return trajs
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seeds differ")
	}
	seeds := map[string]bool{}
	for _, tr := range a {
		seeds[tr.Turns[0].Reply] = true
	}
	if len(seeds) < 2 {
		t.Error("samples of a group all got the same sampling seed")
	}
}

func TestFormatPenaltyAndWarning(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxTurns = 3
	p := fixedReply("no tags at all")
	trajs, err := newEngine(t, cfg, p).Run(context.Background(), []uint64{0}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if len(tr.Turns) != 3 || tr.Actions != 0 {
		t.Fatalf("turns %d actions %d", len(tr.Turns), tr.Actions)
	}
	if abs(tr.Penalty-(-0.3)) > 1e-9 || abs(tr.Score-(-0.3)) > 1e-9 {
		t.Errorf("penalty %v score %v, want -0.3", tr.Penalty, tr.Score)
	}
	if !strings.Contains(tr.Messages[3].Content, noValidActionWarning) {
		t.Errorf("second user turn lacks the warning:\n%s", tr.Messages[3].Content)
	}
	if !strings.HasPrefix(tr.Messages[3].Content, "Reward:\n0.0\n") {
		t.Errorf("second user turn does not start with the reward:\n%s", tr.Messages[3].Content)
	}

	// Unknown and env-invalid actions are penalised but valid ones still run.
	p = fixedReply("x</think><answer>Jump || Right</answer>")
	trajs, _ = newEngine(t, cfg, p).Run(context.Background(), []uint64{0}, 1, 0)
	if tr := trajs[0]; tr.Turns[0].Invalid != 1 || tr.Turns[0].Executed != 1 || tr.Turns[0].Penalty != -0.1 {
		t.Errorf("unknown action: %+v", tr.Turns[0])
	}
	p = fixedReply("x</think><answer>Wait</answer>")
	trajs, _ = newEngine(t, cfg, p).Run(context.Background(), []uint64{0}, 1, 0)
	if tr := trajs[0]; tr.Turns[0].Invalid != 1 || tr.ValidActions != 0 || tr.Penalty > -0.29 {
		t.Errorf("env-invalid action: %+v", tr)
	}
}

func TestActionBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxActionsPerEpisode = 3
	p := fixedReply("x</think><answer>Left || Left</answer>")
	trajs, _ := newEngine(t, cfg, p).Run(context.Background(), []uint64{0}, 1, 0)
	tr := trajs[0]
	if tr.Actions != 3 || len(tr.Turns) != 2 || tr.Done {
		t.Errorf("actions %d turns %d done %v; want 3 actions over 2 turns", tr.Actions, len(tr.Turns), tr.Done)
	}
	if !strings.Contains(tr.Messages[3].Content, "You have 1 actions left") {
		t.Errorf("budget not shown: %s", tr.Messages[3].Content)
	}
}

func TestFailuresAreIsolated(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StepTimeout = 50 * time.Millisecond
	cfg.EnvRetryDelay = time.Millisecond
	p := &policytest.Scripted{
		Reply: func(prompt string, seed uint64) string {
			switch {
			case strings.Contains(prompt, "goal 3"): // env seed 1
				return "x</think><answer>Hang</answer>"
			case strings.Contains(prompt, "goal 4"): // env seed 2
				return "x</think><answer>Crash</answer>"
			}
			return "x</think><answer>Right || Right</answer>"
		},
		Fail: func(prompt string, seed uint64) error {
			if strings.Contains(prompt, "at 2, goal 5") { // env seed 3, second turn
				return errors.New("server said 500")
			}
			return nil
		},
	}
	start := time.Now()
	trajs, err := newEngine(t, cfg, p).Run(context.Background(), []uint64{0, 1, 2, 3}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("a hanging env held the run for %v", time.Since(start))
	}
	for _, tr := range trajs {
		var want string
		switch tr.Seed {
		case 1:
			want = "timed out"
		case 2:
			want = "boom"
		case 3:
			want = "server said 500"
		}
		if want == "" && (tr.Err != "" || !tr.Success) {
			t.Errorf("seed %d: healthy episode harmed: err %q success %v", tr.Seed, tr.Err, tr.Success)
		}
		if want != "" && !strings.Contains(tr.Err, want) {
			t.Errorf("seed %d: err %q, want %q", tr.Seed, tr.Err, want)
		}
	}
	if len(trajs) != 8 {
		t.Errorf("%d trajectories, want 8: none may be lost", len(trajs))
	}
}

// flakyEnv is walkEnv whose first instance for each seed fails its second
// Step the way mode says (panic, hang or error, as a remote server's 5xx
// would); the instances built after it are healthy.
type flakyEnv struct {
	walkEnv
	mode  string
	calls int
	bad   bool
}

type flakyConfig struct {
	Mode string `yaml:"mode"`
}

// flakySeeds records which seeds already had their failing instance.
var flakySeeds sync.Map

func init() {
	envs.MustRegister("rollout-flaky", envs.Registration[flakyConfig]{
		Default: func() flakyConfig { return flakyConfig{} },
		New: func(c flakyConfig) (envs.Env, error) {
			return &flakyEnv{walkEnv: walkEnv{hang: make(chan struct{})}, mode: c.Mode}, nil
		},
	})
}

func (e *flakyEnv) Reset(seed uint64) (string, error) {
	_, seen := flakySeeds.LoadOrStore(fmt.Sprint(e.mode, seed), true)
	e.bad, e.calls = !seen, 0
	return e.walkEnv.Reset(seed)
}

func (e *flakyEnv) Step(a string) (envs.StepResult, error) {
	if e.calls++; e.bad && e.calls == 2 {
		switch e.mode {
		case "panic":
			panic("the environment broke")
		case "hang":
			<-e.hang
		default:
			return envs.StepResult{}, errors.New("env server: HTTP 503")
		}
	}
	return e.walkEnv.Step(a)
}

// TestFlakyEnvironmentsAreRetried: an environment call that panics, hangs
// or fails is retried on a fresh instance brought to the episode's state
// (its seed, then its actions), and the episode plays on exactly as on a
// healthy environment, its retries counted.
func TestFlakyEnvironmentsAreRetried(t *testing.T) {
	p := fixedReply("x</think><answer>Right || Right</answer>")
	healthy, err := newEngine(t, DefaultConfig(), p).Run(context.Background(), []uint64{0, 1, 2}, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"panic", "hang", "error"} {
		cfg := DefaultConfig()
		cfg.StepTimeout, cfg.EnvRetryDelay = 100*time.Millisecond, time.Millisecond
		f, err := envs.NewFactoryYAML("rollout-flaky", []byte("mode: "+mode))
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(context.Background(), cfg, p, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Run(context.Background(), []uint64{0, 1, 2}, 2, 5)
		if err != nil {
			t.Fatal(err)
		}
		retries := 0
		for i := range got {
			retries += got[i].EnvRetries
			g, w := got[i], healthy[i]
			g.EnvRetries = 0
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s: trajectory %d differs from the healthy run's:\n%+v\n%+v", mode, i, g, w)
			}
		}
		if retries != 3 { // one failing instance per seed
			t.Errorf("%s: %d retries, want 3", mode, retries)
		}
		if m := Metrics("train", got, 2); m["train/env_retries"] != 3 || m["train/failed"] != 0 {
			t.Errorf("%s: metrics %v", mode, m)
		}
	}
}

func TestContextLimitTruncates(t *testing.T) {
	p := fixedReply(strings.Repeat("think ", 40) + "</think><answer>Left</answer>")
	p.MaxContext = 900
	trajs, err := newEngine(t, DefaultConfig(), p).Run(context.Background(), []uint64{0}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := trajs[0]
	if tr.Err != "" || len(tr.Tokens) > 900 || len(tr.Turns) == DefaultConfig().MaxTurns {
		t.Errorf("context limit not respected: %d tokens, %d turns, err %q", len(tr.Tokens), len(tr.Turns), tr.Err)
	}
}

// TestFirstPromptLongerThanTheContextFails: an episode whose first prompt
// leaves no room for a reply is a failed episode (which the trainer drops
// with its group), not one that ended short: its prompt alone may be
// longer than a learner can take.
func TestFirstPromptLongerThanTheContextFails(t *testing.T) {
	p := fixedReply("<think>x</think><answer>Left</answer>")
	p.MaxContext = 40
	trajs, err := newEngine(t, DefaultConfig(), p).Run(context.Background(), []uint64{0}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trajs {
		if !strings.Contains(tr.Err, "leaves no room for a reply") || len(tr.Turns) != 0 || p.SampledRequests != 0 {
			t.Errorf("err %q, %d turns, %d requests sampled", tr.Err, len(tr.Turns), p.SampledRequests)
		}
	}
}

func TestCancelledRunReturnsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newEngine(t, DefaultConfig(), fixedReply("x")).Run(ctx, []uint64{0}, 1, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestParseReply(t *testing.T) {
	cases := []struct {
		reply   string
		think   bool
		ok      bool
		thought string
		actions []string
		extra   int
	}{
		{"<think>go up</think><answer>Up || Left</answer>", true, true, "go up", []string{"Up", "Left"}, 0},
		{"<think>a</think>\n <answer> Up||  ||Down || Right </answer>", true, true, "a", []string{"Up", "Down"}, 1},
		{"<think>a</think><answer></answer>", true, true, "a", nil, 0},
		{"<answer>Up</answer>", true, false, "", nil, 0},
		{"<answer>Up</answer>", false, true, "", []string{"Up"}, 0},
		{"<think>x<answer>Up</answer>", true, false, "", nil, 0},
		{"<think>x</think>text<answer>Up</answer>", true, false, "", nil, 0},
		{"<think>x</think><answer>Up <|im_end|></answer>", true, true, "x", []string{"Up"}, 0},
	}
	for _, c := range cases {
		p := ParseReply(c.reply, c.think, "||", 2)
		if p.FormatOK != c.ok || p.Think != c.thought || !slices.Equal(p.Actions, c.actions) || p.Extra != c.extra {
			t.Errorf("ParseReply(%q) = %+v", c.reply, p)
		}
	}
}

func TestFormatReward(t *testing.T) {
	for r, want := range map[float64]string{0: "0.0", -0.1 + -0.1: "-0.2", 10.8: "10.8", 1: "1.0"} {
		if got := formatReward(r); got != want {
			t.Errorf("formatReward(%v) = %q, want %q", r, got, want)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add("<think>a</think><answer>Up || Down</answer>")
	f.Add("<answer>||||</answer>")
	f.Fuzz(func(t *testing.T, reply string) {
		p := ParseReply(reply, true, "||", 2)
		if len(p.Actions) > 2 {
			t.Fatalf("cap exceeded: %v", p.Actions)
		}
		for _, a := range p.Actions {
			if a == "" || strings.Contains(a, "||") {
				t.Fatalf("bad action %q", a)
			}
		}
	})
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestCompactPrompt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PromptStyle = PromptCompact
	trajs, err := newEngine(t, cfg, fixedReply("x</think><answer>Left</answer>")).Run(context.Background(), []uint64{0}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs := trajs[0].Messages
	if msgs[0].Role != policy.RoleUser || msgs[0].Content != "Turn 1, 10 actions left.\nat 0, goal 2" {
		t.Errorf("first message %+v", msgs[0])
	}
	if msgs[2].Content != "Reward: -0.1\nTurn 2, 9 actions left.\nat 0, goal 2" {
		t.Errorf("second user message %q", msgs[2].Content)
	}
	cfg.PromptStyle = "verbose"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "prompt_style") {
		t.Errorf("bad prompt style: %v", err)
	}
}

func TestHistoryWindow(t *testing.T) {
	for _, style := range []string{PromptRAGEN, PromptCompact} {
		cfg := DefaultConfig()
		cfg.PromptStyle = style
		cfg.HistoryWindow = 1
		cfg.MaxTurns = 4
		p := fixedReply("x</think><answer>Left</answer>")
		trajs, err := newEngine(t, cfg, p).Run(context.Background(), []uint64{1}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr := trajs[0]
		if tr.Err != "" || len(tr.Turns) != 4 {
			t.Fatalf("%s: err %q, %d turns", style, tr.Err, len(tr.Turns))
		}
		tok := tokenizer.New()
		seqs := tr.Sequences()
		if len(seqs) != 4 {
			t.Fatalf("%d sequences, want one per turn", len(seqs))
		}
		var ep episode
		ep.traj = tr
		for i := range tr.Turns {
			// The window holds the system message (ragen style) and the
			// turn's own user message: exactly the rendering of those.
			var msgs []tokenizer.Message
			userIdx := 2*i + 1
			if style == PromptRAGEN {
				msgs = append(msgs, tokenizer.Message{Role: "system", Content: tr.Messages[0].Content})
			} else {
				userIdx = 2 * i
			}
			msgs = append(msgs, tokenizer.Message{Role: "user", Content: tr.Messages[userIdx].Content})
			want, _ := tok.Render(msgs, true)
			want = append(want, tokenizer.ThinkID)
			if got := tr.TurnPrompt(i); !slices.Equal(got, want) {
				t.Fatalf("%s turn %d: window prompt\n got %v\nwant %v", style, i, got, want)
			}
			s := seqs[i]
			reply := tr.Tokens[tr.Turns[i].ReplyStart:tr.Turns[i].ReplyEnd]
			if !slices.Equal(s.Tokens[len(want):], reply) || s.LossMask[len(want)-1] || !s.LossMask[len(want)] {
				t.Fatalf("turn %d: sequence does not end with the reply under the mask", i)
			}
			if got := policytest.LogProbs(want, reply); !slices.Equal(got, s.LogProbs[len(want):]) {
				t.Errorf("turn %d: behaviour log-probs were not computed on the window", i)
			}
		}
		if w := ep.window(1); len(w) != map[bool]int{true: 2, false: 1}[style == PromptRAGEN] {
			t.Errorf("%s: chat window holds %d messages", style, len(w))
		}
	}
}

// forgetful renders conversations as Qwen3's template does with earlier
// turns: the reasoning of an assistant message before the last user
// message is dropped.
type forgetful struct{ *policytest.Scripted }

func (f forgetful) RenderChat(ctx context.Context, msgs []policy.Message, gen bool) ([]int, error) {
	last := -1
	for i, m := range msgs {
		if m.Role == policy.RoleUser {
			last = i
		}
	}
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].Role == policy.RoleAssistant && i < last {
			if _, after, ok := strings.Cut(out[i].Content, "</think>"); ok {
				out[i].Content = after
			}
		}
	}
	return f.Scripted.RenderChat(ctx, out, gen)
}

// TestPromptsExtendTheTokensPlayed: every turn's prompt is the previous
// prompt, the reply as sampled and the new message's delta, even with a
// template that renders earlier turns differently; the drift a full
// re-rendering would bring is measured, not applied.
func TestPromptsExtendTheTokensPlayed(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     policy.Policy
		drift bool
	}{
		{"concatenative", fixedReply("go left</think><answer>Left</answer>"), false},
		{"drops earlier reasoning", forgetful{fixedReply("go left</think><answer>Left</answer>")}, true},
	} {
		cfg := DefaultConfig()
		cfg.MaxTurns = 3
		trajs, err := newEngine(t, cfg, c.p).Run(context.Background(), []uint64{2, 3}, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trajs {
			if tr.Err != "" || len(tr.Turns) < 2 {
				t.Fatalf("%s: %d turns, err %q", c.name, len(tr.Turns), tr.Err)
			}
			for k := 1; k < len(tr.Turns); k++ {
				// Turn k's prompt begins with turn k−1's prompt and reply.
				if tr.Turns[k].PromptEnd <= tr.Turns[k-1].ReplyEnd {
					t.Errorf("%s: turn %d's prompt does not extend turn %d's reply", c.name, k, k-1)
				}
			}
			if !tr.RerenderChecked || (tr.RerenderDrift > 0) != c.drift {
				t.Errorf("%s: rerender drift %d (checked %v), want drift %v", c.name, tr.RerenderDrift, tr.RerenderChecked, c.drift)
			}
		}
		m := Metrics("train", trajs, 2)
		if got := m["train/rerender_drift"]; (got > 0) != c.drift {
			t.Errorf("%s: train/rerender_drift %v", c.name, got)
		}
	}
}
