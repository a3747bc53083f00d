// Package local serves the embedded Go transformer (policy/native) with its
// tokenizer (policy/tokenizer) as a policy.Policy, in process.
//
// Calls are serialised: the model's inference and training workspaces are
// not safe for concurrent use, and one batched call is faster than several
// interleaved ones. Callers that want batching (the rollout engine, `trainer
// serve`) hand many requests to one Sample or Score call.
package local

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/native"
	"github.com/agentrl/agentrl/policy/tokenizer"
)

// Policy is a native model plus its tokenizer.
type Policy struct {
	mu    sync.Mutex
	model *native.Model
	tok   *tokenizer.Tokenizer
	name  string
}

// New wraps model and tok. The model's vocabulary must cover the tokenizer's.
func New(name string, model *native.Model, tok *tokenizer.Tokenizer) (*Policy, error) {
	if v := model.Config().Vocab; v < tok.VocabSize() {
		return nil, fmt.Errorf("local policy: model vocabulary %d is smaller than the tokenizer's %d", v, tok.VocabSize())
	}
	return &Policy{model: model, tok: tok, name: name}, nil
}

// Lock gives exclusive use of the model, for training it between calls.
// Unlock must follow.
func (p *Policy) Lock() *native.Model { p.mu.Lock(); return p.model }

// Unlock ends a Lock.
func (p *Policy) Unlock() { p.mu.Unlock() }

// Tokenizer returns the tokenizer.
func (p *Policy) Tokenizer() *tokenizer.Tokenizer { return p.tok }

// Info implements policy.Policy.
func (p *Policy) Info() policy.Info {
	return policy.Info{Name: p.name, MaxContext: p.model.Config().MaxSeq, StopTokens: []int{tokenizer.EndID}}
}

// RenderChat implements policy.Policy with the agentrl chat template.
func (p *Policy) RenderChat(_ context.Context, msgs []policy.Message, addGenerationPrompt bool) ([]int, error) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	return p.tok.Render(tm, addGenerationPrompt)
}

// Encode implements policy.Policy.
func (p *Policy) Encode(_ context.Context, text string) ([]int, error) {
	return p.tok.Encode(text), nil
}

// Decode implements policy.Policy.
func (p *Policy) Decode(_ context.Context, ids []int) (string, error) { return p.tok.Decode(ids) }

// Sample implements policy.Policy. Requests are checked one by one: a bad
// request (an out-of-range token id, a prompt longer than the context) gets
// its own Err and the rest are sampled together.
func (p *Policy) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out := make([]policy.Sample, len(reqs))
	var batch []native.SampleRequest
	var idx []int
	maxSeq := p.model.Config().MaxSeq
	for i, r := range reqs {
		if err := p.checkIDs(r.Prompt); err != nil {
			out[i].Err = err
			continue
		}
		room := maxSeq - len(r.Prompt)
		if room <= 0 {
			out[i].Err = fmt.Errorf("prompt of %d tokens leaves no room in a context of %d", len(r.Prompt), maxSeq)
			continue
		}
		maxNew := r.Sampling.MaxTokens
		if maxNew <= 0 || maxNew > room {
			maxNew = room
		}
		stops := r.Sampling.StopTokens
		if stops == nil {
			stops = []int{tokenizer.EndID}
		}
		batch = append(batch, native.SampleRequest{
			Prompt: r.Prompt, MaxNewTokens: maxNew, Temperature: float32(r.Sampling.Temperature),
			TopK: r.Sampling.TopK, TopP: float32(r.Sampling.TopP), StopTokens: stops, Seed: r.Sampling.Seed,
		})
		idx = append(idx, i)
	}
	if len(batch) == 0 {
		return out, nil
	}
	p.mu.Lock()
	res, err := p.model.Sample(ctx, batch)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		lp := make([]float64, len(res[j].LogProbs))
		for t, v := range res[j].LogProbs {
			lp[t] = float64(v)
		}
		out[i] = policy.Sample{Tokens: res[j].Tokens, LogProbs: lp, Finish: res[j].FinishReason}
	}
	return out, nil
}

// Score implements policy.Policy. Requests that share a prompt are scored
// against one prompt forward pass.
func (p *Policy) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	var nreqs []native.ScoreRequest
	where := make([][2]int, len(reqs)) // native request, continuation index
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return nil, fmt.Errorf("score request %d: empty prompt", i)
		}
		if err := p.checkIDs(r.Prompt); err != nil {
			return nil, fmt.Errorf("score request %d: %w", i, err)
		}
		if err := p.checkIDs(r.Continuation); err != nil {
			return nil, fmt.Errorf("score request %d: %w", i, err)
		}
		j := -1
		// Consecutive requests with the same prompt share its cache.
		if n := len(nreqs); n > 0 && slices.Equal(nreqs[n-1].Prompt, r.Prompt) {
			j = n - 1
		}
		if j < 0 {
			nreqs = append(nreqs, native.ScoreRequest{Prompt: r.Prompt})
			j = len(nreqs) - 1
		}
		nreqs[j].Continuations = append(nreqs[j].Continuations, r.Continuation)
		where[i] = [2]int{j, len(nreqs[j].Continuations) - 1}
	}
	p.mu.Lock()
	res, err := p.model.Score(ctx, nreqs)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(reqs))
	for i, w := range where {
		src := res[w[0]][w[1]]
		out[i] = make([]float64, len(src))
		for t, v := range src {
			out[i][t] = float64(v)
		}
	}
	return out, nil
}

func (p *Policy) checkIDs(ids []int) error {
	v := p.model.Config().Vocab
	for _, id := range ids {
		if id < 0 || id >= v {
			return fmt.Errorf("token id %d outside the vocabulary [0, %d)", id, v)
		}
	}
	return nil
}
