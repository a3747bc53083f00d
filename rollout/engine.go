// Package rollout is the multi-turn rollout engine: it plays env groups
// (N seeds × K samples) against a policy.Policy and returns trajectories
// that carry the exact token ids the policy saw and sampled, the loss mask,
// behaviour log-probs, per-turn rewards and the token spans of every
// <think> segment.
//
// The engine runs all episodes of a call in lock step, one turn at a time:
// the replies of every live episode are requested in one Policy.Sample call
// (which the embedded policy turns into one batched forward pass and an
// HTTP backend into concurrent requests), then the environments step
// concurrently. A failure of one sample or one environment ends that
// episode with Trajectory.Err set; the others play on.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// Engine plays episodes of one environment configuration against a policy.
type Engine struct {
	cfg     Config
	policy  policy.Policy
	factory *envs.Factory
	tmpl    *chatTemplate
	// tools is how tools are offered (Config.Tools); nil without.
	tools *toolMode
}

// New checks cfg and learns the policy's chat template.
func New(ctx context.Context, cfg Config, p policy.Policy, factory *envs.Factory) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rollout config: %w", err)
	}
	tmpl, err := newChatTemplate(ctx, p, cfg.Think)
	if err != nil {
		return nil, err
	}
	if cfg.Sampling.StopTokens == nil {
		cfg.Sampling.StopTokens = p.Info().StopTokens
	}
	tools, err := newToolMode(&cfg, p)
	if err != nil {
		return nil, err
	}
	if tools != nil && tools.native != nil {
		// A delta must be found for a tool message.
		probe := []policy.ToolCall{{ID: "call_1", Call: toolcall.Call{Name: "probe", Arguments: []byte(`{"x":1}`)}}}
		answer := []policy.Message{{Role: policy.RoleTool, ToolCallID: "call_1", Name: "probe", Content: "probe result"}}
		if _, err := tmpl.toolTurn(ctx, tools.native, []policy.Tool{{Name: "probe"}}, probe, answer); err != nil {
			return nil, err
		}
	}
	return &Engine{cfg: cfg, policy: p, factory: factory, tmpl: tmpl, tools: tools}, nil
}

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// episode is the state of one trajectory being played.
type episode struct {
	traj Trajectory
	env  envs.Env
	// factory builds the episode's environment; taken are the actions
	// its Step took so far, which a fresh instance replays.
	factory     *envs.Factory
	taken       []string
	vocabulary  []string
	actionsLeft int
	finished    bool
	warn        bool
	lastReward  float64
	metricSums  map[string]float64
	metricCount int
	// results are the observations of the last turn's actions, in order
	// ("" for one that did not run).
	results []string
	// toolUser and tools are the environment's, with Config.Tools.
	toolUser envs.ToolUser
	tools    []policy.Tool

	// With a history window, the conversation is also kept in pieces:
	// prefix (everything before the first user message), then per turn
	// the user message with the generation prompt (users) and the reply
	// with its end-of-message tokens (replies).
	prefix  []int
	users   [][]int
	replies [][]int
	// lastPrompt is the window the reply being played was sampled after.
	lastPrompt []int
}

// promptLen is len(ep.prompt(window)) without building it.
func (ep *episode) promptLen(window int) int {
	if window <= 0 {
		return len(ep.traj.Tokens)
	}
	n := len(ep.prefix)
	for j := max(0, len(ep.users)-window); j < len(ep.users); j++ {
		n += len(ep.users[j])
		if j < len(ep.replies) {
			n += len(ep.replies[j])
		}
	}
	return n
}

// prompt returns the tokens the next reply is sampled after: the whole
// conversation, or with a history window of k, the prefix and the last k
// turns.
func (ep *episode) prompt(window int) []int {
	if window <= 0 {
		return ep.traj.Tokens
	}
	n := len(ep.users)
	first := max(0, n-window)
	out := make([]int, 0, ep.promptLen(window))
	out = append(out, ep.prefix...)
	for j := first; j < n; j++ {
		out = append(out, ep.users[j]...)
		if j < len(ep.replies) {
			out = append(out, ep.replies[j]...)
		}
	}
	return out
}

// WithPolicy returns an engine that plays as e does with p instead of e's
// policy: p must share the policy's tokenizer, chat template and context
// (another version of the same model, such as a snapshot of a learner's
// weights or another adapter on the same server).
func (e *Engine) WithPolicy(p policy.Policy) *Engine {
	c := *e
	c.policy = p
	return &c
}

// Run plays len(seeds) groups of k samples each; group g uses environment
// seed seeds[g] and sampling seeds derived from samplingSeed, g, the sample
// index and the turn, so a call is reproducible. Trajectories come back in
// group-major order (all samples of group 0, then group 1, ...). The error
// is non-nil only when ctx ends; individual failures are in Trajectory.Err.
func (e *Engine) Run(ctx context.Context, seeds []uint64, k int, samplingSeed uint64) ([]Trajectory, error) {
	if k < 1 {
		return nil, fmt.Errorf("rollout: group size must be at least 1, got %d", k)
	}
	// A served policy names the weights it samples with (policy.Info);
	// switch them between calls, not during one.
	name := e.policy.Info().Name
	eps := make([]*episode, 0, len(seeds)*k)
	for g, seed := range seeds {
		for s := range k {
			eps = append(eps, &episode{traj: Trajectory{Group: g, Sample: s, Seed: seed, Policy: name}})
		}
	}
	e.parallel(ctx, eps, func(_ int, ep *episode) { e.start(ctx, ep) })

	for turn := 1; turn <= e.cfg.MaxTurns; turn++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var live []*episode
		for _, ep := range eps {
			if !ep.finished && ep.traj.Err == "" {
				live = append(live, ep)
			}
		}
		if len(live) == 0 {
			break
		}
		samples, err := e.sample(ctx, live, turn, samplingSeed)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			for _, ep := range live {
				ep.traj.Err = fmt.Sprintf("turn %d: policy: %v", turn, err)
			}
			continue
		}
		e.parallel(ctx, live, func(i int, ep *episode) { e.playTurn(ctx, ep, turn, samples[i]) })
	}
	e.parallel(ctx, eps, func(_ int, ep *episode) { e.measureDrift(ctx, ep) })
	return finishAll(ctx, eps)
}

// measureDrift renders an episode's whole conversation again and records
// how far that rendering departs from the tokens played
// (Trajectory.RerenderDrift).
func (e *Engine) measureDrift(ctx context.Context, ep *episode) {
	if ep.traj.Err != "" || len(ep.traj.Turns) == 0 {
		return
	}
	full, err := e.tools.render(ctx, e.policy, ep, ep.traj.Messages, !ep.finished)
	if err != nil {
		return
	}
	played := ep.traj.Tokens
	if !ep.finished && e.cfg.Think {
		// The last prompt ends with the "<think>" the engine writes after
		// the generation prompt, which no template renders.
		played = played[:len(played)-len(e.tmpl.thinkOpen)]
	}
	n := 0
	for n < len(full) && n < len(played) && full[n] == played[n] {
		n++
	}
	ep.traj.RerenderDrift, ep.traj.RerenderChecked = max(len(full), len(played))-n, true
}

// finishAll returns the finished trajectories, or ctx's error when it ended
// before they were played.
func finishAll(ctx context.Context, eps []*episode) ([]Trajectory, error) {
	for _, ep := range eps {
		closeEnv(ep.env)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Trajectory, len(eps))
	for i, ep := range eps {
		out[i] = ep.finish()
	}
	return out, nil
}

// finish totals the episode's score and averages its metrics.
func (ep *episode) finish() Trajectory {
	ep.traj.Score = ep.traj.EnvReturn + ep.traj.Penalty
	if ep.metricCount > 0 {
		ep.traj.EnvMetrics = make(map[string]float64, len(ep.metricSums))
		for k, v := range ep.metricSums {
			ep.traj.EnvMetrics[k] = v / float64(ep.metricCount)
		}
	}
	return ep.traj
}

// parallel runs fn over eps with at most cfg.Concurrency at once.
func (e *Engine) parallel(ctx context.Context, eps []*episode, fn func(int, *episode)) {
	sem := make(chan struct{}, e.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, ep := range eps {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i, ep)
		}()
	}
	wg.Wait()
}

// errTimeout reports an environment call that overran StepTimeout.
var errTimeout = errors.New("timed out")

// errPanic reports an environment call that panicked.
var errPanic = errors.New("panicked")

// withTimeout runs fn, giving up after d; a panic in fn is an error. A
// call that overruns keeps its goroutine until it returns; the episode is
// abandoned, so its result is discarded.
func withTimeout[T any](ctx context.Context, d time.Duration, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("%w: %v", errPanic, r)}
			}
		}()
		v, err := fn()
		done <- result{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("after %v: %w", d, errTimeout)
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// open builds the episode's environment, resets it and writes the first two
// messages (system and the first user turn).
func open(ctx context.Context, cfg *Config, factory *envs.Factory, ep *episode, tools *toolMode) error {
	ep.factory = factory
	var obs string
	err := ep.retrying(ctx, cfg, func() error {
		var err error
		obs, err = ep.fresh(ctx, cfg)
		return err
	})
	if err != nil {
		return err
	}
	env := ep.env
	ep.vocabulary = env.Actions()
	ep.actionsLeft = cfg.MaxActionsPerEpisode
	// Without a tool template, the tools are described in the system
	// prompt (or, with no system message, ahead of the first turn).
	described := ""
	if tools != nil {
		if err := openTools(ep, factory.Name()); err != nil {
			return err
		}
		if tools.native == nil {
			described = toolcall.Describe(ep.tools)
		}
	}
	first := policy.Message{Role: policy.RoleUser, Content: turnMessage(cfg, 1, 0, obs, ep.actionsLeft, false)}
	if cfg.PromptStyle == PromptCompact {
		if described != "" {
			first.Content = described + "\n" + first.Content
		}
		ep.traj.Messages = []policy.Message{first}
		return nil
	}
	system := policy.Message{Role: policy.RoleSystem, Content: systemMessage(cfg, env.Instruction(), ep.vocabulary)}
	if described != "" {
		system.Content = strings.TrimRight(system.Content, "\n") + "\n" + described
	}
	ep.traj.Messages = []policy.Message{system, first}
	return nil
}

// start opens the episode and renders its first prompt.
func (e *Engine) start(ctx context.Context, ep *episode) {
	if err := open(ctx, &e.cfg, e.factory, ep, e.tools); err != nil {
		ep.traj.Err = err.Error()
		return
	}
	ids, err := e.tools.render(ctx, e.policy, ep, ep.traj.Messages, true)
	if err != nil {
		ep.traj.Err = fmt.Sprintf("render prompt: %v", err)
		return
	}
	ids = append(ids, e.tmpl.thinkOpen...)
	ep.appendPrompt(ids)
	if e.cfg.HistoryWindow > 0 {
		first := ep.traj.Messages[len(ep.traj.Messages)-1].Content
		user, err := e.tmpl.userTurn(ctx, first)
		if err != nil {
			ep.traj.Err = fmt.Sprintf("render prompt: %v", err)
			return
		}
		if len(user) > len(ids) || !slices.Equal(ids[len(ids)-len(user):], user) {
			ep.traj.Err = "chat template: the first user message renders differently alone; history_window needs a concatenative template"
			return
		}
		ep.prefix, ep.users = ids[:len(ids)-len(user)], [][]int{user}
	}
}

func (ep *episode) appendPrompt(ids []int) {
	ep.traj.Tokens = append(ep.traj.Tokens, ids...)
	ep.traj.LossMask = append(ep.traj.LossMask, make([]bool, len(ids))...)
	ep.traj.LogProbs = append(ep.traj.LogProbs, make([]float64, len(ids))...)
}

// sample asks the policy for one reply per live episode.
func (e *Engine) sample(ctx context.Context, live []*episode, turn int, samplingSeed uint64) ([]policy.Sample, error) {
	maxContext := e.policy.Info().MaxContext
	reqs := make([]policy.Request, len(live))
	for i, ep := range live {
		sp := e.cfg.Sampling
		sp.Seed = mixSeed(samplingSeed, uint64(ep.traj.Group), uint64(ep.traj.Sample), uint64(turn))
		prompt := ep.prompt(e.cfg.HistoryWindow)
		if e.cfg.HistoryWindow > 0 {
			ep.lastPrompt = prompt
		}
		if maxContext > 0 {
			// Leave room for the template's end-of-message tokens.
			sp.MaxTokens = min(sp.MaxTokens, maxContext-len(prompt)-len(e.tmpl.assistantEnd))
		}
		reqs[i] = policy.Request{Prompt: prompt, Sampling: sp}
	}
	// An episode whose context is full cannot reply; it ends truncated.
	var askIdx []int
	var ask []policy.Request
	for i, r := range reqs {
		if r.Sampling.MaxTokens > 0 {
			askIdx, ask = append(askIdx, i), append(ask, r)
		}
	}
	out := make([]policy.Sample, len(live))
	for i := range out {
		out[i].Finish = policy.FinishLength
	}
	if len(ask) == 0 {
		return out, nil
	}
	sctx, cancel := context.WithTimeout(ctx, e.cfg.SampleTimeout)
	defer cancel()
	got, err := e.policy.Sample(sctx, ask)
	if err != nil {
		return nil, err
	}
	if len(got) != len(ask) {
		return nil, fmt.Errorf("policy returned %d samples for %d requests", len(got), len(ask))
	}
	for j, i := range askIdx {
		out[i] = got[j]
		if got[j].Err == nil && len(got[j].LogProbs) != len(got[j].Tokens) {
			out[i].Err = fmt.Errorf("policy returned %d log-probs for %d tokens", len(got[j].LogProbs), len(got[j].Tokens))
		}
	}
	return out, nil
}

// playTurn records a reply, runs its actions and prepares the next prompt.
func (e *Engine) playTurn(ctx context.Context, ep *episode, turn int, s policy.Sample) {
	if s.Err != nil {
		ep.traj.Err = fmt.Sprintf("turn %d: policy: %v", turn, s.Err)
		return
	}
	if len(s.Tokens) == 0 { // context full: nothing more can be said
		if turn == 1 {
			// Not even a first reply fits: the episode has nothing to
			// learn from, and its prompt alone may be longer than a
			// learner can take. It is a failed episode, not a short one.
			ep.traj.Err = fmt.Sprintf("turn 1: the first prompt (%d tokens) leaves no room for a reply in the policy's context of %d tokens",
				len(ep.traj.Tokens), e.policy.Info().MaxContext)
			return
		}
		ep.finished = true
		return
	}
	t := &ep.traj
	tr := Turn{PromptEnd: len(t.Tokens), ReplyStart: len(t.Tokens), ThinkStart: -1, ThinkEnd: -1, Finish: s.Finish}
	if e.cfg.HistoryWindow > 0 {
		tr.Prompt = ep.lastPrompt
	}
	t.Tokens = append(t.Tokens, s.Tokens...)
	t.LogProbs = append(t.LogProbs, s.LogProbs...)
	for range s.Tokens {
		t.LossMask = append(t.LossMask, true)
	}
	tr.ReplyEnd = len(t.Tokens)

	// The reply's text excludes its stop token, which the chat template
	// writes itself when the message is rendered.
	content := s.Tokens
	if n := len(content); s.Finish == policy.FinishStop && n > 0 && slices.Contains(e.cfg.Sampling.StopTokens, content[n-1]) {
		content = content[:n-1]
	}
	text, err := e.policy.Decode(ctx, content)
	if err != nil {
		t.Err = fmt.Sprintf("turn %d: decode: %v", turn, err)
		return
	}
	if e.cfg.Think {
		text = "<think>" + text
		if n, err := e.tmpl.thinkEnd(ctx, content, text[len("<think>"):]); err != nil {
			t.Err = fmt.Sprintf("turn %d: decode: %v", turn, err)
			return
		} else if n >= 0 {
			tr.ThinkStart, tr.ThinkEnd = tr.ReplyStart, tr.ReplyStart+n
		}
	}
	tr.Reply = text
	reply, parsed, calls := e.readReply(ep, turn, text)
	t.Messages = append(t.Messages, reply)
	if err := act(ctx, &e.cfg, ep, parsed, &tr); err != nil {
		t.Err = fmt.Sprintf("turn %d: %v", turn, err)
		return
	}

	if ep.actionsLeft == 0 || turn == e.cfg.MaxTurns {
		ep.finished = true
	}
	closing := e.tmpl.closeAssistant(s.Tokens)
	if e.cfg.HistoryWindow > 0 {
		ep.replies = append(ep.replies, append(slices.Clone(s.Tokens), closing...))
	}
	if ep.finished {
		ep.appendPrompt(closing)
		return
	}
	msgs := e.nextMessages(ep, turn, calls)
	var next []int
	if msgs[0].Role == policy.RoleTool {
		next, err = e.tmpl.toolTurn(ctx, e.tools.native, ep.tools, reply.ToolCalls, msgs)
	} else {
		next, err = e.tmpl.userTurn(ctx, msgs[0].Content)
	}
	if err != nil {
		t.Err = fmt.Sprintf("turn %d: render prompt: %v", turn+1, err)
		return
	}
	user := next
	next = append(slices.Clone(closing), next...)
	nextPrompt := len(t.Tokens) + len(next)
	if e.cfg.HistoryWindow > 0 {
		ep.users = append(ep.users, user)
		nextPrompt = ep.promptLen(e.cfg.HistoryWindow)
	}
	if limit := e.policy.Info().MaxContext; limit > 0 && nextPrompt >= limit {
		// No room left for a reply: the episode ends truncated here.
		ep.finished = true
		ep.appendPrompt(closing)
		return
	}
	t.Messages = append(t.Messages, msgs...)
	ep.appendPrompt(next)
}

// readReply turns a reply into its assistant message and its parsed
// actions: the <answer>'s, or with tools its calls'.
func (e *Engine) readReply(ep *episode, turn int, text string) (policy.Message, Parsed, []pendingCall) {
	if e.tools != nil {
		return e.tools.readCalls(&e.cfg, ep, turn, text)
	}
	return policy.Message{Role: policy.RoleAssistant, Content: text}, ParseReply(text, e.cfg.Think, e.cfg.ActionSeparator, e.cfg.MaxActionsPerTurn), nil
}

// nextMessages are the messages that follow turn's reply: the answers to
// its calls, or the next turn's user message.
func (e *Engine) nextMessages(ep *episode, turn int, calls []pendingCall) []policy.Message {
	if len(calls) > 0 {
		return e.tools.answer(calls, ep.results)
	}
	return []policy.Message{{Role: policy.RoleUser, Content: turnMessage(&e.cfg, turn+1, ep.lastReward, ep.env.Render(), ep.actionsLeft, ep.warn)}}
}

// act runs a parsed reply's actions in the episode's environment, fills in
// the turn's outcome, charges the format penalty and appends the turn.
func act(ctx context.Context, cfg *Config, ep *episode, parsed Parsed, tr *Turn) error {
	t := &ep.traj
	tr.FormatOK, tr.Actions = parsed.FormatOK, parsed.Actions
	if cfg.TurnStates {
		tr.State = stateKey(ep.env)
	}
	if rc, ok := ep.env.(envs.RationaleChecker); ok && parsed.FormatOK && parsed.Think != "" {
		tr.Rationale = rc.CheckRationale(parsed.Think)
	}
	costBefore := math.NaN()
	if cfg.CostToGo {
		costBefore = costToGo(ep.env)
	}
	executedValid := 0
	tr.Invalid += parsed.Rejected
	ep.results = make([]string, len(parsed.Actions))
	for i, a := range parsed.Actions {
		if ep.actionsLeft == 0 || ep.finished {
			for j := i; j < len(parsed.Actions); j++ {
				ep.results[j] = "not run: the episode is over or has no actions left"
			}
			break
		}
		name, ok := mapAction(a, ep.vocabulary)
		if !ok {
			tr.Invalid++
			ep.results[i] = "invalid action"
			continue
		}
		res, err := ep.step(ctx, cfg, name)
		if err != nil {
			return err
		}
		ep.results[i] = res.Observation
		tr.Executed++
		t.Actions++
		ep.actionsLeft--
		tr.Reward += res.Reward
		if !res.Info.ActionValid {
			tr.Invalid++
			continue
		}
		executedValid++
		t.ValidActions++
		if res.Info.ActionEffective {
			t.EffectiveActions++
		}
		t.Success = res.Info.Success
		ep.addMetrics(res.Info.Metrics)
		if res.Done {
			ep.finished, t.Done = true, true
		}
	}
	if cfg.CostToGo {
		if after := costToGo(ep.env); !math.IsNaN(costBefore) && !math.IsNaN(after) {
			tr.Cost = &TurnCost{Before: costBefore, After: after}
		}
	}
	if !tr.FormatOK || tr.Invalid > 0 || executedValid == 0 {
		tr.Penalty = cfg.FormatPenalty
	}
	ep.warn = executedValid == 0
	t.EnvReturn += tr.Reward
	t.Penalty += tr.Penalty
	t.Turns = append(t.Turns, *tr)
	ep.lastReward = tr.Reward
	return nil
}

// fresh builds a new instance of the episode's environment and brings it
// to the episode's state: Reset with its seed, then the actions it took.
// It returns the first observation. The instance replaces the episode's,
// which is closed unless a call on it may still be running.
func (ep *episode) fresh(ctx context.Context, cfg *Config) (string, error) {
	env, err := ep.factory.New()
	if err != nil {
		return "", fmt.Errorf("env: %w", err)
	}
	obs, err := withTimeout(ctx, cfg.StepTimeout, func() (string, error) { return env.Reset(ep.traj.Seed) })
	if err != nil {
		abandon(env, err)
		return "", fmt.Errorf("env reset: %w", err)
	}
	for i, a := range ep.taken {
		if _, err := withTimeout(ctx, cfg.StepTimeout, func() (envs.StepResult, error) { return env.Step(a) }); err != nil {
			abandon(env, err)
			return "", fmt.Errorf("env replaying action %d of %d (%q) on a fresh instance: %w", i+1, len(ep.taken), a, err)
		}
	}
	if ep.env != nil {
		closeEnv(ep.env)
	}
	ep.env = env
	return obs, nil
}

// step takes an action in the episode's environment, retrying a failed
// call on a fresh instance (retrying).
func (ep *episode) step(ctx context.Context, cfg *Config, action string) (envs.StepResult, error) {
	var res envs.StepResult
	first := true
	err := ep.retrying(ctx, cfg, func() error {
		if !first {
			if _, err := ep.fresh(ctx, cfg); err != nil {
				return err
			}
		}
		first = false
		var err error
		env := ep.env
		if res, err = withTimeout(ctx, cfg.StepTimeout, func() (envs.StepResult, error) { return env.Step(action) }); err != nil {
			// The instance may be broken or still busy: a retry builds
			// another, and this one is not reused.
			abandon(env, err)
			ep.env = nil
			return fmt.Errorf("env step %q: %w", action, err)
		}
		return nil
	})
	if err == nil {
		ep.taken = append(ep.taken, action)
	}
	return res, err
}

// retrying runs call, and after a failure waits and runs it again, up to
// cfg.EnvRetries times (each retry counted on the trajectory): an
// environment that panicked, hung or lost its server gets fresh
// instances, and one that fails them all fails the episode. The caller's
// context ending is final.
func (ep *episode) retrying(ctx context.Context, cfg *Config, call func() error) error {
	err := call()
	delay := cfg.EnvRetryDelay
	for try := 1; err != nil && try <= cfg.EnvRetries && ctx.Err() == nil; try++ {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		delay = min(2*delay, time.Minute)
		ep.traj.EnvRetries++
		err = call()
	}
	if err != nil && ep.traj.EnvRetries > 0 {
		return fmt.Errorf("%w (after %d retries on fresh instances)", err, ep.traj.EnvRetries)
	}
	return err
}

// abandon releases an instance after a failed call on it, unless the call
// overran its timeout and may still be running.
func abandon(env envs.Env, err error) {
	if !errors.Is(err, errTimeout) {
		closeEnv(env)
	}
}

// closeEnv releases an environment that holds resources (io.Closer, such
// as a remote session). A close error loses nothing the episode recorded.
func closeEnv(env envs.Env) {
	if c, ok := env.(io.Closer); ok {
		c.Close()
	}
}

// stateKey names the environment's current state (see Turn.State).
func stateKey(env envs.Env) string {
	if k, ok := env.(envs.StateKeyer); ok {
		return k.StateKey()
	}
	return env.Render()
}

// costToGo is the environment's cost-to-go: +Inf when unsolvable, NaN
// when it has no solver or the solver cannot tell.
func costToGo(env envs.Env) float64 {
	s, ok := env.(envs.Solver)
	if !ok {
		return math.NaN()
	}
	n, solvable, err := s.CostToGo()
	switch {
	case err != nil:
		return math.NaN()
	case !solvable:
		return math.Inf(1)
	}
	return float64(n)
}

func (ep *episode) addMetrics(m map[string]float64) {
	if len(m) == 0 {
		return
	}
	if ep.metricSums == nil {
		ep.metricSums = map[string]float64{}
	}
	for k, v := range m {
		ep.metricSums[k] += v
	}
	ep.metricCount++
}

// mixSeed derives a sampling seed (splitmix64 over the parts).
func mixSeed(parts ...uint64) uint64 {
	var h uint64 = 0x243f6a8885a308d3
	for _, p := range parts {
		h ^= p + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h += 0x9e3779b97f4a7c15
		z := h
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		h = z ^ (z >> 31)
	}
	return h
}
