// Package policy defines the Policy interface through which the rollout
// engine and the trainer talk to a language model, whether it runs in this
// process (model/native) or behind an OpenAI-compatible HTTP server.
//
// Token in, token out: a Policy samples token ids from token-id prompts and
// reports the log-probability of every token it sampled. Callers keep those
// ids; text is decoded only for environments and people to read, and is
// never re-tokenized for training.
//
// Log-probability convention, used by every implementation: the log-prob of
// a token is log softmax of the model's raw logits at temperature 1, before
// any top-k/top-p truncation, i.e. the policy's own probability of the
// token. Score returns the same quantity, so Score on sampled tokens
// reproduces the log-probs Sample reported. When sampling at a temperature
// other than 1 or with truncation, the behaviour distribution differs from
// the policy and importance ratios should account for it.
package policy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrl/agentrl/text/toolcall"
)

// Roles of chat messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool is a tool's result, answering an assistant's tool call.
	RoleTool = "tool"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers, and Name its tool.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ToolCall is one tool call of an assistant message. Its JSON is the
// OpenAI API's: {"id", "type": "function", "function": {"name",
// "arguments": a string holding the JSON object}}; arguments given as an
// object are accepted too.
type ToolCall struct {
	// ID names the call for the tool message that answers it.
	ID string
	toolcall.Call
}

type wireToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// MarshalJSON writes the call in the OpenAI API's shape.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	w := wireToolCall{ID: c.ID, Type: "function"}
	w.Function.Name = c.Name
	args := string(c.Arguments)
	if args == "" {
		args = "{}"
	}
	var err error
	if w.Function.Arguments, err = json.Marshal(args); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the call in the OpenAI API's shape.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	var w wireToolCall
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.Type != "" && w.Type != "function" {
		return fmt.Errorf("tool call type %q (want \"function\")", w.Type)
	}
	args := w.Function.Arguments
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	*c = ToolCall{ID: w.ID, Call: toolcall.Call{Name: w.Function.Name, Arguments: args}}
	return nil
}

// Tool is a function a model may call: its name, description and the JSON
// schema of its arguments.
type Tool = toolcall.Tool

// ToolRenderer is implemented by policies whose chat template offers tools
// to the model, the way apply_chat_template(messages, tools=...) does, and
// renders tool calls and tool messages. A policy without it (or whose
// ToolCallFormat is "") can still use tools: the rollout engine then
// describes them in the system prompt and expects toolcall's compact form.
type ToolRenderer interface {
	// RenderChatTools is RenderChat with tools offered to the model.
	RenderChatTools(ctx context.Context, messages []Message, tools []Tool, addGenerationPrompt bool) ([]int, error)
	// ToolCallFormat names the text/toolcall format the model writes its
	// calls in, "" when its template shows none.
	ToolCallFormat() string
}

// Sampling holds the parameters of one generation.
type Sampling struct {
	// Temperature divides the logits; 1 samples from the policy itself.
	// 0 means greedy decoding.
	Temperature float64 `yaml:"temperature" json:"temperature"`
	// TopP keeps the smallest set of tokens whose probability reaches TopP;
	// 1 (or 0) disables it.
	TopP float64 `yaml:"top_p" json:"top_p"`
	// TopK keeps the K most likely tokens; 0 disables it.
	TopK int `yaml:"top_k" json:"top_k"`
	// MaxTokens caps the number of generated tokens.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// StopTokens end generation when sampled; the stop token is included
	// in the output.
	StopTokens []int `yaml:"-" json:"stop_tokens,omitempty"`
	// Seed makes the sample reproducible, independently of which other
	// requests share its batch.
	Seed uint64 `yaml:"-" json:"seed"`
	// Constraint, when set, restricts each sampled token to those it
	// allows (guided decoding, such as text/constrain's JSON schemas).
	// Only policies that implement ConstrainedSampler apply it; others
	// ignore it. Give each request its own.
	Constraint Constraint `yaml:"-" json:"-"`
}

// Constraint restricts the tokens of one generated sequence.
type Constraint interface {
	// Allow sets allowed[id] (one entry per token id, all false on
	// entry) for every token that may follow generated, the tokens the
	// sequence has sampled so far. An error (generated left what the
	// constraint accepts, or nothing may follow it) ends the sequence
	// with that error.
	Allow(generated []int, allowed []bool) error
}

// ConstrainedSampler is implemented by policies that apply
// Sampling.Constraint while they sample.
type ConstrainedSampler interface {
	// AppliesConstraints reports whether Sample applies
	// Sampling.Constraint.
	AppliesConstraints() bool
}

// Request asks for one sampled continuation of Prompt.
type Request struct {
	Prompt   []int
	Sampling Sampling
	// Tag names what the request belongs to for a Policy that records
	// requests (the gateway's episode id, which the OpenAI server copies
	// from the X-Agentrl-Episode header). Policies that sample ignore it.
	Tag string
}

// Finish reasons.
const (
	FinishStop   = "stop"   // a stop token was sampled
	FinishLength = "length" // MaxTokens or the context limit was reached
)

// Sample is one generated continuation.
type Sample struct {
	// Tokens are the sampled token ids, including a final stop token.
	Tokens []int
	// LogProbs[i] is the log-probability of Tokens[i] (see the package doc).
	LogProbs []float64
	// Finish is FinishStop or FinishLength.
	Finish string
	// Err, when not nil, says this request failed (a server error, a
	// malformed reply) while the others in the call succeeded; Tokens is
	// then empty.
	Err error
}

// ScoreRequest asks for the log-probabilities of Continuation given Prompt.
type ScoreRequest struct {
	Prompt       []int
	Continuation []int
}

// TokenLogprob is a token and its log-probability (see the package doc for
// the convention), as in a list of a position's most likely next tokens.
type TokenLogprob struct {
	Token   int
	LogProb float64
}

// Info describes a policy.
type Info struct {
	// Name identifies the model (and its version, for a served policy).
	Name string
	// MaxContext is the longest sequence, prompt plus continuation, in tokens.
	MaxContext int
	// StopTokens end an assistant message (for example <|end|> or <|im_end|>).
	StopTokens []int
}

// Policy is a language model the rollout engine can sample from and score
// with. Implementations are safe for concurrent use and batch concurrent
// calls where they can.
type Policy interface {
	// Info describes the model.
	Info() Info
	// RenderChat renders messages with the model's own chat template.
	// With addGenerationPrompt the result ends where the assistant's reply
	// begins.
	RenderChat(ctx context.Context, messages []Message, addGenerationPrompt bool) ([]int, error)
	// Encode tokenizes text without adding special tokens of the chat
	// template; literal special-token text such as "<think>" maps to its
	// special token where the tokenizer has one.
	Encode(ctx context.Context, text string) ([]int, error)
	// Decode turns token ids back into text, special tokens included.
	Decode(ctx context.Context, ids []int) (string, error)
	// Sample generates one continuation per request, in request order. A
	// request that fails alone is reported in its Sample's Err; the error
	// result is for failures of the whole call.
	Sample(ctx context.Context, reqs []Request) ([]Sample, error)
	// Score returns, per request, the log-probability of each continuation
	// token given the prompt and the continuation tokens before it.
	Score(ctx context.Context, reqs []ScoreRequest) ([][]float64, error)
}
