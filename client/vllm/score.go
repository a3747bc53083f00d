package vllm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/agentrl/agentrl/policy"
)

// Score implements policy.Policy by teacher forcing: each prompt ++
// continuation is sent as a prompt with prompt_logprobs 0 and max_tokens 1,
// Options.ScoreBatch sequences per POST /v1/completions, the requests sent
// concurrently. Any failure fails the call. A sequence must leave room for
// the one generated token: len(Prompt)+len(Continuation) < MaxContext.
func (c *Client) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	return c.score(ctx, c.Model(), reqs)
}

func (c *Client) score(ctx context.Context, model string, reqs []policy.ScoreRequest) ([][]float64, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	out := make([][]float64, len(reqs))
	var todo []int // requests with a continuation to score
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return nil, fmt.Errorf("vllm: score request %d has an empty prompt", i)
		}
		if n := len(r.Prompt) + len(r.Continuation); c.maxContext > 0 && n >= c.maxContext {
			return nil, fmt.Errorf("vllm: score request %d has %d tokens; scoring needs fewer than MaxContext (%d)", i, n, c.maxContext)
		}
		if len(r.Continuation) == 0 {
			out[i] = []float64{}
			continue
		}
		todo = append(todo, i)
	}
	batches := slices.Collect(slices.Chunk(todo, c.opts.ScoreBatch))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
	)
	c.forEach(ctx, len(batches), func(b int) {
		err := c.scoreBatch(ctx, model, reqs, batches[b], out)
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			cancel()
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// scoreBatch scores reqs[idx...] in one request and writes out[idx...].
func (c *Client) scoreBatch(ctx context.Context, model string, reqs []policy.ScoreRequest, idx []int, out [][]float64) error {
	seqs := make([][]int, len(idx))
	for k, i := range idx {
		seqs[k] = slices.Concat(reqs[i].Prompt, reqs[i].Continuation)
	}
	one, zero := 1, 0
	req := completionRequest{
		Model:             model,
		Prompt:            seqs,
		MaxTokens:         &one,
		N:                 1,
		Temperature:       1,
		TopP:              1,
		TopK:              -1,
		RepetitionPenalty: 1,
		PromptLogprobs:    &zero,
		ReturnTokenIDs:    true,
		StopTokenIDs:      []int{},
	}
	data, err := c.post(ctx, nil, "/v1/completions", req)
	if err != nil {
		return fmt.Errorf("scoring requests %d..%d: %w", idx[0], idx[len(idx)-1], err)
	}
	var resp completionResponse
	if err := decode("/v1/completions", data, &resp); err != nil {
		return err
	}
	if len(resp.Choices) != len(seqs) {
		return malformed("/v1/completions: %d choices for %d scored prompts", len(resp.Choices), len(seqs))
	}
	seen := make([]bool, len(seqs))
	for _, ch := range resp.Choices {
		k := ch.Index
		if k < 0 || k >= len(seqs) || seen[k] {
			return malformed("/v1/completions: choice index %d repeated or out of range [0, %d)", k, len(seqs))
		}
		seen[k] = true
		i := idx[k]
		lps, err := continuationLogProbs(ch, seqs[k], len(reqs[i].Prompt))
		if err != nil {
			return fmt.Errorf("score request %d: %w", i, err)
		}
		out[i] = lps
	}
	return nil
}

// continuationLogProbs reads the log-probs of seq[start:] from a choice's
// prompt_logprobs, checking that the server scored exactly seq.
func continuationLogProbs(ch completionChoice, seq []int, start int) ([]float64, error) {
	if ch.PromptTokenIDs == nil {
		return nil, malformed("/v1/completions: choice has no prompt_token_ids")
	}
	if !slices.Equal(ch.PromptTokenIDs, seq) {
		return nil, malformed("/v1/completions: prompt_token_ids (%d ids) differ from the %d ids sent", len(ch.PromptTokenIDs), len(seq))
	}
	if len(ch.PromptLogprobs) != len(seq) {
		return nil, malformed("/v1/completions: %d prompt_logprobs for %d prompt tokens (prompt_logprobs must be read per choice)", len(ch.PromptLogprobs), len(seq))
	}
	lps := make([]float64, len(seq)-start)
	for j := start; j < len(seq); j++ {
		e, ok := ch.PromptLogprobs[j][strconv.Itoa(seq[j])]
		if !ok || e.Logprob == nil {
			return nil, malformed("/v1/completions: prompt_logprobs[%d] has no entry for token %d", j, seq[j])
		}
		lps[j-start] = logProb(*e.Logprob)
	}
	return lps, nil
}
