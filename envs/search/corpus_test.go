package search

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestCorpusIsDeterministic(t *testing.T) {
	a, b := NewCorpus(SmallCorpus, 7), NewCorpus(SmallCorpus, 7)
	if !reflect.DeepEqual(a.Entities, b.Entities) || !reflect.DeepEqual(a.Passages, b.Passages) ||
		!reflect.DeepEqual(a.Questions, b.Questions) || !reflect.DeepEqual(a.bySplit, b.bySplit) {
		t.Fatal("two corpora of one seed differ")
	}
	if c := NewCorpus(SmallCorpus, 8); reflect.DeepEqual(a.Passages, c.Passages) {
		t.Fatal("seeds 7 and 8 gave the same passages")
	}
	if first := SharedCorpus(SmallCorpus, 7); SharedCorpus(SmallCorpus, 7) != first {
		t.Fatal("SharedCorpus built twice")
	}
	// Golden: a change to the generator changes what every seed means,
	// and the warm-start caches of existing configs with it.
	c := SharedCorpus(SmallCorpus, 0)
	if got, want := []int{len(c.Entities), len(c.Passages), len(c.Questions)}, []int{522, 1044, 2419}; !slices.Equal(got, want) {
		t.Errorf("small corpus of seed 0: %v entities, passages, questions; want %v", got, want)
	}
}

// TestCorpusIsConsistent checks what the generator promises: unique names
// that normalisation keeps, relations of the right kinds, a page per entity,
// and every stated fact true.
func TestCorpusIsConsistent(t *testing.T) {
	for _, size := range []int{MinCorpus, SmallCorpus} {
		c := NewCorpus(size, 3)
		names := map[string]bool{}
		for i, e := range c.Entities {
			n := NormalizeAnswer(e.Name)
			if names[n] || n != strings.ToLower(e.Name) {
				t.Fatalf("name %q repeated or changed by normalisation (%q)", e.Name, n)
			}
			names[n] = true
			if p := c.Passages[e.Page]; p.About != i || !strings.Contains(p.Text, e.Name) {
				t.Fatalf("page of %q is %+v", e.Name, p)
			}
			kinds := map[Relation]Kind{RelCapital: City, RelCountry: Country, RelBornIn: City, RelFounder: Person, RelBasedIn: City}
			for rel, want := range kinds {
				if v := c.follow(i, rel); v >= 0 && c.Entities[v].Kind != want {
					t.Fatalf("%s of %q is a %v", rel.label(), e.Name, c.Entities[v].Kind)
				}
			}
			switch e.Kind {
			case Country:
				if e.Capital < 0 || c.Entities[e.Capital].Country != i {
					t.Fatalf("capital of %q", e.Name)
				}
			case City:
				if e.Country < 0 {
					t.Fatalf("%q has no country", e.Name)
				}
			case Person:
				if e.BornIn < 0 || e.BornYear < 1800 {
					t.Fatalf("person %+v", e)
				}
			case Org:
				if e.Founder < 0 || e.BasedIn < 0 || e.Founded <= c.Entities[e.Founder].BornYear {
					t.Fatalf("organisation %+v", e)
				}
			}
		}
		for pi, p := range c.Passages {
			for _, f := range p.Facts {
				if c.follow(f.Subject, f.Rel) != f.Value {
					t.Fatalf("passage %q states a false fact %+v", p.Text, f)
				}
				if !strings.Contains(p.Text, c.Entities[f.Subject].Name) || !strings.Contains(p.Text, c.valueText(f.Rel, f.Value)) {
					t.Fatalf("passage %q does not name fact %+v", p.Text, f)
				}
				if !c.States(pi, f.Subject, f.Rel) {
					t.Fatalf("fact index misses passage %d", pi)
				}
			}
			for _, m := range p.Mentions {
				if !strings.Contains(p.Text, c.Entities[m].Name) {
					t.Fatalf("passage %q does not mention %q", p.Text, c.Entities[m].Name)
				}
			}
		}
		for _, q := range c.Questions {
			v := q.Chain[0]
			for h, rel := range q.Rels {
				v = c.follow(v, rel)
				if h < q.Hops()-1 && v != q.Chain[h+1] {
					t.Fatalf("%q: chain %v breaks at hop %d", q.Text, q.Chain, h)
				}
			}
			if c.valueText(q.Rels[q.Hops()-1], v) != q.Answer || !strings.Contains(q.Text, c.Entities[q.Subject()].Name) {
				t.Fatalf("%q: answer %q, chain gives %q", q.Text, q.Answer, c.valueText(q.Rels[q.Hops()-1], v))
			}
		}
	}
}

// TestEveryQuestionIsAnswerableWithinItsHops plays the expert on every
// question of the small corpus and 3,000 of the large one, at the top-k of
// the shipped configs: it answers exactly after at most one search a hop,
// every search showing a passage that states a fact of a later hop than
// any shown before (a search can show two: an organisation named after its
// founder's surname finds the founder's page too), and searching the hop
// entity's name alone does so for nearly all of them.
func TestEveryQuestionIsAnswerableWithinItsHops(t *testing.T) {
	for _, tc := range []struct {
		corpus string
		topK   int
		sample int
	}{{"small", 3, 0}, {"small", 5, 0}, {"large", 5, 3000}} {
		cfg := DefaultConfig()
		cfg.Corpus, cfg.TopK, cfg.Split, cfg.MaxSteps = tc.corpus, tc.topK, SplitAll, 10
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := e.Corpus()
		n, searches, byName, short := len(c.Questions), 0, 0, 0
		if tc.sample > 0 {
			n = tc.sample
		}
		for i := range n {
			e.resetQuestion(i * len(c.Questions) / n)
			q := e.Question()
			reached := -1 // deepest hop whose fact was shown
			for s := 0; ; s++ {
				adv, err := e.Advise(1, nil)
				if err != nil {
					t.Fatal(err)
				}
				a, _ := ParseAction(adv.Actions[0])
				res, err := e.Step(adv.Actions[0])
				if err != nil || !res.Info.ActionValid {
					t.Fatalf("%q: expert action %q invalid (%v)", q.Text, adv.Actions[0], err)
				}
				if a.Verb == VerbAnswer {
					if reached != q.Hops()-1 || s > q.Hops() || !res.Info.Success || res.Reward != 1 {
						t.Fatalf("%q: answered %q after %d searches (hops %d, reached %d), reward %v", q.Text, a.Arg, s, q.Hops(), reached, res.Reward)
					}
					if s < q.Hops() {
						short++
					}
					break
				}
				searches++
				if a.Arg == c.Entities[q.Chain[reached+1]].Name {
					byName++
				}
				deepest, _ := e.deepestFact()
				if deepest <= reached {
					t.Fatalf("%q: search %q after hop %d shows no later fact", q.Text, a.Arg, reached+1)
				}
				reached = deepest
			}
		}
		t.Logf("%s corpus, top %d: %d questions, %d searches, %.2f%% by the name alone, %d answered in fewer searches than hops",
			tc.corpus, tc.topK, n, searches, 100*float64(byName)/float64(searches), short)
		if float64(byName) < 0.97*float64(searches) {
			t.Errorf("the name alone finds only %d of %d hops", byName, searches)
		}
	}
}

// TestQuestionMix: every hop count is equally frequent over consecutive
// seeds, consecutive seeds of a count give distinct questions, and the
// test split's subjects are never a train question's subject.
func TestQuestionMix(t *testing.T) {
	c := SharedCorpus(SmallCorpus, 0)
	count := [4]int{}
	seen := map[int]bool{}
	for seed := range uint64(300) {
		qi := c.QuestionIndex(SplitTrain, 1, 3, seed)
		count[c.Questions[qi].Hops()]++
		if seen[qi] {
			t.Fatalf("seed %d repeats question %d", seed, qi)
		}
		seen[qi] = true
	}
	if count[1] != 100 || count[2] != 100 || count[3] != 100 {
		t.Errorf("hop counts %v over 300 seeds", count)
	}
	trainSubjects := map[int]bool{}
	for h := 1; h <= 3; h++ {
		for _, qi := range c.bySplit[SplitTrain][h-1] {
			trainSubjects[c.Questions[qi].Subject()] = true
		}
	}
	for h := 1; h <= 3; h++ {
		test := c.bySplit[SplitTest][h-1]
		all := c.bySplit[SplitAll][h-1]
		if len(test) == 0 || len(test)+len(c.bySplit[SplitTrain][h-1]) != len(all) {
			t.Fatalf("hops %d: %d test, %d train, %d all", h, len(test), len(c.bySplit[SplitTrain][h-1]), len(all))
		}
		for _, qi := range test {
			if trainSubjects[c.Questions[qi].Subject()] {
				t.Fatalf("test question %q has a train subject", c.Questions[qi].Text)
			}
		}
	}
	if got := c.QuestionIndex(SplitTest, 2, 2, 5); c.Questions[got].Hops() != 2 {
		t.Errorf("min_hops = max_hops = 2 gave a %d-hop question", c.Questions[got].Hops())
	}
}
