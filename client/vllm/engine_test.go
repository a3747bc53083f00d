package vllm_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/frozenlake" // registers "frozenlake"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/rollout"
)

// TestEngineOverHTTPMatchesInProcess is the token-in, token-out proof: the
// rollout engine driven through the client and a vLLM stand-in produces
// exactly the trajectories it produces with the same policy in process.
func TestEngineOverHTTPMatchesInProcess(t *testing.T) {
	moves := []string{"Left", "Down", "Right", "Up"}
	reply := func(prompt string, seed uint64) string {
		a, b := moves[seed%4], moves[(seed/4)%4]
		if seed%7 == 0 {
			return "no idea" // malformed: a format penalty
		}
		return fmt.Sprintf("I will go %s then %s (%d chars seen).</think><answer>%s || %s</answer>", a, b, len(prompt), a, b)
	}
	run := func(p policy.Policy) []rollout.Trajectory {
		t.Helper()
		f, err := envs.NewFactory("frozenlake", nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := rollout.DefaultConfig()
		cfg.MaxTurns = 4
		e, err := rollout.New(context.Background(), cfg, p, f)
		if err != nil {
			t.Fatal(err)
		}
		trajs, err := e.Run(context.Background(), []uint64{0, 1, 2, 3}, 3, 11)
		if err != nil {
			t.Fatal(err)
		}
		return trajs
	}

	direct := run(&policytest.Scripted{Reply: reply})
	ts, _ := fake(t, &policytest.Scripted{Reply: reply}, nil)
	overHTTP := run(connect(t, quiet(ts.URL)))

	if len(direct) != 12 || len(overHTTP) != len(direct) {
		t.Fatalf("%d and %d trajectories", len(direct), len(overHTTP))
	}
	turns := 0
	for i := range direct {
		d, h := direct[i], overHTTP[i]
		if d.Err != "" || h.Err != "" {
			t.Fatalf("trajectory %d failed: %q / %q", i, d.Err, h.Err)
		}
		for name, eq := range map[string]bool{
			"Tokens":   reflect.DeepEqual(d.Tokens, h.Tokens),
			"LossMask": reflect.DeepEqual(d.LossMask, h.LossMask),
			"LogProbs": reflect.DeepEqual(d.LogProbs, h.LogProbs),
			"Turns":    reflect.DeepEqual(d.Turns, h.Turns),
		} {
			if !eq {
				t.Errorf("trajectory %d: %s differ over HTTP", i, name)
			}
		}
		// The trajectory names the model that sampled it: the served name
		// over HTTP.
		if d.Policy != "scripted" || h.Policy != "test-model" {
			t.Errorf("trajectory %d: policy %q in process, %q over HTTP", i, d.Policy, h.Policy)
		}
		d.Policy, h.Policy = "", ""
		if !reflect.DeepEqual(d, h) {
			t.Errorf("trajectory %d differs over HTTP:\n got %+v\nwant %+v", i, h, d)
		}
		turns += len(d.Turns)
	}
	if turns <= len(direct) {
		t.Fatalf("only %d turns in %d episodes: the test does not cover multi-turn play", turns, len(direct))
	}
}
