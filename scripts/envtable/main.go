// Command envtable trains every shipped config for a few seeds and writes
// the README's per-environment table: validation success of the random
// policy, of the warm start and at the end of the config's RL steps (mean
// over seeds, with each seed's value), and the wall time of each part.
//
//	go run ./scripts/envtable                      # every configs/*.yaml, 3 seeds
//	go run ./scripts/envtable -seeds 1 configs/webshop.yaml
//	go run ./scripts/envtable -readme README.md    # also replace the table there
//
// Every run is an ordinary trainer run (printed before it starts) in its
// own directory under -out, with checkpoint.resume off and a warm-start
// cache of its own, emptied first, so every number is rebuilt from scratch
// as on a fresh clone. With -readme, the rows of configs not named keep
// their values, so one environment can be measured again alone.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// summary is the part of a run's summary.json the table reads.
type summary struct {
	Status        string  `json:"status"`
	Steps         int     `json:"steps"`
	WallTime      float64 `json:"wall_time_s"`
	WarmStartTime float64 `json:"warm_start_time_s"`
	Levels        int     `json:"validation_levels"`
	Samples       int     `json:"validation_samples"`
	Random        rate    `json:"random"`
	WarmStart     rate    `json:"warm_start"`
	Final         rate    `json:"final"`
}

type rate struct {
	Success *float64 `json:"success"`
}

func (r rate) value() float64 {
	if r.Success == nil {
		return math.NaN()
	}
	return *r.Success
}

const (
	beginMarker = "<!-- envtable:begin (go run ./scripts/envtable -readme README.md) -->"
	endMarker   = "<!-- envtable:end -->"
)

func main() {
	seeds := flag.Int("seeds", 3, "seeds per config (run.seed = 1..N)")
	out := flag.String("out", "runs/envtable", "parent directory of the runs")
	readme := flag.String("readme", "", "file whose table between the envtable markers is replaced")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./scripts/envtable [-seeds N] [-out DIR] [-readme FILE] [config.yaml ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *seeds, *out, *readme, flag.Args()); err != nil {
		slog.Error("envtable", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, seeds int, out, readme string, configs []string) error {
	if seeds < 1 {
		return fmt.Errorf("-seeds: must be at least 1, got %d", seeds)
	}
	if len(configs) == 0 {
		all, err := filepath.Glob("configs/*.yaml")
		if err != nil {
			return err
		}
		for _, c := range all {
			if !strings.HasSuffix(c, "-vllm.yaml") { // those need a server
				configs = append(configs, c)
			}
		}
		if len(configs) == 0 {
			return errors.New("no configs/*.yaml here: run from the repository root or name the configs")
		}
	}
	bin := filepath.Join(out, "trainer")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./trainer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./trainer: %w", err)
	}
	// A cache of its own, emptied first, so that every warm start is built
	// and timed as on a fresh clone.
	cache := filepath.Join(out, "cache")
	if err := os.RemoveAll(cache); err != nil {
		return err
	}
	var rows []string
	for _, cfg := range configs {
		name := strings.TrimSuffix(filepath.Base(cfg), filepath.Ext(cfg))
		var sums []summary
		for seed := 1; seed <= seeds; seed++ {
			dir := filepath.Join(out, fmt.Sprintf("%s-seed%d", name, seed))
			args := []string{"-config", cfg, "-out", dir, "-set", fmt.Sprintf("run.seed=%d", seed), "-set", "checkpoint.resume=false",
				"-set", "warm_start.cache_dir=" + cache}
			fmt.Fprintf(os.Stderr, "\n$ go run ./trainer %s\n", strings.Join(args, " "))
			cmd := exec.CommandContext(ctx, bin, args...)
			var logs bytes.Buffer
			cmd.Stdout, cmd.Stderr = os.Stderr, &logs
			if err := cmd.Run(); err != nil {
				os.Stderr.Write(logs.Bytes())
				return fmt.Errorf("%s seed %d: %w", cfg, seed, err)
			}
			s, err := readSummary(dir)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", cfg, seed, err)
			}
			sums = append(sums, s)
		}
		rows = append(rows, row(cfg, sums))
	}
	if readme != "" {
		// Rows of configs not run this time stay as they were.
		old, err := readTable(readme)
		if err != nil {
			return err
		}
		rows = mergeRows(old, rows)
	}
	table := tableText(seeds, rows)
	fmt.Println(table)
	if readme != "" {
		return replaceTable(readme, table)
	}
	return nil
}

// rowName is the config name a table row starts with ("| [name](…").
func rowName(row string) string {
	name, _, ok := strings.Cut(strings.TrimPrefix(row, "| ["), "](")
	if !ok || !strings.HasPrefix(row, "| [") {
		return ""
	}
	return name
}

// readTable returns the rows of the table between the markers in file.
func readTable(file string) ([]string, error) {
	s, i, j, err := tableBlock(file)
	if err != nil {
		return nil, err
	}
	var rows []string
	for _, line := range strings.Split(s[i:j], "\n") {
		if rowName(line) != "" {
			rows = append(rows, line)
		}
	}
	return rows, nil
}

// mergeRows replaces the rows of old that fresh has again, adds the others,
// and sorts by config name.
func mergeRows(old, fresh []string) []string {
	byName := map[string]string{}
	for _, r := range old {
		byName[rowName(r)] = r
	}
	for _, r := range fresh {
		byName[rowName(r)] = r
	}
	out := make([]string, 0, len(byName))
	for _, r := range byName {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(rowName(a), rowName(b)) })
	return out
}

func readSummary(dir string) (summary, error) {
	var s summary
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("summary.json: %w", err)
	}
	if s.Status != "finished" {
		return s, fmt.Errorf("run ended %q", s.Status)
	}
	return s, nil
}

// row is one config's line: each rate as the mean over seeds followed by
// the seeds' values, and the median wall times.
func row(cfg string, sums []summary) string {
	cell := func(get func(summary) float64) string {
		var vals []string
		sum, n := 0.0, 0
		for _, s := range sums {
			v := get(s)
			if math.IsNaN(v) {
				vals = append(vals, "n/a")
				continue
			}
			vals = append(vals, fmt.Sprintf("%.2f", v))
			sum += v
			n++
		}
		if n == 0 {
			return "n/a"
		}
		if len(sums) == 1 {
			return fmt.Sprintf("%.3f", sum)
		}
		return fmt.Sprintf("**%.3f** (%s)", sum/float64(n), strings.Join(vals, ", "))
	}
	median := func(get func(summary) float64) time.Duration {
		v := make([]float64, len(sums))
		for i, s := range sums {
			v[i] = get(s)
		}
		slices.Sort(v)
		return time.Duration(v[len(v)/2] * float64(time.Second)).Round(time.Second)
	}
	warm := median(func(s summary) float64 { return s.WarmStartTime })
	rl := median(func(s summary) float64 { return s.WallTime - s.WarmStartTime })
	warmText := warm.String()
	name := strings.TrimSuffix(filepath.Base(cfg), filepath.Ext(cfg))
	return fmt.Sprintf("| [%s](%s) | %s | %s | %s | %d × %d | %s | %s |", name, filepath.ToSlash(cfg),
		cell(func(s summary) float64 { return s.Random.value() }),
		cell(func(s summary) float64 { return s.WarmStart.value() }),
		cell(func(s summary) float64 { return s.Final.value() }),
		sums[0].Steps, sums[0].Levels*max(sums[0].Samples, 1), warmText, rl)
}

func tableText(seeds int, rows []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", beginMarker)
	mean := "mean of %d seeds (each seed)"
	if seeds == 1 {
		mean = "%d seed"
	}
	fmt.Fprintf(&b, "Validation success, "+mean+"; wall times are medians, on 2 cores.\n\n", seeds)
	b.WriteString("| config | random policy | after warm start | after RL | RL steps × val. episodes | warm start | RL (incl. validation) |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString(endMarker)
	return b.String()
}

// replaceTable writes table over the lines from beginMarker to endMarker in
// file, or fails if the markers are missing.
func replaceTable(file, table string) error {
	s, i, j, err := tableBlock(file)
	if err != nil {
		return err
	}
	return os.WriteFile(file, []byte(s[:i]+table+s[j+len(endMarker):]), 0o644)
}

// tableBlock reads file and finds its markers: the text, where beginMarker
// starts and where endMarker starts.
func tableBlock(file string) (text string, begin, end int, err error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", 0, 0, err
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		return "", 0, 0, fmt.Errorf("%s: no %q … %q block to replace", file, beginMarker, endMarker)
	}
	return s, i, j, nil
}
