// Package policytest provides a scripted Policy for tests: it replies with
// text chosen by a Go function of the prompt, through the real agentrl chat
// template and a byte-level tokenizer, and reports deterministic
// log-probabilities that Score reproduces exactly.
package policytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/tokenizer"
	"github.com/agentrl/agentrl/text/toolcall"
)

// Scripted is a policy.Policy whose replies come from Reply.
type Scripted struct {
	// Reply returns the text of the assistant's reply to a prompt (the
	// decoded prompt text, which ends with the generation prompt). The
	// reply is tokenized and ended with <|end|>.
	Reply func(prompt string, seed uint64) string
	// MaxContext is reported by Info (default 4096).
	MaxContext int
	// Fail, when set, makes Sample fail the requests for which it returns
	// an error, as a misbehaving server would.
	Fail func(prompt string, seed uint64) error
	// ToolFormat, when set (a text/toolcall format), gives the policy a
	// chat template with tools (RenderChatTools, ToolCallFormat): tools are
	// listed in the system message as JSON lines under "# Tools", an
	// assistant's calls are written after its content in that format, and
	// a tool message is a user message holding
	// "<tool_response>\n…\n</tool_response>". Reply then emits a chosen
	// call by returning its text, e.g. toolcall.New(format).Format(calls).
	ToolFormat string

	tok  *tokenizer.Tokenizer
	once sync.Once
	mu   sync.Mutex
	// SampleCalls counts Sample calls; SampledRequests counts requests.
	SampleCalls, SampledRequests int
}

func (s *Scripted) tokenizer() *tokenizer.Tokenizer {
	s.once.Do(func() { s.tok = tokenizer.New() })
	return s.tok
}

// Info implements policy.Policy.
func (s *Scripted) Info() policy.Info {
	n := s.MaxContext
	if n == 0 {
		n = 4096
	}
	return policy.Info{Name: "scripted", MaxContext: n, StopTokens: []int{tokenizer.EndID}}
}

// RenderChat implements policy.Policy with the agentrl chat template.
func (s *Scripted) RenderChat(ctx context.Context, msgs []policy.Message, gen bool) ([]int, error) {
	return s.RenderChatTools(ctx, msgs, nil, gen)
}

// ToolCallFormat implements policy.ToolRenderer: ToolFormat.
func (s *Scripted) ToolCallFormat() string { return s.ToolFormat }

// RenderChatTools implements policy.ToolRenderer (see ToolFormat).
func (s *Scripted) RenderChatTools(_ context.Context, msgs []policy.Message, tools []policy.Tool, gen bool) ([]int, error) {
	var parser toolcall.Parser
	if s.ToolFormat != "" {
		var err error
		if parser, err = toolcall.New(s.ToolFormat); err != nil {
			return nil, err
		}
	}
	if (len(tools) > 0 || hasTools(msgs)) && parser == nil {
		return nil, errors.New("policytest: Scripted.ToolFormat is not set, so its template has no tools")
	}
	tm := make([]tokenizer.Message, 0, len(msgs)+1)
	if len(tools) > 0 {
		var b strings.Builder
		if len(msgs) > 0 && msgs[0].Role == policy.RoleSystem {
			b.WriteString(msgs[0].Content + "\n\n")
			msgs = msgs[1:]
		}
		b.WriteString("# Tools")
		for _, t := range toolcall.APITools(tools) {
			line, err := json.Marshal(t)
			if err != nil {
				return nil, err
			}
			b.WriteString("\n" + string(line))
		}
		tm = append(tm, tokenizer.Message{Role: policy.RoleSystem, Content: b.String()})
	}
	for _, m := range msgs {
		switch {
		case m.Role == policy.RoleTool:
			tm = append(tm, tokenizer.Message{Role: policy.RoleUser, Content: "<tool_response>\n" + m.Content + "\n</tool_response>"})
		case len(m.ToolCalls) > 0:
			calls := make([]toolcall.Call, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				calls[i] = c.Call
			}
			content := parser.Format(calls)
			if m.Content != "" {
				content = m.Content + "\n" + content
			}
			tm = append(tm, tokenizer.Message{Role: m.Role, Content: content})
		default:
			tm = append(tm, tokenizer.Message{Role: m.Role, Content: m.Content})
		}
	}
	return s.tokenizer().Render(tm, gen)
}

func hasTools(msgs []policy.Message) bool {
	for _, m := range msgs {
		if m.Role == policy.RoleTool || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// Encode implements policy.Policy.
func (s *Scripted) Encode(_ context.Context, text string) ([]int, error) {
	return s.tokenizer().Encode(text), nil
}

// Decode implements policy.Policy.
func (s *Scripted) Decode(_ context.Context, ids []int) (string, error) {
	return s.tokenizer().Decode(ids)
}

// Sample implements policy.Policy.
func (s *Scripted) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	if s.Reply == nil {
		return nil, errors.New("policytest: Scripted.Reply is nil")
	}
	s.mu.Lock()
	s.SampleCalls++
	s.SampledRequests += len(reqs)
	s.mu.Unlock()
	out := make([]policy.Sample, len(reqs))
	for i, r := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		prompt, err := s.tokenizer().Decode(r.Prompt)
		if err != nil {
			return nil, err
		}
		if s.Fail != nil {
			if err := s.Fail(prompt, r.Sampling.Seed); err != nil {
				out[i].Err = err
				continue
			}
		}
		ids := append(s.tokenizer().Encode(s.Reply(prompt, r.Sampling.Seed)), tokenizer.EndID)
		out[i].Finish = policy.FinishStop
		if r.Sampling.MaxTokens > 0 && len(ids) > r.Sampling.MaxTokens {
			ids, out[i].Finish = ids[:r.Sampling.MaxTokens], policy.FinishLength
		}
		if room := s.Info().MaxContext - len(r.Prompt); len(ids) > room {
			if room < 0 {
				room = 0
			}
			ids, out[i].Finish = ids[:room], policy.FinishLength
		}
		out[i].Tokens = ids
		out[i].LogProbs = LogProbs(r.Prompt, ids)
	}
	return out, nil
}

// Score implements policy.Policy with the same log-probabilities Sample
// reports.
func (s *Scripted) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	out := make([][]float64, len(reqs))
	for i, r := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(r.Prompt) == 0 {
			return nil, fmt.Errorf("policytest: request %d has an empty prompt", i)
		}
		out[i] = LogProbs(r.Prompt, r.Continuation)
	}
	return out, nil
}

// ScoreRanks returns Score's log-probabilities and each token's rank, as
// model/local's does: the number of vocabulary tokens whose scripted
// log-probability after the same previous token is at least the token's
// (vLLM's rank; ties count against the token). The scripted log-probs are
// not normalized, but they rank consistently.
func (s *Scripted) ScoreRanks(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, [][]int, error) {
	lps, err := s.Score(ctx, reqs)
	if err != nil {
		return nil, nil, err
	}
	v := s.tokenizer().VocabSize()
	ranks := make([][]int, len(reqs))
	for i, r := range reqs {
		ranks[i] = make([]int, len(r.Continuation))
		prev := r.Prompt[len(r.Prompt)-1]
		for t, id := range r.Continuation {
			own := lps[i][t]
			for tok := range v {
				if logProb(prev, tok) >= own {
					ranks[i][t]++
				}
			}
			prev = id
		}
	}
	return lps, ranks, nil
}

// LogProbs is the scripted policy's log-probability of each continuation
// token: a deterministic function of that token and the one before it, in
// (-2, -0.01].
func LogProbs(prompt, continuation []int) []float64 {
	lp := make([]float64, len(continuation))
	prev := prompt[len(prompt)-1]
	for i, id := range continuation {
		lp[i] = logProb(prev, id)
		prev = id
	}
	return lp
}

// logProb is the scripted log-probability of id after prev.
func logProb(prev, id int) float64 {
	h := fnv.New32a()
	fmt.Fprint(h, prev, ":", id)
	return -0.01 - float64(h.Sum32()%199)/100
}
