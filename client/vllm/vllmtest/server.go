// Package vllmtest serves a policy.Policy over the subset of vLLM's
// OpenAI-compatible HTTP API that client/vllm uses, for tests: put a
// policytest.Scripted behind it and a vllm.Client in front, and the client's
// samples and scores can be checked exactly.
//
// It answers as vLLM does where a difference could hide a client bug
// (vllm/entrypoints/openai/completion/protocol.py, vllm/sampling_params.py,
// vllm/v1/core/sched/utils.py and vllm/entrypoints/serve/tokenize/protocol.py
// are the references):
//
//   - max_tokens absent or null on /v1/completions means 16 (bounded by the
//     room left in the context), not the rest of the context.
//   - Generation stops at stop_token_ids and also, unless ignore_eos is
//     true, at the model's end-of-sequence tokens (Server.EOS): vLLM adds
//     the tokenizer's eos_token_id and generation_config's eos_token_id to
//     every request's stop set. finish_reason is "stop"; stop_reason is null
//     for the first EOS token (vLLM's primary EOS, checked before
//     stop_token_ids) and the token id for any other stop token.
//   - Text /tokenize adds the special tokens (Server.TextPrefix) unless
//     add_special_tokens is false; the chat form adds them on top of the
//     template only with add_special_tokens true, and adds the generation
//     prompt unless add_generation_prompt is false.
//   - logprobs and prompt_logprobs must be between 0 and 20 (vLLM's
//     --max-logprobs default); anything else is a 400. The completion's
//     logprobs object has vLLM's shape: token_logprobs, tokens (each token's
//     text), text_offset and top_logprobs, a list with one dict per
//     position mapping the token's text to its log-prob.
//   - Every prompt_logprobs entry carries rank, when the policy ranks its
//     scores: a method ScoreRanks(ctx, reqs) ([][]float64, [][]int, error)
//     (model/local's and policytest.Scripted's) giving Score's
//     log-probabilities and each token's rank (the number of tokens at least
//     as likely, vLLM's count). The log-probs written are still Score's (a
//     test policy may override Score alone). With a policy without
//     ScoreRanks rank is left out.
//   - /v1/models lists the base model with max_model_len, and each LoRA
//     adapter with max_model_len null, as vLLM writes them.
//
// It is stricter than vLLM where strictness catches client bugs: it rejects
// unknown request fields with a 400 (vLLM accepts and ignores them, logging
// them only at debug level in recent versions, so a misspelt field would
// silently have no effect), text prompts on /v1/completions (the client must
// send ids), and what it does not implement (echo, logprobs or
// prompt_logprobs above 0, continue_final_message) with a 400 rather than
// an answer that differs from vLLM's.
package vllmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/toolcall"
)

// Server is an http.Handler that answers like vLLM, from Policy.
type Server struct {
	// Policy computes everything; Info().MaxContext is max_model_len.
	Policy policy.Policy
	// Model is the served base model name (default "test-model").
	Model string
	// APIKey, when set, is required as a bearer token on /v1 routes.
	APIKey string
	// EOS are the model's end-of-sequence tokens, which end generation
	// unless a request sets ignore_eos (vLLM's tokenizer eos_token_id,
	// first, and generation_config's eos_token_id). Nil means
	// Policy.Info().StopTokens.
	EOS []int
	// TextPrefix are the ids add_special_tokens puts before a text (BOS).
	// Nil means what the policy's chat template renders for an empty
	// conversation (<|bos|> for the agentrl template).
	TextPrefix []int

	mu       sync.Mutex
	adapters map[string]string // LoRA name -> path
	counts   map[string]int    // requests per path
}

// New returns a server for p.
func New(p policy.Policy) *Server { return &Server{Policy: p} }

func (s *Server) model() string {
	if s.Model == "" {
		return "test-model"
	}
	return s.Model
}

// Count returns how many requests path ("/v1/completions", ...) received.
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Adapters returns the names of the loaded LoRA adapters, sorted.
func (s *Server) Adapters() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.adapters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	s.counts[r.URL.Path]++
	s.mu.Unlock()
	if s.APIKey != "" && strings.HasPrefix(r.URL.Path, "/v1/") && r.Header.Get("Authorization") != "Bearer "+s.APIKey {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "Unauthorized"})
		return
	}
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /health":
		w.WriteHeader(http.StatusOK)
	case "GET /v1/models":
		s.models(w)
	case "POST /tokenize":
		s.tokenize(w, r)
	case "POST /detokenize":
		s.detokenize(w, r)
	case "POST /v1/completions":
		s.completions(w, r)
	case "POST /v1/load_lora_adapter":
		s.loadLoRA(w, r)
	case "POST /v1/unload_lora_adapter":
		s.unloadLoRA(w, r)
	default:
		writeError(w, http.StatusNotFound, "NotFoundError", "no route "+route)
	}
}

// WriteError writes an OpenAI-style error body, as vLLM does.
func WriteError(w http.ResponseWriter, status int, message string) {
	writeError(w, status, "BadRequestError", message)
}

func writeError(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": status}})
}

// writeJSON writes v, or a plain-text 500 when v does not encode.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := httpapi.WriteJSON(w, status, v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// read decodes the body strictly into v.
func read(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid request body: "+err.Error())
		return false
	}
	return true
}

// knownModel reports whether name is the base model or a loaded adapter.
func (s *Server) knownModel(w http.ResponseWriter, name string) bool {
	s.mu.Lock()
	_, ok := s.adapters[name]
	s.mu.Unlock()
	if name == s.model() || ok {
		return true
	}
	writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", name))
	return false
}

func (s *Server) maxModelLen() int { return s.Policy.Info().MaxContext }

func (s *Server) models(w http.ResponseWriter) {
	base := s.model()
	data := []map[string]any{{"id": base, "object": "model", "owned_by": "vllm", "root": base, "parent": nil, "max_model_len": s.maxModelLen()}}
	for _, name := range s.Adapters() {
		s.mu.Lock()
		path := s.adapters[name]
		s.mu.Unlock()
		data = append(data, map[string]any{"id": name, "object": "model", "owned_by": "vllm", "root": path, "parent": base, "max_model_len": nil})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

type tokenizeRequest struct {
	Model                string             `json:"model"`
	Prompt               *string            `json:"prompt"`
	Messages             *[]policy.Message  `json:"messages"`
	Tools                []toolcall.APITool `json:"tools"`
	AddGenerationPrompt  *bool              `json:"add_generation_prompt"`
	ContinueFinalMessage bool               `json:"continue_final_message"`
	AddSpecialTokens     *bool              `json:"add_special_tokens"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !read(w, r, &req) || !s.knownModel(w, req.Model) {
		return
	}
	var ids []int
	var err error
	special := false
	switch {
	case req.Messages != nil && req.Prompt == nil:
		gen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt // vLLM's default is true
		if req.ContinueFinalMessage && gen {
			writeError(w, http.StatusBadRequest, "BadRequestError", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
			return
		}
		if req.ContinueFinalMessage {
			writeError(w, http.StatusBadRequest, "BadRequestError", "continue_final_message is not supported by vllmtest")
			return
		}
		special = req.AddSpecialTokens != nil && *req.AddSpecialTokens // vLLM's default is false
		if req.Tools != nil {
			tr, ok := s.Policy.(policy.ToolRenderer)
			if !ok {
				writeError(w, http.StatusBadRequest, "BadRequestError", "the policy's chat template renders no tools")
				return
			}
			tools := make([]policy.Tool, len(req.Tools))
			for i, t := range req.Tools {
				tools[i] = t.Function
			}
			ids, err = tr.RenderChatTools(r.Context(), *req.Messages, tools, gen)
		} else {
			ids, err = s.Policy.RenderChat(r.Context(), *req.Messages, gen)
		}
	case req.Prompt != nil && req.Messages == nil && req.Tools == nil:
		special = req.AddSpecialTokens == nil || *req.AddSpecialTokens // vLLM's default is true
		ids, err = s.Policy.Encode(r.Context(), *req.Prompt)
	default:
		writeError(w, http.StatusBadRequest, "BadRequestError", "give either prompt or messages")
		return
	}
	if err == nil && special {
		var pre []int
		if pre, err = s.textPrefix(r); err == nil {
			ids = slices.Concat(pre, ids)
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if ids == nil {
		ids = []int{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.maxModelLen(), "tokens": ids, "token_strs": nil})
}

// textPrefix returns the ids add_special_tokens puts before a text.
func (s *Server) textPrefix(r *http.Request) ([]int, error) {
	if s.TextPrefix != nil {
		return s.TextPrefix, nil
	}
	return s.Policy.RenderChat(r.Context(), []policy.Message{}, false)
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !read(w, r, &req) || !s.knownModel(w, req.Model) {
		return
	}
	text, err := s.Policy.Decode(r.Context(), req.Tokens)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prompt": text})
}

// CompletionRequest is the body of POST /v1/completions that the server
// accepts. Tests can decode request bodies with it.
type CompletionRequest struct {
	Model                  string          `json:"model"`
	Prompt                 json.RawMessage `json:"prompt"`
	MaxTokens              *int            `json:"max_tokens"`
	N                      *int            `json:"n"`
	Seed                   *int64          `json:"seed"`
	Temperature            *float64        `json:"temperature"`
	TopP                   *float64        `json:"top_p"`
	TopK                   *int            `json:"top_k"`
	MinP                   *float64        `json:"min_p"`
	RepetitionPenalty      *float64        `json:"repetition_penalty"`
	PresencePenalty        *float64        `json:"presence_penalty"`
	FrequencyPenalty       *float64        `json:"frequency_penalty"`
	Logprobs               *int            `json:"logprobs"`
	PromptLogprobs         *int            `json:"prompt_logprobs"`
	ReturnTokenIDs         *bool           `json:"return_token_ids"`
	SkipSpecialTokens      *bool           `json:"skip_special_tokens"`
	AddSpecialTokens       *bool           `json:"add_special_tokens"`
	StopTokenIDs           []int           `json:"stop_token_ids"`
	IgnoreEOS              *bool           `json:"ignore_eos"`
	IncludeStopStrInOutput *bool           `json:"include_stop_str_in_output"`
	Echo                   *bool           `json:"echo"`
}

// Prompts returns the token-id prompts of the request: one for a flat id
// list, several for a list of id lists.
func (r *CompletionRequest) Prompts() ([][]int, error) {
	var flat []int
	if err := json.Unmarshal(r.Prompt, &flat); err == nil {
		return [][]int{flat}, nil
	}
	var lists [][]int
	if err := json.Unmarshal(r.Prompt, &lists); err == nil && len(lists) > 0 {
		return lists, nil
	}
	return nil, errors.New("prompt must be a list of token ids or a non-empty list of such lists (vllmtest accepts no text prompts)")
}

// maxLogprobs is vLLM's default --max-logprobs.
const maxLogprobs = 20

// defaultMaxTokens is vLLM's max_tokens on /v1/completions when the field
// is absent or null.
const defaultMaxTokens = 16

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req CompletionRequest
	if !read(w, r, &req) || !s.knownModel(w, req.Model) {
		return
	}
	prompts, err := req.Prompts()
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if n < 1 {
		writeError(w, http.StatusBadRequest, "BadRequestError", "n must be at least 1")
		return
	}
	if req.Echo != nil && *req.Echo {
		writeError(w, http.StatusBadRequest, "BadRequestError", "echo is not supported by vllmtest")
		return
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"logprobs", req.Logprobs}, {"prompt_logprobs", req.PromptLogprobs}} {
		switch {
		case f.v == nil:
		case *f.v < 0 || *f.v > maxLogprobs:
			// vLLM: a negative value other than -1 is invalid, and -1 (the
			// whole vocabulary) or more than --max-logprobs is over the limit.
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("`%s` must be between 0 and %d (max_logprobs), got %d", f.name, maxLogprobs, *f.v))
			return
		case *f.v > 0:
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("%s above 0 is not supported by vllmtest", f.name))
			return
		}
	}
	stops, reasons := s.stopSet(req.StopTokenIDs, req.IgnoreEOS != nil && *req.IgnoreEOS)
	maxLen := s.maxModelLen()
	sp := policy.Sampling{Temperature: 1, TopP: 1, StopTokens: stops}
	if req.Temperature != nil {
		sp.Temperature = *req.Temperature
	}
	if req.TopP != nil {
		sp.TopP = *req.TopP
	}
	if req.TopK != nil && *req.TopK > 0 {
		sp.TopK = *req.TopK
	}
	var reqs []policy.Request
	for i, p := range prompts {
		if len(p) == 0 {
			writeError(w, http.StatusBadRequest, "BadRequestError", "empty prompt")
			return
		}
		room := maxLen - len(p)
		if room < 1 {
			writeError(w, http.StatusBadRequest, "BadRequestError", "the prompt fills the context")
			return
		}
		maxTokens := min(defaultMaxTokens, room)
		if req.MaxTokens != nil {
			if *req.MaxTokens < 1 {
				writeError(w, http.StatusBadRequest, "BadRequestError", "max_tokens must be at least 1")
				return
			}
			if *req.MaxTokens > room {
				writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
					"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). (prompt %d)",
					maxLen, len(p)+*req.MaxTokens, len(p), *req.MaxTokens, i))
				return
			}
			maxTokens = *req.MaxTokens
		}
		for j := range n {
			q := sp
			q.MaxTokens = maxTokens
			if req.Seed != nil {
				q.Seed = uint64(*req.Seed) + uint64(j) // vLLM derives child seeds differently
			}
			reqs = append(reqs, policy.Request{Prompt: p, Sampling: q})
		}
	}
	samples, err := s.Policy.Sample(r.Context(), reqs)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	choices := make([]map[string]any, len(samples))
	for k, smp := range samples {
		if smp.Err != nil {
			writeError(w, http.StatusInternalServerError, "InternalServerError", smp.Err.Error())
			return
		}
		p := reqs[k].Prompt
		text, _ := s.Policy.Decode(r.Context(), smp.Tokens)
		ch := map[string]any{"index": k, "text": text, "logprobs": nil, "finish_reason": smp.Finish, "stop_reason": nil}
		if smp.Finish == policy.FinishStop && len(smp.Tokens) > 0 && reasons[smp.Tokens[len(smp.Tokens)-1]] {
			ch["stop_reason"] = smp.Tokens[len(smp.Tokens)-1]
		}
		if req.Logprobs != nil {
			ch["logprobs"] = s.textLogprobs(r, smp)
		}
		if req.ReturnTokenIDs != nil && *req.ReturnTokenIDs {
			ch["token_ids"] = smp.Tokens
			ch["prompt_token_ids"] = p
		}
		if req.PromptLogprobs != nil {
			pl, err := s.promptLogprobs(r, p)
			if err != nil {
				writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
				return
			}
			ch["prompt_logprobs"] = pl
		}
		choices[k] = ch
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "cmpl-vllmtest", "object": "text_completion", "created": 0, "model": req.Model,
		"choices": choices, "usage": map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	})
}

// stopSet returns the stop set vLLM builds for a request: stop_token_ids
// and, unless ignoreEOS, the model's EOS tokens; reasons holds the tokens
// that are reported as stop_reason (all but the primary EOS, which vLLM
// checks first and reports as null).
func (s *Server) stopSet(ids []int, ignoreEOS bool) (stops []int, reasons map[int]bool) {
	stops, reasons = []int{}, map[int]bool{}
	for _, id := range ids {
		if !reasons[id] {
			stops = append(stops, id)
			reasons[id] = true
		}
	}
	if ignoreEOS {
		return stops, reasons
	}
	eos := s.EOS
	if eos == nil {
		eos = s.Policy.Info().StopTokens
	}
	for _, id := range eos {
		if !slices.Contains(stops, id) {
			stops = append(stops, id)
		}
		reasons[id] = true
	}
	if len(eos) > 0 {
		delete(reasons, eos[0])
	}
	return stops, reasons
}

// textLogprobs builds vLLM's logprobs object of a choice with logprobs 0:
// each token's log-prob, text and character offset in the choice's text,
// and top_logprobs, one dict per position holding the token itself.
func (s *Server) textLogprobs(r *http.Request, smp policy.Sample) map[string]any {
	n := len(smp.LogProbs)
	lps := make([]float64, n)
	toks := make([]string, n)
	offs := make([]int, n)
	tops := make([]map[string]float64, n)
	off := 0
	for i, v := range smp.LogProbs {
		lps[i] = wireLogProb(v)
		if i < len(smp.Tokens) {
			toks[i], _ = s.Policy.Decode(r.Context(), smp.Tokens[i:i+1])
		}
		offs[i] = off
		off += utf8.RuneCountInString(toks[i])
		tops[i] = map[string]float64{toks[i]: lps[i]}
	}
	return map[string]any{"text_offset": offs, "token_logprobs": lps, "tokens": toks, "top_logprobs": tops}
}

// rankedScorer is a policy that ranks the tokens it scores, as
// model/local's and policytest.Scripted's do.
type rankedScorer interface {
	ScoreRanks(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, [][]int, error)
}

// promptLogprobs builds vLLM's per-choice prompt_logprobs: null for the
// first token, then {"<id>": {"logprob", "rank", "decoded_token"}}, rank
// when the policy ranks its scores (see the package doc).
func (s *Server) promptLogprobs(r *http.Request, p []int) ([]any, error) {
	out := make([]any, len(p))
	if len(p) < 2 {
		return out, nil
	}
	// The log-probs are Score's, which tests check the client against (a
	// test policy may override Score alone); ScoreRanks gives the ranks.
	sreqs := []policy.ScoreRequest{{Prompt: p[:1], Continuation: p[1:]}}
	lps, err := s.Policy.Score(r.Context(), sreqs)
	if err != nil {
		return nil, err
	}
	if len(lps) != 1 || len(lps[0]) != len(p)-1 {
		return nil, errors.New("vllmtest: policy returned the wrong number of scores")
	}
	var ranks [][]int
	if rs, ok := s.Policy.(rankedScorer); ok {
		if _, ranks, err = rs.ScoreRanks(r.Context(), sreqs); err != nil {
			return nil, err
		}
		if len(ranks) != 1 || len(ranks[0]) != len(p)-1 {
			return nil, errors.New("vllmtest: policy returned the wrong number of ranks")
		}
	}
	for j := 1; j < len(p); j++ {
		tok, _ := s.Policy.Decode(r.Context(), p[j:j+1])
		e := map[string]any{"logprob": wireLogProb(lps[0][j-1]), "decoded_token": tok}
		if ranks != nil {
			e["rank"] = ranks[0][j-1]
		}
		out[j] = map[string]any{strconv.Itoa(p[j]): e}
	}
	return out, nil
}

// wireLogProb writes -Inf as vLLM does.
func wireLogProb(v float64) float64 {
	if math.IsInf(v, -1) || math.IsNaN(v) {
		return -9999
	}
	return v
}

func (s *Server) loadLoRA(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if !read(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.adapters[req.Name]; ok || req.Name == s.model() {
		writeError(w, http.StatusBadRequest, "InvalidUserInput", fmt.Sprintf("The lora adapter '%s' has already been loaded.", req.Name))
		return
	}
	if req.Name == "" || req.Path == "" {
		writeError(w, http.StatusBadRequest, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.")
		return
	}
	if s.adapters == nil {
		s.adapters = map[string]string{}
	}
	s.adapters[req.Name] = req.Path
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

func (s *Server) unloadLoRA(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
	}
	if !read(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.adapters[req.Name]; !ok {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The lora adapter '%s' cannot be found.", req.Name))
		return
	}
	delete(s.adapters, req.Name)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
}
