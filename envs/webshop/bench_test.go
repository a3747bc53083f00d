package webshop

import (
	"runtime"
	"testing"
)

// Benchmarks (see the package report for figures):
//
//	go test ./envs/webshop -run '^$' -bench . -benchtime 3x

func BenchmarkCatalogSmall(b *testing.B) {
	benchCatalog(b, SmallCatalog)
}

func BenchmarkCatalogLarge(b *testing.B) {
	benchCatalog(b, LargeCatalog)
}

func benchCatalog(b *testing.B, size int) {
	var seed uint64
	for b.Loop() {
		NewCatalog(size, seed)
		seed++
	}
	per := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(per*1000, "ms/build")
	b.ReportMetric(float64(size)/per, "products/s")
	// Heap held by one catalogue (products, index, goal order): what
	// SharedCatalog keeps alive for the process.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := NewCatalog(size, seed)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MB/catalog")
}

// BenchmarkIndexLarge times the BM25 index build alone on 100k products.
func BenchmarkIndexLarge(b *testing.B) {
	c := SharedCatalog(LargeCatalog, 0)
	for b.Loop() {
		NewIndex(c.Products, true)
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/index")
}

// BenchmarkSearchLarge runs goal instructions as queries against the 100k
// index, top 50 as the environment does.
func BenchmarkSearchLarge(b *testing.B) {
	c := SharedCatalog(LargeCatalog, 0)
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = c.Goal(i).Instruction
	}
	i := 0
	for b.Loop() {
		c.Index().Search(queries[i%len(queries)], SearchReturnN)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkEnvStep replays expert episodes on the small catalogue: the cost
// of Reset plus Step (search included), without the expert.
func BenchmarkEnvStep(b *testing.B) {
	e, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	type episode struct {
		seed    uint64
		actions []string
	}
	var eps []episode
	for seed := range uint64(20) {
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
