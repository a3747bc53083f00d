package algos

import (
	"fmt"
	"math"
)

// Solver credit: CAST, "Game Solvers as Turn-Level Teachers for LLM
// Agents" (arXiv 2607.25308; reference code Wloner0809/CAST,
// rllm/trainer/verl/oracle_advantage_mapping.py, mode "cast"). An exact
// solver's cost-to-go N(s) (actions left to solve the task from s) is the
// value of the shortest-path objective, V(s) = −N(s), so the change over a
// turn is a turn-level advantage, shifted by one per action so that
// progress is positive:
//
//	a_{e,k} = N(s_{e,k}) − N(s_{e,k+1})            (state before and after turn k)
//	        = 0          when s_{e,k} is already unsolvable (no gradient)
//	        = −N(s_{e,k}) when the turn makes it unsolvable (a deadlock)
//	        = 0          when either cost is unknown
//
// An optimal action lowers N by one (+1 per action; a turn of two actions
// earns up to +2), a wasted one leaves it (0), a harmful one raises it.
// The signal is compressed and scaled batch-wide (CAST's h):
//
//	g(a) = asinh(a)                 (solver_transform asinh; identity: g(a) = a)
//	h    = g / (RMS_B(g) + 1e-8)    RMS over every turn of the batch, zeros included
//
// and added to the group estimator's episode advantage on every trained
// token of the turn:
//
//	A_{e,k} = A^E_e + α · h(a_{e,k})          (paper: α = 0.1)
//
// asinh is linear near 0 and logarithmic far out, so a deadlock that
// throws away N moves is penalised about log(2N), not N: this is CAST's
// "clipping". Including zeros in the RMS means that the more turns carry
// no signal, the larger the ones that do (the paper's curriculum effect).
// A batch whose turns all score 0 gets h = 0. With a history window the
// episode term keeps the per-turn balance of episodes.go; the solver term
// does not.

// SolverTransform names the compression g of the solver advantage.
type SolverTransform string

// The transforms.
const (
	SolverAsinh    SolverTransform = "asinh"
	SolverIdentity SolverTransform = "identity"
)

// solverRMSEps is CAST's cast_eps.
const solverRMSEps = 1e-8

// SolverStats describes one batch's solver advantages.
type SolverStats struct {
	// Turns is the number of turns; Known those with both costs known.
	Turns, Known int
	// Progress, Wasted and Harmful count known turns with a > 0, a = 0
	// and a < 0; Deadlocks the turns that made a solvable state unsolvable.
	Progress, Wasted, Harmful, Deadlocks int
	// RawMean is the mean of a over known turns; RMS the RMS of g.
	RawMean, RMS float64
}

// Metrics returns the statistics under credit/ names.
func (s SolverStats) Metrics() map[string]float64 {
	m := map[string]float64{"credit/solver_rms": s.RMS, "credit/solver_deadlocks": float64(s.Deadlocks)}
	if s.Turns > 0 {
		m["credit/solver_known_ratio"] = float64(s.Known) / float64(s.Turns)
	}
	if s.Known > 0 {
		n := float64(s.Known)
		m["credit/solver_adv_raw_mean"] = s.RawMean
		m["credit/solver_progress_ratio"] = float64(s.Progress) / n
		m["credit/solver_wasted_ratio"] = float64(s.Wasted) / n
		m["credit/solver_harmful_ratio"] = float64(s.Harmful) / n
	}
	return m
}

// SolverAdvantage is a_{e,k} for one turn from its two costs.
func SolverAdvantage(before, after float64) float64 {
	switch {
	case math.IsNaN(before) || math.IsNaN(after):
		return 0
	case math.IsInf(before, 1):
		return 0
	case math.IsInf(after, 1):
		return -before
	}
	return before - after
}

// SolverTurnAdvantages returns h(a_{e,k}) for every turn (before α).
func SolverTurnAdvantages(turns [][]Turn, transform SolverTransform) ([][]float64, SolverStats, error) {
	var g func(float64) float64
	switch transform {
	case SolverAsinh:
		g = math.Asinh
	case SolverIdentity:
		g = func(x float64) float64 { return x }
	default:
		return nil, SolverStats{}, fmt.Errorf("algos: unknown solver_transform %q (want asinh or identity)", string(transform))
	}
	var st SolverStats
	out := make([][]float64, len(turns))
	sumSq, rawSum := 0.0, 0.0
	for e, ts := range turns {
		out[e] = make([]float64, len(ts))
		for k, tr := range ts {
			st.Turns++
			a := SolverAdvantage(tr.CostBefore, tr.CostAfter)
			if !math.IsNaN(tr.CostBefore) && !math.IsNaN(tr.CostAfter) {
				st.Known++
				rawSum += a
				switch {
				case a > 0:
					st.Progress++
				case a < 0:
					st.Harmful++
				default:
					st.Wasted++
				}
				if !math.IsInf(tr.CostBefore, 1) && math.IsInf(tr.CostAfter, 1) {
					st.Deadlocks++
				}
			}
			out[e][k] = g(a)
			sumSq += out[e][k] * out[e][k]
		}
	}
	if st.Turns > 0 {
		st.RMS = math.Sqrt(sumSq / float64(st.Turns))
	}
	if st.Known > 0 {
		st.RawMean = rawSum / float64(st.Known)
	}
	for e := range out {
		for k := range out[e] {
			out[e][k] /= st.RMS + solverRMSEps
		}
	}
	return out, st, nil
}
