package rollout

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentrl/agentrl/policy"
)

// Config controls how episodes are played. The defaults are RAGEN's.
type Config struct {
	// MaxTurns is the number of model replies per episode (RAGEN: 5).
	MaxTurns int `yaml:"max_turns"`
	// MaxActionsPerTurn caps the actions taken from one reply (RAGEN: 2).
	MaxActionsPerTurn int `yaml:"max_actions_per_turn"`
	// MaxActionsPerEpisode caps the environment steps per episode (RAGEN's
	// max_actions_per_traj: 10).
	MaxActionsPerEpisode int `yaml:"max_actions_per_episode"`
	// ActionSeparator splits the actions of one answer (RAGEN: "||").
	ActionSeparator string `yaml:"action_separator"`
	// FormatPenalty is added to the episode score for every turn whose
	// reply was malformed or held an action that was not valid (RAGEN: -0.1).
	FormatPenalty float64 `yaml:"format_penalty"`
	// Think asks for <think>…</think> before <answer>…</answer>.
	Think bool `yaml:"think"`
	// Sampling holds the generation parameters; MaxTokens is per turn.
	Sampling policy.Sampling `yaml:"sampling"`
	// Concurrency bounds how many environment steps run at once.
	Concurrency int `yaml:"concurrency"`
	// SampleTimeout bounds one policy call (all the replies of one turn).
	SampleTimeout time.Duration `yaml:"sample_timeout"`
	// StepTimeout bounds one environment Reset or Step.
	StepTimeout time.Duration `yaml:"step_timeout"`
	// Staleness k lets a trainer sample ahead of its learner: the
	// rollouts of step t sample exactly the weights after step t−1−k, so
	// that sampling the next steps overlaps the current update, and a run
	// stays as deterministic as with k = 0 (the rollout engine itself does
	// not read it; package train does).
	Staleness int `yaml:"staleness"`
	// EnvRetries is how many times an environment call that fails (an
	// error, a panic, or StepTimeout overrun) is retried, each time on a
	// fresh instance brought to the episode's state (Reset with its seed,
	// then the actions it took). Past them the episode fails, and the
	// trainer drops its group rather than score it.
	EnvRetries int `yaml:"env_retries"`
	// EnvRetryDelay is the wait before the first retry; it doubles at each
	// further one, up to a minute (a remote environment server that
	// restarts: raise EnvRetries to wait for it longer).
	EnvRetryDelay time.Duration `yaml:"env_retry_delay"`
	// SystemPrefix starts the system message (RAGEN: "You're a helpful assistant. ").
	SystemPrefix string `yaml:"system_prefix"`
	// PromptStyle is "ragen" (the reference's system prompt and turn text)
	// or "compact": no system message and a one-line turn header, for small
	// models trained from scratch, where the reference's ~150 tokens of
	// fixed instructions per turn would dominate the cost of every step.
	PromptStyle string `yaml:"prompt_style"`
	// HistoryWindow, when positive, shows the model only the last k turns
	// (RAGEN's windowed context modes): each reply is sampled after the
	// system prompt and the last k user messages with the k-1 replies
	// between them, and trains as a sequence of its own. 0 keeps the whole
	// conversation, one training sequence per episode.
	HistoryWindow int `yaml:"history_window"`
	// Tools plays the environment through tool calls (it must implement
	// envs.ToolUser): its tools are offered to the policy, the reply's
	// calls are its actions, and each call is answered by a tool message
	// holding the step's observation. See ToolFormat.
	Tools bool `yaml:"tools"`
	// ToolFormat is how tools are offered: "" uses the policy's chat
	// template when it has tools (policy.ToolRenderer, e.g. Qwen3's
	// <tool_call> or Llama 3.1's JSON) and otherwise the compact form;
	// "compact" always describes the tools in the system prompt, expects
	// <call>name {…}</call> and returns results in a user message (the
	// embedded model's form, and the form demonstrations are written in).
	ToolFormat string `yaml:"tool_format"`
	// CostToGo records every turn's cost-to-go before and after its
	// actions, from environments that implement envs.Solver (solver
	// credit needs it; the trainer sets it). Solvers run without the step
	// timeout: they are bounded searches of their own.
	CostToGo bool `yaml:"-"`
	// TurnStates records every turn's starting state (Turn.State): the
	// environment's key, or a render of it, which costs a Render per turn
	// for environments without a StateKeyer. GiGPO needs it; the trainer
	// sets it.
	TurnStates bool `yaml:"-"`
}

// ToolsCompact is Config.ToolFormat's compact form.
const ToolsCompact = "compact"

// Prompt styles.
const (
	PromptRAGEN   = "ragen"
	PromptCompact = "compact"
)

// MaxStaleness bounds Config.Staleness: every version a step may still
// sample is kept, and a checkpoint holds the rollouts sampled ahead.
const MaxStaleness = 8

// DefaultConfig returns RAGEN's rollout settings, with a per-turn token
// budget suited to the embedded policy.
func DefaultConfig() Config {
	return Config{
		MaxTurns:             5,
		MaxActionsPerTurn:    2,
		MaxActionsPerEpisode: 10,
		ActionSeparator:      "||",
		FormatPenalty:        -0.1,
		Think:                true,
		Sampling:             policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 128},
		Concurrency:          8,
		SampleTimeout:        30 * time.Minute,
		StepTimeout:          time.Minute,
		EnvRetries:           2,
		EnvRetryDelay:        time.Second,
		SystemPrefix:         "You're a helpful assistant. ",
		PromptStyle:          PromptRAGEN,
	}
}

// Validate names the first invalid key.
func (c *Config) Validate() error {
	switch {
	case c.MaxTurns < 1:
		return fmt.Errorf("max_turns: must be at least 1, got %d", c.MaxTurns)
	case c.MaxActionsPerTurn < 1:
		return fmt.Errorf("max_actions_per_turn: must be at least 1, got %d", c.MaxActionsPerTurn)
	case c.MaxActionsPerEpisode < 1:
		return fmt.Errorf("max_actions_per_episode: must be at least 1, got %d", c.MaxActionsPerEpisode)
	case c.Sampling.MaxTokens < 1:
		return fmt.Errorf("sampling.max_tokens: must be at least 1, got %d", c.Sampling.MaxTokens)
	case c.Sampling.Temperature < 0:
		return fmt.Errorf("sampling.temperature: must be >= 0, got %v", c.Sampling.Temperature)
	case c.Sampling.TopP < 0 || c.Sampling.TopP > 1:
		return fmt.Errorf("sampling.top_p: must be in [0, 1], got %v", c.Sampling.TopP)
	case c.Sampling.TopK < 0:
		return fmt.Errorf("sampling.top_k: must be >= 0, got %d", c.Sampling.TopK)
	case c.Concurrency < 1:
		return fmt.Errorf("concurrency: must be at least 1, got %d", c.Concurrency)
	case c.SampleTimeout <= 0:
		return fmt.Errorf("sample_timeout: must be positive, got %v", c.SampleTimeout)
	case c.StepTimeout <= 0:
		return fmt.Errorf("step_timeout: must be positive, got %v", c.StepTimeout)
	case c.Staleness < 0 || c.Staleness > MaxStaleness:
		return fmt.Errorf("staleness: must be between 0 and %d, got %d", MaxStaleness, c.Staleness)
	case c.EnvRetries < 0 || c.EnvRetries > 100:
		return fmt.Errorf("env_retries: must be between 0 and 100, got %d", c.EnvRetries)
	case c.EnvRetryDelay < 0:
		return fmt.Errorf("env_retry_delay: must be >= 0, got %v", c.EnvRetryDelay)
	case c.HistoryWindow < 0:
		return fmt.Errorf("history_window: must be >= 0 (0 keeps the whole conversation), got %d", c.HistoryWindow)
	case c.PromptStyle != PromptRAGEN && c.PromptStyle != PromptCompact:
		return fmt.Errorf("prompt_style: must be %q or %q, got %q", PromptRAGEN, PromptCompact, c.PromptStyle)
	case c.ToolFormat != "" && c.ToolFormat != ToolsCompact:
		return fmt.Errorf("tool_format: must be \"\" (the chat template's) or %q, got %q", ToolsCompact, c.ToolFormat)
	case c.ToolFormat != "" && !c.Tools:
		return errors.New("tool_format: set without tools: true")
	case c.Tools && c.HistoryWindow > 0 && c.ToolFormat != ToolsCompact:
		return errors.New("history_window: with tools, needs tool_format: compact (a window would cut a template's tool messages from their calls; compact results are user messages)")
	}
	return nil
}
