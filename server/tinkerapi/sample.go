package tinkerapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"

	wire "github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/internal/httpapi"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
)

// sampleJob is one checked asample request.
type sampleJob struct {
	fut      *future
	base     bool       // sample the base policy
	path     tinkerPath // else these sampler weights
	prompt   []int
	n        int
	sampling policy.Sampling // sample i uses Seed+i
	stops    []string        // stop strings
	promptLP bool
	topK     int
}

// source identifies what a job samples, to batch jobs of one source.
func (j *sampleJob) source() string {
	if j.base {
		return ""
	}
	return j.path.String()
}

func (s *Server) asample(_ *http.Request, body []byte) (any, error) {
	req := wire.SampleRequest{NumSamples: 1, SamplingParams: wire.SamplingParams{Temperature: 1, TopK: -1, TopP: 1}} // the SDK's defaults
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	j := &sampleJob{}
	var modelPath string
	switch {
	case req.SamplingSessionID != nil:
		s.mu.Lock()
		ss, ok := s.samplings[*req.SamplingSessionID]
		s.mu.Unlock()
		if !ok {
			return nil, notFound("Sampling session not found: %q", *req.SamplingSessionID)
		}
		j.base, modelPath = ss.base, ss.modelPath
	case (req.BaseModel == nil) == (req.ModelPath == nil):
		return nil, badRequest("When 'sampling_session_id' is not provided, exactly one of 'base_model' or 'model_path' must be provided")
	case req.BaseModel != nil:
		if err := s.checkBase(*req.BaseModel); err != nil {
			return nil, err
		}
		j.base = true
	default:
		modelPath = *req.ModelPath
	}
	if !j.base {
		p, err := s.checkSamplerPath(modelPath)
		if err != nil {
			return nil, err
		}
		j.path = p
	}
	prompt, err := req.Prompt.Tokens()
	if err != nil {
		return nil, badRequest("prompt: %v (images are not supported)", err)
	}
	maxSeq, vocab := s.base.Info().MaxContext, s.base.VocabSize()
	sp := req.SamplingParams
	switch {
	case len(prompt) == 0:
		return nil, badRequest("the prompt has no tokens")
	case len(prompt) > maxSeq || (len(prompt) == maxSeq && !scoring(req)):
		return nil, badRequest("a prompt of %d tokens leaves no room to sample in the model's context of %d", len(prompt), maxSeq)
	case req.NumSamples < 1 || req.NumSamples > s.opts.MaxSamples:
		return nil, badRequest("num_samples must be in [1, %d], got %d", s.opts.MaxSamples, req.NumSamples)
	case sp.MaxTokens <= 0:
		return nil, badRequest("sampling_params.max_tokens is required and must be a positive number, got %d", sp.MaxTokens)
	case math.IsNaN(sp.Temperature) || math.IsInf(sp.Temperature, 0) || sp.Temperature < 0:
		return nil, badRequest("sampling_params.temperature must be finite and ≥ 0, got %v", sp.Temperature)
	case !(sp.TopP >= 0 && sp.TopP <= 1):
		return nil, badRequest("sampling_params.top_p must be in [0, 1] (0 and 1: no nucleus truncation), got %v", sp.TopP)
	case sp.TopK < -1:
		return nil, badRequest("sampling_params.top_k must be -1 (no limit) or positive, got %d", sp.TopK)
	case req.TopKPromptLogprobs < 0 || req.TopKPromptLogprobs > s.opts.MaxTopKPromptLogprobs:
		return nil, badRequest("topk_prompt_logprobs must be in [0, %d], got %d", s.opts.MaxTopKPromptLogprobs, req.TopKPromptLogprobs)
	}
	for t, id := range prompt {
		if id < 0 || id >= vocab {
			return nil, badRequest("prompt token id %d at position %d is outside the vocabulary [0, %d)", id, t, vocab)
		}
	}
	ids, strs, err := parseStop(sp.Stop, vocab)
	if err != nil {
		return nil, err
	}
	seed := httpapi.RandomSeed()
	if sp.Seed != nil {
		seed = uint64(*sp.Seed)
	}
	j.prompt, j.n, j.stops = prompt, req.NumSamples, strs
	j.sampling = policy.Sampling{Temperature: sp.Temperature, TopP: sp.TopP, TopK: max(sp.TopK, 0),
		MaxTokens: sp.MaxTokens, StopTokens: ids, Seed: seed}
	j.promptLP = req.PromptLogprobs != nil && *req.PromptLogprobs
	j.topK = req.TopKPromptLogprobs
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()
	if q := s.sampleSeqs; q+j.n > s.opts.MaxQueuedSamples {
		return nil, errorf(http.StatusTooManyRequests,
			"%d sequences are queued for sampling, and num_samples %d would pass this server's limit of %d (MaxQueuedSamples): wait for results before submitting more",
			q, j.n, s.opts.MaxQueuedSamples)
	}
	if j.fut, err = s.newFuture(j.resultBytes(maxSeq)); err != nil {
		return nil, err
	}
	j.fut.kind = resultSample
	s.sampleQ = append(s.sampleQ, j)
	s.sampleSeqs += j.n
	select {
	case s.sampleWake <- struct{}{}:
	default:
	}
	return futureResponse(j.fut.id, nil), nil
}

// resultBytes bounds the JSON of the job's result: each sample's tokens
// and log-probs up to the room the context leaves, and the prompt's
// log-probs and alternatives when asked for.
func (j *sampleJob) resultBytes(maxSeq int) int64 {
	room := int64(max(0, min(j.sampling.MaxTokens, maxSeq-len(j.prompt))))
	n := int64(j.n) * (room*perValueBytes + 128)
	p := int64(len(j.prompt))
	if j.promptLP || j.topK > 0 {
		n += p * perValueBytes
	}
	n += p * int64(j.topK) * perValueBytes
	return n + smallResultBytes
}

// parseStop reads sampling_params.stop: absent, a string, or a list of
// token ids or of strings (not mixed, as SkyRL's server).
func parseStop(v any, vocab int) (ids []int, strs []string, err error) {
	switch v := v.(type) {
	case nil:
		return nil, nil, nil
	case string:
		if v == "" {
			return nil, nil, nil
		}
		return nil, []string{v}, nil
	case []any:
		for i, e := range v {
			switch e := e.(type) {
			case float64:
				if e != math.Trunc(e) || e < 0 || e >= float64(vocab) {
					return nil, nil, badRequest("stop token id %v at %d is not an id of the vocabulary [0, %d)", e, i, vocab)
				}
				ids = append(ids, int(e))
			case string:
				if e != "" {
					strs = append(strs, e)
				}
			default:
				return nil, nil, badRequest("stop must be a list of token ids or of strings: element %d is %v", i, e)
			}
		}
		if ids != nil && len(strs) > 0 {
			return nil, nil, badRequest("stop must be either all integers (token IDs) or all strings, not mixed")
		}
		return ids, strs, nil
	}
	return nil, nil, badRequest("stop must be a string or a list of token ids or of strings, got %v", v)
}

// runSampler is the sampling worker: it takes the queued jobs, merges the
// ones of the same weights into one Sample call, and answers them.
func (s *Server) runSampler() {
	defer s.wg.Done()
	for {
		jobs := s.takeSamples()
		if jobs == nil {
			break
		}
		s.sampleBatch(jobs)
	}
	s.sampleMu.Lock()
	rest := s.sampleQ
	s.sampleQ, s.sampleSeqs = nil, 0
	s.sampleMu.Unlock()
	for _, j := range rest {
		s.finish(j.fut, nil, errors.New("the server closed before the request ran"))
	}
}

// takeSamples waits for queued jobs and takes them, up to MaxSampleBatch
// sequences (at least one job); nil once the server closes.
func (s *Server) takeSamples() []*sampleJob {
	for {
		s.sampleMu.Lock()
		if q := s.sampleQ; len(q) > 0 {
			k, n := 0, 0
			for k < len(q) && (k == 0 || n+q[k].n <= s.opts.MaxSampleBatch) {
				n += q[k].n
				k++
			}
			jobs := slices.Clone(q[:k])
			s.sampleQ = slices.Delete(q, 0, k)
			s.sampleSeqs -= n
			s.sampleMu.Unlock()
			return jobs
		}
		s.sampleMu.Unlock()
		select {
		case <-s.sampleWake:
		case <-s.closing:
			return nil
		}
	}
}

// sampleBatch samples jobs, one Sample call per source.
func (s *Server) sampleBatch(jobs []*sampleJob) {
	var order []string
	groups := map[string][]*sampleJob{}
	for _, j := range jobs {
		k := j.source()
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], j)
	}
	for _, k := range order {
		group := groups[k]
		pol := s.base
		if !group[0].base {
			var err error
			if pol, err = s.samplerPolicy(group[0].path); err != nil {
				for _, j := range group {
					s.finish(j.fut, nil, err)
				}
				continue
			}
		}
		var reqs []policy.Request
		for _, j := range group {
			for i := range j.n {
				sp := j.sampling
				sp.Seed += uint64(i)
				reqs = append(reqs, policy.Request{Prompt: j.prompt, Sampling: sp})
			}
		}
		samples, err := sampleRoom(s.ctx, pol, reqs)
		if err != nil {
			for _, j := range group {
				s.finish(j.fut, nil, err)
			}
			continue
		}
		for _, j := range group {
			res, err := s.finishSample(pol, j, samples[:j.n])
			samples = samples[j.n:]
			s.finish(j.fut, res, err)
		}
	}
}

// finishSample applies the stop strings to a job's samples and adds the
// prompt log-probabilities it asked for.
func (s *Server) finishSample(pol *local.Policy, j *sampleJob, samples []policy.Sample) (wire.SampleResponse, error) {
	resp := wire.SampleResponse{Sequences: make([]wire.SampledSequence, len(samples)), Type: "sample"}
	for i, smp := range samples {
		if smp.Err != nil {
			return resp, userErrorf("sampling: %v", smp.Err)
		}
		toks, lps, finish := smp.Tokens, smp.LogProbs, smp.Finish
		if len(j.stops) > 0 {
			cut, err := s.stopCut(pol, toks, j.stops)
			if err != nil {
				return resp, err
			}
			if cut >= 0 {
				toks, lps, finish = toks[:cut+1], lps[:cut+1], policy.FinishStop
			}
		}
		reason := wire.StopReasonLength
		if finish == policy.FinishStop {
			reason = wire.StopReasonStop
		}
		out := make([]float64, len(lps))
		for t, v := range lps {
			out[t] = wireFloat(v)
		}
		resp.Sequences[i] = wire.SampledSequence{StopReason: reason, Tokens: append([]int{}, toks...), Logprobs: out}
	}
	if !j.promptLP && j.topK == 0 {
		return resp, nil
	}
	// A positive topk_prompt_logprobs implies prompt_logprobs (SkyRL's
	// server reads both off one prompt pass). Entry 0 has no context.
	resp.PromptLogprobs = make([]*float64, len(j.prompt))
	if len(j.prompt) > 1 {
		req := []policy.ScoreRequest{{Prompt: j.prompt[:1], Continuation: j.prompt[1:]}}
		lps, err := pol.Score(s.ctx, req)
		if err != nil {
			return resp, err
		}
		for t, v := range lps[0] {
			x := wireFloat(v)
			resp.PromptLogprobs[t+1] = &x
		}
		if j.topK > 0 {
			top, err := pol.TopLogprobs(s.ctx, req, j.topK)
			if err != nil {
				return resp, err
			}
			resp.TopKPromptLogprobs = make([][]wire.TokenLogprob, len(j.prompt))
			for t, row := range top[0] {
				r := make([]wire.TokenLogprob, len(row))
				for k, e := range row {
					r[k] = wire.TokenLogprob{Token: e.Token, Logprob: wireFloat(e.LogProb)}
				}
				resp.TopKPromptLogprobs[t+1] = r
			}
		}
	} else if j.topK > 0 {
		resp.TopKPromptLogprobs = make([][]wire.TokenLogprob, 1)
	}
	return resp, nil
}

// stopCut returns the index of the token whose text completes the first
// stop string, or -1. The text is the sampled tokens' without special
// tokens, as vLLM matches stop strings. The model cannot stop on text
// while it samples, so the sample is cut afterwards: each sample has its
// own seeded generator, so the tokens before the cut are those sampling
// would have stopped at.
func (s *Server) stopCut(pol *local.Policy, toks []int, stops []string) (int, error) {
	text := func(k int) (string, error) {
		ids := slices.DeleteFunc(slices.Clone(toks[:k]), pol.IsSpecialToken)
		if len(ids) == 0 {
			return "", nil
		}
		return pol.Decode(s.ctx, ids)
	}
	has := func(t string) bool {
		for _, st := range stops {
			if strings.Contains(t, st) {
				return true
			}
		}
		return false
	}
	full, err := text(len(toks))
	if err != nil || !has(full) {
		return -1, err
	}
	for i := range toks {
		t, err := text(i + 1)
		if err != nil {
			return -1, err
		}
		if has(t) {
			return i, nil
		}
	}
	return -1, nil
}

// scoring reports whether a sample request asks for prompt log-probs: a
// prompt that fills the context is then scored, and its samples are empty
// (stop reason "length"), which is how a client scores a whole sequence.
func scoring(req wire.SampleRequest) bool {
	return (req.PromptLogprobs != nil && *req.PromptLogprobs) || req.TopKPromptLogprobs > 0
}

// sampleRoom samples reqs on pol, answering the requests whose prompt
// fills the context with empty samples.
func sampleRoom(ctx context.Context, pol *local.Policy, reqs []policy.Request) ([]policy.Sample, error) {
	maxSeq := pol.Info().MaxContext
	out := make([]policy.Sample, len(reqs))
	var room []policy.Request
	var idx []int
	for i, r := range reqs {
		if len(r.Prompt) >= maxSeq {
			out[i] = policy.Sample{Tokens: []int{}, LogProbs: []float64{}, Finish: policy.FinishLength}
			continue
		}
		room, idx = append(room, r), append(idx, i)
	}
	if len(room) == 0 {
		return out, nil
	}
	got, err := pol.Sample(ctx, room)
	if err != nil {
		return nil, err
	}
	for k, i := range idx {
		out[i] = got[k]
	}
	return out, nil
}
