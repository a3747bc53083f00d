package sokoban

import "testing"

// BenchmarkGenerate measures RAGEN-style generation of 6x6 one-box levels.
func BenchmarkGenerate(b *testing.B) {
	g, err := NewGenerator(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	seed := uint64(0)
	for b.Loop() {
		if _, err := g.Generate(seed); err != nil {
			b.Fatal(err)
		}
		seed++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "levels/s")
}

// BenchmarkStep measures Env.Step (with its rendering) on 6x6 levels,
// cycling through the four moves and starting a new level when one ends.
func BenchmarkStep(b *testing.B) {
	e := newEnv(b, nil)
	if _, err := e.Reset(0); err != nil {
		b.Fatal(err)
	}
	actions := []string{"Up", "Right", "Down", "Left", "Left", "Down"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if e.Done() {
			if _, err := e.Reset(uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := e.Step(actions[i%len(actions)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkSolve measures the breadth-first solver on 6x6 one-box levels.
func BenchmarkSolve(b *testing.B) {
	g, err := NewGenerator(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	levels := make([]*Level, 256)
	for i := range levels {
		if levels[i], err = g.Generate(uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Solve(levels[i%len(levels)], DefaultMaxStates); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "solves/s")
}
