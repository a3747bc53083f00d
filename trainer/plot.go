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

	"github.com/agentrl/agentrl/internal/report"
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
	smooth := fs.Float64("smooth", 0.6, "weight of the exponential moving average drawn over each curve, in [0, 1) (0: raw curves only); the raw curve stays as a faint line")
	fs.Usage = func() {
		fmt.Fprintln(s.err, "usage: trainer plot [-out DIR] [-smooth W] RUN_DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return parseError(err)
	}
	if fs.NArg() != 1 {
		return usageErrorf("give one run directory")
	}
	if *smooth < 0 || *smooth >= 1 {
		return usageErrorf("-smooth %v: want a weight in [0, 1)", *smooth)
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
		drawn, err := drawFigure(f, rows, *smooth, path)
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

// drawFigure writes one PNG with a line per series that has data,
// smoothed with an EMA of weight smooth over its raw values drawn faintly,
// and the legend below the axes; it reports false (and writes nothing)
// when no series has any.
func drawFigure(f figure, rows []map[string]float64, smooth float64, path string) (bool, error) {
	p := plot.New()
	p.Title.Text = f.title
	p.X.Label.Text = "step"
	leg := plot.NewLegend()
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
		col := palette[i%len(palette)]
		var dashes []vg.Length
		if strings.Contains(name, "chance") || strings.Contains(name, "random") {
			dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		if smooth > 0 && len(pts) > 2 {
			raw, err := plotter.NewLine(pts)
			if err != nil {
				return false, err
			}
			raw.Color = color.NRGBA{col.R, col.G, col.B, 70}
			raw.Width = vg.Points(1)
			raw.Dashes = dashes
			p.Add(raw)
			ys := make([]float64, len(pts))
			for j, pt := range pts {
				ys[j] = pt.Y
			}
			smoothed := make(plotter.XYs, len(pts))
			for j, y := range report.EMA(ys, smooth) {
				smoothed[j] = plotter.XY{X: pts[j].X, Y: y}
			}
			pts = smoothed
			p.Title.Text = fmt.Sprintf("%s (EMA %.2g, raw faint)", f.title, smooth)
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return false, err
		}
		line.Color = col
		line.Width = vg.Points(1.5)
		line.Dashes = dashes
		p.Add(line)
		if len(pts) == 1 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return false, err
			}
			sc.Color = line.Color
			p.Add(sc)
		}
		leg.Add(name, line)
		drawn = true
	}
	if !drawn {
		return false, nil
	}
	return true, report.SaveWithLegend(p, leg, 8*vg.Inch, 4.5*vg.Inch, path)
}
