package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/policy"
)

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	samplingFields
	Prompt           json.RawMessage `json:"prompt"`
	MaxTokens        optInt          `json:"max_tokens"`
	Logprobs         *int            `json:"logprobs"`
	PromptLogprobs   *int            `json:"prompt_logprobs"`
	Echo             *bool           `json:"echo"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
	Suffix           *string         `json:"suffix"`
}

// completionMaxTokens is the OpenAI and vLLM default of max_tokens.
const completionMaxTokens = 16

type completionChoice struct {
	Index          int              `json:"index"`
	Text           string           `json:"text"`
	Logprobs       *textLogprobs    `json:"logprobs"`
	FinishReason   string           `json:"finish_reason"`
	StopReason     any              `json:"stop_reason"`
	TokenIDs       []int            `json:"token_ids"`
	PromptTokenIDs []int            `json:"prompt_token_ids"`
	PromptLogprobs []map[string]any `json:"prompt_logprobs"`
}

// textLogprobs is the logprobs object of a completion choice.
type textLogprobs struct {
	TextOffset    []int                `json:"text_offset"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	Tokens        []string             `json:"tokens"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// textPrompt is one prompt of a request: its ids and, for a text prompt,
// its text.
type textPrompt struct {
	ids  []int
	text *string
}

// parsePrompt reads the prompt field: a string, a list of strings, a list
// of token ids, or a list of such lists.
func (s *Server) parsePrompt(ctx context.Context, raw json.RawMessage, special bool) ([]textPrompt, error) {
	var v any
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "prompt is required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest("prompt", "prompt: %v", err)
	}
	text := func(t string) (textPrompt, error) {
		ids, err := s.encodeText(ctx, t, special)
		return textPrompt{ids: ids, text: &t}, err
	}
	switch v := v.(type) {
	case string:
		p, err := text(v)
		if err != nil {
			return nil, err
		}
		return []textPrompt{p}, nil
	case []any:
		if len(v) == 0 {
			return nil, badRequest("prompt", "prompt must not be empty")
		}
		switch v[0].(type) {
		case json.Number:
			ids, err := idList(v)
			if err != nil {
				return nil, err
			}
			return []textPrompt{{ids: ids}}, nil
		case string:
			out := make([]textPrompt, len(v))
			for i, e := range v {
				t, ok := e.(string)
				if !ok {
					return nil, badRequest("prompt", "prompt: a list of strings holds a %T", e)
				}
				var err error
				if out[i], err = text(t); err != nil {
					return nil, err
				}
			}
			return out, nil
		case []any:
			out := make([]textPrompt, len(v))
			for i, e := range v {
				l, ok := e.([]any)
				if !ok {
					return nil, badRequest("prompt", "prompt: a list of token-id lists holds a %T", e)
				}
				ids, err := idList(l)
				if err != nil {
					return nil, err
				}
				out[i] = textPrompt{ids: ids}
			}
			return out, nil
		}
	}
	return nil, badRequest("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of token-id lists")
}

func idList(v []any) ([]int, error) {
	ids := make([]int, len(v))
	for i, e := range v {
		n, ok := e.(json.Number)
		if !ok {
			return nil, badRequest("prompt", "prompt: token id %d is a %T, not an integer", i, e)
		}
		x, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || x != int64(int(x)) {
			return nil, badRequest("prompt", "prompt: token id %s is not an integer", n)
		}
		ids[i] = int(x)
	}
	return ids, nil
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) (any, error) {
	leave := s.batch.arrive()
	defer leave()
	ctx := r.Context()
	var req completionRequest
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
	if req.Suffix != nil && *req.Suffix != "" {
		return nil, badRequest("suffix", "suffix is not supported")
	}
	echo := boolOr(req.Echo, false)
	wantLP := req.Logprobs != nil
	wantPromptLP := req.PromptLogprobs != nil || (echo && wantLP)
	// nTop alternatives per generated position; nPrompt per prompt position
	// in prompt_logprobs (vLLM scores the prompt of echo with logprobs at
	// logprobs), of which the echoed positions show min(nTop, nPrompt).
	nTop, nPrompt := 0, 0
	if wantLP {
		nTop = *req.Logprobs
		if err := s.checkTopN("logprobs", nTop); err != nil {
			return nil, err
		}
	}
	switch {
	case req.PromptLogprobs != nil:
		nPrompt = *req.PromptLogprobs
		if err := s.checkTopN("prompt_logprobs", nPrompt); err != nil {
			return nil, err
		}
	case wantPromptLP:
		nPrompt = nTop
	}
	skipSpecial := boolOr(req.SkipSpecialTokens, true)
	includeStop := boolOr(req.IncludeStopStrInOutput, false)
	// A stream cuts each choice by its token ids (stream.go).
	returnIDs := boolOr(req.ReturnTokenIDs, false) || sp.stream != nil

	prompts, err := s.parsePrompt(ctx, req.Prompt, boolOr(req.AddSpecialTokens, true))
	if err != nil {
		return nil, err
	}
	if len(prompts)*sp.n > maxSequences {
		return nil, badRequest("n", "%d prompts × n %d is over the limit of %d sequences per request", len(prompts), sp.n, maxSequences)
	}
	var reqs []policy.Request
	var need cost
	where := make([]int, 0, len(prompts)*sp.n) // choice -> index in reqs, or -1
	for i, p := range prompts {
		if len(p.ids) == 0 {
			return nil, badRequest("prompt", "prompt %d is empty", i)
		}
		if err := s.checkIDs("prompt", p.ids); err != nil {
			return nil, err
		}
		m, err := s.maxTokens("max_tokens", req.MaxTokens, completionMaxTokens, len(p.ids), echo)
		if err != nil {
			return nil, err
		}
		n := int64(sp.n)
		need.tokens += n * int64(len(p.ids)+m)
		if wantLP {
			shown := m
			if echo {
				shown += len(p.ids)
			}
			need.logprobs += n * s.positions(shown, nTop)
		}
		if wantPromptLP {
			// Scored once, but carried by every choice of the prompt.
			lp := n * s.positions(len(p.ids)-1, nPrompt)
			need.logprobs += lp
			need.promptLogprobs += lp
		}
		for c := range sp.n {
			if m == 0 {
				where = append(where, -1)
				continue
			}
			q := sp.params
			q.MaxTokens = m
			q.Seed = sp.seed + uint64(c)
			where = append(where, len(reqs))
			reqs = append(reqs, policy.Request{Prompt: p.ids, Sampling: q, Tag: r.Header.Get(TagHeader)})
		}
	}

	if err := s.checkCost(need, "max_tokens", "logprobs"); err != nil {
		return nil, err
	}

	beginStream(w, sp)
	if len(reqs) == 0 {
		leave() // echo only: nothing to sample, do not hold a batch
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg        sync.WaitGroup
		promptLPs []promptLogprobs
		scoreErr  error
	)
	if wantPromptLP {
		wg.Go(func() {
			ids := make([][]int, len(prompts))
			for i, p := range prompts {
				ids[i] = p.ids
			}
			promptLPs, scoreErr = s.scorePrompts(ctx, sm.p, ids, nPrompt)
			if scoreErr != nil {
				cancel()
			}
		})
	}
	var samples []policy.Sample
	if len(reqs) > 0 {
		samples, err = sm.batch.sample(ctx, reqs, leave)
	}
	wg.Wait()
	if scoreErr != nil {
		return nil, scoreErr
	}
	if err != nil {
		return nil, err
	}

	resp := struct {
		ID      string             `json:"id"`
		Object  string             `json:"object"`
		Created int64              `json:"created"`
		Model   string             `json:"model"`
		Choices []completionChoice `json:"choices"`
		Usage   usage              `json:"usage"`
	}{ID: httpapi.NewID("cmpl-"), Object: "text_completion", Created: time.Now().Unix(), Model: sm.name}
	outs := make([]output, len(where))
	var topReqs []policy.ScoreRequest // the generated tokens, for their alternatives
	for i, p := range prompts {
		resp.Usage.PromptTokens += len(p.ids)
		for c := range sp.n {
			k := i*sp.n + c
			smp := policy.Sample{Tokens: []int{}, LogProbs: []float64{}, Finish: policy.FinishLength}
			if where[k] >= 0 {
				smp = samples[where[k]]
				if smp.Err != nil {
					return nil, badRequest("prompt", "prompt %d: %v", i, smp.Err)
				}
			}
			if outs[k], err = s.finishSample(ctx, smp, sp, skipSpecial, includeStop); err != nil {
				return nil, err
			}
			resp.Usage.CompletionTokens += len(outs[k].tokens)
			topReqs = append(topReqs, policy.ScoreRequest{Prompt: p.ids, Continuation: outs[k].tokens})
		}
	}
	var tops [][][]policy.TokenLogprob
	if nTop > 0 {
		if tops, err = s.topLogprobs(ctx, sm.p, topReqs, nTop); err != nil {
			return nil, err
		}
	}
	for i, p := range prompts {
		for c := range sp.n {
			k := i*sp.n + c
			o := choiceOpts{
				echo: echo, logprobs: wantLP, skipSpecial: skipSpecial, returnIDs: returnIDs, nTop: nTop,
			}
			var plp *promptLogprobs
			if wantPromptLP {
				plp = &promptLPs[i]
			}
			var top [][]policy.TokenLogprob
			if tops != nil {
				top = tops[k]
			}
			ch, err := s.completionChoice(ctx, k, p, outs[k], o, plp, top)
			if err != nil {
				return nil, err
			}
			resp.Choices = append(resp.Choices, ch)
		}
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	if sp.stream != nil {
		return nil, s.streamCompletions(ctx, w, sp, echo, prompts, resp.ID, resp.Model, resp.Created, resp.Choices, resp.Usage)
	}
	return resp, nil
}

type choiceOpts struct {
	echo, logprobs, skipSpecial, returnIDs bool
	nTop                                   int // alternatives per position
}

// completionChoice builds choice k, of prompt p, from its output out. plp
// holds the prompt's scores when they were asked for (prompt_logprobs, or
// echo with logprobs); top the alternatives at each generated position
// when logprobs > 0.
func (s *Server) completionChoice(ctx context.Context, k int, p textPrompt, out output, o choiceOpts, plp *promptLogprobs, top [][]policy.TokenLogprob) (completionChoice, error) {
	ch := completionChoice{Index: k, FinishReason: out.finish, StopReason: out.stopReason}
	text := out.text
	if o.echo {
		pt := ""
		var err error
		if p.text != nil {
			pt = *p.text
		} else if pt, err = s.decodeText(ctx, p.ids, false, o.skipSpecial, true); err != nil {
			return ch, err
		}
		text = pt + text
	}
	ch.Text = text
	if o.returnIDs {
		ch.TokenIDs = slices.Clone(out.tokens)
		if ch.TokenIDs == nil {
			ch.TokenIDs = []int{}
		}
		ch.PromptTokenIDs = slices.Clone(p.ids)
	}
	if plp != nil {
		ch.PromptLogprobs = plp.entries
	}
	if o.logprobs {
		var ids []int
		var lps []*float64
		var tops [][]policy.TokenLogprob
		if o.echo {
			ids = append(ids, p.ids...)
			lps = append(lps, nil)
			tops = append(tops, nil)
			for j, v := range plp.lps {
				lps = append(lps, ptr(v))
				var t []policy.TokenLogprob
				if plp.tops != nil {
					t = plp.tops[j][:min(o.nTop, len(plp.tops[j]))]
				}
				tops = append(tops, t)
			}
		}
		ids = append(ids, out.tokens...)
		for t, v := range out.logprobs {
			lps = append(lps, ptr(v))
			if top != nil {
				tops = append(tops, top[t])
			} else {
				tops = append(tops, nil)
			}
		}
		lp, err := s.textLogprobs(ctx, ids, lps, tops, o.skipSpecial)
		if err != nil {
			return ch, err
		}
		ch.Logprobs = lp
	}
	return ch, nil
}

func ptr[T any](v T) *T { return &v }

// textLogprobs builds a completion's logprobs object for ids, whose
// log-probs are lps (nil for the first prompt token of an echo) and whose
// alternatives are tops (top_logprobs[i] is tops[i] plus ids[i]). text_offset
// counts characters of the choice's text, where skipped special tokens
// take none.
func (s *Server) textLogprobs(ctx context.Context, ids []int, lps []*float64, tops [][]policy.TokenLogprob, skipSpecial bool) (*textLogprobs, error) {
	bs, err := s.tokenBytes(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := &textLogprobs{
		TextOffset: make([]int, len(ids)), TokenLogprobs: make([]*float64, len(ids)),
		Tokens: make([]string, len(ids)), TopLogprobs: make([]map[string]float64, len(ids)),
	}
	off := 0
	for i, b := range bs {
		out.Tokens[i] = string(b)
		out.TextOffset[i] = off
		if !skipSpecial || !s.isSpecial(ids[i]) {
			off += utf8.RuneCount(b)
		}
		if lps[i] != nil {
			out.TokenLogprobs[i] = ptr(wireLogProb(*lps[i]))
			if out.TopLogprobs[i], err = s.topDict(ctx, tops[i], ids[i], out.Tokens[i], *lps[i]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// promptLogprobs are the scores of one prompt: lps[j] is the log-prob of
// token j+1, tops[j] (nil unless asked for) the most likely tokens at that
// position, entries the vLLM prompt_logprobs list (entry 0 is null).
type promptLogprobs struct {
	lps     []float64
	tops    [][]policy.TokenLogprob
	entries []map[string]any
}

// rankedScorer is implemented by policies that rank each scored token in
// the distribution it is scored from, such as model/local's: Score's
// log-probabilities and, for each token, the number of vocabulary tokens at
// least as likely (vLLM's rank), from the same forward passes.
type rankedScorer interface {
	ScoreRanks(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, [][]int, error)
}

// scorePrompts scores each prompt from its first token, in one Score call
// (ScoreRanks when pol has it), and, when nTop > 0, finds the nTop most
// likely tokens at each position, in one TopLogprobs call, all of pol. Each
// entry of prompt_logprobs holds the prompt token and the nTop most likely
// tokens, keyed by id, each with its log-prob, decoded text and 1-based
// rank: a listed token's place in the list (the prompt token's too when it
// is listed, as in vLLM), and for the prompt token when it is not listed
// its rank in the full distribution from ScoreRanks (no rank with a policy
// that has no ScoreRanks).
func (s *Server) scorePrompts(ctx context.Context, pol policy.Policy, prompts [][]int, nTop int) ([]promptLogprobs, error) {
	var sreqs []policy.ScoreRequest
	var idx []int
	for i, p := range prompts {
		if len(p) > 1 {
			sreqs = append(sreqs, policy.ScoreRequest{Prompt: p[:1], Continuation: p[1:]})
			idx = append(idx, i)
		}
	}
	out := make([]promptLogprobs, len(prompts))
	var (
		scores [][]float64
		ranks  [][]int
		tops   [][][]policy.TokenLogprob
	)
	if len(sreqs) > 0 {
		var err error
		if rs, ok := pol.(rankedScorer); ok {
			scores, ranks, err = rs.ScoreRanks(ctx, sreqs)
			if err == nil && len(ranks) != len(sreqs) {
				err = fmt.Errorf("policy returned ranks for %d requests of %d", len(ranks), len(sreqs))
			}
		} else {
			scores, err = pol.Score(ctx, sreqs)
		}
		if err != nil {
			return nil, err
		}
		if len(scores) != len(sreqs) {
			return nil, fmt.Errorf("policy returned %d scores for %d requests", len(scores), len(sreqs))
		}
		if nTop > 0 {
			if tops, err = s.topLogprobs(ctx, pol, sreqs, nTop); err != nil {
				return nil, err
			}
		}
	}
	rankOf := make([][]int, len(prompts))
	for k, i := range idx {
		if len(scores[k]) != len(prompts[i])-1 {
			return nil, fmt.Errorf("policy returned %d log-probs for %d tokens", len(scores[k]), len(prompts[i])-1)
		}
		out[i].lps = scores[k]
		if tops != nil {
			out[i].tops = tops[k]
		}
		if ranks != nil {
			if len(ranks[k]) != len(prompts[i])-1 {
				return nil, fmt.Errorf("policy returned %d ranks for %d tokens", len(ranks[k]), len(prompts[i])-1)
			}
			rankOf[i] = ranks[k]
		}
	}
	for i, p := range prompts {
		bs, err := s.tokenBytes(ctx, p)
		if err != nil {
			return nil, err
		}
		out[i].entries = make([]map[string]any, len(p))
		for j := 1; j < len(p); j++ {
			e := map[string]any{"logprob": wireLogProb(out[i].lps[j-1]), "decoded_token": string(bs[j])}
			if rankOf[i] != nil {
				e["rank"] = rankOf[i][j-1]
			}
			entry := map[string]any{strconv.Itoa(p[j]): e}
			if out[i].tops != nil {
				top := out[i].tops[j-1]
				ids := make([]int, len(top))
				for r, t := range top {
					ids[r] = t.Token
				}
				tbs, err := s.tokenBytes(ctx, ids)
				if err != nil {
					return nil, err
				}
				for r, t := range top {
					v := t.LogProb
					if t.Token == p[j] {
						v = out[i].lps[j-1] // Score's value, the same
					}
					entry[strconv.Itoa(t.Token)] = map[string]any{"logprob": wireLogProb(v), "rank": r + 1, "decoded_token": string(tbs[r])}
				}
			}
			out[i].entries[j] = entry
		}
	}
	return out, nil
}
