package report

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestPlotSmoothingEMA(t *testing.T) {
	got := EMA([]float64{2, 4, math.NaN(), 8}, 0.5)
	// Debiased: the weighted means of the points so far, weights 0.5^age.
	want := []float64{2, (0.5*2 + 4) / 1.5, math.NaN(), (0.25*2 + 0.5*4 + 8) / 1.75}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(want[i]) && math.Abs(got[i]-want[i]) > 1e-12) {
			t.Errorf("EMA[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if raw := EMA([]float64{1, 5, 3}, 0); raw[1] != 5 || raw[2] != 3 {
		t.Errorf("weight 0 smooths: %v", raw)
	}
}

func TestPlotLegendOutsideData(t *testing.T) {
	p := plot.New()
	leg := plot.NewLegend()
	for i := range 3 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(i)}, {X: 1, Y: float64(i + 1)}})
		if err != nil {
			t.Fatal(err)
		}
		p.Add(l)
		leg.Add("series", l)
	}
	path := filepath.Join(t.TempDir(), "p.png")
	if err := SaveWithLegend(p, leg, 4*vg.Inch, 3*vg.Inch, path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The legend adds rows below the plot's 3 inches (at 96 dpi).
	b := img.Bounds()
	if b.Dx() != 384 || b.Dy() <= 288 {
		t.Fatalf("image %v, want 384 wide and taller than 288", b)
	}
	// The plot above it is drawn as it is without a legend, pixel for
	// pixel: the legend covers none of it.
	alone := vgimg.New(4*vg.Inch, 3*vg.Inch)
	p.Draw(draw.New(alone))
	want := alone.Image()
	diff := 0
	for y := range 288 {
		for x := range 384 {
			r1, g1, b1, _ := img.At(x, y).RGBA()
			r2, g2, b2, _ := want.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				diff++
			}
		}
	}
	if diff > 0 {
		t.Errorf("%d pixels of the plot differ from the plot drawn alone", diff)
	}
	// And the legend is drawn: the rows below hold dark pixels.
	dark := 0
	for y := 288; y < b.Dy(); y++ {
		for x := range 384 {
			if r, _, _, _ := img.At(x, y).RGBA(); r < 0x4000 {
				dark++
			}
		}
	}
	if dark == 0 {
		t.Error("nothing drawn below the plot")
	}
}
