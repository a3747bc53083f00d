package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/agentrl/agentrl/algos"
)

// diagnosticColumns are the collapse readings DiagnosticsTable shows, each
// the mean of its last quarter of readings (Run.Late), averaged over seeds.
var diagnosticColumns = []struct{ head, key string }{
	{"retrieval acc. (chance)", "collapse_first_turn_sample/retrieval_accuracy"},
	{"MI estimate", "collapse_first_turn_sample/mi_estimate"},
	{"H(Z|X) per token", "collapse_first_turn_sample/conditional_entropy_est"},
	{"input dependence", "collapse/input_dependence"},
	{"valid thinking", "collapse/valid_thinking_rate"},
	{"rationale correct", "collapse_first_turn_sample/rationale_correct"},
	{"retrieved but wrong", "collapse_first_turn_sample/retrieved_wrong"},
	{"reply tokens", "train/response_length"},
}

// DiagnosticsTable is, per arm, the late collapse readings (MI proxies,
// within-input entropy, the valid-thinking rate and, where the environment
// checks rationales, their ground truth crossed with retrieval), and the
// collapse alarm's regimes: each seed's regime at the end and the first
// step at which it named a collapsed regime (— never). Empty when no run
// logged collapse metrics.
func DiagnosticsTable(arms []Arm) string {
	var b strings.Builder
	b.WriteString("| arm |")
	sep := "|---|"
	for _, c := range diagnosticColumns {
		b.WriteString(" " + c.head + " |")
		sep += "---|"
	}
	b.WriteString(" regime at the end, per seed | first collapsed step, per seed |\n" + sep + "---|---|\n")
	rows := 0
	for _, a := range arms {
		line := "| " + a.Label + " |"
		logged := false
		for _, c := range diagnosticColumns {
			v, ok := lateMean(a.Runs, c.key)
			if !ok {
				line += " |"
				continue
			}
			logged = true
			cell := fmt.Sprintf("%.3f", v)
			if c.key == "train/response_length" {
				cell = fmt.Sprintf("%.1f", v)
			}
			if c.key == "collapse_first_turn_sample/retrieval_accuracy" {
				if ch, ok := lateMean(a.Runs, "collapse_first_turn_sample/retrieval_chance_level"); ok {
					cell += fmt.Sprintf(" (%.3f)", ch)
				}
			}
			line += " " + cell + " |"
		}
		if !logged {
			continue
		}
		var ends, firsts []string
		for _, r := range a.Runs {
			end, first := regimes(r)
			ends, firsts = append(ends, end), append(firsts, first)
		}
		line += " " + strings.Join(ends, ", ") + " | " + strings.Join(firsts, ", ") + " |"
		b.WriteString(line + "\n")
		rows++
	}
	if rows == 0 {
		return ""
	}
	return b.String()
}

// regimes reads a run's collapse/regime codes: its last regime, and the
// first step it was a collapsed one ("—" never; "" when never classified).
func regimes(r Run) (end, first string) {
	steps, codes := r.Series("collapse/regime")
	end, first = "—", "—"
	for i, c := range codes {
		reg := regimeOfCode(c)
		if reg != "" {
			end = string(reg)
		}
		if reg.Collapsed() && first == "—" {
			first = fmt.Sprint(steps[i])
		}
	}
	return end, first
}

func regimeOfCode(c float64) algos.Regime {
	for _, r := range []algos.Regime{algos.RegimeDiverse, algos.RegimeCompressed, algos.RegimeTemplateCollapse,
		algos.RegimeLowEntropyCollapse, algos.RegimeIncoherent} {
		if r.Code() == c {
			return r
		}
	}
	return ""
}

func lateMean(runs []Run, key string) (float64, bool) {
	var vals []float64
	for _, r := range runs {
		if v, ok := r.Late(key); ok {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return math.NaN(), false
	}
	return meanOf(vals), true
}

func meanOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// Proxies are the MI proxies ProxyTable compares.
var Proxies = []string{
	"collapse_first_turn_sample/retrieval_accuracy",
	"collapse_first_turn_sample/mi_estimate",
	"collapse_first_turn_sample/mi_seq_estimate",
	"collapse_first_turn_sample/mi_zscore",
	"collapse_first_turn_sample/mi_zscore_ema",
	"collapse_trajectory_sample/retrieval_accuracy",
	"collapse_trajectory_sample/mi_estimate",
	"collapse_trajectory_sample/mi_zscore_ema",
}

// ProxyTable compares how steady each MI proxy is, arm by arm:
//
//   - noise: the step-to-step noise of a run's readings, the RMS of
//     successive differences over √2 (what a reading scatters around a
//     slowly moving value), averaged over seeds;
//   - seed spread: the standard deviation over seeds of the late value
//     (Run.Late);
//   - error vs ref: where the arms of a seed train identically and differ
//     only in the estimator (the MI-proxy sweep), the RMS difference from
//     the reference arm's reading at the same seed and step, and that
//     error over the reference's own standard deviation along the run
//     (below 1: the estimate follows the proxy's movement more than it
//     scatters).
//
// ref names the reference arm ("" for none). Training identity is
// checked, not assumed: an arm whose train/score differs from the
// reference's at any step is marked.
func ProxyTable(arms []Arm, ref string) string {
	var refArm *Arm
	for i := range arms {
		if arms[i].Label == ref {
			refArm = &arms[i]
		}
	}
	var b strings.Builder
	b.WriteString("| proxy | arm | readings per run | mean | noise | seed spread |")
	if refArm != nil {
		b.WriteString(" error vs " + ref + " | error / " + ref + "'s std along the run |")
	}
	b.WriteString("\n|---|---|---|---|---|---|")
	if refArm != nil {
		b.WriteString("---|---|")
	}
	b.WriteString("\n")
	rows := 0
	var notIdentical []string
	if refArm != nil {
		for _, a := range arms {
			if !sameTraining(a, *refArm) {
				notIdentical = append(notIdentical, a.Label)
			}
		}
	}
	for _, p := range Proxies {
		for ai := range arms {
			a := &arms[ai]
			var noises, lates, all []float64
			n := 0
			for _, r := range a.Runs {
				_, v := r.Series(p)
				if len(v) == 0 {
					continue
				}
				n = max(n, len(v))
				all = append(all, v...)
				if len(v) > 1 {
					noises = append(noises, diffNoise(v))
				}
				l, _ := r.Late(p)
				lates = append(lates, l)
			}
			if len(all) == 0 {
				continue
			}
			line := fmt.Sprintf("| %s | %s | %d | %.3f | %s | %s |", p, a.Label, n, meanOf(all), fmtOr(noises, meanOf), fmtOr(lates, sampleStd))
			if refArm != nil {
				errRMS, refStd, ok := errorVs(*a, *refArm, p)
				switch {
				case !ok:
					line += " | |"
				case refStd > 0:
					line += fmt.Sprintf(" %.3f | %.2f |", errRMS, errRMS/refStd)
				default:
					line += fmt.Sprintf(" %.3f | |", errRMS)
				}
			}
			b.WriteString(line + "\n")
			rows++
		}
	}
	if rows == 0 {
		return ""
	}
	if len(notIdentical) > 0 {
		fmt.Fprintf(&b, "\nNot trained identically to %s (train/score differs): %s; their error includes training differences.\n", ref, strings.Join(notIdentical, ", "))
	} else if refArm != nil {
		fmt.Fprintf(&b, "\nEvery arm trained identically to %s, seed for seed (train/score equal at every step): the errors are the estimator's alone.\n", ref)
	}
	return b.String()
}

func fmtOr(x []float64, f func([]float64) float64) string {
	if len(x) == 0 {
		return ""
	}
	v := f(x)
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.3f", v)
}

// diffNoise is the RMS of successive differences over √2.
func diffNoise(v []float64) float64 {
	s := 0.0
	for i := 1; i < len(v); i++ {
		d := v[i] - v[i-1]
		s += d * d
	}
	return math.Sqrt(s/float64(len(v)-1)) / math.Sqrt2
}

func sampleStd(x []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	m := meanOf(x)
	s := 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)-1))
}

// byStep maps a run's readings of metric to their steps.
func byStep(r Run, metric string) map[int]float64 {
	steps, v := r.Series(metric)
	m := make(map[int]float64, len(v))
	for i, s := range steps {
		m[s] = v[i]
	}
	return m
}

// errorVs is the RMS difference of a's readings of p from ref's at the
// same seed (run index) and step, and the mean over seeds of ref's
// standard deviation along the run.
func errorVs(a, ref Arm, p string) (rms, refStd float64, ok bool) {
	var sq float64
	var n int
	var stds []float64
	for i := range min(len(a.Runs), len(ref.Runs)) {
		want := byStep(ref.Runs[i], p)
		_, rv := ref.Runs[i].Series(p)
		if s := sampleStd(rv); !math.IsNaN(s) {
			stds = append(stds, s)
		}
		for s, v := range byStep(a.Runs[i], p) {
			if w, found := want[s]; found {
				sq += (v - w) * (v - w)
				n++
			}
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	if len(stds) > 0 {
		refStd = meanOf(stds)
	}
	return math.Sqrt(sq / float64(n)), refStd, true
}

// sameTraining tells whether two arms' runs, seed for seed, logged the
// same train/score at every step.
func sameTraining(a, ref Arm) bool {
	if len(a.Runs) != len(ref.Runs) {
		return false
	}
	for i := range a.Runs {
		x, y := byStep(a.Runs[i], "train/score"), byStep(ref.Runs[i], "train/score")
		if len(x) != len(y) {
			return false
		}
		for s, v := range x {
			if w, ok := y[s]; !ok || w != v {
				return false
			}
		}
	}
	return true
}
