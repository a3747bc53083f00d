package stats

import "testing"

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
