package stats

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
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
	// s = 0.1, n = 3: t(0.975, 2) = 4.3027.
	if math.Abs(m-0.8) > 1e-12 || math.Abs(h-4.302653*0.1/math.Sqrt(3)) > 1e-6 {
		t.Errorf("MeanCI95 = %v ± %v", m, h)
	}
	if m, h := MeanCI95([]float64{0.5}); m != 0.5 || !math.IsNaN(h) {
		t.Errorf("one value: %v ± %v", m, h)
	}
	if m, _ := MeanCI95(nil); !math.IsNaN(m) {
		t.Errorf("no values: mean %v", m)
	}
}

// TestMeanCI95Quantiles checks the half-width against Student's t at
// small and large degrees of freedom, where a normal approximation would
// be too narrow.
func TestMeanCI95Quantiles(t *testing.T) {
	// Published t(0.975, df), to the table's precision.
	table := map[int]float64{1: 12.706, 2: 4.303, 5: 2.571, 29: 2.045, 30: 2.042, 31: 2.0395, 100: 1.984, 1000: 1.962}
	for _, df := range []int{1, 2, 5, 29, 30, 31, 100, 1000} {
		// n = df+1 values alternating 0 and 1: the half-width is t·s/√n.
		n := df + 1
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i % 2)
		}
		mean, h := MeanCI95(xs)
		ss := 0.0
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		q := h / math.Sqrt(ss/float64(n-1)/float64(n))
		want := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
		if math.Abs(q-want) > 1e-9*want {
			t.Errorf("df %d: quantile %v, want gonum's %v", df, q, want)
		}
		if math.Abs(q-table[df]) > 0.0005 {
			t.Errorf("df %d: quantile %v, want the table's %v", df, q, table[df])
		}
	}
}
