// Package vllmtest serves a policy.Policy over the subset of vLLM's
// OpenAI-compatible HTTP API that policy/vllm uses, for tests: put a
// policytest.Scripted behind it and a vllm.Client in front, and the client's
// samples and scores can be checked exactly.
//
// The server is strict where vLLM is lenient: it rejects unknown request
// fields (vLLM ignores them with a warning, which would hide a misspelt
// field) and text prompts on /v1/completions (the client must send ids).
package vllmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/policy"
)

// Server is an http.Handler that answers like vLLM, from Policy.
type Server struct {
	// Policy computes everything; Info().MaxContext is max_model_len.
	Policy policy.Policy
	// Model is the served base model name (default "test-model").
	Model string
	// APIKey, when set, is required as a bearer token on /v1 routes.
	APIKey string

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

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
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
		data = append(data, map[string]any{"id": name, "object": "model", "owned_by": "vllm", "root": path, "parent": base, "max_model_len": s.maxModelLen()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

type tokenizeRequest struct {
	Model                string            `json:"model"`
	Prompt               *string           `json:"prompt"`
	Messages             *[]policy.Message `json:"messages"`
	AddGenerationPrompt  *bool             `json:"add_generation_prompt"`
	ContinueFinalMessage bool              `json:"continue_final_message"`
	AddSpecialTokens     *bool             `json:"add_special_tokens"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !read(w, r, &req) || !s.knownModel(w, req.Model) {
		return
	}
	var ids []int
	var err error
	switch {
	case req.Messages != nil && req.Prompt == nil:
		if req.ContinueFinalMessage {
			writeError(w, http.StatusBadRequest, "BadRequestError", "continue_final_message is not supported by vllmtest")
			return
		}
		gen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt // vLLM's default is true
		ids, err = s.Policy.RenderChat(r.Context(), *req.Messages, gen)
	case req.Prompt != nil && req.Messages == nil:
		if req.AddSpecialTokens == nil || *req.AddSpecialTokens {
			writeError(w, http.StatusBadRequest, "BadRequestError", "vllmtest: the text form needs add_special_tokens: false")
			return
		}
		ids, err = s.Policy.Encode(r.Context(), *req.Prompt)
	default:
		writeError(w, http.StatusBadRequest, "BadRequestError", "give either prompt or messages")
		return
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
	maxLen := s.maxModelLen()
	sp := policy.Sampling{Temperature: 1, TopP: 1, StopTokens: req.StopTokenIDs}
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
		maxTokens := maxLen - len(p)
		if req.MaxTokens != nil {
			if *req.MaxTokens < 1 {
				writeError(w, http.StatusBadRequest, "BadRequestError", "max_tokens must be at least 1")
				return
			}
			if len(p)+*req.MaxTokens > maxLen {
				writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
					"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). (prompt %d)",
					maxLen, len(p)+*req.MaxTokens, len(p), *req.MaxTokens, i))
				return
			}
			maxTokens = *req.MaxTokens
		}
		if maxTokens < 1 {
			writeError(w, http.StatusBadRequest, "BadRequestError", "the prompt fills the context")
			return
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
		if smp.Finish == policy.FinishStop && len(smp.Tokens) > 0 && slices.Contains(req.StopTokenIDs, smp.Tokens[len(smp.Tokens)-1]) {
			ch["stop_reason"] = smp.Tokens[len(smp.Tokens)-1]
		}
		if req.Logprobs != nil {
			lps := make([]float64, len(smp.LogProbs))
			for i, v := range smp.LogProbs {
				lps[i] = wireLogProb(v)
			}
			ch["logprobs"] = map[string]any{"text_offset": make([]int, len(lps)), "token_logprobs": lps, "tokens": make([]string, len(lps)), "top_logprobs": nil}
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

// promptLogprobs builds vLLM's per-choice prompt_logprobs: null for the
// first token, then {"<id>": {"logprob", "rank", "decoded_token"}}.
func (s *Server) promptLogprobs(r *http.Request, p []int) ([]any, error) {
	out := make([]any, len(p))
	if len(p) < 2 {
		return out, nil
	}
	lps, err := s.Policy.Score(r.Context(), []policy.ScoreRequest{{Prompt: p[:1], Continuation: p[1:]}})
	if err != nil {
		return nil, err
	}
	if len(lps) != 1 || len(lps[0]) != len(p)-1 {
		return nil, errors.New("vllmtest: policy returned the wrong number of scores")
	}
	for j := 1; j < len(p); j++ {
		tok, _ := s.Policy.Decode(r.Context(), p[j:j+1])
		out[j] = map[string]any{strconv.Itoa(p[j]): map[string]any{"logprob": wireLogProb(lps[0][j-1]), "rank": 1, "decoded_token": tok}}
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
