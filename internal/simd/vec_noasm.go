//go:build !amd64

package simd

const haveAsm = false

// Without assembly every level is Portable; these keep the dispatch in vec.go
// compiling.

func dotAVX2(x []float32, y []float32) float32 { return dotGo(x, y) }

func dot3AVX2(x []float32, y []float32, z []float32) float32 { return dot3Go(x, y, z) }

func sumAVX2(x []float32) float32 { return sumGo(x) }

func maxAVX2(x []float32) float32 { return maxGo(x) }

func expSumAVX2(dst []float32, x []float32, shift float32) float32 { return expSumGo(dst, x, shift) }

func expSumNoStoreAVX2(x []float32, shift float32) float32 { return expSumNoStoreGo(x, shift) }

func tokStatsAVX2(z []float32, m float32) (s float32, t float32) { return tokStatsGo(z, m) }

func softmaxTempAVX2(dst []float32, z []float32, m float32, invT float32) (s float32, s1 float32) {
	return softmaxTempGo(dst, z, m, invT)
}

func expAVX2(dst []float32, src []float32) { expVecGo(dst, src) }

func sigmoidAVX2(dst []float32, src []float32) { sigmoidGo(dst, src) }

func swigluAVX2(out []float32, g []float32, u []float32) { swigluGo(out, g, u) }

func swigluBackAVX2(dg []float32, du []float32, dout []float32, g []float32, u []float32) {
	swigluBackGo(dg, du, dout, g, u)
}

func ropeAVX2(x []float32, cos []float32, sin []float32, heads int) { ropeGo(x, cos, sin, false) }

func ropeInvAVX2(x []float32, cos []float32, sin []float32, heads int) { ropeGo(x, cos, sin, true) }

func adamwAVX2(p []float32, g []float32, m []float32, v []float32, hp *[9]float32) {
	adamwGo(p, g, m, v, hp)
}

func axpyAVX2(alpha float32, x []float32, y []float32) { axpyGo(alpha, x, y) }

func scaleAVX2(alpha float32, x []float32) { scaleGo(alpha, x) }

func addAVX2(dst []float32, x []float32) { addGo(dst, x) }

func addScalarAVX2(dst []float32, x []float32, c float32) { addScalarGo(dst, x, c) }

func rmsScaleAVX2(out []float32, x []float32, w []float32, r float32) { rmsScaleGo(out, x, w, r) }

func rmsBackAVX2(dx []float32, dy []float32, x []float32, w []float32, r float32, nc float32) {
	rmsBackGo(dx, dy, x, w, r, nc)
}

func rmsWGradAVX2(dw []float32, dy []float32, x []float32, r float32) { rmsWGradGo(dw, dy, x, r) }

func softmaxBackAVX2(p []float32, dp []float32, d float32, scale float32) {
	softmaxBackGo(p, dp, d, scale)
}

func tokBackAVX2(z []float32, lse float32, a float32, b float32) { tokBackGo(z, lse, a, b) }

func indexEqAVX2(x []float32, v float32) int { return indexEqGo(x, v) }

func dotAVX512(x []float32, y []float32) float32 { return dotGo(x, y) }

func dot3AVX512(x []float32, y []float32, z []float32) float32 { return dot3Go(x, y, z) }

func sumAVX512(x []float32) float32 { return sumGo(x) }

func maxAVX512(x []float32) float32 { return maxGo(x) }

func expSumAVX512(dst []float32, x []float32, shift float32) float32 { return expSumGo(dst, x, shift) }

func expSumNoStoreAVX512(x []float32, shift float32) float32 { return expSumNoStoreGo(x, shift) }

func tokStatsAVX512(z []float32, m float32) (s float32, t float32) { return tokStatsGo(z, m) }

func softmaxTempAVX512(dst []float32, z []float32, m float32, invT float32) (s float32, s1 float32) {
	return softmaxTempGo(dst, z, m, invT)
}

func expAVX512(dst []float32, src []float32) { expVecGo(dst, src) }

func sigmoidAVX512(dst []float32, src []float32) { sigmoidGo(dst, src) }

func swigluAVX512(out []float32, g []float32, u []float32) { swigluGo(out, g, u) }

func swigluBackAVX512(dg []float32, du []float32, dout []float32, g []float32, u []float32) {
	swigluBackGo(dg, du, dout, g, u)
}

func ropeAVX512(x []float32, cos []float32, sin []float32, heads int) { ropeGo(x, cos, sin, false) }

func ropeInvAVX512(x []float32, cos []float32, sin []float32, heads int) { ropeGo(x, cos, sin, true) }

func adamwAVX512(p []float32, g []float32, m []float32, v []float32, hp *[9]float32) {
	adamwGo(p, g, m, v, hp)
}

func axpyAVX512(alpha float32, x []float32, y []float32) { axpyGo(alpha, x, y) }

func scaleAVX512(alpha float32, x []float32) { scaleGo(alpha, x) }

func addAVX512(dst []float32, x []float32) { addGo(dst, x) }

func addScalarAVX512(dst []float32, x []float32, c float32) { addScalarGo(dst, x, c) }

func rmsScaleAVX512(out []float32, x []float32, w []float32, r float32) { rmsScaleGo(out, x, w, r) }

func rmsBackAVX512(dx []float32, dy []float32, x []float32, w []float32, r float32, nc float32) {
	rmsBackGo(dx, dy, x, w, r, nc)
}

func rmsWGradAVX512(dw []float32, dy []float32, x []float32, r float32) { rmsWGradGo(dw, dy, x, r) }

func softmaxBackAVX512(p []float32, dp []float32, d float32, scale float32) {
	softmaxBackGo(p, dp, d, scale)
}

func tokBackAVX512(z []float32, lse float32, a float32, b float32) { tokBackGo(z, lse, a, b) }

func indexEqAVX512(x []float32, v float32) int { return indexEqGo(x, v) }

func expf1AVX2(x float32) float32 { e, _ := expGo(x); return e }
