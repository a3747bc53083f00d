package train

import (
	"context"
	"math"
	"testing"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
)

// groupScorer is a policy whose log-likelihood of a chain is 0 after the
// prompt of the group the chain names and −5 after any other: a chain
// naming its own group is retrieved, one naming another is not.
type groupScorer struct{ policy.Policy }

func (groupScorer) Info() policy.Info { return policy.Info{MaxContext: 64} }

func (groupScorer) Score(_ context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	out := make([][]float64, len(reqs))
	for i, r := range reqs {
		lp := -5.0
		if r.Prompt[0]-10 == r.Continuation[0]-100 {
			lp = 0
		}
		out[i] = []float64{lp}
	}
	return out, nil
}

// TestCollapseMetricsCrossRetrievalWithGroundTruth checks the joint of
// top-1 retrieval and rationale correctness the collapse step logs.
func TestCollapseMetricsCrossRetrievalWithGroundTruth(t *testing.T) {
	// traj: its group, the group its chain names, whether its rationale is right.
	cases := []struct {
		group, names int
		right        bool
	}{{0, 0, true}, {0, 0, false}, {1, 0, true}, {1, 1, false}}
	var trajs []rollout.Trajectory
	for _, c := range cases {
		trajs = append(trajs, rollout.Trajectory{
			Group:  c.group,
			Tokens: []int{10 + c.group, 100 + c.names},
			Turns:  []rollout.Turn{{PromptEnd: 1, ThinkStart: 1, ThinkEnd: 2, Rationale: map[string]bool{"player": c.right}}},
		})
	}
	cfg := CollapseConfig{Samples: 0, FirstTurn: true}
	r, err := readCollapse(context.Background(), groupScorer{}, trajs, cfg, 1)
	m := r.fold(algos.NewCollapseEMA())
	if err != nil {
		t.Fatal(err)
	}
	p := algos.SchemeFirstTurn
	for k, want := range map[string]float64{
		p + "/retrieval_accuracy": 0.75,
		p + "/retrieved_right":    0.25, p + "/retrieved_wrong": 0.5, p + "/unretrieved_right": 0.25, p + "/unretrieved_wrong": 0,
		p + "/rationale_correct": 0.5, p + "/retrieval_accuracy_right": 0.5, p + "/retrieval_accuracy_wrong": 1,
	} {
		if got, ok := m[k]; !ok || math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}
}

// TestCollapseMetricsReadsTheRegime checks CollapseMetrics, trainer eval's
// entry: chains that each name their own input, with certainty, read as
// compressed (input-dependent, low entropy); a single input reads nothing.
func TestCollapseMetricsReadsTheRegime(t *testing.T) {
	var trajs []rollout.Trajectory
	for g := range 4 {
		for range 2 {
			trajs = append(trajs, rollout.Trajectory{
				Group: g, Tokens: []int{10 + g, 100 + g},
				Turns: []rollout.Turn{{PromptEnd: 1, ThinkStart: 1, ThinkEnd: 2}},
			})
		}
	}
	cfg := Default().Collapse
	m, regime, err := CollapseMetrics(context.Background(), groupScorer{}, trajs, cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	if regime != algos.RegimeCompressed {
		t.Errorf("regime %q, want %q (metrics %v)", regime, algos.RegimeCompressed, m)
	}
	if got := m[algos.SchemeFirstTurn+"/retrieval_accuracy"]; got != 1 {
		t.Errorf("retrieval accuracy %v, want 1", got)
	}
	_, regime, err = CollapseMetrics(context.Background(), groupScorer{}, trajs[:2], cfg, 7)
	if err != nil || regime != "" {
		t.Errorf("one input: regime %q, err %v; want none", regime, err)
	}
}
