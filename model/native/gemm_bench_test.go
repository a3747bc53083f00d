package native

import (
	"fmt"
	"testing"
)

// BenchmarkGemmForms compares the two GEMM forms through the tiled driver
// on a decode-sized (64 rows) and a training-sized (2048 rows) projection.
func BenchmarkGemmForms(b *testing.B) {
	for _, m := range []int{64, 2048} {
		const k, n = 128, 384
		a := make([]float32, m*k)
		w := make([]float32, n*k)
		c := make([]float32, m*n)
		for i := range a {
			a[i] = float32(i%7) - 3
		}
		for i := range w {
			w[i] = float32(i%5) - 2
		}
		for _, form := range []string{"NT", "NN"} {
			b.Run(fmt.Sprintf("m%d/%s", m, form), func(b *testing.B) {
				for range b.N {
					if form == "NT" {
						gemm(true, false, true, m, n, k, 1, a, k, w, k, 0, c, n)
					} else {
						gemm(true, false, false, m, n, k, 1, a, k, w, n, 0, c, n)
					}
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
