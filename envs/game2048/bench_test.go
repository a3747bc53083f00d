package game2048

import (
	"testing"
)

// BenchmarkStep measures one valid step with the RAGEN observation,
// cycling through the four moves and restarting finished games.
func BenchmarkStep(b *testing.B) {
	for _, f := range []Format{FormatRAGEN, FormatGrid} {
		b.Run(string(f), func(b *testing.B) {
			e := newEnv(b, func(c *Config) { c.ObservationFormat = f; c.MaxSteps = 0 })
			e.Reset(1)
			moves := [...]string{"Up", "Left", "Down", "Right"}
			b.ReportAllocs()
			i, seed := 0, uint64(1)
			for b.Loop() {
				res, err := e.Step(moves[i&3])
				i++
				if err != nil {
					b.Fatal(err)
				}
				if res.Done {
					seed++
					e.Reset(seed)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkMove measures one slide of a full 4x4 board.
func BenchmarkMove(b *testing.B) {
	board, err := ParseBoard("2 2 4 8\n16 16 4 4\n2 4 8 16\n32 32 2 2")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		board.Move(Left)
	}
}

// BenchmarkAdvise measures the expert's depth-2 expectimax from a
// mid-game board.
func BenchmarkAdvise(b *testing.B) {
	e := newEnv(b, nil)
	if _, err := e.LoadLevel("64 32 8 2\n8 16 4 .\n2 4 . .\n2 . . ."); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Advise(1, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "advice/s")
}
