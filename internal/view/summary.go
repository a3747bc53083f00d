package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/metricsfile"
	"github.com/agentrl/agentrl/internal/stats"
	"github.com/agentrl/agentrl/train"
)

// summaryReply reads the run's config, identity and summary.
func (r *run) summaryReply() (SummaryReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := SummaryReply{Run: r.dir, Identity: json.RawMessage("null"), Summary: json.RawMessage("null")}
	for _, f := range []struct {
		name string
		dst  *json.RawMessage
	}{{identityFile, &out.Identity}, {summaryFile, &out.Summary}} {
		raw, err := os.ReadFile(filepath.Join(r.dir, f.name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return out, err
		case json.Valid(raw):
			*f.dst = raw
		}
	}
	cfg, err := os.ReadFile(filepath.Join(r.dir, configFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return out, err
	}
	out.Config = string(cfg)
	if err := r.metrics.refresh(filepath.Join(r.dir, metricsfile.Name)); err != nil {
		return out, err
	}
	var live bool
	out.Status, live = r.state()
	var sum train.Summary
	if !live && string(out.Summary) != "null" && json.Unmarshal(out.Summary, &sum) == nil && sum.Status != "" {
		c, _ := r.config.get(filepath.Join(r.dir, configFile))
		out.Text = summaryText(sum, c.Run.Steps)
	} else {
		out.Text = r.progressText(out.Status)
	}
	return out, nil
}

// summaryText is the summary as the console prints it when a run ends.
func summaryText(s train.Summary, target int) string {
	var b strings.Builder
	of := ""
	if target > 0 {
		of = fmt.Sprintf(" of %d", target)
	}
	fmt.Fprintf(&b, "run %s after %d%s steps, %s", s.Status, s.Steps, of, (time.Duration(s.WallTime * float64(time.Second))).Round(time.Second))
	if s.WarmStartTime > 0 {
		fmt.Fprintf(&b, " (warm start %s)", (time.Duration(s.WarmStartTime * float64(time.Second))).Round(time.Second))
	}
	b.WriteString("\n")
	if s.ValidationLevels > 0 {
		writeRates(&b, s.ValidationLevels, s.ValidationSamples, []labelledRate{{"random policy", s.Random}, {"warm start", s.WarmStart},
			{fmt.Sprintf("best (step %d)", s.Best.Step), s.Best}, {fmt.Sprintf("final (step %d)", s.Final.Step), s.Final}})
	}
	if s.FailedGroups > 0 {
		fmt.Fprintf(&b, "dropped     %d groups with a failed episode (policy or environment errors; rollout/failed_groups)\n", s.FailedGroups)
	}
	if s.Checkpoint != "" {
		fmt.Fprintf(&b, "checkpoint  %s\n", s.Checkpoint)
	}
	return b.String()
}

type labelledRate struct {
	label string
	rate  train.Rate
}

func writeRates(b *strings.Builder, levels, samples int, rates []labelledRate) {
	episodes := fmt.Sprintf("%d held-out levels", levels)
	if samples > 1 {
		episodes += fmt.Sprintf(" × %d episodes", samples)
	}
	fmt.Fprintf(b, "validation success on %s (95%% interval):\n", episodes)
	for _, r := range rates {
		fmt.Fprintf(b, "  %-18s %s\n", r.label, r.rate)
	}
}

// progressText is the summary of a run that has none (yet), from its
// metrics: its progress and the validation success so far, with the same
// intervals.
func (r *run) progressText(status string) string {
	var b strings.Builder
	c, _ := r.config.get(filepath.Join(r.dir, configFile))
	fmt.Fprintf(&b, "%s: step %d", status, max(r.metrics.lastStep, 0))
	if c.Run.Steps > 0 {
		fmt.Fprintf(&b, " of %d", c.Run.Steps)
	}
	b.WriteString(" (no summary yet; read from the metrics so far)\n")
	n := r.valEpisodes()
	val := r.metrics.cols["val-env/success"]
	if n == 0 || val == nil || len(val.steps) == 0 {
		return b.String()
	}
	rate := func(step int, p float64) train.Rate {
		lo, hi := stats.Wilson(p, n)
		return train.Rate{Step: step, Success: &p, Low: &lo, High: &hi}
	}
	var rates []labelledRate
	if rnd := r.metrics.cols["val-env/random_success"]; rnd != nil && len(rnd.values) > 0 {
		rates = append(rates, labelledRate{"random policy", rate(rnd.steps[0], rnd.values[0])})
	}
	if val.steps[0] == 0 {
		rates = append(rates, labelledRate{"warm start", rate(0, val.values[0])})
	}
	best := 0
	for i, v := range val.values {
		if v > val.values[best] || math.IsNaN(val.values[best]) {
			best = i
		}
	}
	last := len(val.values) - 1
	rates = append(rates, labelledRate{fmt.Sprintf("best (step %d)", val.steps[best]), rate(val.steps[best], val.values[best])},
		labelledRate{fmt.Sprintf("latest (step %d)", val.steps[last]), rate(val.steps[last], val.values[last])})
	levels, samples := c.Validation.Levels, max(c.Validation.Samples, 1)
	if levels == 0 {
		levels, samples = n, 1
	}
	writeRates(&b, levels, samples, rates)
	return b.String()
}
