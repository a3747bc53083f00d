package bandit

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestDeterministicAndPayoutRates(t *testing.T) {
	const n = 20000
	var highPaid int
	firstIsHigh := 0
	for seed := range uint64(n) {
		a, b := New(DefaultConfig()), New(DefaultConfig())
		oa, _ := a.Reset(seed)
		ob, _ := b.Reset(seed)
		if oa != ob {
			t.Fatalf("seed %d: different observations", seed)
		}
		adv, err := a.Advise(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Actions()[0] == adv.Actions[0] {
			firstIsHigh++
		}
		ra, _ := a.Step(adv.Actions[0])
		rb, _ := b.Step(adv.Actions[0])
		if !reflect.DeepEqual(ra, rb) || !ra.Info.Success || !ra.Done {
			t.Fatalf("seed %d: %+v vs %+v", seed, ra, rb)
		}
		if ra.Reward == 1 {
			highPaid++
		} else if ra.Reward != 0 {
			t.Fatalf("risky arm paid %v", ra.Reward)
		}
	}
	if p := float64(highPaid) / n; math.Abs(p-0.25) > 0.015 {
		t.Errorf("risky arm paid with rate %.3f, want 0.25", p)
	}
	if p := float64(firstIsHigh) / n; math.Abs(p-0.5) > 0.015 {
		t.Errorf("risky arm was action 1 with rate %.3f, want 0.5", p)
	}
}

func TestSafeArmAndActions(t *testing.T) {
	e := New(DefaultConfig())
	if _, err := e.Step("Teacher"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	obs, _ := e.Reset(7)
	adv, _ := e.Advise(1, nil)
	safe := e.Actions()[0]
	if safe == adv.Actions[0] {
		safe = e.Actions()[1]
	}
	res, _ := e.Step("Pull the lever")
	if res.Info.ActionValid || res.Observation != obs || res.Done {
		t.Errorf("invalid action changed state: %+v", res)
	}
	res, _ = e.Step("  " + safe + " ")
	if res.Reward != 0.1 || res.Info.Success || !res.Info.ActionValid {
		t.Errorf("safe arm: %+v", res)
	}
	if want := safe + ": 0.1 points"; res.Observation != want {
		t.Errorf("observation %q, want %q", res.Observation, want)
	}
	if _, err := e.Step(safe); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Step after done: %v", err)
	}
}

func TestSplitsAreDisjoint(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range armNames["train"] {
		seen[p[0]], seen[p[1]] = true, true
	}
	for _, p := range armNames["test"] {
		if seen[p[0]] || seen[p[1]] {
			t.Errorf("test pair %v shares a name with train", p)
		}
	}
	if len(armNames["train"]) != 12 || len(armNames["test"]) != 8 {
		t.Errorf("want 12 train and 8 test pairs")
	}
	if _, err := envs.NewFactoryYAML("bandit", []byte("split: val")); err == nil {
		t.Error("split val accepted")
	}
}

func FuzzStep(f *testing.F) {
	f.Add(uint64(1), "Teacher")
	f.Add(uint64(2), "2")
	f.Fuzz(func(t *testing.T, seed uint64, action string) {
		e := New(DefaultConfig())
		obs, _ := e.Reset(seed)
		res, err := e.Step(action)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Info.ActionValid && (res.Observation != obs || res.Reward != 0) {
			t.Fatalf("invalid step changed state: %+v", res)
		}
	})
}
