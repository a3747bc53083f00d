// Package local serves the embedded Go transformer (model/native) as a
// policy.Policy, in process, with either of two text sides (a Codec): the
// agentrl tokenizer and chat template (text/tokenizer), for models
// trained here from scratch, or the tokenizer.json and chat template of a
// Hugging Face model directory (text/hftok, text/chattemplate), for
// Llama and Qwen2 checkpoints (see LoadHF).
//
// Calls are serialised: the model's inference and training workspaces are
// not safe for concurrent use, and one batched call is faster than several
// interleaved ones. Callers that want batching (the rollout engine, `trainer
// serve`) hand many requests to one Sample or Score call.
package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// Codec is the text side of a Policy: its tokenizer and chat template. The
// model side (sampling, scoring, the context limit) is the same for every
// codec. Implementations are safe for concurrent use.
type Codec interface {
	// RenderChat renders messages with the chat template, as
	// policy.Policy's RenderChat.
	RenderChat(msgs []policy.Message, addGenerationPrompt bool) ([]int, error)
	// Encode tokenizes text as policy.Policy's Encode: no chat-template
	// tokens added, and literal reasoning tags such as "<think>" mapped to
	// their tokens where the tokenizer has them.
	Encode(text string) []int
	// Decode turns ids back into text, special tokens included.
	Decode(ids []int) (string, error)
	// StopTokens end an assistant message.
	StopTokens() []int
	// VocabSize is one past the largest id the tokenizer has a token for;
	// the model's vocabulary must cover it (and may be larger).
	VocabSize() int
	// IsSpecial reports whether id is a control token, one that a server's
	// skip_special_tokens drops.
	IsSpecial(id int) bool
	// TokenBytes returns the bytes of token id (part of a UTF-8 character
	// for some byte-level tokens).
	TokenBytes(id int) ([]byte, error)
	// TextPrefix returns the ids the tokenizer puts before a text it
	// encodes with its special tokens (a server's add_special_tokens on a
	// text prompt).
	TextPrefix() []int
}

// Policy is a native model plus its text side.
type Policy struct {
	mu    sync.Mutex
	model *native.Model
	codec Codec
	tok   *tokenizer.Tokenizer // nil unless the codec is the agentrl tokenizer
	hf    HFFiles              // nil unless the codec is a Hugging Face one
	name  string
}

// New wraps model and the agentrl tokenizer tok. The model's vocabulary
// must cover the tokenizer's.
func New(name string, model *native.Model, tok *tokenizer.Tokenizer) (*Policy, error) {
	p, err := NewWithCodec(name, model, agentrlCodec{tok})
	if err != nil {
		return nil, err
	}
	p.tok = tok
	return p, nil
}

// NewWithCodec wraps model and a text side. The model's vocabulary must
// cover the codec's.
func NewWithCodec(name string, model *native.Model, c Codec) (*Policy, error) {
	if v := model.Config().Vocab; v < c.VocabSize() {
		return nil, fmt.Errorf("local policy: model vocabulary %d is smaller than the tokenizer's %d", v, c.VocabSize())
	}
	if len(c.StopTokens()) == 0 {
		return nil, fmt.Errorf("local policy: the tokenizer has no stop token")
	}
	return &Policy{model: model, codec: c, name: name}, nil
}

// Lock gives exclusive use of the model, for training it between calls.
// Unlock must follow.
func (p *Policy) Lock() *native.Model { p.mu.Lock(); return p.model }

// Unlock ends a Lock.
func (p *Policy) Unlock() { p.mu.Unlock() }

// Tokenizer returns the agentrl tokenizer, or nil when the policy has
// another text side (a Hugging Face directory's).
func (p *Policy) Tokenizer() *tokenizer.Tokenizer { return p.tok }

// Codec returns the policy's text side.
func (p *Policy) Codec() Codec { return p.codec }

// HFFiles returns the Hugging Face files of a policy made by NewHF or
// LoadHF, and nil for any other policy.
func (p *Policy) HFFiles() HFFiles { return p.hf }

// VocabSize is the number of token ids the model accepts (its embedding
// rows, which may exceed the tokenizer's vocabulary).
func (p *Policy) VocabSize() int { return p.model.Config().Vocab }

// IsSpecialToken reports whether id is a control token of the tokenizer.
func (p *Policy) IsSpecialToken(id int) bool { return p.codec.IsSpecial(id) }

// TokenBytes returns the bytes of token id.
func (p *Policy) TokenBytes(id int) ([]byte, error) { return p.codec.TokenBytes(id) }

// TextPrefix returns the ids the tokenizer puts before a text it encodes
// with its special tokens: <|bos|> for the agentrl tokenizer, what the
// post-processor adds for a Hugging Face one (Llama 3's <|begin_of_text|>,
// nothing for Qwen's).
func (p *Policy) TextPrefix() []int { return slices.Clone(p.codec.TextPrefix()) }

// Info implements policy.Policy.
func (p *Policy) Info() policy.Info {
	return policy.Info{Name: p.name, MaxContext: p.model.Config().MaxSeq, StopTokens: slices.Clone(p.codec.StopTokens())}
}

// RenderChat implements policy.Policy with the codec's chat template.
func (p *Policy) RenderChat(_ context.Context, msgs []policy.Message, addGenerationPrompt bool) ([]int, error) {
	return p.codec.RenderChat(msgs, addGenerationPrompt)
}

// toolCodec is a codec whose chat template renders tools.
type toolCodec interface {
	RenderChatTools(msgs []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error)
	ToolCallFormat() string
}

// RenderChatTools implements policy.ToolRenderer with the codec's chat
// template; a codec without tools (the agentrl tokenizer's) refuses them.
func (p *Policy) RenderChatTools(_ context.Context, msgs []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error) {
	tc, ok := p.codec.(toolCodec)
	if !ok {
		if len(tools) == 0 {
			return p.codec.RenderChat(msgs, addGenerationPrompt)
		}
		return nil, errors.New("the agentrl chat template has no tools; describe them in the system prompt")
	}
	return tc.RenderChatTools(msgs, tools, addGenerationPrompt)
}

// ToolCallFormat implements policy.ToolRenderer: the text/toolcall format
// the chat template shows, "" for the agentrl template and templates
// without tools.
func (p *Policy) ToolCallFormat() string {
	if tc, ok := p.codec.(toolCodec); ok {
		return tc.ToolCallFormat()
	}
	return ""
}

// Encode implements policy.Policy.
func (p *Policy) Encode(_ context.Context, text string) ([]int, error) {
	return p.codec.Encode(text), nil
}

// Decode implements policy.Policy.
func (p *Policy) Decode(_ context.Context, ids []int) (string, error) { return p.codec.Decode(ids) }

// AppliesConstraints implements policy.ConstrainedSampler: Sample applies
// Sampling.Constraint, on the embedded model and on a Hugging Face one.
func (p *Policy) AppliesConstraints() bool { return true }

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
			stops = p.codec.StopTokens()
		}
		batch = append(batch, native.SampleRequest{
			Prompt: r.Prompt, MaxNewTokens: maxNew, Temperature: float32(r.Sampling.Temperature),
			TopK: r.Sampling.TopK, TopP: float32(r.Sampling.TopP), StopTokens: stops, Seed: r.Sampling.Seed,
			Constraint: r.Sampling.Constraint,
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
		if res[j].Err != nil {
			out[i].Err = res[j].Err
			continue
		}
		out[i] = policy.Sample{Tokens: res[j].Tokens, LogProbs: lp, Finish: res[j].FinishReason}
	}
	return out, nil
}

// Score implements policy.Policy. Requests that share a prompt are scored
// against one prompt forward pass.
func (p *Policy) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	nreqs, where, err := p.scoreRequests(reqs)
	if err != nil {
		return nil, err
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

// ScoreRanks returns Score's log-probabilities and, for each token, its
// rank in the distribution it was scored from: ranks[i][t] is the number of
// vocabulary tokens at least as likely as Continuation[t] after
// Prompt+Continuation[:t] (1 for the most likely; tied tokens count
// against it), vLLM's rank of a prompt_logprobs token. The ranks come from
// the same rows of logits as the log-probabilities, with the forward passes
// of Score and no more. Requests that share a prompt are scored against one
// prompt forward pass, as in Score.
func (p *Policy) ScoreRanks(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, [][]int, error) {
	nreqs, where, err := p.scoreRequests(reqs)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	res, rks, err := p.model.ScoreRanks(ctx, nreqs)
	p.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	lps := make([][]float64, len(reqs))
	ranks := make([][]int, len(reqs))
	for i, w := range where {
		src := res[w[0]][w[1]]
		lps[i] = make([]float64, len(src))
		for t, v := range src {
			lps[i][t] = float64(v)
		}
		ranks[i] = rks[w[0]][w[1]]
	}
	return lps, ranks, nil
}

// TopLogprobs returns, for each request i and continuation position t, the
// k most likely next tokens after Prompt+Continuation[:t] (the
// distribution Score reads Continuation[t] from), with their
// log-probabilities under the convention of Score: out[i][t] has min(k,
// VocabSize()) entries, most likely first, ties broken by the lower token
// id. k must be at least 0. Requests that share a prompt are scored
// against one prompt forward pass, as in Score.
func (p *Policy) TopLogprobs(ctx context.Context, reqs []policy.ScoreRequest, k int) ([][][]policy.TokenLogprob, error) {
	if k < 0 {
		return nil, fmt.Errorf("top logprobs: k is %d, want at least 0", k)
	}
	nreqs, where, err := p.scoreRequests(reqs)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	res, err := p.model.TopLogprobs(ctx, nreqs, k)
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([][][]policy.TokenLogprob, len(reqs))
	for i, w := range where {
		src := res[w[0]][w[1]]
		out[i] = make([][]policy.TokenLogprob, len(src))
		for t, top := range src {
			out[i][t] = make([]policy.TokenLogprob, len(top))
			for r, e := range top {
				out[i][t][r] = policy.TokenLogprob{Token: e.Token, LogProb: float64(e.LogProb)}
			}
		}
	}
	return out, nil
}

// scoreRequests checks reqs and groups consecutive requests with the same
// prompt into one native request; where[i] is request i's native request
// and continuation index.
func (p *Policy) scoreRequests(reqs []policy.ScoreRequest) ([]native.ScoreRequest, [][2]int, error) {
	var nreqs []native.ScoreRequest
	where := make([][2]int, len(reqs))
	for i, r := range reqs {
		if len(r.Prompt) == 0 {
			return nil, nil, fmt.Errorf("score request %d: empty prompt", i)
		}
		if err := p.checkIDs(r.Prompt); err != nil {
			return nil, nil, fmt.Errorf("score request %d: %w", i, err)
		}
		if err := p.checkIDs(r.Continuation); err != nil {
			return nil, nil, fmt.Errorf("score request %d: %w", i, err)
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
	return nreqs, where, nil
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

// agentrlCodec is the agentrl tokenizer and chat template.
type agentrlCodec struct{ tok *tokenizer.Tokenizer }

func (c agentrlCodec) RenderChat(msgs []policy.Message, addGenerationPrompt bool) ([]int, error) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	return c.tok.Render(tm, addGenerationPrompt)
}

func (c agentrlCodec) Encode(text string) []int          { return c.tok.Encode(text) }
func (c agentrlCodec) Decode(ids []int) (string, error)  { return c.tok.Decode(ids) }
func (c agentrlCodec) StopTokens() []int                 { return []int{tokenizer.EndID} }
func (c agentrlCodec) VocabSize() int                    { return c.tok.VocabSize() }
func (c agentrlCodec) IsSpecial(id int) bool             { return tokenizer.IsSpecial(id) }
func (c agentrlCodec) TokenBytes(id int) ([]byte, error) { return c.tok.TokenBytes(id) }

// TextPrefix is what the agentrl template writes for an empty conversation.
func (c agentrlCodec) TextPrefix() []int {
	ids, err := c.tok.Render(nil, false)
	if err != nil {
		return nil // the template renders any conversation, the empty one included
	}
	return ids
}
