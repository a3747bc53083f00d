package vllm

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/policy"
)

// minLogProb is vLLM's stand-in for -Inf.
const minLogProb = -9999

// logProb maps vLLM's -9999 stand-in back to -Inf.
func logProb(v float64) float64 {
	if v <= minLogProb {
		return math.Inf(-1)
	}
	return v
}

// Sample implements policy.Policy: one POST /v1/completions per request,
// sent concurrently (see the package doc). A request that fails, after its
// retries, has its Sample.Err set; the error result is ctx's when it ends
// first.
func (c *Client) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	return c.sample(ctx, c.Model(), reqs)
}

func (c *Client) sample(ctx context.Context, model string, reqs []policy.Request) ([]policy.Sample, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	out := make([]policy.Sample, len(reqs))
	c.forEach(ctx, len(reqs), func(i int) {
		s, err := c.sampleOne(ctx, model, reqs[i])
		if err != nil {
			s = policy.Sample{Err: fmt.Errorf("request %d: %w", i, err)}
		}
		out[i] = s
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// samplingRequest builds the sampling request of r; ok is false when the
// context has no room for a reply.
func (c *Client) samplingRequest(model string, r policy.Request) (req completionRequest, ok bool) {
	sp := r.Sampling
	// maxContext is known once New returns, so max_tokens is always sent:
	// vLLM reads an absent or null max_tokens as 16.
	room := c.maxContext - len(r.Prompt)
	if room <= 0 {
		return req, false
	}
	maxTokens := room
	if sp.MaxTokens > 0 && sp.MaxTokens < room {
		maxTokens = sp.MaxTokens
	}
	topP := sp.TopP
	if topP <= 0 || topP > 1 {
		topP = 1
	}
	topK := sp.TopK
	if topK <= 0 {
		topK = -1 // disabled in every vLLM version (newer ones also take 0)
	}
	stop := sp.StopTokens
	if stop == nil {
		stop = c.stopTokens
	}
	if stop == nil {
		stop = []int{}
	}
	seed := int64(sp.Seed) // same bits; vLLM takes the whole int64 range
	zero := 0
	return completionRequest{
		Model:                  model,
		Prompt:                 r.Prompt,
		MaxTokens:              &maxTokens,
		N:                      1,
		Seed:                   &seed,
		Temperature:            sp.Temperature,
		TopP:                   topP,
		TopK:                   topK,
		MinP:                   0,
		RepetitionPenalty:      1,
		Logprobs:               &zero,
		ReturnTokenIDs:         true,
		SkipSpecialTokens:      false,
		AddSpecialTokens:       false,
		StopTokenIDs:           stop,
		IgnoreEOS:              true, // stop is the whole stop set: no EOS added
		IncludeStopStrInOutput: true,
	}, true
}

func (c *Client) sampleOne(ctx context.Context, model string, r policy.Request) (policy.Sample, error) {
	if len(r.Prompt) == 0 {
		return policy.Sample{}, errors.New("vllm: empty prompt")
	}
	req, ok := c.samplingRequest(model, r)
	if !ok {
		return policy.Sample{Tokens: []int{}, LogProbs: []float64{}, Finish: policy.FinishLength}, nil
	}
	data, err := c.post(ctx, nil, "/v1/completions", req)
	if err != nil {
		return policy.Sample{}, err
	}
	return parseSample(data)
}

// parseSample checks and reads the reply of an n = 1 sampling request.
func parseSample(data []byte) (policy.Sample, error) {
	var resp completionResponse
	if err := decode("/v1/completions", data, &resp); err != nil {
		return policy.Sample{}, err
	}
	if len(resp.Choices) != 1 {
		return policy.Sample{}, malformed("/v1/completions: %d choices for n=1", len(resp.Choices))
	}
	ch := resp.Choices[0]
	if ch.TokenIDs == nil {
		return policy.Sample{}, malformed("/v1/completions: choice has no token_ids (vLLM older than 0.10.2, or return_token_ids ignored)")
	}
	if ch.Logprobs == nil || ch.Logprobs.TokenLogprobs == nil {
		return policy.Sample{}, malformed("/v1/completions: choice has no logprobs.token_logprobs")
	}
	if len(ch.Logprobs.TokenLogprobs) != len(ch.TokenIDs) {
		return policy.Sample{}, malformed("/v1/completions: %d token_logprobs for %d token_ids", len(ch.Logprobs.TokenLogprobs), len(ch.TokenIDs))
	}
	s := policy.Sample{Tokens: ch.TokenIDs, LogProbs: make([]float64, len(ch.TokenIDs))}
	for i, lp := range ch.Logprobs.TokenLogprobs {
		if lp == nil {
			return policy.Sample{}, malformed("/v1/completions: token_logprobs[%d] is null", i)
		}
		s.LogProbs[i] = logProb(*lp)
	}
	switch {
	case ch.FinishReason == nil:
		return policy.Sample{}, malformed("/v1/completions: finish_reason is null")
	case *ch.FinishReason == "stop":
		s.Finish = policy.FinishStop
	case *ch.FinishReason == "length":
		s.Finish = policy.FinishLength
	default:
		return policy.Sample{}, malformed("/v1/completions: unknown finish_reason %q", *ch.FinishReason)
	}
	return s, nil
}
