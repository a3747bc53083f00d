package stats

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	// Hand-computed: p = 0.5, n = 100 gives 0.5 ± 0.0961 (center exactly 0.5).
	lo, hi := Wilson(0.5, 100)
	if lo < 0.4038 || lo > 0.4039 || hi < 0.5961 || hi > 0.5962 {
		t.Errorf("Wilson(0.5, 100) = %v, %v; want 0.40383, 0.59617", lo, hi)
	}
	// p = 0, n = 10: [0, z²/(n+z²)] = [0, 0.2775].
	if lo, hi := Wilson(0, 10); lo != 0 || hi < 0.2775 || hi > 0.2776 {
		t.Errorf("Wilson(0, 10) = %v, %v; want 0, 0.27753", lo, hi)
	}
	if lo, hi := Wilson(1, 10); hi != 1 || lo < 0.7224 || lo > 0.7225 {
		t.Errorf("Wilson(1, 10) = %v, %v; want 0.72247, 1", lo, hi)
	}
	if lo, hi := Wilson(0.3, 0); lo != 0 || hi != 1 {
		t.Errorf("no trials: %v, %v", lo, hi)
	}
}

func TestMeanCI95(t *testing.T) {
	m, h := MeanCI95([]float64{0.7, 0.8, 0.9})
	// s = 0.1, n = 3: t(2) = 4.303.
	if math.Abs(m-0.8) > 1e-12 || math.Abs(h-4.303*0.1/math.Sqrt(3)) > 1e-12 {
		t.Errorf("MeanCI95 = %v ± %v", m, h)
	}
	xs := make([]float64, 50)
	for i := range xs {
		xs[i] = float64(i % 2)
	}
	// s² = 50·0.25/49; beyond 30 degrees of freedom the normal quantile.
	if _, h := MeanCI95(xs); math.Abs(h-1.96*math.Sqrt(50*0.25/49/50)) > 1e-12 {
		t.Errorf("n = 50: half-width %v", h)
	}
	if m, h := MeanCI95([]float64{0.5}); m != 0.5 || !math.IsNaN(h) {
		t.Errorf("one value: %v ± %v", m, h)
	}
	if m, _ := MeanCI95(nil); !math.IsNaN(m) {
		t.Errorf("no values: mean %v", m)
	}
}
