package search

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestBM25Ranking(t *testing.T) {
	texts := []string{
		0: "Varo Keldin was born in Port Almera in 1887.",
		1: "In 1910, Varo Keldin moved to Dunmore.",
		2: "Mira Keldin was born in Dunmore.",
		3: "Keldin Motors is a car maker founded by Ana Rusk in 1920. It is based in Dunmore.",
		4: "Dunmore is a city in Zelandia.",
		5: "Port Almera is a port town in Zelandia, a long way from Dunmore, Dunmore and Dunmore.",
		6: "The the the of of in.",
	}
	ix := NewIndex(texts)
	for _, tc := range []struct {
		query string
		k     int
		want  []int
	}{
		// The full name and the birth word pick the page; of the passages
		// matching two terms of equal idf the shorter comes next.
		{"Varo Keldin born", 2, []int{0, 2}},
		// A rare term outweighs a common one: "Zelandia" (2 passages) and
		// "Almera" (2) over "Dunmore" (5).
		{"Almera", 3, []int{0, 5}},
		// Length normalisation: of equal matches the shorter passage wins.
		{"Zelandia", 2, []int{4, 5}},
		// Term frequency saturates but still counts.
		{"Dunmore", 1, []int{5}},
		// Case and punctuation do not matter; stopwords are not searched.
		{"  VARO, keldin!! ", 2, []int{1, 0}},
		{"the of in", 5, nil},
		{"nothing matches this", 5, nil},
		{"", 3, nil},
		{"Keldin", 0, nil},
	} {
		if got := ix.Search(tc.query, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("Search(%q, %d) = %v, want %v", tc.query, tc.k, got, tc.want)
		}
	}
	// Ties go to the lower index.
	ties := NewIndex([]string{"alpha beta", "beta alpha", "alpha beta"})
	if got := ties.Search("alpha", 3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("ties: %v", got)
	}
}

// TestBM25MatchesReference compares the index with a direct float64
// transcription of Lucene's BM25 on the small corpus: the top 10 of many
// queries rank the same passages (up to float32 rounding of near ties), and
// Search's order agrees with Score.
func TestBM25MatchesReference(t *testing.T) {
	c := SharedCorpus(SmallCorpus, 0)
	tfs := make([]map[string]float64, len(c.Passages))
	lens := make([]float64, len(c.Passages))
	df := map[string]int{}
	total := 0.0
	for i, p := range c.Passages {
		tfs[i] = map[string]float64{}
		for _, tok := range Tokens(p.Title + " " + p.Text) {
			if tfs[i][tok] == 0 {
				df[tok]++
			}
			tfs[i][tok]++
			lens[i]++
			total++
		}
	}
	n, avg := float64(len(tfs)), total/float64(len(tfs))
	ref := func(query string) []float64 {
		scores := make([]float64, len(tfs))
		for _, q := range Tokens(query) {
			idf := math.Log(1 + (n-float64(df[q])+0.5)/(float64(df[q])+0.5))
			for d, tf := range tfs {
				if f := tf[q]; f > 0 {
					scores[d] += idf * f / (f + bm25K1*(1-bm25B+bm25B*lens[d]/avg))
				}
			}
		}
		return scores
	}
	rng := envs.NewRand(1, 2)
	for range 300 {
		var query string
		switch q := c.Questions[rng.IntN(len(c.Questions))]; rng.IntN(3) {
		case 0:
			query = q.Text
		case 1:
			query = c.Entities[q.Subject()].Name
		default:
			query = c.Entities[rng.IntN(len(c.Entities))].Name + " born founded"
		}
		got := c.Index().Search(query, 10)
		for i := 1; i < len(got); i++ {
			a, b := c.Index().Score(query, got[i-1]), c.Index().Score(query, got[i])
			if a < b || (a == b && got[i-1] > got[i]) {
				t.Fatalf("%q: result %d (%v) before %d (%v)", query, got[i-1], a, got[i], b)
			}
		}
		scores := ref(query)
		all := make([]int, len(scores))
		for i := range all {
			all[i] = i
		}
		sort.SliceStable(all, func(i, j int) bool { return scores[all[i]] > scores[all[j]] })
		matching := 0
		for _, v := range scores {
			if v > 0 {
				matching++
			}
		}
		if len(got) != min(10, matching) {
			t.Fatalf("%q: %d results of %d matching passages", query, len(got), matching)
		}
		for i, d := range got {
			if want := all[i]; d != want && math.Abs(scores[d]-scores[want]) > 1e-5 {
				t.Fatalf("%q: rank %d is passage %d (%.6f), reference %d (%.6f)", query, i, d, scores[d], want, scores[want])
			}
			if math.Abs(c.Index().Score(query, d)-scores[d]) > 1e-4 {
				t.Fatalf("%q: score of %d is %v, reference %v", query, d, c.Index().Score(query, d), scores[d])
			}
		}
	}
}
