package rollout_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/sokoban"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// timedPolicy adds up the wall time spent inside the policy.
type timedPolicy struct {
	policy.Policy
	mu    sync.Mutex
	spent time.Duration
}

func (p *timedPolicy) add(start time.Time) {
	p.mu.Lock()
	p.spent += time.Since(start)
	p.mu.Unlock()
}

func (p *timedPolicy) Sample(ctx context.Context, r []policy.Request) ([]policy.Sample, error) {
	defer p.add(time.Now())
	return p.Policy.Sample(ctx, r)
}

func (p *timedPolicy) Decode(ctx context.Context, ids []int) (string, error) {
	defer p.add(time.Now())
	return p.Policy.Decode(ctx, ids)
}

func (p *timedPolicy) RenderChat(ctx context.Context, m []policy.Message, g bool) ([]int, error) {
	defer p.add(time.Now())
	return p.Policy.RenderChat(ctx, m, g)
}

// BenchmarkEngineOverhead plays Sokoban with the default-size embedded
// model and reports the engine's and environments' own time (everything
// that is not the policy) as a fraction of the policy's time.
func BenchmarkEngineOverhead(b *testing.B) {
	tok := tokenizer.New()
	m, err := native.New(native.Config{Vocab: tok.VocabSize(), DModel: 128, Layers: 2, Heads: 4, DFF: 352, MaxSeq: 1024, TieEmbeddings: true}, 1)
	if err != nil {
		b.Fatal(err)
	}
	lp, err := local.New("bench", m, tok)
	if err != nil {
		b.Fatal(err)
	}
	p := &timedPolicy{Policy: lp}
	f, err := envs.NewFactory("sokoban", nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := rollout.DefaultConfig()
	cfg.PromptStyle = rollout.PromptCompact
	cfg.Sampling.MaxTokens = 24
	e, err := rollout.New(context.Background(), cfg, p, f)
	if err != nil {
		b.Fatal(err)
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	var wall time.Duration
	p.spent = 0
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := e.Run(context.Background(), seeds, 4, uint64(i)); err != nil {
			b.Fatal(err)
		}
		wall += time.Since(start)
	}
	b.ReportMetric(float64(wall-p.spent)/float64(p.spent), "overhead/policy")
	b.ReportMetric(float64(p.spent)/float64(b.N)/1e6, "policy-ms/op")
}
