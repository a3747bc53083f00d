package algos

import (
	"math"
	"testing"
)

func TestInputDependenceByHand(t *testing.T) {
	// MI at half its ceiling log 8; retrieval 0.5625 against chance 1/8:
	// (0.5625 − 0.125)/(1 − 0.125) = 0.5.
	r := RegimeReading{MI: math.Log(8) / 2, MIUpper: math.Log(8), Retrieval: 0.5625, Chance: 0.125}
	approx(t, "d", r.Dependence(), 0.5)
	// Negative MI and below-chance retrieval count as none; above the
	// ceiling as full.
	approx(t, "d", RegimeReading{MI: -0.1, MIUpper: 2, Retrieval: 0.05, Chance: 0.125}.Dependence(), 0)
	approx(t, "d", RegimeReading{MI: 3, MIUpper: 2, Retrieval: 1, Chance: 0.125}.Dependence(), 1)
}

// reading has input dependence d (both proxies at d) and entropy h.
func reading(d, h float64) RegimeReading {
	return RegimeReading{MI: d * math.Log(8), MIUpper: math.Log(8), Retrieval: 0.125 + d*0.875, Chance: 0.125, Entropy: h, Valid: 1}
}

func TestRegimeTrackerHysteresis(t *testing.T) {
	tr := NewRegimeTracker()
	steps := []struct {
		d, h    float64
		want    Regime
		changed bool
	}{
		{0.9, 0.5, RegimeDiverse, true},             // the first reading sets the levels
		{0.1, 0.5, RegimeDiverse, false},            // one low reading: patience 2
		{0.1, 0.5, RegimeTemplateCollapse, true},    // the second: input dependence is low
		{0.4, 0.5, RegimeTemplateCollapse, false},   // inside the band: no change
		{0.6, 0.5, RegimeTemplateCollapse, false},   // one high reading
		{0.6, 0.5, RegimeDiverse, true},             // recovered
		{0.6, 0.05, RegimeDiverse, false},           // entropy falls…
		{0.6, 0.05, RegimeCompressed, true},         // …to compressed reasoning
		{0.2, 0.05, RegimeCompressed, false},        //
		{0.2, 0.05, RegimeLowEntropyCollapse, true}, // and then both low
	}
	for i, s := range steps {
		got, changed := tr.Observe(reading(s.d, s.h))
		if got != s.want || changed != s.changed {
			t.Fatalf("reading %d (d %.2f, H %.2f): %s changed %v, want %s changed %v", i, s.d, s.h, got, changed, s.want, s.changed)
		}
	}
	if tr.Readings != len(steps) {
		t.Errorf("%d readings counted", tr.Readings)
	}
}

func TestRegimeTrackerDoesNotFlap(t *testing.T) {
	// Readings that cross the low threshold every other time never make
	// two in a row beyond it.
	tr := NewRegimeTracker()
	tr.Observe(reading(0.9, 0.5))
	for i := range 20 {
		d := 0.24
		if i%2 == 1 {
			d = 0.26
		}
		if got, changed := tr.Observe(reading(d, 0.5)); got != RegimeDiverse || changed {
			t.Fatalf("reading %d (d %.2f): %s, changed %v", i, d, got, changed)
		}
	}
}

func TestRegimeFirstReadingUsesTheMidpoint(t *testing.T) {
	for _, c := range []struct {
		d, h float64
		want Regime
	}{{0.4, 0.25, RegimeDiverse}, {0.3, 0.25, RegimeTemplateCollapse}, {0.4, 0.15, RegimeCompressed}, {0.3, 0.15, RegimeLowEntropyCollapse}} {
		if got, _ := NewRegimeTracker().Observe(reading(c.d, c.h)); got != c.want {
			t.Errorf("first reading d %.2f H %.2f: %s, want %s", c.d, c.h, got, c.want)
		}
	}
}

func TestReadingFromMetrics(t *testing.T) {
	m := map[string]float64{"p/mi_estimate": 1, "p/mi_upper_bound": 2, "p/retrieval_accuracy": 0.5, "p/retrieval_chance_level": 0.125, "p/conditional_entropy_est": 0.2}
	got, ok := ReadingFromMetrics(m, "p")
	if !ok || got != (RegimeReading{MI: 1, MIUpper: 2, Retrieval: 0.5, Chance: 0.125, Entropy: 0.2, Valid: 1}) {
		t.Errorf("reading %+v %v", got, ok)
	}
	delete(m, "p/retrieval_accuracy")
	if _, ok := ReadingFromMetrics(m, "p"); ok {
		t.Error("a reading without retrieval accuracy")
	}
	m["p/retrieval_accuracy"] = math.NaN()
	if _, ok := ReadingFromMetrics(m, "p"); ok {
		t.Error("a NaN reading")
	}
	for _, c := range []RegimeConfig{
		{DependenceHigh: 0.2, DependenceLow: 0.3, EntropyHigh: 1, EntropyLow: 0, Patience: 1},
		{DependenceHigh: 0.5, DependenceLow: 0.2, EntropyHigh: 0.1, EntropyLow: 0.1, Patience: 1},
		{DependenceHigh: 0.5, DependenceLow: 0.2, EntropyHigh: 1, EntropyLow: 0, Patience: 0},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := DefaultRegimeConfig().Validate(); err != nil {
		t.Error(err)
	}
}

// TestRegimeIncoherent: the scoring sweep's entropy blow-up (random
// tokens, 2% well-formed reasoning, the valid chains still input-dependent)
// is incoherent, not diverse; coherence comes back through the band.
func TestRegimeIncoherent(t *testing.T) {
	tr := NewRegimeTracker()
	tr.Observe(reading(0.94, 0.0))
	blowup := reading(0.62, 5.7)
	blowup.Valid = 0.02
	for i, want := range []Regime{RegimeCompressed, RegimeIncoherent, RegimeIncoherent} {
		if got, _ := tr.Observe(blowup); got != want {
			t.Fatalf("blow-up reading %d: %s, want %s", i, got, want)
		}
	}
	if !RegimeIncoherent.Collapsed() || RegimeIncoherent.Code() != 5 {
		t.Error("incoherent is not a collapse")
	}
	mid := reading(0.94, 0.0)
	mid.Valid = 0.7 // inside the band: stays incoherent
	for range 3 {
		if got, _ := tr.Observe(mid); got != RegimeIncoherent {
			t.Fatalf("inside the band: %s", got)
		}
	}
	healthy := reading(0.94, 0.0)
	tr.Observe(healthy)
	if got, _ := tr.Observe(healthy); got != RegimeCompressed {
		t.Errorf("after two coherent readings: %s", got)
	}
	m := map[string]float64{"p/mi_estimate": 1, "p/mi_upper_bound": 2, "p/retrieval_accuracy": 0.5, "p/retrieval_chance_level": 0.125,
		"p/conditional_entropy_est": 0.2, "collapse/valid_thinking_rate": 0.3}
	if r, _ := ReadingFromMetrics(m, "p"); r.Valid != 0.3 {
		t.Errorf("valid rate read as %v", r.Valid)
	}
}
