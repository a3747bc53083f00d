package frozenlake

import (
	"fmt"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// BenchmarkGenerate measures map generation (including redraws of
// unsolvable boards) at RAGEN's settings.
func BenchmarkGenerate(b *testing.B) {
	for _, size := range []int{4, 8} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			var g generator
			rng := envs.NewRand(1, streamMap)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.generate(size, 0.9, PlacementRandom, rng); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "maps/s")
		})
	}
}

// BenchmarkStep measures one valid step, grid_coord observation included, on
// holes-free 4x4 and 8x8 boards with start and goal in opposite corners. The
// agent walks back and forth along the top row; when a slip carries it to
// the goal the episode restarts on the same map.
func BenchmarkStep(b *testing.B) {
	for _, size := range []int{4, 8} {
		for _, s := range []float64{1, 0.8} {
			b.Run(fmt.Sprintf("size=%d/success_rate=%v", size, s), func(b *testing.B) {
				e := newEnv(b, func(c *Config) { c.SuccessRate = s; c.MaxSteps = 0 })
				m, err := Generate(size, 1, PlacementCorners, envs.NewRand(0, streamMap))
				if err != nil {
					b.Fatal(err)
				}
				e.ResetMap(m, 1)
				actions := [...]string{"Right", "Left"}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					res, err := e.Step(actions[i&1])
					i++
					if err != nil {
						b.Fatal(err)
					}
					if res.Done {
						e.ResetMap(m, uint64(i))
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}

// BenchmarkExpert measures one Advise call from the start of an 8x8 map.
func BenchmarkExpert(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.Size = 8 })
	if _, err := e.Reset(3); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Advise(0, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "advice/s")
}
