package tinker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/policy"
)

// SamplerTarget is what a Sampler samples from: exactly one of ModelPath
// (a tinker://…/sampler_weights/… path from SaveWeightsForSampler) and
// BaseModel.
type SamplerTarget struct {
	ModelPath, BaseModel string
}

func (t SamplerTarget) check() error {
	if (t.ModelPath == "") == (t.BaseModel == "") {
		return errors.New("tinker: SamplerTarget needs exactly one of ModelPath and BaseModel")
	}
	return nil
}

// name is the target's policy version.
func (t SamplerTarget) name() string {
	if t.ModelPath != "" {
		return t.ModelPath
	}
	return t.BaseModel
}

// SamplerOption configures a Sampler.
type SamplerOption func(*Sampler)

// WithConcurrency bounds the asample requests a Sampler has in flight,
// across calls (default 64).
func WithConcurrency(n int) SamplerOption {
	return func(s *Sampler) {
		if n > 0 {
			s.sem = make(chan struct{}, n)
		}
	}
}

// Sampler is a policy.Policy on the Tinker API: Sample and Score run on
// the server; Info's MaxContext and StopTokens, RenderChat, Encode and
// Decode come from a local policy holding the same model's tokenizer and
// chat template, since the API has no tokenizer route. It is safe for
// concurrent use.
type Sampler struct {
	c      *Client
	local  policy.Policy
	target atomic.Pointer[SamplerTarget]
	sem    chan struct{}
}

var _ policy.Policy = (*Sampler)(nil)

// NewSampler returns a Policy whose Sample and Score run on the server,
// and whose Info (MaxContext, StopTokens), RenderChat, Encode and Decode
// come from local (the same model's tokenizer and chat template held
// locally). An invalid target makes every Sample and Score fail.
func NewSampler(c *Client, local policy.Policy, target SamplerTarget, opts ...SamplerOption) *Sampler {
	s := &Sampler{c: c, local: local, sem: make(chan struct{}, 64)}
	s.target.Store(&target)
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetModelPath switches later requests to the sampler weights at path (a
// new policy version). Requests in flight keep the weights they started
// with.
func (s *Sampler) SetModelPath(path string) {
	s.target.Store(&SamplerTarget{ModelPath: path})
}

// Target returns what requests are sent to.
func (s *Sampler) Target() SamplerTarget { return *s.target.Load() }

// Info implements policy.Policy: local's, with Name the model path (or
// base model) that requests go to, i.e. the policy version.
func (s *Sampler) Info() policy.Info {
	info := s.local.Info()
	info.Name = s.target.Load().name()
	return info
}

// RenderChat implements policy.Policy with local's chat template.
func (s *Sampler) RenderChat(ctx context.Context, messages []policy.Message, addGenerationPrompt bool) ([]int, error) {
	return s.local.RenderChat(ctx, messages, addGenerationPrompt)
}

// Encode implements policy.Policy with local's tokenizer.
func (s *Sampler) Encode(ctx context.Context, text string) ([]int, error) {
	return s.local.Encode(ctx, text)
}

// Decode implements policy.Policy with local's tokenizer.
func (s *Sampler) Decode(ctx context.Context, ids []int) (string, error) {
	return s.local.Decode(ctx, ids)
}

// withTarget sets req's model source to t.
func withTarget(req *SampleRequest, t SamplerTarget) {
	if t.ModelPath != "" {
		p := t.ModelPath
		req.ModelPath = &p
	} else {
		b := t.BaseModel
		req.BaseModel = &b
	}
}

// wireSeed maps a policy seed to the API's: a non-negative value below
// 2^31, the range SkyRL draws its own seeds from, folding the high bits
// in so that seeds that differ only there still differ. Seeds below 2^31
// are sent unchanged.
func wireSeed(seed uint64) int64 {
	return int64((seed ^ seed>>31 ^ seed>>62) & (1<<31 - 1))
}

// forEach runs fn(i) for i in [0, n), each run holding one of the
// Sampler's request slots; runs not started when ctx ends are skipped.
func (s *Sampler) forEach(ctx context.Context, n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-s.sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// Sample implements policy.Policy: one asample request per policy
// request (num_samples 1, the request's seed), concurrently up to the
// Sampler's bound. A request that fails, after the client's retries, has
// its Sample.Err set; the error result is ctx's when it ends first.
func (s *Sampler) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	t := *s.target.Load()
	if err := t.check(); err != nil {
		return nil, err
	}
	maxContext := s.local.Info().MaxContext
	out := make([]policy.Sample, len(reqs))
	s.forEach(ctx, len(reqs), func(i int) {
		smp, err := s.sampleOne(ctx, t, maxContext, reqs[i])
		if err != nil {
			smp = policy.Sample{Err: fmt.Errorf("request %d: %w", i, err)}
		}
		out[i] = smp
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Sampler) sampleOne(ctx context.Context, t SamplerTarget, maxContext int, r policy.Request) (policy.Sample, error) {
	if len(r.Prompt) == 0 {
		return policy.Sample{}, errors.New("tinker: empty prompt")
	}
	sp := r.Sampling
	maxTokens := sp.MaxTokens
	if maxContext > 0 {
		room := maxContext - len(r.Prompt)
		if room <= 0 {
			return policy.Sample{Tokens: []int{}, LogProbs: []float64{}, Finish: policy.FinishLength}, nil
		}
		if maxTokens <= 0 || maxTokens > room {
			maxTokens = room
		}
	}
	if maxTokens <= 0 {
		return policy.Sample{}, errors.New("tinker: Sampling.MaxTokens is 0 and the local policy reports no MaxContext")
	}
	topK := sp.TopK
	if topK <= 0 {
		topK = -1 // the API's "no limit"
	}
	topP := sp.TopP
	if topP <= 0 || topP > 1 {
		topP = 1
	}
	seed := wireSeed(sp.Seed)
	req := SampleRequest{
		NumSamples: 1,
		Prompt:     TokensInput(r.Prompt),
		SamplingParams: SamplingParams{
			MaxTokens:   maxTokens,
			Seed:        &seed,
			Temperature: sp.Temperature, // 0 is greedy, sent as is
			TopK:        topK,
			TopP:        topP,
		},
		Type: "sample",
	}
	if len(sp.StopTokens) > 0 {
		req.SamplingParams.Stop = sp.StopTokens
	}
	withTarget(&req, t)

	s.c.log.Debug("tinker: sampling", "target", t.name(), "prompt_tokens", len(r.Prompt), "max_tokens", maxTokens)
	resp, err := s.c.Sample(ctx, req)
	if err != nil {
		return policy.Sample{}, err
	}
	seq := resp.Sequences[0]
	if seq.Logprobs == nil && len(seq.Tokens) > 0 {
		return policy.Sample{}, malformed("asample", "sequence has no logprobs")
	}
	smp := policy.Sample{Tokens: seq.Tokens, LogProbs: seq.Logprobs}
	if smp.Tokens == nil {
		smp.Tokens, smp.LogProbs = []int{}, []float64{}
	}
	switch seq.StopReason {
	case StopReasonStop:
		smp.Finish = policy.FinishStop
	default: // decodeSample admits only "stop" and "length"
		smp.Finish = policy.FinishLength
	}
	return smp, nil
}

// Score implements policy.Policy: per request, one asample of the prompt
// followed by the continuation with prompt_logprobs, max_tokens 1 (the
// sampled token is dropped), and the continuation's entries read from
// prompt_logprobs. Requests run concurrently; any failure fails the call.
func (s *Sampler) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	t := *s.target.Load()
	if err := t.check(); err != nil {
		return nil, err
	}
	out := make([][]float64, len(reqs))
	errs := make([]error, len(reqs))
	s.forEach(ctx, len(reqs), func(i int) {
		out[i], errs[i] = s.scoreOne(ctx, t, reqs[i])
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("tinker: scoring request %d: %w", i, err)
		}
	}
	return out, nil
}

func (s *Sampler) scoreOne(ctx context.Context, t SamplerTarget, r policy.ScoreRequest) ([]float64, error) {
	if len(r.Prompt) == 0 {
		return nil, errors.New("tinker: empty prompt")
	}
	if len(r.Continuation) == 0 {
		return []float64{}, nil
	}
	full := make([]int, 0, len(r.Prompt)+len(r.Continuation))
	full = append(append(full, r.Prompt...), r.Continuation...)
	yes := true
	var seed int64
	req := SampleRequest{
		NumSamples: 1,
		Prompt:     TokensInput(full),
		// Temperature 1 and no truncation: the policy's own distribution,
		// whatever a server does with the (discarded) sampled token.
		SamplingParams: SamplingParams{MaxTokens: 1, Seed: &seed, Temperature: 1, TopK: -1, TopP: 1},
		PromptLogprobs: &yes,
		Type:           "sample",
	}
	withTarget(&req, t)
	resp, err := s.c.Sample(ctx, req)
	if err != nil {
		return nil, err
	}
	// Client.Sample checked len(PromptLogprobs) == len(full).
	if resp.PromptLogprobs[0] != nil {
		return nil, malformed("asample", "prompt_logprobs[0] is %v, want null", *resp.PromptLogprobs[0])
	}
	lps := make([]float64, len(r.Continuation))
	for k := range lps {
		p := resp.PromptLogprobs[len(r.Prompt)+k]
		if p == nil {
			return nil, malformed("asample", "prompt_logprobs[%d] is null", len(r.Prompt)+k)
		}
		if math.IsNaN(*p) {
			return nil, malformed("asample", "prompt_logprobs[%d] is NaN", len(r.Prompt)+k)
		}
		lps[k] = *p
	}
	return lps, nil
}
