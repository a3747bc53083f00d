// Package report reads finished run directories and summarises them:
// arms (runs that differ only in their seed), validation curves with 95%
// intervals over seeds, steps to a threshold, time per step, and rank
// correlations between diagnostics and outcomes across runs. `trainer
// report` and the experiment scripts print with it.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/internal/metricsfile"
	"github.com/agentrl/agentrl/internal/stats"
)

// Run is one run directory.
type Run struct {
	Dir string
	// Config is the run's identity (run.json): its settings as dotted keys.
	Config map[string]string
	// Summary is summary.json.
	Summary Summary
	// Rows are the rows of metrics.jsonl, one per step.
	Rows []map[string]float64
}

// Summary is the part of summary.json read here.
type Summary struct {
	Status        string  `json:"status"`
	Steps         int     `json:"steps"`
	WallTime      float64 `json:"wall_time_s"`
	WarmStartTime float64 `json:"warm_start_time_s"`
	Levels        int     `json:"validation_levels"`
	Samples       int     `json:"validation_samples"`
}

// Episodes is the number of validation episodes per validation point.
func (s Summary) Episodes() int { return s.Levels * max(s.Samples, 1) }

// Load reads a run directory. A run that has not finished is an error
// naming its status.
func Load(dir string) (Run, error) {
	r := Run{Dir: dir}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return r, fmt.Errorf("%s: %w (not a finished run directory?)", dir, err)
	}
	if err := json.Unmarshal(raw, &r.Summary); err != nil {
		return r, fmt.Errorf("%s/summary.json: %w", dir, err)
	}
	if r.Summary.Status != "finished" && !strings.HasPrefix(r.Summary.Status, "stopped early") {
		return r, fmt.Errorf("%s: run ended %q", dir, r.Summary.Status)
	}
	if r.Config, err = ReadIdentity(dir); err != nil {
		return r, err
	}
	if r.Rows, err = metricsfile.Read(dir); err != nil {
		return r, err
	}
	return r, nil
}

// ReadIdentity reads the settings of the run directory dir from its
// identity (run.json), as dotted keys.
func ReadIdentity(dir string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var id struct {
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		return nil, fmt.Errorf("%s/run.json: %w", dir, err)
	}
	return id.Config, nil
}

// Series returns the steps at which metric was logged (finite) and its
// values there.
func (r Run) Series(metric string) (steps []int, values []float64) {
	for _, row := range r.Rows {
		v, ok := row[metric]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		steps = append(steps, int(row["step"]))
		values = append(values, v)
	}
	return steps, values
}

// Final is the last logged value of metric.
func (r Run) Final(metric string) (float64, bool) {
	_, v := r.Series(metric)
	if len(v) == 0 {
		return math.NaN(), false
	}
	return v[len(v)-1], true
}

// Late is the mean of metric over the last quarter of its logged values
// (at least one): a steadier end-of-run reading for noisy diagnostics.
func (r Run) Late(metric string) (float64, bool) {
	_, v := r.Series(metric)
	if len(v) == 0 {
		return math.NaN(), false
	}
	tail := v[len(v)-max(1, len(v)/4):]
	s := 0.0
	for _, x := range tail {
		s += x
	}
	return s / float64(len(tail)), true
}

// StepsTo is the first step at which metric reached thr, or -1.
func (r Run) StepsTo(metric string, thr float64) int {
	steps, v := r.Series(metric)
	for i, x := range v {
		if x >= thr {
			return steps[i]
		}
	}
	return -1
}

// CurveMean is the mean of metric over its points after step 0 (the area
// under the curve per point: a sample-efficiency measure).
func (r Run) CurveMean(metric string) float64 {
	steps, v := r.Series(metric)
	s, n := 0.0, 0
	for i, x := range v {
		if steps[i] > 0 {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

// SecondsPerStep is the wall time after the warm start per RL step.
func (r Run) SecondsPerStep() float64 {
	return (r.Summary.WallTime - r.Summary.WarmStartTime) / float64(max(r.Summary.Steps, 1))
}

// Arm is a set of runs of one setting over seeds.
type Arm struct {
	Label string
	Runs  []Run
}

// seedKeys are the settings that make runs of one arm differ.
var seedKeys = map[string]bool{"run.seed": true}

// Arms groups runs by their settings without the seed, in the order of
// first appearance, and labels each by the settings in which it differs
// from the others ("algo.preset=CAST filter.value=1"); a single arm is
// labelled "all".
func Arms(runs []Run) []Arm {
	key := func(r Run) string {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(r.Config)) {
			if !seedKeys[k] {
				fmt.Fprintf(&b, "%s=%s\n", k, r.Config[k])
			}
		}
		return b.String()
	}
	var arms []Arm
	index := map[string]int{}
	for _, r := range runs {
		k := key(r)
		i, ok := index[k]
		if !ok {
			i = len(arms)
			index[k] = i
			arms = append(arms, Arm{})
		}
		arms[i].Runs = append(arms[i].Runs, r)
	}
	if len(arms) == 1 {
		arms[0].Label = "all"
		return arms
	}
	// Keys whose value is not the same in every arm. algo.name repeats
	// algo.preset, and a setting only some arms have (an option a preset
	// switches on) is part of what that preset means, so neither labels.
	varying := map[string]bool{}
	presets := map[string]bool{}
	for _, a := range arms {
		presets[a.Runs[0].Config["algo.preset"]] = true
	}
	for _, a := range arms {
		for k, v := range a.Runs[0].Config {
			if seedKeys[k] || k == "algo.name" {
				continue
			}
			for _, b := range arms {
				w, ok := b.Runs[0].Config[k]
				if (ok && w != v) || (!ok && len(presets) == 1) {
					varying[k] = true
				}
			}
		}
	}
	keys := slices.Sorted(maps.Keys(varying))
	for i, a := range arms {
		var parts []string
		for _, k := range keys {
			if v, ok := a.Runs[0].Config[k]; ok {
				parts = append(parts, k+"="+v)
			}
		}
		arms[i].Label = strings.Join(parts, " ")
	}
	return arms
}

// Curve returns the steps at which every run of the arm logged metric and
// each run's values there.
func (a Arm) Curve(metric string) (steps []int, values [][]float64) {
	if len(a.Runs) == 0 {
		return nil, nil
	}
	count := map[int]int{}
	series := make([]map[int]float64, len(a.Runs))
	for i, r := range a.Runs {
		s, v := r.Series(metric)
		series[i] = map[int]float64{}
		for j := range s {
			series[i][s[j]] = v[j]
			count[s[j]]++
		}
	}
	first, _ := a.Runs[0].Series(metric)
	for _, s := range first {
		if count[s] == len(a.Runs) {
			steps = append(steps, s)
			vs := make([]float64, len(a.Runs))
			for i := range a.Runs {
				vs[i] = series[i][s]
			}
			values = append(values, vs)
		}
	}
	return steps, values
}

// FmtCI renders a mean and its 95% half-width ("0.875 ± 0.026"; the mean
// alone for one seed).
func FmtCI(mean, half float64) string {
	if math.IsNaN(half) {
		return fmt.Sprintf("%.3f", mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", mean, half)
}

// Table is the markdown summary of arms on metric: the first point (the
// warm start), the final value (mean ± 95% interval over seeds, and each
// seed), the curve mean, each seed's steps to threshold, the time per RL
// step.
func Table(arms []Arm, metric string, threshold float64) string {
	var b strings.Builder
	b.WriteString("| arm | seeds | start | final | final, per seed | curve mean | steps to threshold | s / RL step |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, a := range arms {
		var first, final, area, perStep []float64
		var perSeed, reach []string
		for _, r := range a.Runs {
			_, v := r.Series(metric)
			if len(v) == 0 {
				continue
			}
			first = append(first, v[0])
			final = append(final, v[len(v)-1])
			perSeed = append(perSeed, fmt.Sprintf("%.3f", v[len(v)-1]))
			area = append(area, r.CurveMean(metric))
			if s := r.StepsTo(metric, threshold); s >= 0 {
				reach = append(reach, fmt.Sprint(s))
			} else {
				reach = append(reach, "—")
			}
			perStep = append(perStep, r.SecondsPerStep())
		}
		if len(final) == 0 {
			fmt.Fprintf(&b, "| %s | %d | | no %s logged | | | | |\n", a.Label, len(a.Runs), metric)
			continue
		}
		m0, _ := stats.MeanCI95(first)
		ms, _ := stats.MeanCI95(perStep)
		fmt.Fprintf(&b, "| %s | %d | %.3f | **%s** | %s | %s | %s | %.2f |\n", a.Label, len(final), m0,
			FmtCI(stats.MeanCI95(final)), strings.Join(perSeed, ", "), FmtCI(stats.MeanCI95(area)), strings.Join(reach, ", "), ms)
	}
	return b.String()
}

// CurveTable is metric along the run (mean ± 95% interval over seeds) at
// about `points` evenly spaced steps of the first arm's curve.
func CurveTable(arms []Arm, metric string, points int) string {
	var b strings.Builder
	b.WriteString("| step |")
	for _, a := range arms {
		b.WriteString(" " + a.Label + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(arms)) + "\n")
	curves := make([]map[int][]float64, len(arms))
	for i, a := range arms {
		curves[i] = map[int][]float64{}
		s, v := a.Curve(metric)
		for j := range s {
			curves[i][s[j]] = v[j]
		}
	}
	steps, _ := arms[0].Curve(metric)
	every := max(1, len(steps)/max(points, 1))
	for j, s := range steps {
		if j%every != 0 && j != len(steps)-1 {
			continue
		}
		fmt.Fprintf(&b, "| %d |", s)
		for i := range arms {
			if vs, ok := curves[i][s]; ok {
				fmt.Fprintf(&b, " %s |", FmtCI(stats.MeanCI95(vs)))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Spearman is the rank correlation of x and y (average ranks for ties);
// NaN for fewer than three pairs or a constant side.
func Spearman(x, y []float64) float64 {
	if len(x) != len(y) || len(x) < 3 {
		return math.NaN()
	}
	rx, ry := ranks(x), ranks(y)
	return pearson(rx, ry)
}

func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// DefaultDiagnostics are the signals RAGEN-2 correlates with success.
var DefaultDiagnostics = []string{
	"collapse_first_turn_sample/retrieval_accuracy",
	"collapse_first_turn_sample/mi_zscore_ema",
	"collapse_first_turn_sample/mi_estimate",
	"collapse_first_turn_sample/conditional_entropy_est",
	"actor/entropy",
	"train/rationale_correct",
	"collapse_first_turn_sample/retrieved_wrong",
}

// Correlations is the markdown table of the Spearman correlation, across
// runs, of each diagnostic's late value (Run.Late) with outcome's final
// value; diagnostics no run logged are left out.
func Correlations(runs []Run, outcome string, diagnostics []string) string {
	var b strings.Builder
	b.WriteString("| diagnostic (mean of its last quarter) | Spearman ρ with final " + outcome + " | runs |\n|---|---|---|\n")
	rows := 0
	for _, d := range diagnostics {
		var xs, ys []float64
		for _, r := range runs {
			x, okx := r.Late(d)
			y, oky := r.Final(outcome)
			if okx && oky {
				xs, ys = append(xs, x), append(ys, y)
			}
		}
		if len(xs) == 0 {
			continue
		}
		rho := Spearman(xs, ys)
		cell := "n/a"
		if !math.IsNaN(rho) {
			cell = fmt.Sprintf("%+.2f", rho)
		}
		fmt.Fprintf(&b, "| %s | %s | %d |\n", d, cell, len(xs))
		rows++
	}
	if rows == 0 {
		return ""
	}
	return b.String()
}

// LoadAll loads every directory, failing on the first that is not a
// finished run.
func LoadAll(dirs []string) ([]Run, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no run directories")
	}
	runs := make([]Run, 0, len(dirs))
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// GradientTable is the gradient analysis of arms (grad/… metrics, see
// analysis.gradient_every): for every reward-std bucket, the mean over
// measurements and seeds of the bucket's reward std and of the norms of
// the task, entropy and KL gradient terms. Empty when no run measured.
func GradientTable(arms []Arm) string {
	var b strings.Builder
	rows := 0
	for _, a := range arms {
		for k := 1; ; k++ {
			q := fmt.Sprintf("q%d", k)
			var sums [4]float64
			n := 0
			for _, r := range a.Runs {
				for _, row := range r.Rows {
					std, ok := row["grad/reward_std/"+q]
					if !ok {
						continue
					}
					sums[0] += std
					sums[1] += row["grad/task_norm/"+q]
					sums[2] += row["grad/entropy_norm/"+q]
					sums[3] += row["grad/kl_norm/"+q]
					n++
				}
			}
			if n == 0 {
				break
			}
			if rows == 0 {
				b.WriteString("| arm | bucket | reward std | task-gradient norm | entropy-gradient norm | KL-gradient norm | measurements |\n|---|---|---|---|---|---|---|\n")
			}
			f := float64(n)
			fmt.Fprintf(&b, "| %s | %s | %.3f | %.4f | %.4f | %.4f | %d |\n", a.Label, q, sums[0]/f, sums[1]/f, sums[2]/f, sums[3]/f, n)
			rows++
		}
	}
	return b.String()
}
