// Command credit compares credit-assignment methods on one config: every
// arm (an algo.preset) is trained for every seed, and the validation
// curves are summarised with 95% intervals over seeds, the steps each seed
// needed to reach a success threshold, and the time per step.
//
//	go run ./scripts/credit                                  # 5 arms × 3 seeds on configs/sokoban.yaml
//	go run ./scripts/credit -results docs/results.md          # also rewrite that file's section and plot
//	go run ./scripts/credit -seeds 1 -arms GRPO,CAST -set run.steps=40
//	go run ./scripts/credit -arms 'CAST,CAST-nofilter=CAST+filter.value=1+filter.include_zero=true'
//
// An arm is a preset name, or LABEL=PRESET+KEY=VALUE+… with settings of
// its own on top of the -set ones.
//
// Every run is an ordinary trainer run (printed before it starts) in
// runs/credit/<arm>-seed<N>. Runs of one seed share a warm-start cache,
// so every arm of a seed starts from the same model; a finished run is
// not trained again (its directory resumes and ends at once), so an
// interrupted study continues where it stopped. -fresh starts over;
// -report trains nothing and reports the runs already in -out.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/report"
)

const (
	beginMarker = "<!-- credit:begin (go run ./scripts/credit -results docs/results.md) -->"
	endMarker   = "<!-- credit:end -->"
)

// options are the command line.
type options struct {
	config    string
	arms      []string
	seeds     int
	out       string
	threshold float64
	sets      []string
	results   string
	fresh     bool
	report    bool
}

type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var o options
	var sets setFlags
	arms := flag.String("arms", "GRPO,GiGPO,CAST,PPO,BiLevelPPO", "comma-separated algo.preset names")
	flag.StringVar(&o.config, "config", "configs/sokoban.yaml", "trainer config every arm starts from")
	flag.IntVar(&o.seeds, "seeds", 3, "seeds per arm (run.seed = 1..N)")
	flag.StringVar(&o.out, "out", "runs/credit", "parent directory of the runs")
	flag.Float64Var(&o.threshold, "threshold", 0.85, "validation success for the steps-to-threshold column")
	flag.Var(&sets, "set", "KEY=VALUE passed to every run (repeatable)")
	flag.StringVar(&o.results, "results", "", "markdown file whose section between the credit markers is replaced (the plot goes beside it)")
	flag.BoolVar(&o.fresh, "fresh", false, "delete earlier runs and the warm-start cache first")
	flag.BoolVar(&o.report, "report", false, "train nothing: report the finished runs in -out")
	flag.Parse()
	o.arms, o.sets = strings.Split(*arms, ","), sets
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		slog.Error("credit", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.seeds < 1 {
		return fmt.Errorf("-seeds: must be at least 1, got %d", o.seeds)
	}
	if o.fresh && o.report {
		return errors.New("-fresh and -report are exclusive")
	}
	if o.fresh {
		if err := os.RemoveAll(o.out); err != nil {
			return err
		}
	}
	bin := filepath.Join(o.out, "trainer")
	if !o.report {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./trainer")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./trainer: %w", err)
		}
	}
	var arms []report.Arm
	for _, spec := range o.arms {
		name, preset, own, err := parseArm(spec)
		if err != nil {
			return err
		}
		a := report.Arm{Label: name}
		for seed := 1; seed <= o.seeds; seed++ {
			dir := filepath.Join(o.out, fmt.Sprintf("%s-seed%d", name, seed))
			args := []string{"-config", o.config, "-out", dir, "-set", "algo.preset=" + preset,
				"-set", fmt.Sprintf("run.seed=%d", seed), "-set", "warm_start.cache_dir=" + filepath.Join(o.out, "cache")}
			for _, s := range append(slices.Clone(o.sets), own...) {
				args = append(args, "-set", s)
			}
			if !o.report {
				fmt.Fprintf(os.Stderr, "\n$ go run ./trainer %s\n", strings.Join(args, " "))
				cmd := exec.CommandContext(ctx, bin, args...)
				var logs bytes.Buffer
				cmd.Stdout, cmd.Stderr = os.Stderr, &logs
				if err := cmd.Run(); err != nil {
					os.Stderr.Write(logs.Bytes())
					return fmt.Errorf("%s seed %d: %w", name, seed, err)
				}
			}
			r, err := report.Load(dir)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", name, seed, err)
			}
			a.Runs = append(a.Runs, r)
		}
		arms = append(arms, a)
	}
	cmdline := "go run ./scripts/credit " + commandArgs(o)
	var plotFile string
	if o.results != "" {
		name := strings.TrimSuffix(filepath.Base(o.config), filepath.Ext(o.config))
		plotFile = filepath.Join(filepath.Dir(o.results), "results", "credit-"+name+".png")
		if err := os.MkdirAll(filepath.Dir(plotFile), 0o755); err != nil {
			return err
		}
		if err := report.Plot(arms, metric, "Validation success ("+o.config+"), mean and 95% band over seeds", plotFile); err != nil {
			return err
		}
	}
	text := reportText(arms, o, cmdline, plotFile, o.results)
	fmt.Println(text)
	if o.results != "" {
		return replaceSection(o.results, text)
	}
	return nil
}

// parseArm splits an arm into its label, preset and own settings:
// "GRPO" or "LABEL=PRESET+KEY=VALUE+…".
func parseArm(spec string) (label, preset string, sets []string, err error) {
	label, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return spec, spec, nil, nil
	}
	parts := strings.Split(rest, "+")
	for _, s := range parts[1:] {
		if !strings.Contains(s, "=") {
			return "", "", nil, fmt.Errorf("arm %q: setting %q is not KEY=VALUE", spec, s)
		}
	}
	if label == "" || parts[0] == "" || strings.ContainsAny(label, `/\ `) {
		return "", "", nil, fmt.Errorf("arm %q: want PRESET or LABEL=PRESET+KEY=VALUE+…", spec)
	}
	return label, parts[0], parts[1:], nil
}

// commandArgs renders the options that differ from the defaults.
func commandArgs(o options) string {
	var parts []string
	if o.config != "configs/sokoban.yaml" {
		parts = append(parts, "-config "+o.config)
	}
	if a := strings.Join(o.arms, ","); a != "GRPO,GiGPO,CAST,PPO,BiLevelPPO" {
		parts = append(parts, "-arms "+a)
	}
	if o.seeds != 3 {
		parts = append(parts, fmt.Sprintf("-seeds %d", o.seeds))
	}
	if o.threshold != 0.85 {
		parts = append(parts, fmt.Sprintf("-threshold %v", o.threshold))
	}
	for _, s := range o.sets {
		parts = append(parts, "-set "+s)
	}
	if o.results != "" {
		parts = append(parts, "-results "+o.results)
	}
	return strings.Join(parts, " ")
}

// metric is the curve the study compares.
const metric = "val-env/success"

// report is the markdown section: the command, the summary table, the
// curves at regular steps, and the plot.
func reportText(arms []report.Arm, o options, cmdline string, plotFile, results string) string {
	var b strings.Builder
	total := 0.0
	for _, a := range arms {
		for _, r := range a.Runs {
			total += r.Summary.WallTime
		}
	}
	fmt.Fprintf(&b, "%s\n", beginMarker)
	fmt.Fprintf(&b, "`%s`: %d seed(s) per arm on `%s`; the runs took %s in all on 2 cores (warm starts included, each built once per seed).\n\n",
		cmdline, o.seeds, o.config, (time.Duration(total) * time.Second).Round(time.Second))
	fmt.Fprintf(&b, "Validation success on %d episodes per point; ± is the 95%% interval over seeds (Student's t). "+
		"Start: the warm start (step 0). Curve mean: the mean of every validation point after it (a sample-efficiency measure). "+
		"Steps to threshold: the first validation step at or above %.2f, per seed (— never).\n\n", arms[0].Runs[0].Summary.Episodes(), o.threshold)
	b.WriteString(report.Table(arms, metric, o.threshold))
	b.WriteString("\nValidation curve (mean ± 95% interval over seeds):\n\n")
	b.WriteString(report.CurveTable(arms, metric, 10))
	if plotFile != "" {
		rel, err := filepath.Rel(filepath.Dir(results), plotFile)
		if err != nil {
			rel = plotFile
		}
		fmt.Fprintf(&b, "\n![validation success per arm, mean and 95%% band over seeds](%s)\n", filepath.ToSlash(rel))
	}
	b.WriteString(endMarker)
	return b.String()
}

// replaceSection writes text over the lines from beginMarker to endMarker
// in file, or appends it when the file has no such section.
func replaceSection(file, text string) error {
	raw, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s := string(raw)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	switch {
	case i >= 0 && j > i:
		s = s[:i] + text + s[j+len(endMarker):]
	case i >= 0 || j >= 0:
		return fmt.Errorf("%s: unbalanced credit markers", file)
	default:
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += "\n" + text + "\n"
	}
	return os.WriteFile(file, []byte(s), 0o644)
}
