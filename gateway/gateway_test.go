package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/toolcall"
)

// spy records every sequence the policy sampled, by episode.
type spy struct {
	*policytest.Scripted
	mu   sync.Mutex
	seen map[string][]seenSample
}

type seenSample struct {
	prompt, tokens []int
	logprobs       []float64
}

func (s *spy) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out, err := s.Scripted.Sample(ctx, reqs)
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

// calculatorPolicy calls the calculator first, then answers: 12 on even
// seeds, 13 on odd ones.
func calculatorPolicy(t *testing.T) *spy {
	p, err := toolcall.New("hermes")
	if err != nil {
		t.Fatal(err)
	}
	call := p.Format([]toolcall.Call{{Name: "calculator", Arguments: []byte(`{"expression": "3*4"}`)}})
	return &spy{seen: map[string][]seenSample{}, Scripted: &policytest.Scripted{ToolFormat: "hermes",
		Reply: func(prompt string, seed uint64) string {
			if !strings.Contains(prompt, "<tool_response>") {
				return call
			}
			return fmt.Sprintf("The answer is %d.", 12+seed%2)
		}}}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func tasks(n int) []gateway.Task {
	out := make([]gateway.Task, n)
	for i := range out {
		out[i] = gateway.Task{Seed: uint64(100 + i), Prompt: fmt.Sprintf("Task %d: what is 3*4?", i)}
	}
	return out
}

// runAgents runs n Go agents against base until the step's tasks are
// taken.
func runAgents(t *testing.T, ctx context.Context, n int, a *goAgent) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- a.run(ctx, 300*time.Millisecond) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestRecording plays a step of episodes with Go agents (go-openai, a
// calculator tool): the trajectories hold exactly the sampled tokens and
// log-probs, the crashed and overlong episodes are dropped and counted,
// and the agent that trims its history starts a second segment.
func TestRecording(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pol := calculatorPolicy(t)
	g := gateway.New(pol, gateway.Options{MaxRequests: 4, Seed: 7, Logger: quiet()})
	defer g.Close()
	srv := httptest.NewServer(g)
	defer srv.Close()

	modes := map[[2]int]agentMode{{0, 2}: crashAfterOne, {1, 0}: trimHistory, {2, 1}: runForever, {2, 0}: viaMetadata}
	agent := &goAgent{base: srv.URL, turns: 3, modeOf: func(group, sample, _ int) agentMode { return modes[[2]int{group, sample}] }}
	if err := g.Open(1, tasks(3), 3); err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, 2, agent)
	st, err := g.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Episodes != 9 || st.Dropped != 2 || len(st.Trajectories) != 7 {
		t.Fatalf("episodes %d, dropped %d, scored %d; want 9, 2, 7 (reasons %v)", st.Episodes, st.Dropped, len(st.Trajectories), st.Reasons)
	}
	if st.Reasons["agent: the agent crashed"] != 1 || st.Reasons["deadline: more than 4 model requests"] != 1 {
		t.Errorf("drop reasons %v", st.Reasons)
	}
	if want := [][]int{{0, 1}, {2, 3, 4}, {5, 6}}; fmt.Sprint(st.Groups) != fmt.Sprint(want) {
		t.Errorf("groups %v, want %v", st.Groups, want)
	}
	if st.Mismatched != 1 || st.Requests != 21 || st.Continued != 14 {
		t.Errorf("requests %d, continued %d, mismatched %d; want 21, 14, 1", st.Requests, st.Continued, st.Mismatched)
	}
	if m := st.Metrics(); m["gateway/dropped"] != 2 || m["gateway/history_mismatch"] != 1.0/14 {
		t.Errorf("metrics %v", m)
	}
	for i, tr := range st.Trajectories {
		id := fmt.Sprintf("s1-t%d-e%d", tr.Group, tr.Sample)
		if tr.Group == 2 {
			id = fmt.Sprintf("s1-t2-e%d", tr.Sample)
		}
		seen := pol.seen[id]
		if len(seen) != len(tr.Turns) || len(seen) != 3 {
			t.Fatalf("%s: %d turns recorded, %d sampled, want 3", id, len(tr.Turns), len(seen))
		}
		masked := 0
		for k, turn := range tr.Turns {
			if !slices.Equal(tr.TurnPrompt(k), seen[k].prompt) {
				t.Errorf("%s turn %d: recorded prompt differs from the one sampled after", id, k)
			}
			if !slices.Equal(tr.Tokens[turn.ReplyStart:turn.ReplyEnd], seen[k].tokens) || !slices.Equal(tr.LogProbs[turn.ReplyStart:turn.ReplyEnd], seen[k].logprobs) {
				t.Errorf("%s turn %d: trained tokens or log-probs differ from the sampled ones", id, k)
			}
			masked += len(seen[k].tokens)
		}
		n := 0
		for j, m := range tr.LossMask {
			if m {
				n++
			} else if tr.LogProbs[j] != 0 {
				t.Errorf("%s: log-prob off the mask at %d", id, j)
			}
		}
		if n != masked {
			t.Errorf("%s: %d tokens in the mask, %d sampled", id, n, masked)
		}
		segs := len(st.Segments[i])
		if trimmed := tr.Group == 1 && tr.Sample == 0; (segs == 2) != trimmed || segs > 2 {
			t.Errorf("%s: %d segments (trimmed %v)", id, segs, trimmed)
		}
		wantScore := 0.0
		if strings.Contains(mustDecode(t, pol, seen[2].tokens), "12") {
			wantScore = 1
		}
		if tr.Score != wantScore {
			t.Errorf("%s: score %v, want %v", id, tr.Score, wantScore)
		}
	}
	if s := g.Stats(); s.Refused != 1 || s.Untagged != 0 {
		t.Errorf("stats %+v: want 1 refused (the deadline), none untagged", s)
	}
}

func mustDecode(t *testing.T, p policy.Policy, ids []int) string {
	t.Helper()
	s, err := p.Decode(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
