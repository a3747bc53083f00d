package algos

import (
	"fmt"
	"math"
)

// Turns: the unit of turn-level credit assignment (GiGPO, solver credit,
// bi-level GAE). A turn is one reply of the agent and the environment
// steps it took; AdvantageInput.Turns[e] lists episode e's turns in order.
// Its reply is a token span of one sequence, so the same description fits
// an episode trained as one sequence (the spans are the replies inside
// it) and one trained as a sequence per turn (a history window).
//
// The spans must cover the loss mask exactly: every in-mask token of a
// sequence lies in one turn of that sequence's episode, and no turn
// reaches outside its sequence. A turn whose span holds no in-mask token
// is an error; an episode with no turns at all is allowed (it was cut off
// before its first reply: it has no trained token either).

// Turn is one agent turn.
type Turn struct {
	// Seq indexes the sequence (row of Mask) holding the reply; Start and
	// End delimit the reply's tokens in it, [Start, End).
	Seq, Start, End int
	// Reward is the turn's reward: its environment rewards plus its format
	// penalty (what the episode score sums).
	Reward float64
	// State identifies the environment state the turn started from; equal
	// non-empty strings are the same state (GiGPO's anchor states). An
	// empty State matches no other turn.
	State string
	// CostBefore and CostAfter are an exact solver's cost-to-go N(s), the
	// number of environment actions that solve the task from the state
	// before and after the turn. NaN means unknown, +Inf unsolvable.
	CostBefore, CostAfter float64
}

// validateTurns checks turns against the scores and the loss mask, and
// that (when episode is set) every turn's sequence belongs to its episode.
func validateTurns(turns [][]Turn, nEpisodes int, mask [][]bool, episode []int) error {
	if len(turns) != nEpisodes {
		return fmt.Errorf("algos: turns for %d episodes, scores for %d", len(turns), nEpisodes)
	}
	owner := make([][]int, len(mask)) // owner[i][t]: 1 + index of the turn covering token t, 0 if none
	for i := range mask {
		owner[i] = make([]int, len(mask[i]))
	}
	for e, ts := range turns {
		for k, tr := range ts {
			if tr.Seq < 0 || tr.Seq >= len(mask) {
				return fmt.Errorf("algos: episode %d turn %d: sequence %d outside 0..%d", e, k, tr.Seq, len(mask)-1)
			}
			if episode != nil && episode[tr.Seq] != e {
				return fmt.Errorf("algos: episode %d turn %d: sequence %d belongs to episode %d", e, k, tr.Seq, episode[tr.Seq])
			}
			row := mask[tr.Seq]
			if tr.Start < 0 || tr.End > len(row) || tr.Start > tr.End {
				return fmt.Errorf("algos: episode %d turn %d: span [%d, %d) outside sequence %d of %d tokens", e, k, tr.Start, tr.End, tr.Seq, len(row))
			}
			trained := 0
			for t := tr.Start; t < tr.End; t++ {
				if owner[tr.Seq][t] != 0 {
					return fmt.Errorf("algos: episode %d turn %d overlaps another turn at token %d of sequence %d", e, k, t, tr.Seq)
				}
				owner[tr.Seq][t] = 1
				if row[t] {
					trained++
				}
			}
			if trained == 0 {
				return fmt.Errorf("algos: episode %d turn %d has no in-mask token", e, k)
			}
			if math.IsNaN(tr.Reward) || math.IsInf(tr.Reward, 0) {
				return fmt.Errorf("algos: episode %d turn %d: reward is %v", e, k, tr.Reward)
			}
			for _, c := range []float64{tr.CostBefore, tr.CostAfter} {
				if c < 0 || math.IsInf(c, -1) {
					return fmt.Errorf("algos: episode %d turn %d: cost-to-go %v (want ≥ 0, NaN for unknown or +Inf for unsolvable)", e, k, c)
				}
			}
		}
	}
	for i := range mask {
		for t, m := range mask[i] {
			if m && owner[i][t] == 0 {
				return fmt.Errorf("algos: token %d of sequence %d is in the mask but in no turn", t, i)
			}
		}
	}
	return nil
}

// discountedTurnReturns is R_{e,k} = Σ_{j ≥ k} γ^{j−k} r_{e,j} for every
// turn: the reward-to-go of the turn within its episode. A truncated
// episode has no bootstrap: its return ends with its last turn.
func discountedTurnReturns(turns [][]Turn, gamma float64) [][]float64 {
	out := make([][]float64, len(turns))
	for e, ts := range turns {
		out[e] = make([]float64, len(ts))
		running := 0.0
		for k := len(ts) - 1; k >= 0; k-- {
			running = ts[k].Reward + gamma*running
			out[e][k] = running
		}
	}
	return out
}

// turnTokenAdvantages writes, for every turn, base[e] + extra[e][k] on the
// in-mask tokens of its span, and 0 elsewhere.
func turnTokenAdvantages(turns [][]Turn, mask [][]bool, base []float64, extra [][]float64) [][]float64 {
	adv := zerosLike(mask)
	for e, ts := range turns {
		for k, tr := range ts {
			v := base[e] + extra[e][k]
			for t := tr.Start; t < tr.End; t++ {
				if mask[tr.Seq][t] {
					adv[tr.Seq][t] = v
				}
			}
		}
	}
	return adv
}
