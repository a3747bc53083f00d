package simd

import "testing"

// TestBestOfBatches: a batch that reads low (a core taken away for its
// whole duration) is not the answer; two that agree end the measurement.
func TestBestOfBatches(t *testing.T) {
	cases := []struct {
		name    string
		batches []float64
		want    float64
		calls   int
	}{
		{"two agree at once", []float64{233, 230}, 233, 2},
		{"first batch low", []float64{117, 233, 232}, 233, 3},
		{"second batch low", []float64{233, 117, 234}, 234, 3},
		{"rising until it settles", []float64{100, 150, 200, 230, 231}, 231, 5},
		{"never settles", []float64{100, 200, 300, 400, 500, 600, 700, 800, 900}, 800, peakBatches},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			got := bestOfBatches(func() float64 {
				r := c.batches[calls]
				calls++
				return r
			})
			if got != c.want || calls != c.calls {
				t.Errorf("got %v after %d batches, want %v after %d", got, calls, c.want, c.calls)
			}
		})
	}
}
