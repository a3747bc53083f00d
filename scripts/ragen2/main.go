// Command ragen2 runs the whole RAGEN-2 study at small scale, one
// experiment after another (internal/study/ragen2.Suite): filtering, the
// induced-collapse sweep with the gradient analysis, the FrozenLake slip
// sweep, single-turn collapse, the MI-proxy stability sweep and the
// think-budget sweep. Every experiment is also a script of its own
// (scripts/NAME); this one shares one warm-start cache among them, so
// every arm of a seed and config starts from the same model, and reports
// the time each experiment took. Sized to fit 2 hours on 2 cores; -quick
// fits 15 minutes.
//
//	go run ./scripts/ragen2 -results docs/results.md          # everything
//	go run ./scripts/ragen2 -quick                             # 1 seed, 30 steps each
//	go run ./scripts/ragen2 -only collapse,slip                # some experiments
//	go run ./scripts/ragen2 -report -results docs/results.md   # rewrite the sections from finished runs
//
// An interrupted suite continues where it stopped: finished runs are not
// trained again.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/study"
	"github.com/agentrl/agentrl/internal/study/ragen2"
)

// options are the suite's command line.
type options struct {
	only, sets         []string
	cache, results     string
	quick, report, fre bool
}

func main() {
	var o options
	var only string
	var sets study.SetFlags
	flag.StringVar(&only, "only", "", "comma-separated experiments to run (default: all of "+strings.Join(names(ragen2.Suite()), ", ")+")")
	flag.StringVar(&o.cache, "cache", "runs/ragen2/cache", "warm-start cache shared by every experiment")
	flag.StringVar(&o.results, "results", "", "markdown file whose sections are replaced (plots go beside it)")
	flag.BoolVar(&o.quick, "quick", false, "each experiment's short version (1 seed, 30 steps)")
	flag.BoolVar(&o.report, "report", false, "train nothing: report the finished runs")
	flag.BoolVar(&o.fre, "fresh", false, "delete earlier runs and the shared cache first")
	flag.Var(&sets, "set", "KEY=VALUE passed to every run (repeatable)")
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
	}
	o.sets = sets
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, ragen2.Suite(), o, os.Stdout); err != nil {
		slog.Error("ragen2", "err", err)
		os.Exit(1)
	}
}

func names(studies []study.Study) []string {
	var out []string
	for _, s := range studies {
		out = append(out, s.Name)
	}
	return out
}

// run runs the selected studies in order, then prints (and writes into
// the results file, section "ragen2") the wall time of each.
func run(ctx context.Context, suite []study.Study, o options, w io.Writer) error {
	for _, n := range o.only {
		if !slices.Contains(names(suite), n) {
			return fmt.Errorf("-only: no experiment %q (have %s)", n, strings.Join(names(suite), ", "))
		}
	}
	if o.fre && o.report {
		return fmt.Errorf("-fresh and -report are exclusive")
	}
	if o.fre {
		if err := os.RemoveAll(o.cache); err != nil {
			return err
		}
	}
	began := time.Now() // for the end-to-end row only: nothing the runs compute reads it
	var b strings.Builder
	b.WriteString("| experiment | command | runs | wall time (warm starts included) |\n|---|---|---|---|\n")
	var total time.Duration
	for _, s := range suite {
		if len(o.only) > 0 && !slices.Contains(o.only, s.Name) {
			continue
		}
		s.Sets = append(append(s.Sets, "warm_start.cache_dir="+o.cache), o.sets...)
		if o.quick {
			study.Quick(&s)
		}
		s.Results, s.ReportOnly, s.Fresh = o.results, o.report, o.fre
		fmt.Fprintf(os.Stderr, "\n=== %s: %d arms × %d seeds × %d configs\n", s.Name, len(s.Arms), s.Seeds, len(s.Configs))
		if err := s.Run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		d, n, err := s.WallTime()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		total += d
		cmd := s.Command
		if o.quick {
			cmd += " -quick"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %d | %s |\n", s.Name, cmd, n, d)
	}
	fmt.Fprintf(&b, "| **all** | | | **%s** |\n", total)
	if !o.report {
		fmt.Fprintf(&b, "| end to end (builds, reports and cached runs included) | `%s` | | %s |\n", suiteCommand(o), time.Since(began).Round(time.Second))
	}
	key, command := "ragen2", "go run ./scripts/ragen2"
	if o.quick {
		key += "-quick"
		command += " -quick"
	}
	text := study.BeginMarker(key, command) + "\n" + b.String() + study.EndMarker(key)
	fmt.Fprintln(w, text)
	// The table is a record of one run of the whole suite: a report
	// (which trains nothing) or a part of the suite does not replace it.
	if o.results != "" && len(o.only) == 0 && !o.report {
		return study.ReplaceSection(o.results, key, command, text)
	}
	return nil
}

// suiteCommand is the command line the end-to-end time was measured with.
func suiteCommand(o options) string {
	parts := []string{"go run ./scripts/ragen2"}
	if o.quick {
		parts = append(parts, "-quick")
	}
	if o.fre {
		parts = append(parts, "-fresh")
	}
	for _, kv := range o.sets {
		parts = append(parts, "-set "+kv)
	}
	return strings.Join(parts, " ")
}
