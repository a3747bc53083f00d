package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Streaming (stream: true) is a layer over the finished response: the
// handler checks the request, opens the stream (beginStream: the 200 and
// the text/event-stream headers) before it samples, builds its response as
// for a plain request, and hands it to streamCompletions or streamChat,
// which cut each choice into the chunks a token-by-token stream would
// have sent. See the package doc.

// streamOptions is the stream_options field of a request.
type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// streamConfig is the checked streaming part of a request.
type streamConfig struct {
	// usage (include_usage): every chunk carries "usage": null, and a last
	// chunk without choices the response's usage.
	usage bool
	// continuousUsage (continuous_usage_stats, with include_usage): every
	// chunk carries the usage of its choice so far, as vLLM's.
	continuousUsage bool
	// tokenIDs is return_token_ids: the chunks carry their token ids.
	tokenIDs bool
	// skipSpecial is skip_special_tokens, for the text of each token.
	skipSpecial bool
}

// checkStream reads stream and stream_options: nil when the request does
// not stream.
func checkStream(f *samplingFields) (*streamConfig, error) {
	if f.Stream == nil || !*f.Stream {
		if f.StreamOptions != nil {
			return nil, badRequest("stream_options", "stream_options can only be set when stream is true")
		}
		return nil, nil
	}
	c := &streamConfig{tokenIDs: boolOr(f.ReturnTokenIDs, false), skipSpecial: boolOr(f.SkipSpecialTokens, true)}
	if o := f.StreamOptions; o != nil {
		c.usage = boolOr(o.IncludeUsage, false)
		c.continuousUsage = c.usage && boolOr(o.ContinuousUsageStats, false)
	}
	return c, nil
}

// eventStream is the http.ResponseWriter that respond hands its handler. A
// streamed request opens it (start) and writes its events on it; respond
// then writes nothing more, or, when the handler fails, an error event and
// [DONE].
type eventStream struct {
	http.ResponseWriter
	open   bool // the headers are sent
	broken bool // a write failed: the client is gone
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (e *eventStream) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// start sends the headers of the stream, once.
func (e *eventStream) start() {
	if e.open {
		return
	}
	e.open = true
	h := e.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	e.WriteHeader(http.StatusOK)
	e.flush()
}

func (e *eventStream) flush() {
	if err := http.NewResponseController(e.ResponseWriter).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		e.broken = true
	}
}

// send writes one event, "data: DATA\n\n", and flushes it.
func (e *eventStream) send(data []byte) {
	if e.broken {
		return
	}
	buf := make([]byte, 0, len(data)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := e.Write(buf); err != nil {
		e.broken = true
		return
	}
	e.flush()
}

// event writes v as an event.
func (e *eventStream) event(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a stream chunk: %w", err)
	}
	e.send(data)
	return nil
}

// done ends the stream.
func (e *eventStream) done() { e.send([]byte("[DONE]")) }

// beginStream opens the stream of a streamed request, once it is checked
// and before it samples: from here on its errors are events of the stream.
func beginStream(w http.ResponseWriter, sp *sampling) {
	if es, ok := w.(*eventStream); ok && sp.stream != nil {
		es.start()
	}
}

// streamError ends an open stream with err, as vLLM does: one event
// {"error": {...}} and [DONE].
func (s *Server) streamError(e *eventStream, r *http.Request, err error) {
	status, param, message := s.failure(r, err)
	data, _ := json.Marshal(errorBody(status, param, message))
	e.send(data)
	e.done()
}

// openStream returns the stream w is, opened.
func openStream(w http.ResponseWriter) (*eventStream, error) {
	es, ok := w.(*eventStream)
	if !ok {
		return nil, errors.New("openaiapi: a streamed response needs the writer respond gives its handler")
	}
	es.start()
	return es, nil
}

// streamChunk is one event of a stream. Usage is absent, null or an
// object.
type streamChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []any           `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"`
	// PromptTokenIDs (chat, with return_token_ids) is in the first chunk.
	PromptTokenIDs []int `json:"prompt_token_ids,omitempty"`
}

// choiceStream is the chunks of one choice: n of them, built on demand.
type choiceStream struct {
	n     int
	chunk func(j int) streamChunk
}

var nullUsage = json.RawMessage("null")

// chunkUsage is the usage field of a choice's chunk: absent without
// include_usage, null without continuous_usage_stats, else the choice's
// prompt and its completion tokens so far.
func chunkUsage(c *streamConfig, prompt, completion int) json.RawMessage {
	switch {
	case c.continuousUsage:
		data, _ := json.Marshal(usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion})
		return data
	case c.usage:
		return nullUsage
	}
	return nil
}

// writeStream writes the choices' chunks, step j sending chunk j of every
// choice that has one (as a token-by-token stream interleaves them), then
// the usage chunk when asked for, then [DONE].
func writeStream(ctx context.Context, es *eventStream, c *streamConfig, choices []choiceStream, last streamChunk) error {
	for j := 0; ; j++ {
		sent := false
		for _, ch := range choices {
			if j >= ch.n {
				continue
			}
			sent = true
			if err := es.event(ch.chunk(j)); err != nil {
				return err
			}
			if es.broken || ctx.Err() != nil {
				return nil // the client is gone
			}
		}
		if !sent {
			break
		}
	}
	if c.usage {
		if err := es.event(last); err != nil {
			return err
		}
	}
	es.done()
	return nil
}

// completionChunkChoice is a choice of a /v1/completions chunk.
type completionChunkChoice struct {
	Index          int              `json:"index"`
	Text           string           `json:"text"`
	Logprobs       *textLogprobs    `json:"logprobs"`
	FinishReason   *string          `json:"finish_reason"`
	StopReason     any              `json:"stop_reason"`
	TokenIDs       []int            `json:"token_ids,omitempty"`
	PromptTokenIDs []int            `json:"prompt_token_ids,omitempty"`
	PromptLogprobs []map[string]any `json:"prompt_logprobs,omitempty"`
}

// streamCompletions writes a finished /v1/completions response as its
// stream. Each choice has one chunk per generated token (one at least):
// the first also carries the echoed prompt (its text, log-probs and, with
// return_token_ids, prompt_token_ids) and prompt_logprobs, the last the
// finish_reason and stop_reason. The choices' TokenIDs and PromptTokenIDs
// must be set (complete sets them for a stream whatever return_token_ids).
func (s *Server) streamCompletions(ctx context.Context, w http.ResponseWriter, sp *sampling, echo bool, prompts []textPrompt,
	id, model string, created int64, choices []completionChoice, u usage) error {
	es, err := openStream(w)
	if err != nil {
		return err
	}
	c := sp.stream
	chunk := func(ch completionChunkChoice, us json.RawMessage) streamChunk {
		return streamChunk{ID: id, Object: "text_completion", Created: created, Model: model, Choices: []any{ch}, Usage: us}
	}
	streams := make([]choiceStream, len(choices))
	for k := range choices {
		ch := &choices[k]
		prefix := ""
		if i := k / sp.n; echo && i < len(prompts) {
			if prefix, err = s.echoText(ctx, prompts[i], c.skipSpecial); err != nil {
				return err
			}
		}
		deltas, err := s.textDeltas(ctx, ch.Text, prefix, ch.TokenIDs, c.skipSpecial)
		if err != nil {
			return err
		}
		lps := splitTextLogprobs(ch.Logprobs, len(ch.TokenIDs), len(deltas))
		streams[k] = choiceStream{n: len(deltas), chunk: func(j int) streamChunk {
			out := completionChunkChoice{Index: ch.Index, Text: deltas[j], Logprobs: lps[j]}
			if j == 0 {
				out.PromptLogprobs = ch.PromptLogprobs
				if c.tokenIDs {
					out.PromptTokenIDs = ch.PromptTokenIDs
				}
			}
			if c.tokenIDs && j < len(ch.TokenIDs) {
				out.TokenIDs = ch.TokenIDs[j : j+1]
			}
			if j == len(deltas)-1 {
				out.FinishReason, out.StopReason = &ch.FinishReason, ch.StopReason
			}
			return chunk(out, chunkUsage(c, len(ch.PromptTokenIDs), min(j+1, len(ch.TokenIDs))))
		}}
	}
	last := streamChunk{ID: id, Object: "text_completion", Created: created, Model: model, Choices: []any{}}
	last.Usage, _ = json.Marshal(u)
	return writeStream(ctx, es, c, streams, last)
}

// echoText is the prompt text an echoing completion choice starts with, as
// completionChoice writes it.
func (s *Server) echoText(ctx context.Context, p textPrompt, skipSpecial bool) (string, error) {
	if p.text != nil {
		return *p.text, nil
	}
	return s.decodeText(ctx, p.ids, false, skipSpecial, true)
}

// splitTextLogprobs cuts a choice's logprobs object into n chunks' (n =
// max(1, tokens)): the first covers the entries before the generated
// tokens (an echoed prompt's) and the first token's, each other chunk its
// token's; text_offset keeps counting through the choice's text. An object
// whose lists do not line up with the tokens goes whole into the first
// chunk.
func splitTextLogprobs(lp *textLogprobs, tokens, n int) []*textLogprobs {
	out := make([]*textLogprobs, n)
	if lp == nil {
		return out
	}
	l := len(lp.Tokens)
	pre := l - tokens
	if pre < 0 || n != max(1, tokens) || len(lp.TextOffset) != l || len(lp.TokenLogprobs) != l ||
		(lp.TopLogprobs != nil && len(lp.TopLogprobs) != l) {
		out[0] = lp
		return out
	}
	for j := range n {
		lo, hi := pre+j, pre+j+1
		if j == 0 {
			lo = 0
		}
		if tokens == 0 {
			hi = l
		}
		part := &textLogprobs{TextOffset: lp.TextOffset[lo:hi], TokenLogprobs: lp.TokenLogprobs[lo:hi], Tokens: lp.Tokens[lo:hi]}
		if lp.TopLogprobs != nil {
			part.TopLogprobs = lp.TopLogprobs[lo:hi]
		}
		out[j] = part
	}
	return out
}

// chatDelta is the delta of a chat chunk.
type chatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

// toolCallDelta is a piece of a streamed tool call: the first of a call
// has its id, type and name and empty arguments, the next ones pieces of
// the arguments.
type toolCallDelta struct {
	Index    int                   `json:"index"`
	ID       string                `json:"id,omitempty"`
	Type     string                `json:"type,omitempty"`
	Function toolCallDeltaFunction `json:"function"`
}

type toolCallDeltaFunction struct {
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// chatChunkChoice is a choice of a chat.completion.chunk.
type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     any       `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
	StopReason   any       `json:"stop_reason"`
	TokenIDs     []int     `json:"token_ids,omitempty"`
}

// streamChat writes a finished chat response as its stream. Each choice
// has a first chunk with delta {"role": "assistant", "content": ""}, then
// one per generated token, the last with finish_reason and stop_reason;
// the stream's first chunk carries prompt_token_ids with return_token_ids.
// The choices' TokenIDs must be set (chatComplete sets them for a stream
// whatever return_token_ids).
func (s *Server) streamChat(ctx context.Context, w http.ResponseWriter, sp *sampling,
	id, model string, created int64, choices []chatChoice, u usage, promptIDs []int) error {
	es, err := openStream(w)
	if err != nil {
		return err
	}
	c := sp.stream
	chunk := func(ch chatChunkChoice, us json.RawMessage) streamChunk {
		return streamChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []any{ch}, Usage: us}
	}
	streams := make([]choiceStream, len(choices))
	for k := range choices {
		ch := &choices[k]
		role, _ := ch.Message["role"].(string)
		if role == "" {
			role = "assistant"
		}
		if len(ch.calls) > 0 {
			streams[k] = toolCallStream(ch, role, c, u.PromptTokens, func(out chatChunkChoice, us json.RawMessage, first bool) streamChunk {
				sc := chunk(out, us)
				if first && k == 0 && c.tokenIDs {
					sc.PromptTokenIDs = promptIDs
				}
				return sc
			})
			continue
		}
		text, _ := ch.Message["content"].(string)
		deltas, err := s.textDeltas(ctx, text, "", ch.TokenIDs, c.skipSpecial)
		if err != nil {
			return err
		}
		lps := splitChatLogprobs(ch.Logprobs, len(ch.TokenIDs), len(deltas))
		streams[k] = choiceStream{n: 1 + len(deltas), chunk: func(j int) streamChunk {
			if j == 0 {
				out := chunk(chatChunkChoice{Index: ch.Index, Delta: chatDelta{Role: role, Content: ptr("")}},
					chunkUsage(c, u.PromptTokens, 0))
				if k == 0 && c.tokenIDs {
					out.PromptTokenIDs = promptIDs
				}
				return out
			}
			t := j - 1
			out := chatChunkChoice{Index: ch.Index, Logprobs: lps[t]}
			if t < len(ch.TokenIDs) || deltas[t] != "" {
				out.Delta.Content = &deltas[t]
			}
			if c.tokenIDs && t < len(ch.TokenIDs) {
				out.TokenIDs = ch.TokenIDs[t : t+1]
			}
			if t == len(deltas)-1 {
				out.FinishReason, out.StopReason = &ch.FinishReason, ch.StopReason
			}
			return chunk(out, chunkUsage(c, u.PromptTokens, min(t+1, len(ch.TokenIDs))))
		}}
	}
	last := streamChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []any{}}
	last.Usage, _ = json.Marshal(u)
	return writeStream(ctx, es, c, streams, last)
}

// argumentPiece is the most bytes of a call's arguments one chunk carries.
const argumentPiece = 16

// toolCallStream is the stream of a choice that made tool calls, shaped
// as vLLM and OpenAI stream them: the role (content ""), the content
// beside the calls when there is some, then per call a first delta with
// its index, id, type, name and empty arguments followed by its arguments
// in pieces; the last chunk has the finish_reason, and the choice's token
// ids and log-probs (a call's tokens are not its text, so they are not
// cut). The pieces concatenate to the unstreamed reply's content and
// arguments.
func toolCallStream(ch *chatChoice, role string, c *streamConfig, promptTokens int, chunk func(chatChunkChoice, json.RawMessage, bool) streamChunk) choiceStream {
	var deltas []chatDelta
	deltas = append(deltas, chatDelta{Role: role, Content: ptr("")})
	if ch.content != "" {
		deltas = append(deltas, chatDelta{Content: ptr(ch.content)})
	}
	for i, call := range ch.calls {
		deltas = append(deltas, chatDelta{ToolCalls: []toolCallDelta{{Index: i, ID: call.ID, Type: "function",
			Function: toolCallDeltaFunction{Name: call.Name, Arguments: ptr("")}}}})
		args := string(call.Arguments)
		if args == "" {
			args = "{}"
		}
		for args != "" {
			n := min(len(args), argumentPiece)
			for n < len(args) && !utf8.RuneStart(args[n]) {
				n++
			}
			deltas = append(deltas, chatDelta{ToolCalls: []toolCallDelta{{Index: i, Function: toolCallDeltaFunction{Arguments: ptr(args[:n])}}}})
			args = args[n:]
		}
	}
	n := len(ch.TokenIDs)
	return choiceStream{n: len(deltas), chunk: func(j int) streamChunk {
		out := chatChunkChoice{Index: ch.Index, Delta: deltas[j]}
		done := 0
		if j == len(deltas)-1 {
			out.FinishReason, out.StopReason = &ch.FinishReason, ch.StopReason
			out.Logprobs = ch.Logprobs
			if c.tokenIDs {
				out.TokenIDs = ch.TokenIDs
			}
			done = n
		}
		return chunk(out, chunkUsage(c, promptTokens, done), j == 0)
	}}
}

// splitChatLogprobs cuts a chat choice's logprobs, {"content": [entry per
// token]}, into n chunks' (n = max(1, tokens)), each with its token's
// entry. Logprobs of another shape go whole into the first chunk.
func splitChatLogprobs(lp any, tokens, n int) []any {
	out := make([]any, n)
	if lp == nil {
		return out
	}
	m, _ := lp.(map[string]any)
	content, ok := m["content"].([]chatLogprob)
	if !ok || len(content) != tokens || n != max(1, tokens) {
		out[0] = lp
		return out
	}
	for j := range tokens {
		part := maps.Clone(m)
		part["content"] = content[j : j+1]
		out[j] = part
	}
	if tokens == 0 {
		out[0] = lp
	}
	return out
}

// textDeltas splits text, a choice's finished text, into the text deltas
// of its stream: one per token (one at least), the first led by prefix (an
// echoed prompt). Each token adds its bytes (none for a special token with
// skipSpecial), clipped where the text ends (a stop token or stop string
// left out of it); where a token's bytes are not the text's next bytes (a
// decoder that rewrites text), that token's delta takes the rest of the
// text, all of it when they differ from the first token. Bytes that may
// still begin a UTF-8 character wait for the next delta (which is then ""
// meanwhile, as vLLM's). So the deltas always concatenate to text, and cut
// it only between the characters (or invalid bytes) JSON encodes it by.
func (s *Server) textDeltas(ctx context.Context, text, prefix string, ids []int, skipSpecial bool) ([]string, error) {
	bs, err := s.tokenBytes(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]string, max(1, len(ids)))
	rest := text
	for j := range out {
		piece := ""
		if j == 0 {
			piece = prefix
		}
		if j < len(ids) && !(skipSpecial && s.isSpecial(ids[j])) {
			piece += string(bs[j])
		}
		if strings.HasPrefix(rest, piece) {
			out[j], rest = piece, rest[len(piece):]
		} else {
			// The text ends within this piece, or does not follow it.
			out[j], rest = rest, ""
		}
	}
	out[len(out)-1] += rest
	pending := ""
	for j := range out {
		pending += out[j]
		if j == len(out)-1 {
			out[j] = pending
			break
		}
		cut := len(pending) - incompleteUTF8(pending)
		out[j], pending = pending[:cut], pending[cut:]
	}
	return out, nil
}

// incompleteUTF8 returns the length of the tail of s that begins a UTF-8
// character and does not complete it (0 to 3 bytes).
func incompleteUTF8(s string) int {
	for k := 1; k <= min(utf8.UTFMax-1, len(s)); k++ {
		if utf8.RuneStart(s[len(s)-k]) {
			if !utf8.FullRuneInString(s[len(s)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}
