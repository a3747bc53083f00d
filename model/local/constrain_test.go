package local

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/constrain"
	"github.com/agentrl/agentrl/text/toolcall"
)

// constrainTools are the tools the constrained-sampling tests call.
var constrainTools = []toolcall.Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":14},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":2,"maxLength":8},"k":{"type":"integer","minimum":-3,"maximum":120},"exact":{"type":"boolean"}},"required":["query","k"]}`)},
}

// policyVocab indexes a policy's vocabulary for constraints: its
// non-special tokens by their bytes.
func policyVocab(t *testing.T, p *Policy) *constrain.Vocab {
	t.Helper()
	return constrain.NewVocab(p.VocabSize(), func(id int) []byte {
		if p.IsSpecialToken(id) {
			return nil
		}
		b, err := p.TokenBytes(id)
		if err != nil {
			return nil
		}
		return b
	})
}

// TestConstrainedSamplingForcesValidCalls: a random model (embedded, and
// a Hugging Face Qwen2 one) sampling under a tool-call constraint at
// temperature 1 always writes one call, in the format, whose arguments
// the tool's schema accepts, within max_tokens, ended by a stop token;
// its log-probs are the policy's own (Score reproduces them), and the
// same seed samples the same call.
func TestConstrainedSamplingForcesValidCalls(t *testing.T) {
	d, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2"), hftest.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	hf, err := LoadHF(d.Path, "qwen2", 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, format string
		p            *Policy
	}{
		{"embedded", "compact", tinyPolicy(t)},
		{"hf", "hermes", hf},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			g, err := constrain.ToolCalls(tt.format, constrainTools)
			if err != nil {
				t.Fatal(err)
			}
			vocab := policyVocab(t, tt.p)
			parser, _ := toolcall.New(tt.format)
			prompt, err := tt.p.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: "weather?"}}, true)
			if err != nil {
				t.Fatal(err)
			}
			stops := tt.p.Info().StopTokens
			const n = 24
			maxTokens := g.MinLen() + 40
			reqs := make([]policy.Request, n)
			for i := range reqs {
				seq, err := g.Start(vocab, stops, maxTokens)
				if err != nil {
					t.Fatal(err)
				}
				reqs[i] = policy.Request{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: maxTokens, Seed: uint64(i), Constraint: seq}}
			}
			// One request truncates: the mask comes before top-k and top-p.
			reqs[n-1].Sampling.Temperature, reqs[n-1].Sampling.TopK, reqs[n-1].Sampling.TopP = 0.7, 5, 0.9
			res, err := tt.p.Sample(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]int{}
			for i, r := range res {
				if r.Err != nil {
					t.Fatalf("sample %d: %v", i, r.Err)
				}
				if r.Finish != policy.FinishStop || len(r.Tokens) > maxTokens {
					t.Fatalf("sample %d: finish %q after %d tokens (max %d)", i, r.Finish, len(r.Tokens), maxTokens)
				}
				text, err := tt.p.Decode(ctx, r.Tokens[:len(r.Tokens)-1])
				if err != nil {
					t.Fatal(err)
				}
				content, calls, ok := parser.Parse(text)
				if !ok || content != "" || len(calls) != 1 {
					t.Fatalf("sample %d: %q parses as content %q, %d calls, ok %v", i, text, content, len(calls), ok)
				}
				if err := toolcall.Check(constrainTools, calls[0]); err != nil {
					t.Fatalf("sample %d: %q: %v", i, text, err)
				}
				names[calls[0].Name]++
				score, err := tt.p.Score(ctx, []policy.ScoreRequest{{Prompt: prompt, Continuation: r.Tokens}})
				if err != nil {
					t.Fatal(err)
				}
				for j := range r.Tokens {
					if math.Abs(score[0][j]-r.LogProbs[j]) > 1e-4 {
						t.Fatalf("sample %d token %d: log-prob %g, Score %g", i, j, r.LogProbs[j], score[0][j])
					}
				}
				if i == 0 {
					t.Logf("%s", text)
				}
			}
			if len(names) != len(constrainTools) {
				t.Errorf("the samples called only %v", names)
			}
			// The same seed, alone in its batch, samples the same call.
			seq, _ := g.Start(vocab, stops, maxTokens)
			again := reqs[3]
			again.Sampling.Constraint = seq
			one, err := tt.p.Sample(ctx, []policy.Request{again})
			if err != nil || one[0].Err != nil {
				t.Fatal(err, one[0].Err)
			}
			if !slices.Equal(one[0].Tokens, res[3].Tokens) {
				t.Errorf("seed 3 alone: %v, in the batch: %v", one[0].Tokens, res[3].Tokens)
			}
		})
	}
}

// TestConstraintErrorEndsSample: a constraint that fails ends its request
// with the error; the other requests of the batch are sampled.
func TestConstraintErrorEndsSample(t *testing.T) {
	p := tinyPolicy(t)
	ctx := context.Background()
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: policy.RoleUser, Content: "hi"}}, true)
	res, err := p.Sample(ctx, []policy.Request{
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 8, Constraint: failing{}}},
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 8}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil || len(res[0].Tokens) != 0 {
		t.Errorf("failing constraint: err %v, tokens %v", res[0].Err, res[0].Tokens)
	}
	if res[1].Err != nil || len(res[1].Tokens) == 0 {
		t.Errorf("its neighbour: err %v, tokens %v", res[1].Err, res[1].Tokens)
	}
}

// failing allows nothing.
type failing struct{}

func (failing) Allow([]int, []bool) error { return nil }
