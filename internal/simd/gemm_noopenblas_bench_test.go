//go:build !netlib

package simd

// openblasRate is OpenBLAS's rate on a shape in the -tags netlib build;
// without it there is no comparison (0).
func openblasRate(benchShape, int, []float32, []float32, []float32, int, int, int) float64 {
	return 0
}
