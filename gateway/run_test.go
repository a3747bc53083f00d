package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/agentrl/agentrl/envs/builtin"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
)

// localSpy records what the embedded policy sampled, by episode.
type localSpy struct {
	*local.Policy
	mu   sync.Mutex
	seen map[string][]seenSample
}

func (s *localSpy) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out, err := s.Policy.Sample(ctx, reqs)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range reqs {
		s.seen[q.Tag] = append(s.seen[q.Tag], seenSample{prompt: slices.Clone(q.Prompt), tokens: slices.Clone(out[i].Tokens), logprobs: slices.Clone(out[i].LogProbs)})
	}
	return out, nil
}

// spyLearner is the in-process learner sampling through a localSpy, and
// recording what each Update trains on.
type spyLearner struct {
	train.Learner
	pol     *localSpy
	trained []*train.Sequences
}

func (l *spyLearner) Policy() policy.Policy { return l.pol }

func (l *spyLearner) Update(ctx context.Context, seqs *train.Sequences, opts train.UpdateOptions) (train.UpdateStats, error) {
	l.trained = append(l.trained, seqs)
	return l.Learner.Update(ctx, seqs, opts)
}

const tinyGatewayConfig = `
env:
  name: countdown
  config: {min_numbers: 3, max_numbers: 3}
run:
  steps: 2
  groups: 3
  group_size: 3
model: {d_model: 32, layers: 1, heads: 2, kv_heads: 2, d_ff: 64, max_seq: 1024, vocab_size: 300}
rollout:
  sampling: {max_tokens: 16}
algo: {ppo_mini_batch_size: 4, lr: 0.001}
warm_start: {enabled: false}
validation: {every: 0}
gateway:
  listen: 127.0.0.1:0
  max_requests: 4
  step_timeout: 1m
`

// trainThroughGateway runs two training steps of tinyGatewayConfig with
// the embedded model while launch's agents play, checks that every update
// trained exactly the tokens and log-probs the policy sampled for the
// scored episodes, and returns the steps. launch starts the agents at the
// gateway's base URL and returns their outcome once they stop.
func trainThroughGateway(t *testing.T, ctx context.Context, launch func(base string) <-chan error) ([]*gateway.Step, []*train.Sequences) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	cfg, gc, err := gateway.ParseConfig([]byte(tinyGatewayConfig), []string{"run.out=" + out})
	if err != nil {
		t.Fatal(err)
	}
	var spyL *spyLearner
	opts := gateway.RunOptions{Train: train.Options{Logger: testLogger(), Console: discard{},
		Learner: func(ctx context.Context, start *train.Start) (train.Learner, error) {
			l, err := inprocess.New(ctx, start)
			if err != nil {
				return nil, err
			}
			lp, ok := l.Policy().(*local.Policy)
			if !ok {
				return nil, fmt.Errorf("the in-process learner's policy is a %T", l.Policy())
			}
			spyL = &spyLearner{Learner: l, pol: &localSpy{Policy: lp, seen: map[string][]seenSample{}}}
			return spyL, nil
		}}}
	var agents <-chan error
	opts.Ready = func(base string) { agents = launch(base) }
	var steps []*gateway.Step
	opts.StepHook = func(step int, st *gateway.Step) { steps = append(steps, st) }
	if err := gateway.Run(ctx, cfg, gc, opts); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-agents:
		if err != nil {
			t.Errorf("agents: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the agents did not stop after the run")
	}
	if len(steps) != 2 || len(spyL.trained) != 2 {
		t.Fatalf("%d steps, %d updates; want 2 and 2", len(steps), len(spyL.trained))
	}
	for k, st := range steps {
		t.Logf("step %d: %v", k+1, st.Metrics())
		seqs := spyL.trained[k]
		for i, id := range st.IDs {
			var trainedTok []int
			var trainedLP []float64
			for j, ep := range seqs.Episode {
				if ep != i {
					continue
				}
				lp := seqs.OldLogProb[j]
				if seqs.SamplerLogProb != nil {
					lp = seqs.SamplerLogProb[j]
				}
				for p, m := range seqs.Mask[j] {
					if m {
						trainedTok = append(trainedTok, seqs.Tokens[j][p])
						trainedLP = append(trainedLP, lp[p])
					}
				}
			}
			var sampledTok []int
			var sampledLP []float64
			for _, s := range spyL.pol.seen[id] {
				sampledTok = append(sampledTok, s.tokens...)
				sampledLP = append(sampledLP, s.logprobs...)
			}
			if len(sampledTok) == 0 || !slices.Equal(trainedTok, sampledTok) || !slices.Equal(trainedLP, sampledLP) {
				t.Errorf("step %d episode %s: trained %d tokens, sampled %d; tokens equal %v, log-probs equal %v", k+1, id,
					len(trainedTok), len(sampledTok), slices.Equal(trainedTok, sampledTok), slices.Equal(trainedLP, sampledLP))
			}
		}
	}
	rows, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(bytesLines(rows), func(s string) bool { return s == "" })); n != 2 {
		t.Errorf("metrics.jsonl has %d rows, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(out, "final")); err != nil {
		t.Errorf("final weights: %v", err)
	}
	return steps, spyL.trained
}

// TestRunTrainsAgentEpisodes trains two steps on the episodes of Go
// agents (go-openai, a calculator tool) through the gateway, with the
// embedded model: every update trains exactly the sampled tokens;
// crashed and overlong episodes are dropped and counted; trimmed
// histories are counted.
func TestRunTrainsAgentEpisodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	steps, trained := trainThroughGateway(t, ctx, launchGoAgents(ctx))
	for k, st := range steps {
		if st.Episodes != 9 || st.Dropped != 1 || len(st.Trajectories) != 8 {
			t.Errorf("step %d: episodes %d, dropped %d, scored %d; want 9, 1, 8 (%v)", k+1, st.Episodes, st.Dropped, len(st.Trajectories), st.Reasons)
		}
	}
	if steps[0].Reasons["agent: the agent crashed"] != 1 || steps[1].Reasons["deadline: more than 4 model requests"] != 1 {
		t.Errorf("drop reasons: %v, %v", steps[0].Reasons, steps[1].Reasons)
	}
	if steps[0].Mismatched < 1 {
		t.Errorf("step 1: the trimmed history was not counted (mismatched %d)", steps[0].Mismatched)
	}
	// Same configuration, same agents: the same updates, whatever the
	// order in which the agents' requests arrived and were batched.
	_, again := trainThroughGateway(t, ctx, launchGoAgents(ctx))
	for k := range trained {
		a, b := trained[k], again[k]
		if fmt.Sprint(a.Tokens, a.Mask, a.OldLogProb, a.Advantages) != fmt.Sprint(b.Tokens, b.Mask, b.OldLogProb, b.Advantages) {
			t.Errorf("step %d: a second run trained on other sequences or advantages", k+1)
		}
	}
}

// launchGoAgents starts two Go agents: in step 1, episode 2 of task 0
// crashes and episode 0 of task 1 trims its history; in step 2, episode
// 1 of task 2 runs past its deadline and episode 1 of task 1 names its
// episode in metadata.
func launchGoAgents(ctx context.Context) func(base string) <-chan error {
	modes := map[[3]int]agentMode{{0, 2, 1}: crashAfterOne, {1, 0, 1}: trimHistory, {2, 1, 2}: runForever, {1, 1, 2}: viaMetadata}
	return func(base string) <-chan error {
		a := &goAgent{base: base, turns: 3, modeOf: func(g, s, step int) agentMode { return modes[[3]int{g, s, step}] }}
		done := make(chan error, 1)
		go func() {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() { errs[i] = a.run(ctx, 20*time.Second) })
			}
			wg.Wait()
			done <- errors.Join(errs...)
		}()
		return done
	}
}

// TestRunNodeAgent trains two steps on the episodes of the example agent
// docs/examples/gateway_agent (node, the official openai package, a
// calculator tool, answers scored by the gateway's verifier), one of
// which crashes. Without node or the package it skips, unless
// AGENTRL_REQUIRE_NODE=1.
func TestRunNodeAgent(t *testing.T) {
	dir, err := filepath.Abs("../docs/examples/gateway_agent")
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json"))
	}
	if err != nil {
		if os.Getenv("AGENTRL_REQUIRE_NODE") == "1" {
			t.Fatalf("node or the openai package is missing (run npm ci in %s): %v", dir, err)
		}
		t.Skipf("node or the openai package is missing (npm ci in %s): %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var outBuf strings.Builder
	steps, _ := trainThroughGateway(t, ctx, func(base string) <-chan error {
		cmd := exec.CommandContext(ctx, node, "agent.mjs", base, "2", "--idle", "20")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "AGENTRL_AGENT_CRASH=0:1", "AGENTRL_AGENT_TRIM=1:0")
		cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			done <- err
			return done
		}
		go func() { done <- cmd.Wait() }()
		return done
	})
	t.Logf("agent output:\n%s", outBuf.String())
	if st := steps[0]; st.Dropped != 1 || st.Reasons["agent: crashed on purpose"] != 1 || len(st.Trajectories) != 8 {
		t.Errorf("step 1: dropped %d (%v), scored %d; want the crashed episode dropped, 8 scored", st.Dropped, st.Reasons, len(st.Trajectories))
	}
	if st := steps[1]; st.Dropped != 0 || len(st.Trajectories) != 9 {
		t.Errorf("step 2: dropped %d (%v), scored %d; want 0 and 9", st.Dropped, st.Reasons, len(st.Trajectories))
	}
	if steps[0].Mismatched < 1 {
		t.Errorf("step 1: the trimmed history was not counted")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func bytesLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return append(out, string(b[start:]))
}

// testLogger is quiet unless AGENTRL_GATEWAY_LOG=1.
func testLogger() *slog.Logger {
	if os.Getenv("AGENTRL_GATEWAY_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return quiet()
}

// TestGatewayServesLogprobs checks that the gateway keeps what the served
// embedded model offers: top_logprobs through the recording policy.
func TestGatewayServesLogprobs(t *testing.T) {
	cfg, _, err := gateway.ParseConfig([]byte(tinyGatewayConfig), []string{"run.out=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := train.New(cfg, train.Options{Logger: quiet(), Console: discard{}})
	if err != nil {
		t.Fatal(err)
	}
	start, err := tr.Start()
	if err != nil {
		t.Fatal(err)
	}
	l, err := inprocess.New(context.Background(), start)
	if err != nil {
		t.Fatal(err)
	}
	g := gateway.New(l.Policy(), gateway.Options{Logger: quiet()})
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()
	st, body := do(t, "POST", srv.URL+"/v1/chat/completions", "", `{"model":"countdown","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"logprobs":true,"top_logprobs":2}`)
	if st != 200 || !strings.Contains(body, `"top_logprobs":[{`) {
		t.Errorf("top_logprobs through the gateway: %d %.300s", st, body)
	}
}
