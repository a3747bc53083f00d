package train

import "math/rand/v2"

// stream names one of a run's random streams. Every random choice of a run
// draws from a stream, and the seed of each (stream, step, round) is
// derived from run.seed alone, so a step's draws depend neither on what
// other steps drew nor on the order work runs in: an interrupted run
// resumes on the same draws, and the same config gives the same run on any
// machine.
type stream uint64

const (
	// streamRollout samples the step's rollouts.
	streamRollout stream = 1
	// streamUpdate shuffles the step's mini-batches.
	streamUpdate stream = 2
	// streamCollapse picks the step's collapse-metric pairs.
	streamCollapse stream = 3
	// streamValidation samples the validation after the step.
	streamValidation stream = 4
	// streamRandomBaseline plays the random policy's validation episodes;
	// its "step" is the episode round (0 … validation.samples−1).
	streamRandomBaseline stream = 5
	// streamRefill samples dynamic sampling's refill round r (1, 2, …) of
	// the step. It is the one stream with rounds, and the last: the
	// streams without rounds keep ids below it.
	streamRefill stream = 16
)

// Limits of the seed derivation: seeds are distinct for every stream,
// step and round below them (Config.Validate holds run.steps and
// filter.max_sample_rounds there).
const (
	maxSeedStep  = 1 << 31
	maxSeedRound = 1 << 24
)

// seed returns the seed of stream s at step for round r (r = 0 for
// streams without rounds).
//
// A PCG seeded with (run.seed, word) draws it; distinct words give
// distinct generators. The word packs step<<8 | s+r wherever s+r < 256,
// the packing runs have always used, so their seeds stay what they were.
// Refill rounds from 240 up would spill into the next step's bits there
// (round 241 of step t would be stream 1 of step t+1); from there the word
// is 1<<63 | step<<32 | s<<24 | r, which no packed word reaches below
// maxSeedStep.
func seed(runSeed uint64, step int, s stream, r int) uint64 {
	word := uint64(step)<<8 | (uint64(s) + uint64(r))
	if uint64(s)+uint64(r) >= 256 {
		word = 1<<63 | uint64(step)<<32 | uint64(s)<<24 | uint64(r)
	}
	return rand.New(rand.NewPCG(runSeed, word)).Uint64()
}
