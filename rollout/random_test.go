package rollout

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/bandit"
	_ "github.com/agentrl/agentrl/envs/codeexec"
	_ "github.com/agentrl/agentrl/envs/countdown"
)

func TestRunRandomPlaysValidActions(t *testing.T) {
	for _, name := range []string{"bandit", "countdown"} {
		f, err := envs.NewFactory(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.MaxTurns, cfg.MaxActionsPerTurn, cfg.MaxActionsPerEpisode = 1, 1, 1
		seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
		a, err := RunRandom(context.Background(), cfg, f, seeds, 9)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := RunRandom(context.Background(), cfg, f, seeds, 9)
		for i, tr := range a {
			if tr.Err != "" || tr.ValidActions != 1 || !tr.Turns[0].FormatOK {
				t.Errorf("%s seed %d: %+v", name, tr.Seed, tr)
			}
			if tr.Turns[0].Reply != b[i].Turns[0].Reply {
				t.Errorf("%s: not reproducible from its seed", name)
			}
		}
	}
	f, _ := envs.NewFactory("codeexec", nil)
	if _, err := RunRandom(context.Background(), DefaultConfig(), f, []uint64{1}, 1); !errors.Is(err, ErrNoRandomPolicy) {
		t.Errorf("codeexec: %v, want ErrNoRandomPolicy", err)
	}
}
