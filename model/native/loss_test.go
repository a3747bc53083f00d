package native

import (
	"github.com/agentrl/agentrl/algos"
)

// The model knows nothing about losses; tests and benchmarks train it with
// the learner's own objectives from package algos.

// sftGrads is the token-mean negative log-likelihood of the masked tokens
// (algos.SFTLoss) and, in g, its gradient with respect to the outputs.
func sftGrads(out *Outputs, mask [][]bool, g *OutputGrads) (algos.SFTResult, error) {
	r, err := algos.SFTLoss(algos.TokenMean, Float64s(out.LogProb), mask)
	if err != nil {
		return r, err
	}
	*g = OutputGrads{LogProb: Float32s(r.DLogProb)}
	return r, nil
}
