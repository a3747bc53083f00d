package native

import (
	"github.com/agentrl/agentrl/algos"
)

// The model knows nothing about losses; tests and benchmarks train it with
// the learner's own objectives from package algos, converting between the
// model's float32 outputs and algos' float64 matrices here.

func to64(x [][]float32) [][]float64 {
	if x == nil {
		return nil
	}
	out := make([][]float64, len(x))
	for i, row := range x {
		out[i] = make([]float64, len(row))
		for j, v := range row {
			out[i][j] = float64(v)
		}
	}
	return out
}

func to32(x [][]float64) [][]float32 {
	if x == nil {
		return nil
	}
	out := make([][]float32, len(x))
	for i, row := range x {
		out[i] = make([]float32, len(row))
		for j, v := range row {
			out[i][j] = float32(v)
		}
	}
	return out
}

// sftGrads is the token-mean negative log-likelihood of the masked tokens
// (algos.SFTLoss) and, in g, its gradient with respect to the outputs.
func sftGrads(out *Outputs, mask [][]bool, g *OutputGrads) (algos.SFTResult, error) {
	r, err := algos.SFTLoss(algos.TokenMean, to64(out.LogProb), mask)
	if err != nil {
		return r, err
	}
	*g = OutputGrads{LogProb: to32(r.DLogProb)}
	return r, nil
}
