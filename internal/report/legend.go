package report

import (
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// SaveWithLegend writes p as a PNG of width w whose plot area is h high,
// with leg drawn below it, outside the data: a legend inside the axes
// hides the curves it names wherever they pass. The image grows by the
// legend's height.
func SaveWithLegend(p *plot.Plot, leg plot.Legend, w, h vg.Length, path string) error {
	leg.Top, leg.Left = true, true
	pad := vg.Points(6)
	legH := leg.Rectangle(draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: w, Y: h}}}).Size().Y
	if legH > 0 {
		// Whole pixels, so that the plot above is drawn on the pixel grid
		// it has without a legend.
		px := vg.Inch / vgimg.DefaultDPI
		legH = vg.Length(math.Ceil(float64((legH+2*pad)/px))) * px
	}
	img := vgimg.New(w, h+legH)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, 0, legH, 0))
	if legH > 0 {
		area := dc
		area.Max.Y = dc.Min.Y + legH - pad
		area.Min.X += 4 * pad
		leg.Draw(area)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
