package search

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func newEnv(t testing.TB, edit func(*Config)) *Env {
	t.Helper()
	cfg := DefaultConfig()
	if edit != nil {
		edit(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestConfigValidation(t *testing.T) {
	for key, edit := range map[string]func(*Config){
		"corpus":       func(c *Config) { c.Corpus = "huge" },
		"corpus:":      func(c *Config) { c.Corpus = "5" },
		"split":        func(c *Config) { c.Split = "val" },
		"min_hops":     func(c *Config) { c.MinHops = 0 },
		"max_hops":     func(c *Config) { c.MaxHops = 4 },
		"max_hops:":    func(c *Config) { c.MinHops, c.MaxHops = 3, 2 },
		"top_k":        func(c *Config) { c.TopK = 0 },
		"max_steps":    func(c *Config) { c.MaxSteps = 0 },
		"reward":       func(c *Config) { c.Reward = "binary" },
		"f1_threshold": func(c *Config) { c.F1Threshold = 1.5 },
	} {
		cfg := DefaultConfig()
		edit(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), strings.TrimSuffix(key, ":")+":") {
			t.Errorf("%s: error %v", key, err)
		}
	}
	if _, err := envs.NewFactoryYAML("search", []byte("corpus: 100\ntop_k: 3\nsplit: test\nmin_hops: 2\n")); err != nil {
		t.Errorf("valid YAML: %v", err)
	}
	for _, split := range []string{"train", "test", "all"} {
		if _, err := envs.NewFactoryYAML("search", []byte("corpus: 20\nsplit: "+split+"\n")); err != nil {
			t.Errorf("the smallest corpus, split %s: %v", split, err)
		}
	}
	if _, err := envs.NewFactoryYAML("search", []byte("topk: 3\n")); err == nil {
		t.Error("unknown key accepted")
	}
}

func TestStepRules(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSteps = 3; c.TopK = 3 })
	if e.Render() != "" {
		t.Error("Render before Reset")
	}
	if _, err := e.Step("search[x]"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Advise before Reset: %v", err)
	}
	obs, _ := e.Reset(4)
	q := e.Question()
	if !strings.HasPrefix(obs, "Question: "+q.Text+"\n") || !strings.HasSuffix(obs, "Available actions: search[<query>], answer[<answer>]") {
		t.Fatalf("first observation %q", obs)
	}
	for _, bad := range []string{"", "search[]", "Search[x]", "answer", "search[a]]", "click[buy now]", "answer[a\nb]"} {
		res, err := e.Step(bad)
		if err != nil || res.Info.ActionValid || res.Reward != 0 || res.Done || res.Observation != obs || e.Steps() != 0 {
			t.Fatalf("invalid %q: %+v, %v", bad, res, err)
		}
	}
	name := e.Corpus().Entities[q.Subject()].Name
	res, _ := e.Step("search[" + strings.ToLower(name) + "]")
	if !res.Info.ActionValid || !res.Info.ActionEffective || res.Done || res.Reward != 0 || len(e.Results()) != 3 {
		t.Fatalf("search: %+v", res)
	}
	if !strings.Contains(res.Observation, "Results for \""+strings.ToLower(name)+"\":\n[1] ") || res.Observation != e.Render() {
		t.Fatalf("search observation %q", res.Observation)
	}
	res, _ = e.Step("search[  " + name + " ]") // same passages: valid, not effective
	if !res.Info.ActionValid || res.Info.ActionEffective {
		t.Fatalf("repeated search: %+v", res.Info)
	}
	res, _ = e.Step("search[zzzz qqqq]") // the step limit
	if !res.Done || res.Reward != 0 || res.Info.Success || res.Info.Metrics["answered"] != 0 || res.Info.Metrics["searches"] != 3 ||
		!strings.Contains(res.Observation, "Results for \"zzzz qqqq\": none.") || !strings.HasSuffix(res.Observation, "without an answer.") {
		t.Fatalf("step limit: %+v", res)
	}
	if _, err := e.Step("answer[x]"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Step after the end: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Advise after the end: %v", err)
	}

	// Answers end the episode with their reward.
	for _, tc := range []struct {
		answer  func(gold string) string
		reward  float64
		success bool
	}{
		{func(g string) string { return "finish[" + strings.ToUpper(g) + "!]" }, 1, true},
		{func(g string) string { return "answer[" + g + " and more words than the answer has here]" }, 0, false},
		{func(string) string { return "answer[nothing]" }, 0, false},
	} {
		e.Reset(4)
		res, _ := e.Step(tc.answer(e.Question().Answer))
		if !res.Done || res.Reward != tc.reward || res.Info.Success != tc.success || !res.Info.ActionValid ||
			res.Info.Metrics["answered"] != 1 || res.Info.Metrics["searches"] != 0 || !strings.Contains(res.Observation, "Your answer: ") {
			t.Fatalf("%q: %+v", tc.answer(e.Question().Answer), res)
		}
	}
	// RAGEN's partial credit: two of three words of a three-word answer.
	e = newEnv(t, nil)
	for seed := uint64(0); ; seed++ {
		e.Reset(seed)
		words := strings.Fields(e.Question().Answer)
		if len(words) != 2 {
			continue
		}
		res, _ := e.Step("answer[" + words[1] + "]")
		if res.Reward != 2.0/3 || res.Info.Success || res.Info.Metrics["f1"] != 2.0/3 || res.Info.Metrics["ragen_success"] != 1 {
			t.Fatalf("partial answer %q of %q: %+v", words[1], e.Question().Answer, res)
		}
		break
	}
}

// TestExpertSolvesEverything: the expert answers every question exactly,
// on both splits and both shipped top-k settings, in one search a hop (or
// fewer) and one answer, within the shipped step limits.
func TestExpertSolvesEverything(t *testing.T) {
	for _, tc := range []struct {
		split Split
		topK  int
	}{{SplitTrain, 3}, {SplitTest, 3}, {SplitTrain, 5}, {SplitTest, 5}} {
		e := newEnv(t, func(c *Config) { c.Split, c.TopK, c.MaxSteps = tc.split, tc.topK, 4 })
		solved, steps := 0, 0
		const n = 1000
		for seed := range uint64(n) {
			e.Reset(seed)
			hops := e.Question().Hops()
			for {
				adv, err := e.Advise(0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(adv.Actions) > hops+1 {
					t.Fatalf("seed %d: plan %v for %d hops", seed, adv.Actions, hops)
				}
				res, err := e.Step(adv.Actions[0])
				if err != nil {
					t.Fatal(err)
				}
				steps++
				if res.Done {
					if res.Info.Success {
						solved++
					}
					break
				}
			}
		}
		t.Logf("split %s, top %d: expert solves %d of %d, %.2f steps an episode", tc.split, tc.topK, solved, n, float64(steps)/n)
		if solved != n {
			t.Errorf("expert solves %d of %d", solved, n)
		}
	}
}

func TestExpertAdvice(t *testing.T) {
	e := newEnv(t, nil)
	e.Reset(2) // a 3-hop question
	q := e.Question()
	if q.Hops() != 3 {
		t.Fatalf("seed 2 has %d hops", q.Hops())
	}
	before := e.Render()
	adv, err := e.Advise(0, nil)
	if err != nil || len(adv.Actions) != 4 || e.Render() != before || e.Steps() != 0 {
		t.Fatalf("Advise: %+v, %v (state changed: %v)", adv, err, e.Render() != before)
	}
	if adv.Brief != q.Rels[0].label() || !strings.Contains(adv.Rationale, e.Corpus().Entities[q.Subject()].Name) {
		t.Errorf("start advice %+v", adv)
	}
	if one, _ := e.Advise(1, nil); len(one.Actions) != 1 || one.Actions[0] != adv.Actions[0] {
		t.Errorf("Advise(1) = %v", one.Actions)
	}
	phrasings := map[string]bool{}
	rng := envs.NewRand(1, 1)
	for range 40 {
		a, _ := e.Advise(1, rng)
		phrasings[a.Rationale] = true
	}
	if len(phrasings) != 4 {
		t.Errorf("%d phrasings", len(phrasings))
	}
	for i, a := range adv.Actions {
		check := e.CheckRationale(e.brief(e.decide()))
		for fact, ok := range check {
			if !ok {
				t.Errorf("step %d: the expert's brief %q fails %s", i, e.brief(e.decide()), fact)
			}
		}
		if len(check) != min(i+1, 2) {
			t.Errorf("step %d: checked facts %v", i, check)
		}
		if wrong := e.CheckRationale("country Nowhere"); i > 0 && wrong["value"] {
			t.Errorf("step %d: a wrong value passes", i)
		}
		if want := q.Rels[max(i-1, 0)].label(); !strings.HasPrefix(e.brief(e.decide()), want) {
			t.Errorf("step %d: brief %q", i, e.brief(e.decide()))
		}
		e.Step(a)
	}
	if !e.done || !e.score.EM {
		t.Fatal("the plan does not solve the question")
	}
}

// TestRandomActor: random actions are always valid, and the random policy
// answers well below the expert but not never.
func TestRandomActor(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.TopK, c.MaxSteps = 3, 5 })
	if _, err := e.RandomAction(envs.NewRand(0, 0)); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("RandomAction before Reset: %v", err)
	}
	rng := envs.NewRand(3, 4)
	success, answered := 0, 0
	const n = 2000
	for seed := range uint64(n) {
		e.Reset(seed)
		for {
			a, err := e.RandomAction(rng)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := e.Step(a)
			if !res.Info.ActionValid {
				t.Fatalf("random action %q invalid", a)
			}
			if res.Done {
				if res.Info.Success {
					success++
				}
				answered += int(res.Info.Metrics["answered"])
				break
			}
		}
	}
	t.Logf("random policy: %d of %d solved, %d answered", success, n, answered)
	if success == 0 || success > n/5 {
		t.Errorf("random policy solves %d of %d", success, n)
	}
}

func TestStateKey(t *testing.T) {
	e := newEnv(t, nil)
	e.Reset(1)
	if e.StateKey() != "start" {
		t.Errorf("start key %q", e.StateKey())
	}
	name := e.Corpus().Entities[e.Question().Subject()].Name
	e.Step("search[" + name + "]")
	k := e.StateKey()
	e.Step("search[" + strings.ToUpper(name) + "]")
	if e.StateKey() != k || !strings.HasPrefix(k, "r") {
		t.Errorf("keys %q, %q", k, e.StateKey())
	}
	e.Step("search[capital]")
	if e.StateKey() == k {
		t.Error("other passages, same key")
	}
}
