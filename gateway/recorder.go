package gateway

import (
	"context"
	"errors"
	"sync"

	"github.com/agentrl/agentrl/policy"
)

// recorder is the policy the gateway's OpenAI server samples from: it
// passes every call to the policy being trained and records each tagged
// sequence in its episode. Its lock is held for writing while the weights
// change (Gateway.Update): a request made then waits, and is served by the
// new weights.
type recorder struct {
	g     *Gateway
	mu    sync.RWMutex
	inner policy.Policy
}

// vocabulary is what openaiapi reads of a policy that describes its
// vocabulary; the recorder has it exactly when the trained policy has.
type vocabulary interface {
	VocabSize() int
	IsSpecialToken(id int) bool
	TokenBytes(id int) ([]byte, error)
}

// vocabRecorder is a recorder whose policy describes its vocabulary.
type vocabRecorder struct {
	*recorder
	v vocabulary
}

func (r vocabRecorder) VocabSize() int                    { return r.v.VocabSize() }
func (r vocabRecorder) IsSpecialToken(id int) bool        { return r.v.IsSpecialToken(id) }
func (r vocabRecorder) TokenBytes(id int) ([]byte, error) { return r.v.TokenBytes(id) }

// scorer is what openaiapi reads of a policy that reports ranks, the
// most likely tokens and the ids a text prompt starts with (model/local's
// embedded and Hugging Face policies).
type scorer interface {
	vocabulary
	ScoreRanks(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, [][]int, error)
	TopLogprobs(ctx context.Context, reqs []policy.ScoreRequest, k int) ([][][]policy.TokenLogprob, error)
	TextPrefix() []int
}

// fullRecorder is a recorder whose policy is a scorer: the OpenAI server
// then serves top_logprobs, prompt ranks and add_special_tokens through
// the gateway as it does without it.
type fullRecorder struct {
	vocabRecorder
	s scorer
}

func (r fullRecorder) ScoreRanks(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, [][]int, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.s.ScoreRanks(ctx, reqs)
}

func (r fullRecorder) TopLogprobs(ctx context.Context, reqs []policy.ScoreRequest, k int) ([][][]policy.TokenLogprob, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.s.TopLogprobs(ctx, reqs, k)
}

func (r fullRecorder) TextPrefix() []int { return r.s.TextPrefix() }

// wrap returns the recording policy for inner, with the optional methods
// openaiapi reads exactly when inner has them.
func wrap(g *Gateway, inner policy.Policy) (*recorder, policy.Policy) {
	r := &recorder{g: g, inner: inner}
	if s, ok := inner.(scorer); ok {
		return r, fullRecorder{vocabRecorder: vocabRecorder{recorder: r, v: s}, s: s}
	}
	if v, ok := inner.(vocabulary); ok {
		return r, vocabRecorder{recorder: r, v: v}
	}
	return r, r
}

func (r *recorder) Info() policy.Info { return r.inner.Info() }

func (r *recorder) RenderChat(ctx context.Context, messages []policy.Message, addGenerationPrompt bool) ([]int, error) {
	return r.inner.RenderChat(ctx, messages, addGenerationPrompt)
}

func (r *recorder) Encode(ctx context.Context, text string) ([]int, error) {
	return r.inner.Encode(ctx, text)
}

func (r *recorder) Decode(ctx context.Context, ids []int) (string, error) {
	return r.inner.Decode(ctx, ids)
}

func (r *recorder) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.inner.Score(ctx, reqs)
}

// RenderChatTools renders with the trained policy's template when it
// offers tools.
func (r *recorder) RenderChatTools(ctx context.Context, messages []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error) {
	tr, ok := r.inner.(policy.ToolRenderer)
	if !ok {
		return nil, errors.New("gateway: the policy's template offers no tools")
	}
	return tr.RenderChatTools(ctx, messages, tools, addGenerationPrompt)
}

// ToolCallFormat is the trained policy's, "" when it has none.
func (r *recorder) ToolCallFormat() string {
	if tr, ok := r.inner.(policy.ToolRenderer); ok {
		return tr.ToolCallFormat()
	}
	return ""
}

// AppliesConstraints is the trained policy's.
func (r *recorder) AppliesConstraints() bool {
	cs, ok := r.inner.(policy.ConstrainedSampler)
	return ok && cs.AppliesConstraints()
}

// Sample admits the tagged requests (their episodes must be open and
// within their deadline), samples the admitted ones in one call, and
// records them.
func (r *recorder) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]policy.Sample, len(reqs))
	run := make([]policy.Request, 0, len(reqs))
	idx := make([]int, 0, len(reqs))
	eps := r.g.admit(reqs, out)
	for i, q := range reqs {
		if out[i].Err != nil {
			continue
		}
		if eps[i] != nil {
			q.Sampling.Seed = eps[i].requestSeed()
		}
		run = append(run, q)
		idx = append(idx, i)
	}
	if len(run) > 0 {
		got, err := r.inner.Sample(ctx, run)
		if err == nil && len(got) != len(run) {
			err = errors.New("gateway: the policy returned a sample count unlike its request count")
		}
		if err != nil {
			r.g.release(eps)
			return nil, err
		}
		for k, i := range idx {
			out[i] = got[k]
		}
	}
	r.g.record(reqs, eps, out)
	return out, nil
}
