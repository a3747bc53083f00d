package search_test

import (
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs/openenv"
	"github.com/agentrl/agentrl/envs/search"
)

// TestServedOverOpenEnv plays episodes in-process and through an OpenEnv
// server and client with the same seeds and actions (the expert's, the
// random actor's and malformed ones): observations, rewards and ends are
// the same.
func TestServedOverOpenEnv(t *testing.T) {
	s, err := openenv.NewServer("search", nil, openenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	cfg := openenv.DefaultClientConfig()
	cfg.URL, cfg.Timeout = hs.URL, 10*time.Second

	rng := rand.New(rand.NewPCG(1, 2))
	for seed := range uint64(4) {
		local, err := search.New(search.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		remote := openenv.NewClient(cfg)
		defer remote.Close()
		want, _ := local.Reset(seed)
		got, err := remote.Reset(seed)
		if err != nil || got != want || remote.Instruction() != local.Instruction() {
			t.Fatalf("seed %d: reset %q, %v; want %q", seed, got, err, want)
		}
		for step := 0; ; step++ {
			var action string
			switch step % 3 {
			case 0:
				adv, err := local.Advise(1, nil)
				if err != nil {
					t.Fatal(err)
				}
				action = adv.Actions[0]
			case 1:
				action = "search[unclosed"
			default:
				if action, err = local.RandomAction(rng); err != nil {
					t.Fatal(err)
				}
			}
			w, _ := local.Step(action)
			g, err := remote.Step(action)
			if err != nil || g.Observation != w.Observation || g.Reward != w.Reward || g.Done != w.Done || g.Info.ActionValid != w.Info.ActionValid {
				t.Fatalf("seed %d step %d %q: remote %+v, %v; local %+v", seed, step, action, g, err, w)
			}
			if w.Done {
				break
			}
		}
	}
}
