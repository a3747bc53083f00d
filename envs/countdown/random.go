package countdown

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

var _ envs.RandomActor = (*Env)(nil)

// RandomAction implements envs.RandomActor: a uniformly random well-formed
// equation over the given numbers — all of them when require_all_numbers
// is set, otherwise a random non-empty subset — in random order, joined by
// random operators under a random bracketing.
func (e *Env) RandomAction(rng *rand.Rand) (string, error) {
	if !e.started {
		return "", envs.ErrNotReset
	}
	nums := append([]int64(nil), e.inst.Numbers...)
	rng.Shuffle(len(nums), func(i, j int) { nums[i], nums[j] = nums[j], nums[i] })
	if !e.cfg.RequireAllNumbers {
		nums = nums[:1+rng.IntN(len(nums))]
	}
	return randomExpr(rng, nums), nil
}

// randomExpr joins nums, in order, into a random binary expression tree
// with parentheses around every compound operand.
func randomExpr(rng *rand.Rand, nums []int64) string {
	if len(nums) == 1 {
		return fmt.Sprint(nums[0])
	}
	split := 1 + rng.IntN(len(nums)-1)
	operand := func(part []int64) string {
		s := randomExpr(rng, part)
		if len(part) > 1 {
			s = "(" + s + ")"
		}
		return s
	}
	var b strings.Builder
	b.WriteString(operand(nums[:split]))
	b.WriteString(" " + string("+-*/"[rng.IntN(4)]) + " ")
	b.WriteString(operand(nums[split:]))
	return b.String()
}
