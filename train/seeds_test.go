package train

import (
	"math/rand/v2"
	"testing"
)

// TestStreamSeedsAreDistinct: no two (step, stream, round) of a run share
// a seed, dynamic sampling's refill rounds beyond 239 included: packed as
// step<<8 | stream+round, round 241 of a step would be the next step's
// rollout stream, so that a refill drew the same samples as the next
// step's rollouts.
func TestStreamSeedsAreDistinct(t *testing.T) {
	type draw struct {
		step  int
		s     stream
		round int
	}
	seen := map[uint64]draw{}
	add := func(d draw) {
		t.Helper()
		v := seed(7, d.step, d.s, d.round)
		if prev, dup := seen[v]; dup {
			t.Fatalf("step %d stream %d round %d has the seed of step %d stream %d round %d", d.step, d.s, d.round, prev.step, prev.s, prev.round)
		}
		seen[v] = d
	}
	for step := range 4 {
		for _, s := range []stream{streamRollout, streamUpdate, streamCollapse, streamValidation, streamRandomBaseline} {
			add(draw{step, s, 0})
		}
		for r := 1; r <= 600; r++ {
			add(draw{step, streamRefill, r})
		}
	}
}

// TestStreamSeedsKeepTheirPacking: wherever stream+round < 256 a seed is
// what runs have always drawn, PCG(run.seed, step<<8 | stream+round), so
// that configurations run before keep their numbers.
func TestStreamSeedsKeepTheirPacking(t *testing.T) {
	packed := func(runSeed uint64, step int, s uint64) uint64 {
		return rand.New(rand.NewPCG(runSeed, uint64(step)<<8|s)).Uint64()
	}
	for _, step := range []int{0, 1, 399, 1 << 20} {
		for _, s := range []stream{streamRollout, streamUpdate, streamCollapse, streamValidation, streamRandomBaseline} {
			if got, want := seed(3, step, s, 0), packed(3, step, uint64(s)); got != want {
				t.Errorf("step %d stream %d: seed %d, want %d", step, s, got, want)
			}
		}
		for _, r := range []int{1, 2, 239} {
			if got, want := seed(3, step, streamRefill, r), packed(3, step, uint64(streamRefill)+uint64(r)); got != want {
				t.Errorf("step %d refill round %d: seed %d, want %d", step, r, got, want)
			}
		}
	}
}

// TestSeedLimitsAreValidated: run.steps and filter.max_sample_rounds stay
// below the limits under which seeds are distinct.
func TestSeedLimitsAreValidated(t *testing.T) {
	for _, sets := range [][]string{{"run.steps=2147483648"}, {"filter.dynamic_sampling=true", "filter.max_sample_rounds=16777217"}} {
		if _, err := Parse(nil, sets); err == nil {
			t.Errorf("%v accepted", sets)
		}
	}
	if _, err := Parse(nil, []string{"filter.dynamic_sampling=true", "filter.max_sample_rounds=1000"}); err != nil {
		t.Errorf("1000 refill rounds: %v", err)
	}
}
