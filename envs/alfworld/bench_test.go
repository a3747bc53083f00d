package alfworld

import "testing"

// BenchmarkReset measures drawing a scene and task and rendering the first
// observation.
func BenchmarkReset(b *testing.B) {
	for _, scene := range []string{SceneFull, SceneSmall} {
		b.Run(scene, func(b *testing.B) {
			e := newEnv(b, func(c *Config) { c.Scene = scene })
			b.ReportAllocs()
			seed := uint64(0)
			for b.Loop() {
				if _, err := e.Reset(seed); err != nil {
					b.Fatal(err)
				}
				seed++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resets/s")
		})
	}
}

// BenchmarkStep measures one valid step with its observation (ALFWorld's
// text with the admissible actions, or the compact one) along expert
// episodes on full scenes. The expert's plans are computed beforehand, and
// a finished episode restarts from a copy of its first state (a few slice
// copies) rather than by drawing the scene again (BenchmarkReset).
func BenchmarkStep(b *testing.B) {
	for _, f := range []string{FormatALFWorld, FormatCompact} {
		b.Run(f, func(b *testing.B) {
			e := newEnv(b, func(c *Config) { c.ObservationFormat = f })
			type episode struct {
				start    *world
				feedback string
				actions  []string
			}
			var eps []episode
			for seed := range uint64(50) {
				e.Reset(seed)
				ep := episode{start: e.w.clone(), feedback: e.feedback}
				for !e.Done() {
					adv, _ := e.Advise(1, nil)
					ep.actions = append(ep.actions, adv.Actions[0])
					e.Step(adv.Actions[0])
				}
				eps = append(eps, ep)
			}
			restart := func(ep *episode) {
				e.w, e.feedback, e.steps, e.done = ep.start.clone(), ep.feedback, 0, false
			}
			b.ReportAllocs()
			i, j := 0, 0
			restart(&eps[0])
			for b.Loop() {
				if j == len(eps[i].actions) {
					i, j = (i+1)%len(eps), 0
					restart(&eps[i])
				}
				if _, err := e.Step(eps[i].actions[j]); err != nil {
					b.Fatal(err)
				}
				j++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}

// BenchmarkAdvise measures the expert's first plan (up to three actions)
// on full scenes.
func BenchmarkAdvise(b *testing.B) {
	e := newEnv(b, nil)
	var worlds []*world
	for seed := range uint64(64) {
		e.Reset(seed)
		worlds = append(worlds, e.w)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e.w = worlds[i%len(worlds)] // Advise plans on a copy
		i++
		if _, err := e.Advise(3, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "plans/s")
}

// BenchmarkCostToGo measures the exact cost to go from the start of full
// scenes of every task type.
func BenchmarkCostToGo(b *testing.B) {
	e := newEnv(b, nil)
	var worlds []*world
	for seed := range uint64(64) {
		e.Reset(seed)
		worlds = append(worlds, e.w)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		worlds[i%len(worlds)].costToGo()
		i++
	}
}
