package main

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/agentrl/agentrl/train"
)

// figure is one PNG: a title and the metric series drawn on it.
type figure struct {
	file, title string
	series      []string
}

var figures = []figure{
	{"success.png", "Success rate", []string{"train/success", "val-env/success", "val-env/random_success"}},
	{"return.png", "Episode score", []string{"train/score", "val-env/score"}},
	{"entropy.png", "Policy entropy (nats/token)", []string{"actor/entropy"}},
	{"mi.png", "Mutual information I(X;Z) estimate", []string{"collapse_first_turn_sample/mi_estimate", "collapse_trajectory_sample/mi_estimate"}},
	{"retrieval.png", "Retrieval accuracy (prompt from reasoning)", []string{
		"collapse_first_turn_sample/retrieval_accuracy", "collapse_first_turn_sample/retrieval_chance_level",
		"collapse_trajectory_sample/retrieval_accuracy", "collapse_trajectory_sample/retrieval_chance_level"}},
	{"kept_ratio.png", "SNR filter: kept share of groups", []string{"rollout/filter_kept_ratio", "rollout/in_group_reward_std"}},
}

func runPlot(_ context.Context, args []string, s stdio) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(s.err)
	out := fs.String("out", "", "directory for the PNG files (default RUN_DIR/plots)")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer plot [-out DIR] RUN_DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() != 1 {
		return usageErrorf("give one run directory")
	}
	runDir := fs.Arg(0)
	rows, err := train.ReadMetrics(runDir)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("%s: no metrics yet", runDir)
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join(runDir, "plots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range figures {
		path := filepath.Join(dir, f.file)
		drawn, err := drawFigure(f, rows, path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.file, err)
		}
		if drawn {
			fmt.Fprintln(s.out, path)
		}
	}
	return nil
}

var palette = []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}}

// drawFigure writes one PNG with a line per series that has data; it
// reports false (and writes nothing) when no series has any.
func drawFigure(f figure, rows []map[string]float64, path string) (bool, error) {
	p := plot.New()
	p.Title.Text = f.title
	p.X.Label.Text = "step"
	p.Legend.Top = true
	drawn := false
	for i, name := range f.series {
		var pts plotter.XYs
		for _, r := range rows {
			v, ok := r[name]
			if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: r["step"], Y: v})
		}
		if len(pts) == 0 {
			continue
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return false, err
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		if strings.Contains(name, "chance") || strings.Contains(name, "random") {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(line)
		if len(pts) == 1 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return false, err
			}
			sc.Color = line.Color
			p.Add(sc)
		}
		p.Legend.Add(name, line)
		drawn = true
	}
	if !drawn {
		return false, nil
	}
	return true, p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
