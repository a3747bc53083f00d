package codeexec

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func newEnv(t *testing.T, cfg Config) *Env {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestResetDeterminism(t *testing.T) {
	a, b := newEnv(t, DefaultConfig()), newEnv(t, DefaultConfig())
	families := map[string]bool{}
	for seed := range uint64(60) {
		oa, _ := a.Reset(seed)
		ob, _ := b.Reset(seed)
		if oa != ob {
			t.Fatalf("seed %d: observations differ:\n%s\n---\n%s", seed, oa, ob)
		}
		families[a.Task().Family] = true
		// The environment's task is GenerateTask's for the drawn family.
		g, _ := GenerateTask(a.Task().Family, Medium, seed)
		if g.Spec != a.Task().Spec || g.Tests[0].Call("f") != a.Task().Tests[0].Call("f") {
			t.Fatalf("seed %d: GenerateTask disagrees with Reset", seed)
		}
	}
	if len(families) < 15 {
		t.Errorf("60 seeds drew only %d families", len(families))
	}
}

func TestObservationShowsTask(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	obs, _ := e.Reset(11)
	task := e.Task()
	for _, want := range []string{task.Signature(), task.Spec, "Examples:", task.Tests[0].Call(task.Func), "Attempts left: 3 of 3."} {
		if !strings.Contains(obs, want) {
			t.Errorf("observation lacks %q:\n%s", want, obs)
		}
	}
	if e.Actions() != nil {
		t.Error("Actions() should be nil for a free-form environment")
	}
}

func TestExpertSolvesEveryFamily(t *testing.T) {
	for _, name := range FamilyNames() {
		cfg := DefaultConfig()
		cfg.Tasks = []string{name}
		e := newEnv(t, cfg)
		for seed := range uint64(3) {
			e.Reset(seed)
			adv, err := e.Advise(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Step(adv.Actions[0])
			if err != nil {
				t.Fatal(err)
			}
			if !res.Info.Success || !res.Done || res.Reward != 1 {
				t.Fatalf("%s seed %d: expert got reward %v success %v:\n%s", name, seed, res.Reward, res.Info.Success, res.Observation)
			}
			if res.Info.Metrics["tests_passed"] != res.Info.Metrics["tests_total"] {
				t.Errorf("%s: metrics %v", name, res.Info.Metrics)
			}
			if _, err := e.Step("x"); !errors.Is(err, envs.ErrEpisodeDone) {
				t.Errorf("Step after success: %v, want ErrEpisodeDone", err)
			}
		}
	}
}

func TestAdviceRationale(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.Reset(5)
	first, _ := e.Advise(1, nil)
	again, _ := e.Advise(1, nil)
	if first.Rationale != again.Rationale {
		t.Error("nil rng should always give the first phrasing")
	}
	if first.Brief != e.Task().Func {
		t.Errorf("brief %q, want the function's name %q", first.Brief, e.Task().Func)
	}
	if !strings.Contains(first.Rationale, e.Task().Func) || !strings.Contains(first.Rationale, e.Task().Approach) {
		t.Errorf("rationale does not name the task and approach: %s", first.Rationale)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for range 100 {
		a, _ := e.Advise(1, rng)
		seen[a.Rationale] = true
	}
	if len(seen) < 4 {
		t.Errorf("only %d phrasings", len(seen))
	}
	// After a failed attempt the rationale mentions it.
	e.Step("def nothing():\n    pass\n")
	a, _ := e.Advise(1, nil)
	if !strings.Contains(a.Rationale, "last attempt") {
		t.Errorf("rationale ignores the failed attempt: %s", a.Rationale)
	}
	if a.Brief != e.Task().Func+" again" {
		t.Errorf("brief after a failed attempt: %q", a.Brief)
	}
}

// TestMultiTurnRewards: each step's reward is the improvement of the best
// pass fraction, so the return equals the best fraction reached.
func TestMultiTurnRewards(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tasks = []string{"sum_multiples"}
	cfg.Families = []string{"list"}
	e := newEnv(t, cfg)
	e.Reset(3)
	task := e.Task()
	n := float64(len(task.Tests))
	partial := strings.Replace(task.Reference, "total = 0\n", "total = 0\n    if not xs:\n        fail(\"empty\")\n", 1)

	var ret float64
	r1, _ := e.Step("def sum_multiples(xs):\n    return 1 // 0\n") // 0 passed
	r2, _ := e.Step(partial)                                       // n-1 passed
	if r1.Reward != 0 || r1.Done || r2.Done {
		t.Fatalf("r1 %+v r2 done %v", r1, r2.Done)
	}
	if !strings.Contains(r1.Observation, "division by zero") || !strings.Contains(r1.Observation, "Attempts left: 2 of 3.") {
		t.Errorf("feedback after attempt 1:\n%s", r1.Observation)
	}
	r3, _ := e.Step("def sum_multiples(xs):\n    return 0\n") // regression: no reward
	ret = r1.Reward + r2.Reward + r3.Reward
	if math.Abs(r2.Reward-(n-1)/n) > 1e-12 || r3.Reward != 0 {
		t.Errorf("rewards %v %v %v", r1.Reward, r2.Reward, r3.Reward)
	}
	if !r3.Done || r3.Info.Success || !strings.Contains(r3.Observation, "No attempts left.") {
		t.Errorf("episode should end after 3 attempts:\n%s", r3.Observation)
	}
	if math.Abs(ret-(n-1)/n) > 1e-12 {
		t.Errorf("return %v, want best fraction %v", ret, (n-1)/n)
	}
}

func TestInvalidAndMisuse(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	if _, err := e.Step("x"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Advise before Reset: %v", err)
	}
	e.Reset(1)
	for _, empty := range []string{"", "   \n", "```python\n```"} {
		res, err := e.Step(empty)
		if err != nil || res.Info.ActionValid || res.Reward != 0 || res.Done {
			t.Errorf("empty action %q: %+v %v", empty, res, err)
		}
	}
	if !strings.Contains(e.Render(), "Attempts left: 3 of 3.") {
		t.Error("an invalid step used an attempt")
	}
}

func TestRegistryConfig(t *testing.T) {
	f, err := envs.NewFactoryYAML("codeexec", []byte("max_attempts: 2\ndifficulty: hard\nfamilies: [arith]\nallow_while: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := f.New()
	env.Reset(9)
	e := env.(*Env)
	if e.Task().Category != "arith" || len(e.Task().Tests) < 10 {
		t.Errorf("config not applied: %+v", e.Task())
	}
	if !strings.Contains(env.Instruction(), "no while loops") || !strings.Contains(env.Instruction(), "2 attempt") {
		t.Errorf("instruction does not reflect the config:\n%s", env.Instruction())
	}
	for yaml, want := range map[string]string{
		"difficulty: extreme\n":                `difficulty: must be "easy", "medium" or "hard"`,
		"families: [graphs]\n":                 `families: unknown category "graphs"`,
		"tasks: [nope]\n":                      `tasks: unknown task family "nope"`,
		"families: [list]\ntasks: [gcd_lcm]\n": `tasks: task family "gcd_lcm" is in category "arith"`,
		"max_attempts: 0\n":                    "max_attempts: must be",
		"timeout_seconds: 0\n":                 "timeout_seconds: must be",
		"max_steps: 10\n":                      "max_steps: must be",
		"speed: 3\n":                           `unknown key "speed"`,
	} {
		_, err := envs.NewFactoryYAML("codeexec", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", yaml, err, want)
		}
	}
}

func TestInstructionDialect(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	in := e.Instruction()
	for _, want := range []string{"Starlark", "```python", "s.elems()", "while loops are allowed", "Recursion is allowed"} {
		if !strings.Contains(in, want) {
			t.Errorf("instruction lacks %q", want)
		}
	}
	cfg := DefaultConfig()
	cfg.AllowRecursion = false
	if in := newEnv(t, cfg).Instruction(); !strings.Contains(in, "no recursion") {
		t.Errorf("instruction does not forbid recursion:\n%s", in)
	}
}
