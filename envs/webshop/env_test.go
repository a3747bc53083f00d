package webshop

import (
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func newTestEnv(t testing.TB, edit func(*Config)) *Env {
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

func mustStep(t testing.TB, e *Env, action string) envs.StepResult {
	t.Helper()
	res, err := e.Step(action)
	if err != nil {
		t.Fatalf("Step(%q): %v", action, err)
	}
	return res
}

func TestConfigYAML(t *testing.T) {
	f, err := envs.NewFactoryYAML("webshop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Config().(Config); got != DefaultConfig() {
		t.Errorf("default config %+v", got)
	}
	f, err = envs.NewFactoryYAML("webshop", []byte("catalog: 300\ncatalog_seed: 4\nmax_actions: 15\nreward: raw\nsplit: test\nshow_actions: false\nresult_labels: rank\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Catalog: "300", CatalogSeed: 4, MaxActions: 15, Reward: RewardRaw, Split: SplitTest, ResultLabels: LabelRank}
	if got := f.Config().(Config); got != want {
		t.Errorf("config %+v, want %+v", got, want)
	}
	for yaml, key := range map[string]string{
		"catalog: huge":     "catalog:",
		"catalog: 0":        "catalog:",
		"max_actions: 0":    "max_actions:",
		"reward: dense":     "reward:",
		"split: dev":        "split:",
		"result_labels: id": "result_labels:",
		"products: 10":      `unknown key "products"`,
		"catalog: -5":       "catalog:",
		"catalog: 3000000":  "catalog:",
	} {
		_, err := envs.NewFactoryYAML("webshop", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v, want one naming %q", yaml, err, key)
		}
	}
}

func TestCatalogDeterministicAndShared(t *testing.T) {
	a, b := NewCatalog(300, 7), NewCatalog(300, 7)
	if !reflect.DeepEqual(a.Products, b.Products) || a.NumGoals() != b.NumGoals() {
		t.Fatal("same seed gave different catalogues")
	}
	for k := range 50 {
		if !reflect.DeepEqual(a.Goal(k), b.Goal(k)) {
			t.Fatalf("goal %d differs", k)
		}
	}
	if c := NewCatalog(300, 8); a.Products[0].Title == c.Products[0].Title && a.Products[1].Title == c.Products[1].Title {
		t.Error("different seeds gave the same titles")
	}
	if first, second := SharedCatalog(300, 7), SharedCatalog(300, 7); first != second {
		t.Error("SharedCatalog built twice")
	}
}

// TestCatalogLooksLikeAShop checks that the catalog is broad enough to read like a real shop.
func TestCatalogLooksLikeAShop(t *testing.T) {
	c := SharedCatalog(SmallCatalog, 0)
	cats, queries, attrs, groups := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	asins := map[string]bool{}
	for i := range c.Products {
		p := &c.Products[i]
		levels := strings.Split(p.Category, " › ")
		if len(levels) != 3 {
			t.Fatalf("category path %q", p.Category)
		}
		cats[levels[0]], queries[p.Query] = true, true
		for _, a := range p.Attributes {
			attrs[a] = true
		}
		values := map[string]bool{}
		for _, g := range p.Options {
			groups[g.Name] = true
			for _, v := range g.Values {
				// A value in two groups would be clickable only for
				// the last one (WebShop keys clickables by text).
				if values[v] {
					t.Fatalf("%s offers %q in two option groups", p.ASIN, v)
				}
				values[v] = true
			}
		}
		if len(p.ASIN) != 10 || !strings.HasPrefix(p.ASIN, "B0") || asins[p.ASIN] {
			t.Fatalf("bad or duplicate ASIN %q", p.ASIN)
		}
		asins[p.ASIN] = true
		if p.Price < p.PriceLo || p.Price > p.PriceHi || p.Title == "" || p.Description == "" || len(p.Bullets) < 2 {
			t.Fatalf("incomplete product %+v", p)
		}
	}
	if len(cats) < 5 || len(queries) < 50 || len(attrs) < 60 {
		t.Errorf("%d categories, %d query types, %d attributes", len(cats), len(queries), len(attrs))
	}
	for _, g := range []string{"size", "color", "count", "flavor", "style", "scent"} {
		if !groups[g] {
			t.Errorf("no option group %q", g)
		}
	}
}

func TestGoalsFollowWebShop(t *testing.T) {
	c := SharedCatalog(SmallCatalog, 0)
	for k := range 300 {
		g := c.Goal(k)
		p := &c.Products[g.Product]
		if !strings.HasPrefix(g.Instruction, p.instrText) {
			t.Fatalf("instruction %q does not start with %q", g.Instruction, p.instrText)
		}
		for i, o := range g.Options {
			if i > 0 && g.Options[i-1].Name > o.Name {
				t.Fatalf("options not sorted by name: %v", g.Options)
			}
			sep := ", and "
			if i == 0 {
				sep = " with "
			}
			if !strings.Contains(g.Instruction, sep+o.Name+": "+o.Value) {
				t.Fatalf("instruction %q lacks option %v", g.Instruction, o)
			}
		}
		if g.PriceUpper > 0 {
			if p.Price >= g.PriceUpper || g.PriceUpper > 10*float64(int(p.Price/10)+4) {
				t.Fatalf("bound %v for price %v", g.PriceUpper, p.Price)
			}
		}
		if r := Reward(p, &g, g.Options); r.Raw != 1 {
			t.Fatalf("goal product with goal options scores %v: %+v", r.Raw, r)
		}
	}
}

func TestPriceUpperRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[float64]bool{}
	for range 2000 {
		ub := priceUpper(23.5, rng)
		seen[ub] = true
		if ub != 40 && ub != 50 && ub != 60 {
			t.Fatalf("bound %v for price 23.5: must be the larger of two of 30, 40, 50, 60", ub)
		}
	}
	if len(seen) != 3 {
		t.Errorf("bounds seen %v", seen)
	}
	if ub := priceUpper(980, rng); ub != 0 {
		t.Errorf("price 980 has one candidate (990): want no bound, got %v", ub)
	}
	if ub := priceUpper(975, rng); ub != 990 {
		t.Errorf("price 975: candidates 980, 990, want 990, got %v", ub)
	}
}

func TestGoalIndexSplits(t *testing.T) {
	c := SharedCatalog(SmallCatalog, 0)
	n := c.NumGoals()
	if n < 3000 {
		t.Fatalf("small catalogue has only %d goals", n)
	}
	for seed := uint64(0); seed < 3000; seed += 7 {
		if i := c.GoalIndex(SplitTest, seed); i != int(seed%500) {
			t.Fatalf("test index %d", i)
		}
		if i := c.GoalIndex(SplitVal, seed); i != 500+int(seed%1000) {
			t.Fatalf("val index %d", i)
		}
		if i := c.GoalIndex(SplitTrain, seed); i != 1500+int(seed%uint64(n-1500)) {
			t.Fatalf("train index %d", i)
		}
	}
	tiny := NewCatalog(1, 0)
	for _, s := range []Split{SplitTrain, SplitVal, SplitTest} {
		if i := tiny.GoalIndex(s, 12345); i < 0 || i >= tiny.NumGoals() {
			t.Errorf("tiny catalogue %s index %d of %d", s, i, tiny.NumGoals())
		}
	}
}

func TestSearch(t *testing.T) {
	c := SharedCatalog(SmallCatalog, 0)
	res := c.Index().Search("gluten free protein bar", SearchReturnN)
	if len(res) != SearchReturnN {
		t.Fatalf("%d results", len(res))
	}
	for _, pi := range res[:3] {
		if c.Products[pi].Query != "protein bar" {
			t.Errorf("top result %q is not a protein bar", c.Products[pi].Title)
		}
	}
	if got := c.Index().Search("the and of", 50); got != nil {
		t.Errorf("stopword query returned %v", got)
	}
	if got := c.Index().Search("zzzqqq", 50); len(got) != 0 {
		t.Errorf("unknown word returned %v", got)
	}
	if !reflect.DeepEqual(res, c.Index().Search("GLUTEN-free, protein bar!", 50)) {
		t.Error("tokenisation is not case and punctuation insensitive")
	}
}

func TestParseAction(t *testing.T) {
	cases := []struct {
		in, name, arg string
		ok            bool
	}{
		{"search[Gluten Free bars]", "search", "gluten free bars", true},
		{"click[Buy Now]", "click", "buy now", true},
		{"  click[next >]\n", "click", "next >", true},
		{"click[a[b]]", "click[a", "b]", true}, // greedy groups, as Python's re
		{"search[x] and more", "search", "x", true},
		{"click[]", "", "", false},
		{"[x]", "", "", false},
		{"buy now", "", "", false},
		{"click[x\n]", "", "", false},
	}
	for _, c := range cases {
		name, arg, ok := ParseAction(c.in)
		if name != c.name || arg != c.arg || ok != c.ok {
			t.Errorf("ParseAction(%q) = %q, %q, %v; want %q, %q, %v", c.in, name, arg, ok, c.name, c.arg, c.ok)
		}
	}
}

func TestStepErrors(t *testing.T) {
	e := newTestEnv(t, nil)
	if _, err := e.Step("search[x]"); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Step before Reset: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrNotReset) {
		t.Errorf("Advise before Reset: %v", err)
	}
	if e.Render() != "" {
		t.Error("Render before Reset is not empty")
	}
	e.Reset(3)
	mustStep(t, e, "search[shampoo]")
	mustStep(t, e, "click["+strings.ToLower(e.cat.Products[e.st.results[0]].ASIN)+"]")
	res := mustStep(t, e, "click[buy now]")
	if !res.Done {
		t.Fatal("buy now did not end the episode")
	}
	if _, err := e.Step("click[< prev]"); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Step after done: %v", err)
	}
	if _, err := e.Advise(1, nil); !errors.Is(err, envs.ErrEpisodeDone) {
		t.Errorf("Advise after done: %v", err)
	}
}

// TestInvalidActionsChangeNothing visits every page kind and tries actions
// WebShop rejects there.
func TestInvalidActionsChangeNothing(t *testing.T) {
	e := newTestEnv(t, nil)
	e.Reset(11)
	common := []string{"", "search", "search[]", "click[search]", "click[nothing here]", "Click[back to search]",
		"SEARCH[x]", "buy", "click[" + strings.ToLower(e.cat.Products[0].ASIN) + "x]"}
	check := func(page string, extra ...string) {
		t.Helper()
		before, steps, st := e.Render(), e.steps, e.st
		for _, a := range append(common, extra...) {
			res := mustStep(t, e, a)
			if res.Info.ActionValid || res.Reward != 0 || res.Done || res.Observation != before ||
				e.steps != steps || !e.st.equal(st) {
				t.Errorf("%s: %q was not an invalid no-op: %+v", page, a, res.Info)
			}
		}
	}
	check("search page", "click[next >]", "click[buy now]", "click[back to search]")
	mustStep(t, e, "search[body lotion]")
	check("results page 1", "search[shampoo]", "click[< prev]", "click[buy now]", "click[description]")
	mustStep(t, e, "click[next >]")
	check("results page 2", "search[shampoo]", "click["+strings.ToLower(e.cat.Products[e.st.results[0]].ASIN)+"]")
	mustStep(t, e, "click["+strings.ToLower(e.cat.Products[e.st.pageProducts()[0]].ASIN)+"]")
	check("item page", "search[x]", "click[next >]")
	mustStep(t, e, "click[features]")
	check("sub-page", "click[buy now]", "click[description]")
}

func TestTransitions(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxActions = 20 })
	e.Reset(5)
	res := mustStep(t, e, "search[face serum]")
	if !res.Info.ActionEffective || e.st.page != pageResults || e.st.resultPage != 1 {
		t.Fatal("search did not show results page 1")
	}
	mustStep(t, e, "click[next >]")
	mustStep(t, e, "click[< prev]")
	if e.st.resultPage != 1 {
		t.Fatalf("page %d after next, prev", e.st.resultPage)
	}
	pi := e.st.pageProducts()[2]
	p := &e.cat.Products[pi]
	mustStep(t, e, "click["+strings.ToUpper(p.ASIN)+"]") // arguments are lower-cased
	if e.st.page != pageItem || e.st.item != pi {
		t.Fatal("clicking an ASIN did not open it")
	}
	v := p.Options[0].Values[1]
	if res := mustStep(t, e, "click["+v+"]"); !res.Info.ActionEffective {
		t.Fatal("selecting an option was not effective")
	}
	if res := mustStep(t, e, "click["+v+"]"); !res.Info.ActionValid || res.Info.ActionEffective {
		t.Fatal("reselecting the same option should be valid and ineffective")
	}
	mustStep(t, e, "click[reviews]")
	mustStep(t, e, "click[< prev]")
	if e.st.page != pageItem || len(e.st.options) != 1 {
		t.Fatal("sub-page prev lost the item or its options")
	}
	mustStep(t, e, "click[< prev]")
	if e.st.page != pageResults || e.st.options != nil || e.st.resultPage != 1 {
		t.Fatal("item prev should return to the same results page and clear options")
	}
	mustStep(t, e, "click[back to search]")
	if e.st.page != pageSearch || e.steps != 10 {
		t.Fatalf("page %v after back to search, steps %d", e.st.page, e.steps)
	}
}

// TestPagingPastTheEnd: next > stays valid past the last results page, as
// in WebShop, but RAGEN's action list stops offering it on an empty page.
func TestPagingPastTheEnd(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxActions = 20 })
	e.Reset(4)
	mustStep(t, e, "search[free easy]")
	for range 5 {
		if !strings.Contains(e.Render(), "click[next >]") {
			t.Fatalf("page %d does not offer next", e.st.resultPage)
		}
		mustStep(t, e, "click[next >]")
	}
	obs := e.Render()
	if e.st.resultPage != 6 || len(e.st.pageProducts()) != 0 || strings.Contains(obs, "click[next >]") ||
		!strings.Contains(obs, "Page 6 (Total results: 50)") {
		t.Fatalf("page 6:\n%s", obs)
	}
	if res := mustStep(t, e, "click[next >]"); !res.Info.ActionValid {
		t.Error("next > past the end should stay valid")
	}
}

// TestConcurrentEnvs runs environments sharing one catalogue in parallel
// (run with -race).
func TestConcurrentEnvs(t *testing.T) {
	done := make(chan error)
	for w := range 4 {
		go func() {
			e, err := New(Config{Catalog: "300", MaxActions: 9, Reward: RewardBinary, Split: SplitTrain})
			for seed := uint64(w * 10); err == nil && seed < uint64(w*10+5); seed++ {
				e.Reset(seed)
				for err == nil && !e.done {
					var adv envs.Advice
					if adv, err = e.Advise(1, nil); err == nil {
						_, err = e.Step(adv.Actions[0])
					}
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestMaxActionsEndsEpisode(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxActions = 3 })
	e.Reset(1)
	mustStep(t, e, "search[mug]")
	mustStep(t, e, "click[next >]")
	mustStep(t, e, "not an action") // invalid: not counted
	res := mustStep(t, e, "click[next >]")
	if !res.Done || res.Reward != 0 || res.Info.Metrics["purchased"] != 0 {
		t.Fatalf("third valid action should end the episode with 0: %+v", res)
	}
	if strings.Contains(res.Observation, "Available actions") {
		t.Error("a finished episode still lists actions")
	}
}

func TestRewardModesAndMetrics(t *testing.T) {
	for _, mode := range []RewardMode{RewardBinary, RewardRaw} {
		e := newTestEnv(t, func(c *Config) { c.Reward = mode })
		e.Reset(2)
		g := e.Goal()
		p := &e.cat.Products[g.Product]
		mustStep(t, e, "search["+p.Title+"]")
		mustStep(t, e, "click["+strings.ToLower(p.ASIN)+"]")
		// Select only the first goal option: a partial score.
		if len(g.Options) < 2 {
			t.Fatalf("goal %+v has fewer than two options", g)
		}
		mustStep(t, e, "click["+g.Options[0].Value+"]")
		res := mustStep(t, e, "click[buy now]")
		want := float64(len(g.Attributes)+1+1) / float64(len(g.Attributes)+len(g.Options)+1)
		if mode == RewardBinary {
			want = 0
		}
		if res.Reward != want || res.Info.Success || res.Info.Metrics["r_type"] != 1 ||
			res.Info.Metrics["r_att"] != 1 || res.Info.Metrics["purchased"] != 1 {
			t.Errorf("%s: reward %v (want %v), metrics %v", mode, res.Reward, want, res.Info.Metrics)
		}
	}
}

// TestEpisodesDeterministic replays the expert on two environments.
func TestEpisodesDeterministic(t *testing.T) {
	a, b := newTestEnv(t, nil), newTestEnv(t, nil)
	for seed := range uint64(5) {
		oa, _ := a.Reset(seed)
		ob, _ := b.Reset(seed)
		if oa != ob {
			t.Fatal("initial observations differ")
		}
		for !a.done {
			adv, err := a.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			ra, rb := mustStep(t, a, adv.Actions[0]), mustStep(t, b, adv.Actions[0])
			if !reflect.DeepEqual(ra, rb) {
				t.Fatalf("seed %d: %q gave different results", seed, adv.Actions[0])
			}
		}
	}
}

// TestExpertSolvesGoals: the expert's plan reaches reward 1 on at least 95%
// of 200 goals within RAGEN's 9 actions.
func TestExpertSolvesGoals(t *testing.T) {
	e := newTestEnv(t, nil)
	solved := 0
	for seed := range uint64(200) {
		e.Reset(seed)
		for !e.done {
			adv, err := e.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res := mustStep(t, e, adv.Actions[0]); res.Done && res.Reward == 1 {
				solved++
			}
		}
	}
	if solved < 190 {
		t.Errorf("expert solved %d of 200 goals", solved)
	}
	t.Logf("expert solved %d/200", solved)
}

func TestAdvise(t *testing.T) {
	e := newTestEnv(t, nil)
	e.Reset(8)
	obs := e.Render()
	adv, err := e.Advise(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Render() != obs || e.steps != 0 {
		t.Fatal("Advise changed the environment")
	}
	if len(adv.Actions) < 4 || !strings.HasPrefix(adv.Actions[0], "search[") || adv.Actions[len(adv.Actions)-1] != "click[buy now]" {
		t.Fatalf("plan %v", adv.Actions)
	}
	if short, _ := e.Advise(2, nil); !reflect.DeepEqual(short.Actions, adv.Actions[:2]) {
		t.Errorf("Advise(2) = %v", short.Actions)
	}
	if !strings.Contains(adv.Rationale, e.Goal().Query) {
		t.Errorf("rationale %q does not name the product type", adv.Rationale)
	}
	// Replaying the plan buys a perfect product.
	var last envs.StepResult
	for _, a := range adv.Actions {
		last = mustStep(t, e, a)
	}
	if !last.Done || last.Reward != 1 {
		t.Errorf("plan ended with %+v", last)
	}
	// Phrasings: at least four distinct rationales for one state.
	e.Reset(8)
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		a, _ := e.Advise(1, rng)
		seen[a.Rationale] = true
	}
	if len(seen) < 4 {
		t.Errorf("%d phrasings", len(seen))
	}
}

// TestExpertRecovers: from a wrong product page and a sub-page the expert
// still finishes the task.
func TestExpertRecovers(t *testing.T) {
	e := newTestEnv(t, nil)
	e.Reset(21)
	mustStep(t, e, "search[ceramic coffee mug]")
	mustStep(t, e, "click["+strings.ToLower(e.cat.Products[e.st.pageProducts()[0]].ASIN)+"]")
	mustStep(t, e, "click[description]")
	for !e.done {
		adv, err := e.Advise(1, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := mustStep(t, e, adv.Actions[0])
		t.Logf("%s | %s", adv.Actions[0], adv.Rationale)
		if !res.Info.ActionValid {
			t.Fatalf("expert proposed invalid %q", adv.Actions[0])
		}
	}
	if e.last.Raw <= 0 {
		t.Errorf("expert bought nothing useful: %+v", e.last)
	}
}

// TestGoldenRenders pins the text of every page kind for one seed.
// Regenerate with: go test ./envs/webshop -run TestGoldenRenders -update
func TestGoldenRenders(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxActions = 20 })
	var sb strings.Builder
	add := func(title, obs string) { sb.WriteString("== " + title + " ==\n" + obs + "\n\n") }
	add("search", must(e.Reset(0)))
	g := e.Goal()
	p := &e.cat.Products[g.Product]
	add("results page 1", mustStep(t, e, "search["+g.Query+"]").Observation)
	add("results page 2", mustStep(t, e, "click[next >]").Observation)
	mustStep(t, e, "click[back to search]")
	mustStep(t, e, "search["+p.Title+"]")
	add("item", mustStep(t, e, "click["+strings.ToLower(p.ASIN)+"]").Observation)
	add("item with option", mustStep(t, e, "click["+g.Options[0].Value+"]").Observation)
	for _, sub := range []string{"description", "features", "reviews"} {
		add(sub, mustStep(t, e, "click["+sub+"]").Observation)
		mustStep(t, e, "click[< prev]")
	}
	add("done", mustStep(t, e, "click[buy now]").Observation)

	path := filepath.Join("testdata", "render.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if sb.String() != string(want) {
		t.Errorf("renders differ from %s (run with -update after checking):\n%s", path, sb.String())
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestRandomActionsAreAvailableActions(t *testing.T) {
	env, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.RandomAction(rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("RandomAction before Reset succeeded")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	searches, clicks := 0, 0
	for seed := uint64(0); seed < 40; seed++ {
		if _, err := env.Reset(seed); err != nil {
			t.Fatal(err)
		}
		for range 9 {
			a, err := env.RandomAction(rng)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(a, "search[") {
				searches++
			} else {
				clicks++
			}
			res, err := env.Step(a)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Info.ActionValid {
				t.Fatalf("seed %d: random action %q was not valid on its page", seed, a)
			}
			if res.Done {
				break
			}
		}
	}
	if searches == 0 || clicks == 0 {
		t.Errorf("%d searches, %d clicks: want both", searches, clicks)
	}
}

// TestExpertWritesWhatThePageShows: along a whole expert episode the first
// search is a span of the instruction as written, product ids are clicked
// as the results page shows them, and the brief rationale names the step in
// a few words (the option group when selecting one).
func TestExpertWritesWhatThePageShows(t *testing.T) {
	for i := range 40 {
		seed, labels := uint64(i/2), []string{LabelASIN, LabelRank}[i%2]
		e := newTestEnv(t, func(c *Config) { c.ResultLabels = labels })
		obs, _ := e.Reset(seed)
		instr := e.Goal().Instruction
		for step := 0; !e.done; step++ {
			adv, err := e.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := adv.Actions[0]
			if adv.Brief == "" || len(strings.Fields(adv.Brief)) > 5 {
				t.Fatalf("seed %d: brief %q for %s", seed, adv.Brief, a)
			}
			name, arg, _ := ParseAction(a)
			shown := strings.TrimSuffix(strings.TrimPrefix(a, name+"["), "]") // ParseAction lower-cases
			switch {
			case step == 0:
				if name != "search" || !strings.HasPrefix(instr, arg) {
					t.Fatalf("seed %d: first search %q is not the start of %q", seed, a, instr)
				}
			case e.st.page == pageResults && name == "click" && strings.HasPrefix(adv.Brief, "open") && !strings.Contains(obs, "[SEP] "+shown+" [SEP]"):
				t.Fatalf("seed %d: %s is not an element of the page as shown:\n%s", seed, a, obs)
			case e.st.page == pageItem && adv.Brief != "buy" && strings.HasPrefix(adv.Brief, "select "):
				group := strings.TrimPrefix(adv.Brief, "select ")
				if !strings.Contains(instr, group+": "+arg) {
					t.Fatalf("seed %d: brief %q for %s; the instruction says %q", seed, adv.Brief, a, instr)
				}
			}
			res := mustStep(t, e, a)
			obs = res.Observation
		}
	}
}

// TestRankLabels: with result_labels rank, results are shown and clicked by
// their rank over all pages, a rank of another page is not clickable, and
// the expert buys the same products as with ids.
func TestRankLabels(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.ResultLabels = LabelRank })
	e.Reset(3)
	obs := mustStep(t, e, "search[shampoo]").Observation
	if !strings.Contains(obs, "Next > [SEP] 1 [SEP] ") || !strings.Contains(obs, "click[10]") || strings.Contains(obs, "click[11]") {
		t.Fatalf("page 1:\n%s", obs)
	}
	third := e.st.results[2]
	if res := mustStep(t, e, "click[11]"); res.Info.ActionValid {
		t.Error("a rank on another page was clickable")
	}
	mustStep(t, e, "click[next >]")
	if obs := e.Render(); !strings.Contains(obs, "[SEP] 11 [SEP] ") || strings.Contains(obs, "click[10]") {
		t.Fatalf("page 2:\n%s", obs)
	}
	mustStep(t, e, "click[< prev]")
	mustStep(t, e, "click[3]")
	if e.st.page != pageItem || e.st.item != third {
		t.Fatalf("click[3] opened product %d on page %v, want %d", e.st.item, e.st.page, third)
	}
	bought := func(labels string, seed uint64) (string, float64) {
		e := newTestEnv(t, func(c *Config) { c.ResultLabels = labels })
		e.Reset(seed)
		var res envs.StepResult
		for !e.done {
			adv, err := e.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			res = mustStep(t, e, adv.Actions[0])
		}
		return e.cat.Products[e.st.item].ASIN, res.Reward
	}
	for seed := uint64(0); seed < 20; seed++ {
		a, ra := bought(LabelASIN, seed)
		b, rb := bought(LabelRank, seed)
		if a != b || ra != rb {
			t.Errorf("seed %d: ids buy %s (%v), ranks %s (%v)", seed, a, ra, b, rb)
		}
	}
}
