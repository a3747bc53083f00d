package openaiapi

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/policy"
)

// optInt is a JSON integer that remembers whether it was present and
// whether it was null (max_tokens: absent and null differ).
type optInt struct {
	set, null bool
	v         int
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *optInt) UnmarshalJSON(b []byte) error {
	o.set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		o.null = true
		return nil
	}
	return json.Unmarshal(b, &o.v)
}

// samplingFields are the request fields shared by completions and chat.
type samplingFields struct {
	Model             string             `json:"model"`
	N                 *int               `json:"n"`
	BestOf            *int               `json:"best_of"`
	Seed              *int64             `json:"seed"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	TopK              *int               `json:"top_k"`
	MinP              *float64           `json:"min_p"`
	MinTokens         *int               `json:"min_tokens"`
	RepetitionPenalty *float64           `json:"repetition_penalty"`
	PresencePenalty   *float64           `json:"presence_penalty"`
	FrequencyPenalty  *float64           `json:"frequency_penalty"`
	LogitBias         map[string]float64 `json:"logit_bias"`
	Stop              json.RawMessage    `json:"stop"`
	Stream            *bool              `json:"stream"`
	StreamOptions     *streamOptions     `json:"stream_options"`
	// StopTokenIDs is nil when absent or null.
	StopTokenIDs           *[]int `json:"stop_token_ids"`
	IgnoreEOS              *bool  `json:"ignore_eos"`
	ReturnTokenIDs         *bool  `json:"return_token_ids"`
	SkipSpecialTokens      *bool  `json:"skip_special_tokens"`
	IncludeStopStrInOutput *bool  `json:"include_stop_str_in_output"`
}

// sampling is the checked sampling part of a request.
type sampling struct {
	n      int
	seed   uint64
	params policy.Sampling // MaxTokens and Seed are set per sequence
	stops  []int           // the stop set, never nil
	reason map[int]bool    // the stop tokens reported as stop_reason (the others: null)
	stream *streamConfig   // nil unless the reply streams
	strs   []string        // the stop strings (stop.go), none empty
}

// check validates the shared fields and returns the sampling they ask for.
func (s *Server) checkSampling(f *samplingFields) (*sampling, error) {
	if err := s.checkModel(f.Model); err != nil {
		return nil, err
	}
	sp := &sampling{n: 1, params: policy.Sampling{Temperature: 1, TopP: 1}}
	if f.N != nil {
		sp.n = *f.N
	}
	if sp.n < 1 || sp.n > s.opts.MaxN {
		return nil, badRequest("n", "n must be between 1 and %d, got %d", s.opts.MaxN, sp.n)
	}
	if f.BestOf != nil && *f.BestOf != sp.n {
		return nil, badRequest("best_of", "best_of is not supported (it must equal n)")
	}
	stream, err := checkStream(f)
	if err != nil {
		return nil, err
	}
	sp.stream = stream
	if f.Seed != nil {
		sp.seed = uint64(*f.Seed)
	} else {
		sp.seed = httpapi.RandomSeed()
	}
	if t := f.Temperature; t != nil {
		if !(*t >= 0) || math.IsInf(*t, 1) {
			return nil, badRequest("temperature", "temperature must be a finite number >= 0, got %v", *t)
		}
		sp.params.Temperature = *t
	}
	if p := f.TopP; p != nil {
		if !(*p > 0 && *p <= 1) {
			return nil, badRequest("top_p", "top_p must be in (0, 1], got %v", *p)
		}
		sp.params.TopP = *p
	}
	if k := f.TopK; k != nil {
		switch {
		case *k > 0:
			sp.params.TopK = *k
		case *k < -1:
			return nil, badRequest("top_k", "top_k must be -1 (disabled), 0 (disabled) or positive, got %d", *k)
		}
	}
	if f.MinP != nil && *f.MinP != 0 {
		return nil, badRequest("min_p", "min_p is not supported (only 0)")
	}
	if f.MinTokens != nil && *f.MinTokens != 0 {
		return nil, badRequest("min_tokens", "min_tokens is not supported (only 0)")
	}
	if f.RepetitionPenalty != nil && *f.RepetitionPenalty != 1 {
		return nil, badRequest("repetition_penalty", "repetition_penalty is not supported (only 1)")
	}
	if f.PresencePenalty != nil && *f.PresencePenalty != 0 {
		return nil, badRequest("presence_penalty", "presence_penalty is not supported (only 0)")
	}
	if f.FrequencyPenalty != nil && *f.FrequencyPenalty != 0 {
		return nil, badRequest("frequency_penalty", "frequency_penalty is not supported (only 0)")
	}
	if len(f.LogitBias) > 0 {
		return nil, badRequest("logit_bias", "logit_bias is not supported")
	}
	strs, err := parseStop(f.Stop)
	if err != nil {
		return nil, err
	}
	sp.strs = strs
	// The stop set, as vLLM builds it: stop_token_ids, plus the model's
	// end-of-sequence tokens unless ignore_eos (see the package doc).
	sp.stops, sp.reason = []int{}, map[int]bool{}
	if f.StopTokenIDs != nil {
		if err := s.checkIDs("stop_token_ids", *f.StopTokenIDs); err != nil {
			return nil, err
		}
		for _, id := range *f.StopTokenIDs {
			if !sp.reason[id] {
				sp.stops = append(sp.stops, id)
				sp.reason[id] = true
			}
		}
	}
	if !boolOr(f.IgnoreEOS, false) {
		eos := s.p.Info().StopTokens
		for _, id := range eos {
			if !slices.Contains(sp.stops, id) {
				sp.stops = append(sp.stops, id)
			}
			sp.reason[id] = true
		}
		if len(eos) > 0 {
			delete(sp.reason, eos[0]) // the primary EOS: stop_reason null
		}
	}
	sp.params.StopTokens = sp.stops
	return sp, nil
}

// maxTokens resolves max_tokens for a prompt of n tokens: def, when
// positive, is used when the field is absent or null (vLLM's completions
// default of 16), the rest of the context otherwise (its chat default), both
// bounded by the room left and Options.MaxTokensCap. zeroOK allows 0.
func (s *Server) maxTokens(param string, o optInt, def int, n int, zeroOK bool) (int, error) {
	maxLen := s.maxModelLen()
	room := maxLen - n
	if room <= 0 {
		return 0, badRequest("prompt", "This model's maximum context length is %d tokens. However, your prompt has %d tokens, which leaves no room for a completion.", maxLen, n)
	}
	limit := room
	if c := s.opts.MaxTokensCap; c > 0 {
		limit = min(limit, c)
	}
	var m int
	switch {
	case (!o.set || o.null) && def > 0:
		m = min(def, limit)
	case !o.set || o.null:
		m = limit
	default:
		m = o.v
	}
	switch {
	case m < 0 || (m == 0 && !zeroOK):
		return 0, badRequest(param, "%s must be at least 1, got %d", param, m)
	case s.opts.MaxTokensCap > 0 && m > s.opts.MaxTokensCap:
		return 0, badRequest(param, "%s is %d, over this server's limit of %d", param, m, s.opts.MaxTokensCap)
	case m > room:
		return 0, badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the length of the prompt or the completion.", maxLen, n+m, n, m)
	}
	return m, nil
}
