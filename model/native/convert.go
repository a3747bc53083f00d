package native

// The model works in float32; package algos, where the losses live, in
// float64. These convert the per-position matrices ([sequence][position])
// between the two: Outputs into loss inputs, loss gradients into
// OutputGrads.

// Float64s returns x as float64 (nil for nil).
func Float64s(x [][]float32) [][]float64 {
	if x == nil {
		return nil
	}
	out := make([][]float64, len(x))
	for i, row := range x {
		out[i] = make([]float64, len(row))
		for j, v := range row {
			out[i][j] = float64(v)
		}
	}
	return out
}

// Float32s returns x as float32 (nil for nil).
func Float32s(x [][]float64) [][]float32 {
	if x == nil {
		return nil
	}
	out := make([][]float32, len(x))
	for i, row := range x {
		out[i] = make([]float32, len(row))
		for j, v := range row {
			out[i][j] = float32(v)
		}
	}
	return out
}
