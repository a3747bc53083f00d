package countdown

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestGenerateDeterministicAndInRange(t *testing.T) {
	cfg := DefaultConfig()
	for seed := range uint64(500) {
		a, err := Generate(cfg, seed)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(cfg, seed)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: %v != %v", seed, a, b)
		}
		if a.Target < 1 || a.Target > 99 || len(a.Numbers) < 3 || len(a.Numbers) > 4 {
			t.Fatalf("seed %d: out of range: %+v", seed, a)
		}
		for _, n := range a.Numbers {
			if n < 1 || n > 99 {
				t.Fatalf("seed %d: number %d out of range", seed, n)
			}
		}
	}
}

func TestScore(t *testing.T) {
	cfg := DefaultConfig()
	inst := Instance{Target: 28, Numbers: []int64{44, 19, 35}}
	cases := []struct {
		answer  string
		reward  float64
		success bool
		parses  bool
	}{
		{"44 + 19 - 35", 1, true, true},
		{"(44 + 19) - 35", 1, true, true},
		{" 19+44-35 = 28", 1, true, true},       // order free, "= N" tolerated
		{"44 - 19 + 35", 0.1, false, true},      // right numbers, wrong value
		{"44 / (19 - 19) + 35", 0, false, true}, // 19 twice: wrong numbers
		{"44 + 19", 0, false, true},             // leaves 35 out
		{"44 + 19 - 35 + 1", 0, false, true},    // a number not given
		{"44 * 19 / 35", 0.1, false, true},      // exact division, not 28
		{"44 / (35 - 35)", 0, false, true},      // wrong numbers beats div by zero
		{"44 + 19 -", 0, false, false},
		{"-44 + 19 + 35", 0, false, false}, // no unary minus
		{"44 + 19 - 35 = x", 0, false, false},
		{"forty-four", 0, false, false},
		{"", 0, false, false},
		{"((44 + 19) - 35", 0, false, false},
		{"44 19 35", 0, false, false},
		{"44 ^ 19", 0, false, false},
	}
	for _, c := range cases {
		r, s, err := Score(cfg, inst, c.answer)
		if (err == nil) != c.parses {
			t.Errorf("%q: parse error %v, want parses=%v", c.answer, err, c.parses)
		}
		if r != c.reward || s != c.success {
			t.Errorf("%q: reward %v success %v, want %v %v", c.answer, r, s, c.reward, c.success)
		}
	}
	// Division by zero with exactly the given numbers is well formed but wrong.
	zero := Instance{Target: 5, Numbers: []int64{5, 3, 3}}
	if r, _, err := Score(cfg, zero, "5 / (3 - 3)"); err != nil || r != 0.1 {
		t.Errorf("division by zero: reward %v err %v, want 0.1", r, err)
	}
	// Exact rational arithmetic: 6 / 4 * 2 = 3.
	frac := Instance{Target: 3, Numbers: []int64{6, 4, 2}}
	if r, _, _ := Score(cfg, frac, "6 / 4 * 2"); r != 1 {
		t.Errorf("6 / 4 * 2 should equal 3, reward %v", r)
	}
	subset := cfg
	subset.RequireAllNumbers = false
	if r, _, _ := Score(subset, inst, "44 - 19 + 3"); r != 0 {
		t.Errorf("subset mode accepted a number not given: %v", r)
	}
	if r, s, _ := Score(subset, Instance{Target: 63, Numbers: []int64{44, 19, 35}}, "44 + 19"); r != 1 || !s {
		t.Errorf("subset mode rejected a subset: %v %v", r, s)
	}
}

func TestExpertSolvesEveryInstance(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), {MinNumbers: 5, MaxNumbers: 5, MaxNumber: 50, MaxTarget: 200, RequireAllNumbers: true, FormatScore: 0.1}} {
		env := New(cfg)
		for seed := range uint64(300) {
			if _, err := env.Reset(seed); err != nil {
				t.Fatal(err)
			}
			adv, err := env.Advise(1, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if !strings.Contains(adv.Rationale, "=") {
				t.Errorf("seed %d: rationale %q lacks the worked steps", seed, adv.Rationale)
			}
			res, err := env.Step(adv.Actions[0])
			if err != nil {
				t.Fatal(err)
			}
			if !res.Info.Success || res.Reward != 1 || !res.Done {
				t.Fatalf("seed %d %+v: expert answer %q scored %+v", seed, env.Instance(), adv.Actions[0], res)
			}
		}
	}
}

func TestRationaleDependsOnInput(t *testing.T) {
	env := New(DefaultConfig())
	seen := map[string]bool{}
	for seed := range uint64(20) {
		env.Reset(seed)
		adv, _ := env.Advise(1, nil)
		seen[adv.Rationale] = true
	}
	if len(seen) < 18 {
		t.Errorf("only %d distinct rationales over 20 instances", len(seen))
	}
	phrasings := map[string]bool{}
	env.Reset(1)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		adv, _ := env.Advise(1, rng)
		phrasings[adv.Rationale] = true
	}
	if len(phrasings) < 4 {
		t.Errorf("only %d phrasings", len(phrasings))
	}
}

func TestStepLifecycle(t *testing.T) {
	env := New(DefaultConfig())
	if _, err := env.Step("1 + 2"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	obs, _ := env.Reset(3)
	res, err := env.Step("what?")
	if err != nil || res.Info.ActionValid || res.Done || res.Reward != 0 || res.Observation != obs {
		t.Errorf("malformed answer: %+v %v", res, err)
	}
	res, _ = env.Step("1 + 1 + 1")
	if !res.Done || !res.Info.ActionValid {
		t.Errorf("parsed answer should end the episode: %+v", res)
	}
	if _, err := env.Step("1"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Step after done: %v", err)
	}
}

func TestRender(t *testing.T) {
	env := New(DefaultConfig())
	env.inst, env.started = Instance{Target: 28, Numbers: []int64{44, 19, 35}}, true
	if got, want := env.Render(), "Target: 28, nums: [44, 19, 35]"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
	env.Step("44 + 19 - 35")
	if got, want := env.Render(), "Target: 28, nums: [44, 19, 35]\nAnswer: 44 + 19 - 35 (reward 1.0)"; got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, doc := range []string{"min_numbers: 1", "max_numbers: 9", "format_score: 2", "max_target: 0", "numbers: 3"} {
		if _, err := envs.NewFactoryYAML("countdown", []byte(doc)); err == nil {
			t.Errorf("config %q accepted", doc)
		}
	}
}

func FuzzScore(f *testing.F) {
	for _, s := range []string{"44 + 19 - 35", "((1))", "1/0", "(((((", "9999999999", "1 = 2 = 3", "\x00"} {
		f.Add(s)
	}
	inst := Instance{Target: 28, Numbers: []int64{44, 19, 35}}
	f.Fuzz(func(t *testing.T, answer string) {
		r, s, err := Score(DefaultConfig(), inst, answer)
		if err != nil && (r != 0 || s) {
			t.Fatalf("malformed %q got reward %v", answer, r)
		}
		if r != 0 && r != 0.1 && r != 1 {
			t.Fatalf("%q: reward %v", answer, r)
		}
		env := New(DefaultConfig())
		obs, _ := env.Reset(1)
		res, err := env.Step(answer)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Info.ActionValid && (res.Observation != obs || res.Done) {
			t.Fatalf("invalid step changed state: %+v", res)
		}
	})
}

func BenchmarkSolve(b *testing.B) {
	cfg := DefaultConfig()
	insts := make([]Instance, 256)
	for i := range insts {
		insts[i], _ = Generate(cfg, uint64(i))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := Solve(insts[i%len(insts)], true); !ok {
			b.Fatal("unsolved")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "solves/s")
}

func BenchmarkScore(b *testing.B) {
	inst := Instance{Target: 28, Numbers: []int64{44, 19, 35}}
	cfg := DefaultConfig()
	for b.Loop() {
		Score(cfg, inst, "(44 + 19) - 35")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scores/s")
}

func TestRandomActionIsWellFormed(t *testing.T) {
	for _, all := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.RequireAllNumbers = all
		env := New(cfg)
		if _, err := env.RandomAction(rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Error("RandomAction before Reset succeeded")
		}
		rng := rand.New(rand.NewPCG(2, 2))
		successes := 0
		for seed := uint64(0); seed < 300; seed++ {
			if _, err := env.Reset(seed); err != nil {
				t.Fatal(err)
			}
			a, err := env.RandomAction(rng)
			if err != nil {
				t.Fatal(err)
			}
			_, literals, err := parseEquation(a)
			if err != nil {
				t.Fatalf("seed %d: random action %q does not parse: %v", seed, a, err)
			}
			if !usesNumbers(literals, env.inst.Numbers, all) {
				t.Fatalf("seed %d: %q does not use the numbers %v as the rules want", seed, a, env.inst.Numbers)
			}
			res, err := env.Step(a)
			if err != nil || !res.Info.ActionValid {
				t.Fatalf("seed %d: %q is not a valid step: %+v %v", seed, a, res, err)
			}
			if res.Info.Success {
				successes++
			}
		}
		// Random equations rarely hit the target, but they are proper tries.
		if successes == 300 {
			t.Errorf("every random equation solved its puzzle")
		}
	}
}
