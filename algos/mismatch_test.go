package algos

import (
	"math"
	"testing"
)

// TestLogProbMismatchByHand: d = learner − sampler = 0.1, −0.5, 0 on the
// trained tokens, one −Inf sampler value left out and counted, the
// out-of-mask 9 ignored.
func TestLogProbMismatchByHand(t *testing.T) {
	learner := [][]float64{{0, -1.0, -2.0}, {-0.5, 0}}
	sampler := [][]float64{{9, -1.1, -1.5}, {-0.5, math.Inf(-1)}}
	mask := [][]bool{{false, true, true}, {true, true}}
	m, err := LogProbMismatch(learner, sampler, mask)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tokens != 3 || m.NonFinite != 1 {
		t.Fatalf("tokens %d, non-finite %d; want 3 and 1", m.Tokens, m.NonFinite)
	}
	approx(t, "mean abs", m.MeanAbs, 0.2)
	approx(t, "max abs", m.MaxAbs, 0.5)
	// (e^0.1 − 1.1 + e^−0.5 − 0.5 + 0) / 3
	approx(t, "k3", m.K3, (0.0051709180756477+0.1065306597126334)/3)
	if got := m.Metrics()["mismatch/k3_kl"]; got != m.K3 {
		t.Errorf("metrics k3 %v", got)
	}

	same, err := LogProbMismatch(learner, learner, mask)
	if err != nil || same.MeanAbs != 0 || same.MaxAbs != 0 || same.K3 != 0 || same.Tokens != 4 {
		t.Errorf("identical log-probs: %+v %v", same, err)
	}
	if _, err := LogProbMismatch(learner, sampler[:1], mask); err == nil {
		t.Error("a missing row was accepted")
	}
	if _, err := LogProbMismatch(learner, [][]float64{{0, 0, 0}, {0}}, mask); err == nil {
		t.Error("a short row was accepted")
	}
}
