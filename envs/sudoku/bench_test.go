package sudoku

import (
	"fmt"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// BenchmarkGenerate measures drawing one puzzle with a unique solution at
// RAGEN's difficulties.
func BenchmarkGenerate(b *testing.B) {
	for _, tc := range []struct {
		size int
		diff string
	}{{4, Easy}, {4, Hard}, {9, Easy}, {9, Hard}} {
		b.Run(fmt.Sprintf("%dx%d/%s", tc.size, tc.size, tc.diff), func(b *testing.B) {
			cfg := Config{Size: tc.size, Difficulty: tc.diff}
			rng := envs.NewRand(1, streamPuzzle)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Generate(tc.size, cfg.NumGivens(), rng); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puzzles/s")
		})
	}
}

// BenchmarkStep measures one valid placement with its observation,
// replaying a solved 9×9 puzzle's placements from a fixed start.
func BenchmarkStep(b *testing.B) {
	for _, size := range []int{4, 9} {
		b.Run(fmt.Sprintf("%dx%d", size, size), func(b *testing.B) {
			e := newEnv(b, func(c *Config) { c.Size = size; c.MaxSteps = 0 })
			e.Reset(1)
			start, sol := e.grid, e.solution
			var plan []string
			for i, v := range start.cells[:size*size] {
				if v == 0 {
					plan = append(plan, Placement{i/size + 1, i%size + 1, int(sol.cells[i])}.String())
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(plan) {
					e.start(start, sol)
					i = 0
				}
				if _, err := e.Step(plan[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkAdvise measures one expert placement on a fresh 9×9 puzzle.
func BenchmarkAdvise(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.Size = 9; c.Difficulty = Hard; c.MaxSteps = 0 })
	e.Reset(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Advise(1, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "advice/s")
}
