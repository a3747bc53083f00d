package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/policy"
)

// chatMessage is a message of a chat request; content is a string, null,
// or a list of text parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCalls are an assistant message's calls, ToolCallID and Name
	// what a tool message answers.
	ToolCalls  []policy.ToolCall `json:"tool_calls"`
	ToolCallID string            `json:"tool_call_id"`
	Name       string            `json:"name"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	samplingFields
	Messages             []chatMessage   `json:"messages"`
	MaxTokens            optInt          `json:"max_tokens"`
	MaxCompletionTokens  optInt          `json:"max_completion_tokens"`
	Logprobs             *bool           `json:"logprobs"`
	TopLogprobs          *int            `json:"top_logprobs"`
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage *bool           `json:"continue_final_message"`
	AddSpecialTokens     *bool           `json:"add_special_tokens"`
	PromptLogprobs       *int            `json:"prompt_logprobs"`
	Tools                json.RawMessage `json:"tools"`
	ToolChoice           json.RawMessage `json:"tool_choice"`
	ParallelToolCalls    *bool           `json:"parallel_tool_calls"`
	ResponseFormat       json.RawMessage `json:"response_format"`
}

// messages converts chat messages to policy messages.
func messages(in []chatMessage) ([]policy.Message, error) {
	out := make([]policy.Message, len(in))
	for i, m := range in {
		text, err := messageText(m.Content)
		if err != nil {
			return nil, badRequest("messages", "message %d: %v", i, err)
		}
		out[i] = policy.Message{Role: m.Role, Content: text, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name}
	}
	return out, nil
}

func messageText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of text parts")
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", fmt.Errorf("content part %d: only text parts are supported, got type %q", j, p.Type)
		}
		if j > 0 {
			b.WriteString("\n")
		}
		b.WriteString(*p.Text)
	}
	return b.String(), nil
}

type chatLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []any   `json:"top_logprobs"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      map[string]any `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
	StopReason   any            `json:"stop_reason"`
	TokenIDs     []int          `json:"token_ids"`

	// calls and content are the reply's tool calls and the content beside
	// them, for its stream.
	calls   []policy.ToolCall
	content string
}

func (s *Server) chatComplete(w http.ResponseWriter, r *http.Request) (any, error) {
	leave := s.batch.arrive()
	defer leave()
	ctx := r.Context()
	var req chatRequest
	if err := s.decode(w, r, &req); err != nil {
		return nil, err
	}
	sp, err := s.checkSampling(&req.samplingFields)
	if err != nil {
		return nil, err
	}
	sm, err := s.acquire(req.Model)
	if err != nil {
		return nil, err
	}
	defer s.release(sm)
	switch {
	case len(req.Messages) == 0:
		return nil, badRequest("messages", "messages must be a non-empty list")
	case req.PromptLogprobs != nil:
		return nil, badRequest("prompt_logprobs", "prompt_logprobs is not supported in chat; use /v1/completions")
	case boolOr(req.ContinueFinalMessage, false):
		return nil, badRequest("continue_final_message", "continue_final_message is not supported")
	}
	logprobs, nTop := boolOr(req.Logprobs, false), 0
	if req.TopLogprobs != nil {
		nTop = *req.TopLogprobs
		if err := s.checkTopN("top_logprobs", nTop); err != nil {
			return nil, err
		}
		if nTop > 0 && !logprobs {
			return nil, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
	}
	ct, err := s.checkTools(&req, sm)
	if err != nil {
		return nil, err
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return nil, err
	}
	prompt, err := s.renderTools(ctx, ct, msgs, boolOr(req.AddGenerationPrompt, true), boolOr(req.AddSpecialTokens, false))
	if err != nil {
		return nil, err
	}
	mt, param := req.MaxCompletionTokens, "max_completion_tokens"
	if !mt.set || mt.null {
		mt, param = req.MaxTokens, "max_tokens"
	}
	m, err := s.maxTokens(param, mt, 0, len(prompt), false)
	if err != nil {
		return nil, err
	}
	need := cost{tokens: int64(sp.n) * int64(len(prompt)+m)}
	lpParam := "logprobs"
	if logprobs {
		need.logprobs = int64(sp.n) * s.positions(m, nTop)
		if nTop > 0 {
			lpParam = "top_logprobs"
		}
	}
	if err := s.checkCost(need, param, lpParam); err != nil {
		return nil, err
	}
	reqs := make([]policy.Request, sp.n)
	for c := range reqs {
		q := sp.params
		q.MaxTokens = m
		q.Seed = sp.seed + uint64(c)
		if q.Constraint, err = s.constraint(ct, sp.stops, m); err != nil {
			return nil, err
		}
		reqs[c] = policy.Request{Prompt: prompt, Sampling: q, Tag: r.Header.Get(TagHeader)}
	}
	beginStream(w, sp)
	samples, err := sm.batch.sample(ctx, reqs, leave)
	if err != nil {
		return nil, err
	}
	// A stream cuts each choice by its token ids (stream.go).
	returnIDs := boolOr(req.ReturnTokenIDs, false) || sp.stream != nil
	resp := struct {
		ID             string       `json:"id"`
		Object         string       `json:"object"`
		Created        int64        `json:"created"`
		Model          string       `json:"model"`
		Choices        []chatChoice `json:"choices"`
		Usage          usage        `json:"usage"`
		PromptTokenIDs []int        `json:"prompt_token_ids"`
		PromptLogprobs any          `json:"prompt_logprobs"`
	}{ID: httpapi.NewID("chatcmpl-"), Object: "chat.completion", Created: time.Now().Unix(), Model: sm.name}
	resp.Usage.PromptTokens = len(prompt)
	if returnIDs {
		resp.PromptTokenIDs = slices.Clone(prompt)
	}
	outs := make([]output, len(samples))
	topReqs := make([]policy.ScoreRequest, len(samples))
	for c, smp := range samples {
		if smp.Err != nil {
			return nil, badRequest("messages", "%v", smp.Err)
		}
		if outs[c], err = s.finishSample(ctx, smp, sp, boolOr(req.SkipSpecialTokens, true), boolOr(req.IncludeStopStrInOutput, false)); err != nil {
			return nil, err
		}
		resp.Usage.CompletionTokens += len(outs[c].tokens)
		topReqs[c] = policy.ScoreRequest{Prompt: prompt, Continuation: outs[c].tokens}
	}
	var tops [][][]policy.TokenLogprob
	if logprobs && nTop > 0 {
		if tops, err = s.topLogprobs(ctx, sm.p, topReqs, nTop); err != nil {
			return nil, err
		}
	}
	for c, out := range outs {
		var top [][]policy.TokenLogprob
		if tops != nil {
			top = tops[c]
		}
		ch, err := s.chatChoice(ctx, c, out, logprobs, top, returnIDs, ct)
		if err != nil {
			return nil, err
		}
		resp.Choices = append(resp.Choices, ch)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	if sp.stream != nil {
		return nil, s.streamChat(ctx, w, sp, resp.ID, resp.Model, resp.Created, resp.Choices, resp.Usage, resp.PromptTokenIDs)
	}
	return resp, nil
}

// chatChoice builds choice c from its output out; top holds the
// alternatives at each position when top_logprobs > 0.
func (s *Server) chatChoice(ctx context.Context, c int, out output, logprobs bool, top [][]policy.TokenLogprob, returnIDs bool, ct *chatTools) (chatChoice, error) {
	ch := chatChoice{Index: c, FinishReason: out.finish, StopReason: out.stopReason}
	content, calls, err := ct.replyCalls(out.text)
	if err != nil {
		if _, cut := out.stopReason.(string); !cut {
			return ch, err
		}
		// The request's own stop string cut the forced call: the text
		// is the content, and stop_reason says why.
		content, calls = out.text, nil
	}
	// refusal is required (null) by OpenAI's published schema; vLLM's
	// ChatMessage has it too.
	ch.Message = map[string]any{"role": policy.RoleAssistant, "content": content, "refusal": nil, "tool_calls": []any{}}
	if len(calls) > 0 {
		ch.Message["tool_calls"] = calls
		if content == "" {
			ch.Message["content"] = nil
		}
		ch.FinishReason = ct.finishReason(out.finish, calls)
		ch.calls, ch.content = calls, content
	}
	if returnIDs {
		ch.TokenIDs = slices.Clone(out.tokens)
		if ch.TokenIDs == nil {
			ch.TokenIDs = []int{}
		}
	}
	if logprobs {
		bs, err := s.tokenBytes(ctx, out.tokens)
		if err != nil {
			return ch, err
		}
		content := make([]chatLogprob, len(out.tokens))
		for i, b := range bs {
			alts := []any{}
			if top != nil {
				if alts, err = s.chatTops(ctx, top[i]); err != nil {
					return ch, err
				}
			}
			content[i] = chatLogprob{Token: string(b), Logprob: wireLogProb(out.logprobs[i]), Bytes: byteInts(b), TopLogprobs: alts}
		}
		ch.Logprobs = map[string]any{"content": content, "refusal": nil} // refusal: OpenAI's schema requires it
	}
	return ch, nil
}
