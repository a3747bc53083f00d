package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/internal/report"
)

// runReport summarises finished run directories: arms over seeds, curves
// with 95% intervals, and how the diagnostics rank-correlate with success.
func runReport(_ context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(s.err)
	var (
		metric    = fs.String("metric", "val-env/success", "the outcome metric the tables compare")
		threshold = fs.Float64("threshold", 0.85, "value of -metric for the steps-to-threshold column")
		points    = fs.Int("points", 10, "rows of the curve table")
		plotPath  = fs.String("plot", "", "also draw the curves with their bands into this PNG")
		diag      = fs.String("diagnostics", strings.Join(report.DefaultDiagnostics, ","), "comma-separated metrics to correlate with the final -metric across runs")
		truth     = fs.String("truth", "train/rationale_correct", "the reasoning's ground truth the MI proxies and entropies are checked against, across and within runs")
	)
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer report [-metric M] [-threshold X] [-plot FILE] RUN_DIR...")
		fmt.Fprintln(s.err, "Runs whose settings differ only in run.seed form one arm.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() == 0 {
		return usageErrorf("give one or more run directories")
	}
	var dirs []string
	for _, a := range fs.Args() {
		matches, err := filepath.Glob(a)
		if err != nil || len(matches) == 0 {
			matches = []string{a}
		}
		dirs = append(dirs, matches...)
	}
	runs, err := report.LoadAll(dirs)
	if err != nil {
		return err
	}
	arms := report.Arms(runs)
	fmt.Fprintf(s.out, "%d runs in %d arms; %s (mean ± 95%% interval over seeds)\n\n", len(runs), len(arms), *metric)
	fmt.Fprint(s.out, report.Table(arms, *metric, *threshold))
	fmt.Fprintf(s.out, "\n%s along the runs:\n\n", *metric)
	fmt.Fprint(s.out, report.CurveTable(arms, *metric, *points))
	if g := report.GradientTable(arms); g != "" {
		fmt.Fprintf(s.out, "\nGradient terms by reward-std bucket (q1 lowest), means over measurements and seeds:\n\n%s", g)
	}
	if d := report.DiagnosticsTable(arms); d != "" {
		fmt.Fprintf(s.out, "\nCollapse diagnostics (late means over seeds) and the collapse alarm's regimes:\n\n%s", d)
	}
	if c := report.Correlations(runs, *metric, strings.Split(*diag, ",")); c != "" {
		fmt.Fprintf(s.out, "\nAcross all %d runs:\n\n%s", len(runs), c)
	}
	if g := report.GroundTruthTable(runs, *truth, report.GroundTruthDiagnostics); g != "" {
		fmt.Fprintf(s.out, "\nAgainst the ground truth %s:\n\n%s", *truth, g)
	}
	if *plotPath != "" {
		if err := report.Plot(arms, *metric, *metric+", mean and 95% band over seeds", *plotPath); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "\nplot: %s\n", *plotPath)
	}
	return nil
}
