package rollout

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/sokoban"
)

func TestDemonstrate(t *testing.T) {
	factory, err := envs.NewFactory("sokoban", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PromptStyle = PromptCompact
	seeds := make([]uint64, 100)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	rate := func(perturb float64) float64 {
		trajs, err := Demonstrate(context.Background(), cfg, factory, seeds, DemoOptions{Perturb: perturb, Brief: perturb > 0, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, tr := range trajs {
			if tr.Err != "" {
				t.Fatalf("seed %d: %s", tr.Seed, tr.Err)
			}
			if tr.Success {
				ok++
			}
			for _, turn := range tr.Turns {
				if !turn.FormatOK || !strings.HasPrefix(turn.Reply, "<think>") {
					t.Fatalf("demonstration reply %q does not parse", turn.Reply)
				}
			}
		}
		return float64(ok) / float64(len(trajs))
	}
	// Every generated 6x6 level is solvable within the 10-action budget of
	// RAGEN's setting only most of the time; the expert must solve all that are.
	if r := rate(0); r < 0.95 {
		t.Errorf("expert demonstrations succeed %.2f of the time", r)
	}
	if r0, r5 := rate(0), rate(0.5); r5 > r0-0.2 {
		t.Errorf("perturbation 0.5 barely hurts: %.2f vs %.2f", r5, r0)
	}
}
