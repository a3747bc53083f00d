package algos

import (
	"fmt"
	"math"
)

// Reasoning regimes: RAGEN-2's four quadrants on the axes within-input
// entropy H(Z|X) and input dependence I(X;Z), judged online from the
// collapse metrics, with hysteresis so that a reading near a threshold
// does not flap:
//
//	                 I(X;Z) high            I(X;Z) low
//	H(Z|X) high      diverse                template collapse
//	H(Z|X) low       compressed             low-entropy collapse
//
// Input dependence is the mean of two proxies, each scaled to [0, 1]:
//
//	d = ½ · ( max(0, Î) / log N  +  max(0, acc − chance) / (1 − chance) )
//
// with Î the per-token MI estimate, log N its ceiling (N distinct prompts)
// and acc the retrieval accuracy (1/N by chance). Entropy is the per-token
// conditional entropy estimate Ĥ(Z|X), in nats. Each axis has a level
// (high or low) that turns high once the reading is at or above its High
// threshold, and low once at or below its Low threshold, Patience readings
// in a row; between the thresholds it keeps its level. The first reading
// sets both levels at the midpoint of the band. The regime is the pair,
// unless too few replies hold well-formed reasoning for the readings to
// mean anything: a third level on collapse/valid_thinking_rate (band
// 0.5 / 0.8) overrides it with "incoherent" (an entropy blow-up into
// random tokens reads as high entropy with input dependence measured on
// the few valid chains left, which would otherwise say "diverse").
//
// The defaults (d: 0.5 / 0.25; Ĥ: 0.3 / 0.1 nats per token) are choices,
// not the paper's: it names the quadrants without thresholds. The entropy
// scale is that of a sampling temperature of 1; a small model trained to
// terse reasoning sits in "compressed", which is healthy.

// Regime is one of the four reasoning regimes ("" before any reading).
type Regime string

// The regimes.
const (
	RegimeDiverse            Regime = "diverse"
	RegimeTemplateCollapse   Regime = "template_collapse"
	RegimeCompressed         Regime = "compressed"
	RegimeLowEntropyCollapse Regime = "low_entropy_collapse"
	// RegimeIncoherent: too few replies hold well-formed reasoning to
	// read the other axes (an entropy blow-up into random tokens, or a
	// policy that stopped thinking).
	RegimeIncoherent Regime = "incoherent"
)

// Code is the regime as a number for metrics: 1 diverse, 2 compressed,
// 3 template collapse, 4 low-entropy collapse, 0 none yet.
func (r Regime) Code() float64 {
	switch r {
	case RegimeDiverse:
		return 1
	case RegimeCompressed:
		return 2
	case RegimeTemplateCollapse:
		return 3
	case RegimeLowEntropyCollapse:
		return 4
	case RegimeIncoherent:
		return 5
	}
	return 0
}

// Collapsed reports whether r is one of the two collapsed regimes.
func (r Regime) Collapsed() bool {
	return r == RegimeTemplateCollapse || r == RegimeLowEntropyCollapse || r == RegimeIncoherent
}

// ParseRegime reads a regime name.
func ParseRegime(s string) (Regime, error) {
	switch r := Regime(s); r {
	case RegimeDiverse, RegimeTemplateCollapse, RegimeCompressed, RegimeLowEntropyCollapse, RegimeIncoherent:
		return r, nil
	}
	return "", fmt.Errorf("algos: unknown regime %q (want diverse, template_collapse, compressed, low_entropy_collapse or incoherent)", s)
}

// RegimeConfig sets the thresholds of the regime classifier.
type RegimeConfig struct {
	DependenceHigh float64 `json:"dependence_high" yaml:"dependence_high"`
	DependenceLow  float64 `json:"dependence_low" yaml:"dependence_low"`
	EntropyHigh    float64 `json:"entropy_high" yaml:"entropy_high"`
	EntropyLow     float64 `json:"entropy_low" yaml:"entropy_low"`
	// ValidLow and ValidHigh band the share of replies with well-formed
	// reasoning: at or below ValidLow the run is incoherent, at or above
	// ValidHigh coherent again.
	ValidLow  float64 `json:"valid_low" yaml:"valid_low"`
	ValidHigh float64 `json:"valid_high" yaml:"valid_high"`
	Patience  int     `json:"patience" yaml:"patience"`
}

// DefaultRegimeConfig returns the defaults of the file comment.
func DefaultRegimeConfig() RegimeConfig {
	return RegimeConfig{DependenceHigh: 0.5, DependenceLow: 0.25, EntropyHigh: 0.3, EntropyLow: 0.1, ValidLow: 0.5, ValidHigh: 0.8, Patience: 2}
}

// Validate checks the thresholds.
func (c RegimeConfig) Validate() error {
	switch {
	case !(c.DependenceLow >= 0 && c.DependenceLow < c.DependenceHigh && c.DependenceHigh <= 1):
		return fmt.Errorf("algos: regime dependence thresholds need 0 ≤ low < high ≤ 1, got %v, %v", c.DependenceLow, c.DependenceHigh)
	case !(c.EntropyLow >= 0 && c.EntropyLow < c.EntropyHigh && !math.IsInf(c.EntropyHigh, 0)):
		return fmt.Errorf("algos: regime entropy thresholds need 0 ≤ low < high, got %v, %v", c.EntropyLow, c.EntropyHigh)
	case !(c.ValidLow >= 0 && c.ValidLow < c.ValidHigh && c.ValidHigh <= 1):
		return fmt.Errorf("algos: regime valid-reasoning thresholds need 0 ≤ low < high ≤ 1, got %v, %v", c.ValidLow, c.ValidHigh)
	case c.Patience < 1:
		return fmt.Errorf("algos: regime patience must be at least 1, got %d", c.Patience)
	}
	return nil
}

// RegimeReading is one collapse-metrics reading.
type RegimeReading struct {
	// MI is the per-token MI estimate and MIUpper its ceiling log N.
	MI, MIUpper float64
	// Retrieval and Chance are the retrieval accuracy and its chance level.
	Retrieval, Chance float64
	// Entropy is the per-token conditional entropy estimate Ĥ(Z|X).
	Entropy float64
	// Valid is the share of replies with well-formed, non-empty reasoning
	// (collapse/valid_thinking_rate; 1 when not logged).
	Valid float64
}

// ReadingFromMetrics takes a reading from CollapseResult.Metrics(prefix);
// false when a value is missing or not finite.
func ReadingFromMetrics(m map[string]float64, prefix string) (RegimeReading, bool) {
	get := func(k string) (float64, bool) {
		v, ok := m[prefix+"/"+k]
		return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	var r RegimeReading
	var ok [5]bool
	r.MI, ok[0] = get("mi_estimate")
	r.MIUpper, ok[1] = get("mi_upper_bound")
	r.Retrieval, ok[2] = get("retrieval_accuracy")
	r.Chance, ok[3] = get("retrieval_chance_level")
	r.Entropy, ok[4] = get("conditional_entropy_est")
	r.Valid = 1
	if v, has := m["collapse/valid_thinking_rate"]; has && !math.IsNaN(v) {
		r.Valid = v
	}
	return r, ok == [5]bool{true, true, true, true, true} && r.MIUpper > 0
}

// Dependence is d, the reading's input dependence in [0, 1].
func (r RegimeReading) Dependence() float64 {
	mi := math.Min(1, math.Max(0, r.MI)/r.MIUpper)
	ret := 0.0
	if r.Chance < 1 {
		ret = math.Min(1, math.Max(0, r.Retrieval-r.Chance)/(1-r.Chance))
	}
	return (mi + ret) / 2
}

// RegimeTracker classifies readings with hysteresis. Its zero value with
// a Config is ready; it is plain data, so a checkpoint can carry it.
type RegimeTracker struct {
	Config RegimeConfig `json:"config"`
	// Regime is the current regime ("" before the first reading).
	Regime Regime `json:"regime"`
	// DependenceHigh and EntropyHigh are the two levels.
	DependenceHigh bool `json:"dependence_high"`
	EntropyHigh    bool `json:"entropy_high"`
	// Incoherent is the valid-reasoning level (false, coherent, in
	// checkpoints from before it existed).
	Incoherent bool `json:"incoherent"`
	// Streaks count the readings in a row beyond the threshold that
	// would flip each level.
	DependenceStreak int `json:"dependence_streak"`
	EntropyStreak    int `json:"entropy_streak"`
	ValidStreak      int `json:"valid_streak"`
	// Readings counts the readings observed.
	Readings int `json:"readings"`
}

// NewRegimeTracker returns a tracker with the default thresholds.
func NewRegimeTracker() *RegimeTracker { return &RegimeTracker{Config: DefaultRegimeConfig()} }

// Observe takes one reading and returns the regime and whether it changed
// (the first reading is a change from none).
func (t *RegimeTracker) Observe(r RegimeReading) (Regime, bool) {
	c := t.Config
	d, h := r.Dependence(), r.Entropy
	if t.Readings == 0 {
		t.DependenceHigh = d >= (c.DependenceHigh+c.DependenceLow)/2
		t.EntropyHigh = h >= (c.EntropyHigh+c.EntropyLow)/2
		t.Incoherent = r.Valid < (c.ValidHigh+c.ValidLow)/2
	} else {
		t.DependenceHigh, t.DependenceStreak = flip(t.DependenceHigh, t.DependenceStreak, d, c.DependenceHigh, c.DependenceLow, c.Patience)
		t.EntropyHigh, t.EntropyStreak = flip(t.EntropyHigh, t.EntropyStreak, h, c.EntropyHigh, c.EntropyLow, c.Patience)
		coherent, streak := flip(!t.Incoherent, t.ValidStreak, r.Valid, c.ValidHigh, c.ValidLow, c.Patience)
		t.Incoherent, t.ValidStreak = !coherent, streak
	}
	t.Readings++
	var next Regime
	switch {
	case t.Incoherent:
		next = RegimeIncoherent
	case t.EntropyHigh && t.DependenceHigh:
		next = RegimeDiverse
	case t.EntropyHigh:
		next = RegimeTemplateCollapse
	case t.DependenceHigh:
		next = RegimeCompressed
	default:
		next = RegimeLowEntropyCollapse
	}
	changed := next != t.Regime
	t.Regime = next
	return next, changed
}

// flip moves a level across the band after patience readings beyond it.
func flip(high bool, streak int, x, hi, lo float64, patience int) (bool, int) {
	beyond := (high && x <= lo) || (!high && x >= hi)
	if !beyond {
		return high, 0
	}
	if streak+1 >= patience {
		return !high, 0
	}
	return high, streak + 1
}

// Metrics returns collapse/regime (Code) and the two axes of the last
// reading under collapse/ names.
func (t *RegimeTracker) Metrics(r RegimeReading) map[string]float64 {
	return map[string]float64{"collapse/regime": t.Regime.Code(), "collapse/input_dependence": r.Dependence(),
		"collapse/regime_entropy": r.Entropy}
}
