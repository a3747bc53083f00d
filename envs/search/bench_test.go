package search

import "testing"

// Benchmarks:
//
//	go test ./envs/search -run '^$' -bench .

// BenchmarkCorpus times generating and indexing a corpus.
func BenchmarkCorpus(b *testing.B) {
	for _, tc := range []struct {
		name   string
		people int
	}{{"small", SmallCorpus}, {"large", LargeCorpus}} {
		b.Run(tc.name, func(b *testing.B) {
			var seed uint64
			for b.Loop() {
				NewCorpus(tc.people, seed)
				seed++
			}
			b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/corpus")
		})
	}
}

// BenchmarkSearch runs question texts and entity names as queries, top 5.
func BenchmarkSearch(b *testing.B) {
	c := SharedCorpus(LargeCorpus, 0)
	queries := make([]string, 0, 2000)
	for i := range 1000 {
		q := &c.Questions[i*len(c.Questions)/1000]
		queries = append(queries, q.Text, c.Entities[q.Subject()].Name)
	}
	i := 0
	for b.Loop() {
		c.Search(queries[i%len(queries)], 5)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkEnvStep replays expert episodes on the small corpus (top 5):
// Reset plus every Step, searches included, without the expert.
func BenchmarkEnvStep(b *testing.B) {
	e := newEnv(b, nil)
	type episode struct {
		seed    uint64
		actions []string
	}
	var eps []episode
	for seed := range uint64(30) {
		e.Reset(seed)
		adv, err := e.Advise(0, nil)
		if err != nil {
			b.Fatal(err)
		}
		eps = append(eps, episode{seed, adv.Actions})
	}
	steps := 0
	for i := 0; b.Loop(); i++ {
		ep := eps[i%len(eps)]
		e.Reset(ep.seed)
		for _, a := range ep.actions {
			if _, err := e.Step(a); err != nil {
				b.Fatal(err)
			}
			steps++
		}
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkAdvise times the expert's next action and brief rationale.
func BenchmarkAdvise(b *testing.B) {
	e := newEnv(b, nil)
	i := uint64(0)
	for b.Loop() {
		e.Reset(i % 64)
		if _, err := e.Advise(1, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "advices/s")
}
