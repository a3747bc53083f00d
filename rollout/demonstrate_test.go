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

// TestTurnsRecordStateAndCostToGo plays expert and perturbed demonstrations
// with CostToGo on: every turn starts where the previous one ended, its
// State is the environment's key, and an expert turn of n actions lowers
// the cost by n.
func TestTurnsRecordStateAndCostToGo(t *testing.T) {
	factory, err := envs.NewFactory("sokoban", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PromptStyle = PromptCompact
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	for _, perturb := range []float64{0, 0.5} {
		cfg.CostToGo, cfg.TurnStates = true, true
		trajs, err := Demonstrate(context.Background(), cfg, factory, seeds, DemoOptions{Perturb: perturb, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trajs {
			env, err := factory.New()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Reset(tr.Seed); err != nil {
				t.Fatal(err)
			}
			if key := env.(envs.StateKeyer).StateKey(); tr.Turns[0].State != key {
				t.Errorf("seed %d: first turn's state %q, want %q", tr.Seed, tr.Turns[0].State, key)
			}
			for k, turn := range tr.Turns {
				if turn.Cost == nil {
					t.Fatalf("seed %d turn %d: cost not recorded: %+v", tr.Seed, k, turn)
				}
				if k > 0 && turn.Cost.Before != tr.Turns[k-1].Cost.After {
					t.Errorf("seed %d turn %d starts at cost %v, the previous ended at %v", tr.Seed, k, turn.Cost.Before, tr.Turns[k-1].Cost.After)
				}
				if perturb == 0 && turn.Cost.Before-turn.Cost.After != float64(turn.Executed) {
					t.Errorf("seed %d turn %d: %d expert actions took the cost from %v to %v", tr.Seed, k, turn.Executed, turn.Cost.Before, turn.Cost.After)
				}
			}
			if last := tr.Turns[len(tr.Turns)-1]; perturb == 0 && tr.Success && last.Cost.After != 0 {
				t.Errorf("seed %d: solved with cost %v left", tr.Seed, last.Cost.After)
			}
		}
		cfg.CostToGo, cfg.TurnStates = false, false
		trajs, err = Demonstrate(context.Background(), cfg, factory, seeds[:1], DemoOptions{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if c := trajs[0].Turns[0].Cost; c != nil {
			t.Errorf("cost %+v recorded with CostToGo off", *c)
		}
		if s := trajs[0].Turns[0].State; s != "" {
			t.Errorf("state %q recorded with TurnStates off", s)
		}
	}
}

// TestRationaleGroundTruth: the expert's brief rationales state every fact
// of the board correctly; its prose rationales are not in the checkable
// form, so they count as wrong; replies without reasoning are not checked.
func TestRationaleGroundTruth(t *testing.T) {
	factory, err := envs.NewFactory("sokoban", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.PromptStyle = PromptCompact
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		brief bool
		want  float64
	}{{true, 1}, {false, 0}} {
		trajs, err := Demonstrate(context.Background(), cfg, factory, seeds, DemoOptions{Brief: c.brief, Perturb: 0.3, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		m := Metrics("demo", trajs, 1)
		for _, k := range []string{"demo/rationale_correct", "demo/rationale_correct/player", "demo/rationale_correct/boxes", "demo/rationale_correct/targets"} {
			if v, ok := m[k]; !ok || v != c.want {
				t.Errorf("brief %v: %s = %v (present %v), want %v", c.brief, k, v, ok, c.want)
			}
		}
	}
	cfg.Think = false
	trajs, err := RunRandom(context.Background(), cfg, factory, seeds, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Metrics("random", trajs, 1)["random/rationale_correct"]; ok {
		t.Error("replies without reasoning were checked")
	}
}
