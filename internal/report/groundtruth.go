package report

import (
	"fmt"
	"math"
	"strings"
)

// GroundTruthDiagnostics are the signals GroundTruthTable checks against
// the ground truth of the reasoning: the MI proxies and, for contrast, the
// entropies the paper finds misleading.
var GroundTruthDiagnostics = []string{
	"collapse_first_turn_sample/retrieval_accuracy",
	"collapse_first_turn_sample/mi_estimate",
	"collapse_first_turn_sample/mi_zscore_ema",
	"collapse_first_turn_sample/conditional_entropy_est",
	"actor/entropy",
}

// GroundTruthTable asks whether each diagnostic tracks the ground truth of
// the reasoning (truth: the share of rationales that state the state
// correctly, train/rationale_correct), two ways:
//
//   - across runs: the Spearman correlation of the diagnostic's late value
//     with the truth's late value (Run.Late);
//   - within runs: the Spearman correlation, over the steps where both were
//     logged, of the diagnostic with the truth, averaged over the runs
//     where both vary (a run whose truth or diagnostic is constant has no
//     rank order and is left out).
//
// Empty when no run logged truth.
func GroundTruthTable(runs []Run, truth string, diagnostics []string) string {
	var b strings.Builder
	b.WriteString("| diagnostic | Spearman ρ across runs (late values) | runs | mean Spearman ρ within runs (over steps) | runs |\n|---|---|---|---|---|\n")
	rows := 0
	for _, d := range diagnostics {
		var xs, ys, within []float64
		for _, r := range runs {
			x, okx := r.Late(d)
			y, oky := r.Late(truth)
			if okx && oky {
				xs, ys = append(xs, x), append(ys, y)
			}
			if rho := withinRun(r, d, truth); !math.IsNaN(rho) {
				within = append(within, rho)
			}
		}
		if len(xs) == 0 {
			continue
		}
		across := Spearman(xs, ys)
		cell := "n/a"
		if !math.IsNaN(across) {
			cell = fmt.Sprintf("%+.2f", across)
		}
		wcell := "n/a"
		if len(within) > 0 {
			wcell = fmt.Sprintf("%+.2f", meanOf(within))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d |\n", d, cell, len(xs), wcell, len(within))
		rows++
	}
	if rows == 0 {
		return ""
	}
	return b.String()
}

// withinRun is the Spearman correlation of a and b over the steps where
// the run logged both (NaN with fewer than 4 such steps or no variation).
func withinRun(r Run, a, b string) float64 {
	var xs, ys []float64
	for _, row := range r.Rows {
		x, okx := row[a]
		y, oky := row[b]
		if okx && oky && !math.IsNaN(x) && !math.IsNaN(y) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	if len(xs) < 4 {
		return math.NaN()
	}
	return Spearman(xs, ys)
}
