package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/stats"
)

// summaryFile holds the end-of-run summary, for scripts.
const summaryFile = "summary.json"

// Summary is what a run reports when it ends: validation success with 95%
// Wilson intervals over the validation levels, against the random-policy
// and warm-start baselines measured on the same levels.
type Summary struct {
	Status   string  `json:"status"` // finished, stopped early: …, interrupted
	Steps    int     `json:"steps"`  // RL steps completed
	WallTime float64 `json:"wall_time_s"`
	// WarmStartTime is the part of WallTime spent building the warm start
	// (0 when it came from the cache or the run resumed).
	WarmStartTime float64 `json:"warm_start_time_s"`
	// ValidationLevels is the number of held-out levels, and
	// ValidationSamples the episodes played on each (by the random
	// baseline too).
	ValidationLevels  int `json:"validation_levels"`
	ValidationSamples int `json:"validation_samples"`
	// Random, WarmStart, Best and Final are validation success rates (NaN,
	// written as null, when not measured).
	Random    Rate `json:"random"`
	WarmStart Rate `json:"warm_start"`
	Best      Rate `json:"best"`
	Final     Rate `json:"final"`
	// FailedGroups counts the groups the run dropped because an episode
	// in them failed (a policy or environment error, past its retries).
	FailedGroups int    `json:"failed_groups"`
	RunDir       string `json:"run_dir"`
	Checkpoint   string `json:"checkpoint"`
}

// Rate is a success rate at a step with its 95% interval.
type Rate struct {
	Step    int      `json:"step"`
	Success *float64 `json:"success"`
	Low     *float64 `json:"ci_low"`
	High    *float64 `json:"ci_high"`
}

func newRate(step int, p float64, n int) Rate {
	if math.IsNaN(p) {
		return Rate{Step: step}
	}
	lo, hi := stats.Wilson(p, n)
	return Rate{Step: step, Success: &p, Low: &lo, High: &hi}
}

// String formats the rate with its interval, or n/a when not measured.
func (r Rate) String() string {
	if r.Success == nil {
		return "n/a (not measured)"
	}
	return fmt.Sprintf("%.3f  [%.3f, %.3f]", *r.Success, *r.Low, *r.High)
}

// summary computes the run's summary from its metrics file (which holds
// the steps of every session of the run).
func (s *session) summary(wall time.Duration, status string) (Summary, error) {
	rows, err := ReadMetrics(s.cfg.Run.Out)
	if err != nil {
		return Summary{}, err
	}
	levels, samples := len(s.valSeeds), s.cfg.Validation.Samples
	n := levels * samples
	sum := Summary{Status: status, Steps: s.state.Step, WallTime: wall.Seconds(), WarmStartTime: s.warmStartTime.Seconds(), ValidationLevels: levels, ValidationSamples: samples,
		Random: newRate(0, s.state.RandomValSuccess, n), WarmStart: newRate(0, s.state.WarmStartValSuccess, n),
		Best: Rate{}, Final: Rate{}, RunDir: s.cfg.Run.Out, Checkpoint: filepath.Join(s.cfg.Run.Out, checkpointsDir, latestCheckpoint)}
	best, bestStep, final, finalStep := math.NaN(), 0, math.NaN(), 0
	for _, r := range rows {
		if f := r["rollout/failed_groups"]; f > 0 {
			sum.FailedGroups += int(f)
		}
		v, ok := r["val-env/success"]
		if !ok || math.IsNaN(v) {
			continue
		}
		step := int(r["step"])
		if math.IsNaN(best) || v > best {
			best, bestStep = v, step
		}
		final, finalStep = v, step
	}
	sum.Best, sum.Final = newRate(bestStep, best, n), newRate(finalStep, final, n)
	return sum, nil
}

// summarize prints the summary and writes summary.json; a failure to do so
// is logged, not returned (the run itself is saved).
func (s *session) summarize(wall time.Duration, status string) {
	sum, err := s.summary(wall, status)
	if err == nil {
		err = writeJSON(filepath.Join(s.cfg.Run.Out, summaryFile), sum)
	}
	if err != nil {
		s.log.Warn("run summary", "err", err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nrun %s after %d of %d steps, %s", status, sum.Steps, s.cfg.Run.Steps, wall.Round(time.Second))
	if s.warmStartTime > 0 {
		fmt.Fprintf(&b, " (warm start %s)", s.warmStartTime.Round(time.Second))
	}
	fmt.Fprintln(&b)
	if sum.ValidationLevels > 0 {
		episodes := fmt.Sprintf("%d held-out levels", sum.ValidationLevels)
		if sum.ValidationSamples > 1 {
			episodes += fmt.Sprintf(" × %d episodes", sum.ValidationSamples)
		}
		fmt.Fprintf(&b, "validation success on %s (95%% interval):\n", episodes)
		for _, r := range []struct {
			label string
			rate  Rate
		}{{"random policy", sum.Random}, {"warm start", sum.WarmStart},
			{fmt.Sprintf("best (step %d)", sum.Best.Step), sum.Best}, {fmt.Sprintf("final (step %d)", sum.Final.Step), sum.Final}} {
			fmt.Fprintf(&b, "  %-18s %s\n", r.label, r.rate)
		}
	}
	if sum.FailedGroups > 0 {
		fmt.Fprintf(&b, "dropped     %d groups with a failed episode (policy or environment errors; rollout/failed_groups)\n", sum.FailedGroups)
	}
	fmt.Fprintf(&b, "checkpoint  %s\n", sum.Checkpoint)
	fmt.Fprintf(&b, "metrics     %s (TensorBoard: %s)\n", filepath.Join(sum.RunDir, metricsFile), filepath.Join(sum.RunDir, eventsDir))
	fmt.Fprintf(&b, "next:\n")
	fmt.Fprintf(&b, "  go run ./trainer plot %s\n", sum.RunDir)
	if rw, ok := s.learner.(RemoteWeights); ok {
		fmt.Fprintf(&b, "  (%s)\n", rw.WeightsNote(sum.Checkpoint))
	} else {
		fmt.Fprintf(&b, "  go run ./trainer eval -config %s -checkpoint %s\n", s.configPath, sum.Checkpoint)
		fmt.Fprintf(&b, "  go run ./trainer serve -checkpoint %s\n", sum.Checkpoint)
	}
	if status == "interrupted" {
		fmt.Fprintf(&b, "  (the same train command resumes at step %d)\n", sum.Steps+1)
	}
	fmt.Fprint(s.console, b.String())
}

// writeJSON writes v as indented JSON, atomically.
func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicdir.WriteFile(path, append(raw, '\n'), 0o644)
}

// legacyElapsed fills the elapsed times of a checkpoint written before
// the state kept them, from the run's summary.json when that summary is of
// the checkpoint's step (a finished or interrupted session that saved it);
// otherwise they stay 0 and the summary counts this session only.
func (t *Trainer) legacyElapsed(st *State) {
	raw, err := os.ReadFile(filepath.Join(t.cfg.Run.Out, summaryFile))
	if err != nil {
		return
	}
	var sum Summary
	if json.Unmarshal(raw, &sum) != nil || sum.Steps != st.Step {
		return
	}
	st.ElapsedS, st.WarmStartS = sum.WallTime, sum.WarmStartTime
}
