package report

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/agentrl/agentrl/internal/stats"
)

// palette is one colour per arm.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255},
	{255, 127, 14, 255}, {140, 86, 75, 255}, {23, 190, 207, 255}, {227, 119, 194, 255},
	{127, 127, 127, 255}, {188, 189, 34, 255},
}

// Plot draws every arm's mean curve of metric with its 95% band over
// seeds into a PNG, the arms' legend below the axes.
func Plot(arms []Arm, metric, title, path string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = metric
	leg := plot.NewLegend()
	for i, a := range arms {
		col := palette[i%len(palette)]
		steps, values := a.Curve(metric)
		if len(steps) == 0 {
			continue
		}
		var line, upper, lower plotter.XYs
		for j, s := range steps {
			m, h := stats.MeanCI95(values[j])
			line = append(line, plotter.XY{X: float64(s), Y: m})
			if !math.IsNaN(h) {
				upper = append(upper, plotter.XY{X: float64(s), Y: math.Min(1, m+h)})
				lower = append(lower, plotter.XY{X: float64(s), Y: math.Max(0, m-h)})
			}
		}
		if len(upper) > 1 {
			band := append(plotter.XYs{}, upper...)
			for j := len(lower) - 1; j >= 0; j-- {
				band = append(band, lower[j])
			}
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return err
			}
			poly.Color = color.NRGBA{col.R, col.G, col.B, 36} // not premultiplied: RGBA would need R, G, B ≤ A
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		l, err := plotter.NewLine(line)
		if err != nil {
			return err
		}
		l.Color, l.Width = col, vg.Points(1.5)
		p.Add(l)
		leg.Add(a.Label, l)
	}
	return SaveWithLegend(p, leg, 8*vg.Inch, 4.5*vg.Inch, path)
}
