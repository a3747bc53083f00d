package report

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// rowsRun is a run whose metric rows are given per step.
func rowsRun(rows ...map[string]float64) Run { return Run{Rows: rows} }

func TestDiagnosticsTableRegimes(t *testing.T) {
	const ret, reg = "collapse_first_turn_sample/retrieval_accuracy", "collapse/regime"
	healthy := rowsRun(
		map[string]float64{"step": 5, ret: 1, reg: 2},
		map[string]float64{"step": 10, ret: 0.9, reg: 2},
	)
	collapsed := rowsRun(
		map[string]float64{"step": 5, ret: 0.9, reg: 2},
		map[string]float64{"step": 10, ret: 0.2, reg: 3},
		map[string]float64{"step": 15, ret: 0.1, reg: 5},
	)
	got := DiagnosticsTable([]Arm{{Label: "a", Runs: []Run{healthy, collapsed}}, {Label: "none", Runs: []Run{rowsRun(map[string]float64{"step": 1})}}})
	// Late = last quarter, at least one reading: 0.9 and 0.1, mean 0.5.
	if !strings.Contains(got, "| a | 0.500 |") {
		t.Errorf("late retrieval mean missing:\n%s", got)
	}
	if !strings.Contains(got, "| compressed, incoherent | —, 10 |") {
		t.Errorf("regimes wrong:\n%s", got)
	}
	if strings.Contains(got, "| none |") {
		t.Errorf("an arm without collapse metrics got a row:\n%s", got)
	}
	if DiagnosticsTable([]Arm{{Label: "none", Runs: []Run{rowsRun(map[string]float64{"step": 1})}}}) != "" {
		t.Error("no collapse metrics: want an empty table")
	}
}

func TestProxyTableErrorAgainstReference(t *testing.T) {
	const p = "collapse_first_turn_sample/mi_estimate"
	run := func(vals []float64, score float64) Run {
		var rows []map[string]float64
		for i, v := range vals {
			rows = append(rows, map[string]float64{"step": float64(5 * (i + 1)), p: v, "train/score": score + float64(i)})
		}
		return Run{Rows: rows}
	}
	ref := Arm{Label: "M128", Runs: []Run{run([]float64{1, 2, 3}, 0)}}
	noisy := Arm{Label: "M16", Runs: []Run{run([]float64{2, 2, 2}, 0)}}
	got := ProxyTable([]Arm{noisy, ref}, "M128")
	// Error: RMS of (1, 0, -1) = √(2/3); the reference's std along the run is 1.
	e := math.Sqrt(2.0 / 3)
	want := "| " + p + " | M16 | 3 | 2.000 | 0.000 |  | " + fmt.Sprintf("%.3f", e) + " | " + fmt.Sprintf("%.2f", e) + " |"
	if !strings.Contains(got, want) {
		t.Errorf("want row %q in:\n%s", want, got)
	}
	// Reference noise: successive differences 1, 1 → RMS 1, over √2.
	if !strings.Contains(got, "| "+p+" | M128 | 3 | 2.000 | "+fmt.Sprintf("%.3f", 1/math.Sqrt2)+" |") {
		t.Errorf("reference noise wrong:\n%s", got)
	}
	if !strings.Contains(got, "Every arm trained identically") {
		t.Errorf("identical training not recognised:\n%s", got)
	}
	other := Arm{Label: "M32", Runs: []Run{run([]float64{1, 2, 3}, 7)}}
	if got := ProxyTable([]Arm{other, ref}, "M128"); !strings.Contains(got, "Not trained identically to M128 (train/score differs): M32") {
		t.Errorf("different training not flagged:\n%s", got)
	}
}

func TestGroundTruthTable(t *testing.T) {
	const truth, ret, ent = "train/rationale_correct", "collapse_first_turn_sample/retrieval_accuracy", "actor/entropy"
	run := func(tr, rt, en []float64) Run {
		var rows []map[string]float64
		for i := range tr {
			rows = append(rows, map[string]float64{"step": float64(i), truth: tr[i], ret: rt[i], ent: en[i]})
		}
		return Run{Rows: rows}
	}
	// Retrieval rises and falls with the truth in every run; entropy moves
	// against it in one run and is constant in the other.
	runs := []Run{
		run([]float64{0.1, 0.2, 0.3, 0.4}, []float64{0.5, 0.6, 0.7, 0.8}, []float64{5, 4, 3, 2}),
		run([]float64{0.9, 0.8, 0.7, 0.95}, []float64{0.9, 0.85, 0.8, 0.99}, []float64{1, 1, 1, 1}),
		run([]float64{0.5, 0.5, 0.5, 0.5}, []float64{0.9, 0.9, 0.9, 0.9}, []float64{1.5, 1.5, 1.5, 1.5}),
	}
	got := GroundTruthTable(runs, truth, []string{ret, ent, "never/logged"})
	for _, want := range []string{"| " + ret + " | +1.00 | 3 | +1.00 | 2 |", "| " + ent + " | -1.00 | 3 | -1.00 | 1 |"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "never/logged") {
		t.Errorf("a diagnostic no run logged got a row:\n%s", got)
	}
	if GroundTruthTable(runs, "no/truth", []string{ret}) != "" {
		t.Error("no truth logged: want an empty table")
	}
}
