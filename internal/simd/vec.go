package simd

import (
	"fmt"
	"math"
)

//go:generate sh -c "cd _asm && go run ./vec -out ../vec_amd64.s -stubs ../vec_stubs_amd64.go -pkg simd"

// Lanes is the number of lanes of the canonical reduction layout shared by
// every path.
//
// The functions of this file work on one row (a slice) serially; callers
// parallelise over rows. The slices of one call must have the lengths
// stated; a mismatch is a programming error and panics. Empty rows are
// no-ops. Unless stated, an output may be the same slice as an input (in
// place) but must not otherwise overlap one.
//
// Every reduction (Dot, Sum, Max, and the sums inside the softmax,
// log-prob and norm kernels) accumulates element i of the row into lane
// i mod Lanes, in increasing i, starting from 0 (−Inf for maxima), and then
// combines the lanes by the fixed halving tree lane[i] ⊕= lane[i+h] for
// h = 16, 8, 4, 2, 1. AVX-512 holds the lanes in two ZMM registers, AVX2 in
// four YMM registers, the portable path in an array; a partial last block
// is read with masked loads, as if the row continued with elements that
// leave the lanes unchanged. Elementwise results depend only on the
// elements at the same index. So no result depends on the alignment of a
// slice or on how a caller splits a row for elementwise work, and the AVX2
// and AVX-512 paths agree bit for bit (down to the sign of a zero that Max
// returns). Max and Argmax ignore NaN elements.
const Lanes = 32

func checkLen(op string, n int, others ...int) {
	for _, m := range others {
		if m != n {
			panic(fmt.Sprintf("simd: %s: slice lengths %d and %d differ", op, n, m))
		}
	}
}

// Dot returns Σ a[i]·b[i] (fused multiply-adds in the lane layout).
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		checkLen("Dot", len(a), len(b))
	}
	switch level {
	case AVX512:
		return dotAVX512(a, b)
	case AVX2:
		return dotAVX2(a, b)
	}
	return dotGo(a, b)
}

// Sum returns Σ x[i].
func Sum(x []float32) float32 {
	switch level {
	case AVX512:
		return sumAVX512(x)
	case AVX2:
		return sumAVX2(x)
	}
	return sumGo(x)
}

// Max returns the largest element of x, ignoring NaNs; −Inf when x is
// empty or all NaN.
func Max(x []float32) float32 {
	switch level {
	case AVX512:
		return maxAVX512(x)
	case AVX2:
		return maxAVX2(x)
	}
	return maxGo(x)
}

// Argmax returns the lowest index of the largest element of x, ignoring
// NaNs; 0 when every element is NaN and −1 when x is empty.
func Argmax(x []float32) int {
	if len(x) == 0 {
		return -1
	}
	m := Max(x)
	i, from := -1, 0
	switch level {
	case AVX512:
		i, from = indexEqAVX512(x, m), len(x)&^15
	case AVX2:
		i, from = indexEqAVX2(x, m), len(x)&^7
	}
	if i < 0 {
		if i = indexEqGo(x[from:], m); i >= 0 {
			i += from
		} else {
			i = 0
		}
	}
	return i
}

// Axpy computes y[i] += alpha·x[i] (one fused multiply-add).
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		checkLen("Axpy", len(x), len(y))
	}
	switch level {
	case AVX512:
		axpyAVX512(alpha, x, y)
	case AVX2:
		axpyAVX2(alpha, x, y)
	default:
		axpyGo(alpha, x, y)
	}
}

// Scale computes x[i] *= alpha.
func Scale(alpha float32, x []float32) {
	switch level {
	case AVX512:
		scaleAVX512(alpha, x)
	case AVX2:
		scaleAVX2(alpha, x)
	default:
		scaleGo(alpha, x)
	}
}

// Add computes dst[i] += x[i].
func Add(dst, x []float32) {
	if len(dst) != len(x) {
		checkLen("Add", len(dst), len(x))
	}
	switch level {
	case AVX512:
		addAVX512(dst, x)
	case AVX2:
		addAVX2(dst, x)
	default:
		addGo(dst, x)
	}
}

// AddScalar computes dst[i] = x[i] + c.
func AddScalar(dst, x []float32, c float32) {
	if len(dst) != len(x) {
		checkLen("AddScalar", len(dst), len(x))
	}
	addScalar(dst, x, c)
}

func addScalar(dst, x []float32, c float32) {
	switch level {
	case AVX512:
		addScalarAVX512(dst, x, c)
	case AVX2:
		addScalarAVX2(dst, x, c)
	default:
		addScalarGo(dst, x, c)
	}
}

// Exp computes dst[i] = e^src[i], each lane as Expf.
func Exp(dst, src []float32) {
	if len(dst) != len(src) {
		checkLen("Exp", len(dst), len(src))
	}
	switch level {
	case AVX512:
		expAVX512(dst, src)
	case AVX2:
		expAVX2(dst, src)
	default:
		expVecGo(dst, src)
	}
}

// Sigmoid computes dst[i] = 1/(1 + e^−src[i]) (the exponential as Expf,
// then a correctly rounded add and divide).
func Sigmoid(dst, src []float32) {
	if len(dst) != len(src) {
		checkLen("Sigmoid", len(dst), len(src))
	}
	switch level {
	case AVX512:
		sigmoidAVX512(dst, src)
	case AVX2:
		sigmoidAVX2(dst, src)
	default:
		sigmoidGo(dst, src)
	}
}

// shiftOf returns the shift for exponentiating a row whose maximum is m:
// m itself when finite, otherwise 0 (so that a row of −Inf sums to 0 and a
// row holding +Inf to +Inf instead of NaN).
func shiftOf(m float32) float32 {
	if math.IsInf(float64(m), 0) {
		return 0
	}
	return m
}

// log32 returns log(s) rounded to float32.
func log32(s float32) float32 { return float32(math.Log(float64(s))) }

// ExpSum computes x[i] = e^(x[i] − shift) and returns Σ x[i] (lane layout).
func ExpSum(x []float32, shift float32) float32 {
	return expSum(x, x, shift)
}

func expSum(dst, x []float32, shift float32) float32 {
	switch level {
	case AVX512:
		return expSumAVX512(dst, x, shift)
	case AVX2:
		return expSumAVX2(dst, x, shift)
	}
	return expSumGo(dst, x, shift)
}

func expSumNoStore(x []float32, shift float32) float32 {
	switch level {
	case AVX512:
		return expSumNoStoreAVX512(x, shift)
	case AVX2:
		return expSumNoStoreAVX2(x, shift)
	}
	return expSumNoStoreGo(x, shift)
}

// LogSumExp returns log Σ e^x[i], computed as m + log Σ e^(x[i] − m) with
// m = Max(x) (m = 0 when Max(x) is infinite): −Inf for an empty row or a
// row of −Inf, +Inf for a row holding +Inf, NaN for a row holding NaN.
func LogSumExp(x []float32) float32 {
	if len(x) == 0 {
		return float32(math.Inf(-1))
	}
	m := shiftOf(Max(x))
	return m + log32(expSumNoStore(x, m))
}

// Softmax overwrites x with softmax(x): with m = Max(x) as in LogSumExp,
// x[i] = e^(x[i] − m)·(1/s), s = Σ e^(x[i] − m). It returns the
// log-sum-exp m + log s. A row holding +Inf gives NaN probabilities.
func Softmax(x []float32) (lse float32) {
	if len(x) == 0 {
		return float32(math.Inf(-1))
	}
	m := shiftOf(Max(x))
	s := expSum(x, x, m)
	Scale(1/s, x)
	return m + log32(s)
}

// LogSoftmax writes dst[i] = x[i] − lse and returns lse = LogSumExp(x).
func LogSoftmax(dst, x []float32) (lse float32) {
	if len(dst) != len(x) {
		checkLen("LogSoftmax", len(dst), len(x))
	}
	lse = LogSumExp(x)
	addScalar(dst, x, -lse)
	return lse
}

// SoftmaxBackward overwrites dp with the gradient of the softmax logits,
// given the probabilities p and dp = dL/dp: dp[i] = ((dp[i] − d)·p[i])·scale
// with d = Dot(p, dp). (The attention backward uses scale = 1/√headDim.)
func SoftmaxBackward(p, dp []float32, scale float32) {
	if len(p) != len(dp) {
		checkLen("SoftmaxBackward", len(p), len(dp))
	}
	d := Dot(p, dp)
	switch level {
	case AVX512:
		softmaxBackAVX512(p, dp, d, scale)
	case AVX2:
		softmaxBackAVX2(p, dp, d, scale)
	default:
		softmaxBackGo(p, dp, d, scale)
	}
}

// TokenLogProb returns, for a row of logits z and a target index, the
// log-sum-exp, the log-probability z[target] − lse and the entropy of
// softmax(z). With m = Max(z) (0 if infinite), d_i = z_i − m, e_i = e^d_i,
// s = Σ e_i and t = Σ e_i·d_i (both in the lane layout, d_i clamped as in
// Expf so that −Inf logits contribute 0): lse = m + log s and
// H = −Σ p log p = log s − t/s.
func TokenLogProb(z []float32, target int) (lse, logp, entropy float32) {
	if target < 0 || target >= len(z) {
		panic(fmt.Sprintf("simd: TokenLogProb: target %d outside a row of %d", target, len(z)))
	}
	m := shiftOf(Max(z))
	var s, t float32
	switch level {
	case AVX512:
		s, t = tokStatsAVX512(z, m)
	case AVX2:
		s, t = tokStatsAVX2(z, m)
	default:
		s, t = tokStatsGo(z, m)
	}
	ls := math.Log(float64(s))
	lse = m + float32(ls)
	return lse, z[target] - lse, float32(ls - float64(t)/float64(s))
}

// TokenLogProbBackward overwrites the logits z with dL/dz given lse and
// the entropy h that TokenLogProb returned and gl = dL/dlogp, ge = dL/dH:
// with lp_i = z_i − lse (clamped as in Expf) and p_i = e^lp_i,
//
//	dL/dz_i = −gl·p_i − ge·p_i·(lp_i + h) + gl·[i = target]
//
// computed as p_i·(a·lp_i + b) with a = −ge, b = −(gl + ge·h); h is unused
// when ge = 0.
func TokenLogProbBackward(z []float32, target int, lse, h, gl, ge float32) {
	if target < 0 || target >= len(z) {
		panic(fmt.Sprintf("simd: TokenLogProbBackward: target %d outside a row of %d", target, len(z)))
	}
	a, b := -ge, -gl
	if ge != 0 {
		b = -(gl + ge*h)
	}
	switch level {
	case AVX512:
		tokBackAVX512(z, lse, a, b)
	case AVX2:
		tokBackAVX2(z, lse, a, b)
	default:
		tokBackGo(z, lse, a, b)
	}
	z[target] += gl
}

// RMSNorm writes out[i] = (x[i]·r)·w[i] with r = 1/sqrt(Dot(x, x)/dim + eps)
// (the square root and division in float64) and returns r. An empty row
// returns 0.
func RMSNorm(out, x, w []float32, eps float32) (r float32) {
	if len(out) != len(x) || len(w) != len(x) {
		checkLen("RMSNorm", len(x), len(out), len(w))
	}
	if len(x) == 0 {
		return 0
	}
	r = float32(1 / math.Sqrt(float64(Dot(x, x)/float32(len(x))+eps)))
	switch level {
	case AVX512:
		rmsScaleAVX512(out, x, w, r)
	case AVX2:
		rmsScaleAVX2(out, x, w, r)
	default:
		rmsScaleGo(out, x, w, r)
	}
	return r
}

// RMSNormBackward adds the input gradient of RMSNorm into dx given dy =
// dL/dout and the r that RMSNorm returned:
//
//	dx[i] += r·(dy[i]·w[i]) − x[i]·c,  c = r³/dim·Σ (dy[j]·w[j])·x[j]
//
// computed per element as t = dy·w, dx = fma(t, r, dx), dx = fma(x, −c, dx),
// with c = ((s·r)·r)·r/dim.
func RMSNormBackward(dx, dy, x, w []float32, r float32) {
	if len(dy) != len(x) || len(w) != len(x) || len(dx) != len(x) {
		checkLen("RMSNormBackward", len(x), len(dx), len(dy), len(w))
	}
	if len(x) == 0 {
		return
	}
	var s float32
	switch level {
	case AVX512:
		s = dot3AVX512(dy, w, x)
	case AVX2:
		s = dot3AVX2(dy, w, x)
	default:
		s = dot3Go(dy, w, x)
	}
	nc := -(s * r * r * r / float32(len(x)))
	switch level {
	case AVX512:
		rmsBackAVX512(dx, dy, x, w, r, nc)
	case AVX2:
		rmsBackAVX2(dx, dy, x, w, r, nc)
	default:
		rmsBackGo(dx, dy, x, w, r, nc)
	}
}

// RMSNormWeightGrad accumulates the weight gradient of one row of RMSNorm:
// dw[i] += (dy[i]·x[i])·r (one fused multiply-add).
func RMSNormWeightGrad(dw, dy, x []float32, r float32) {
	if len(dy) != len(x) || len(dw) != len(x) {
		checkLen("RMSNormWeightGrad", len(x), len(dw), len(dy))
	}
	switch level {
	case AVX512:
		rmsWGradAVX512(dw, dy, x, r)
	case AVX2:
		rmsWGradAVX2(dw, dy, x, r)
	default:
		rmsWGradGo(dw, dy, x, r)
	}
}

// SwiGLU writes out[i] = silu(g[i])·u[i] = (g[i]/(1 + e^−g[i]))·u[i].
func SwiGLU(out, g, u []float32) {
	if len(g) != len(out) || len(u) != len(out) {
		checkLen("SwiGLU", len(out), len(g), len(u))
	}
	switch level {
	case AVX512:
		swigluAVX512(out, g, u)
	case AVX2:
		swigluAVX2(out, g, u)
	default:
		swigluGo(out, g, u)
	}
}

// SwiGLUBackward writes the gradients of SwiGLU given dout = dL/dout. With
// σ = 1/(1 + e^−g):
//
//	du = (g·σ)·dout
//	dg = ((dout·u)·σ)·(g·(1−σ) + 1)   (the last factor one fused multiply-add)
//
// dg and du must not overlap g, u or dout.
func SwiGLUBackward(dg, du, dout, g, u []float32) {
	if len(du) != len(dg) || len(dout) != len(dg) || len(g) != len(dg) || len(u) != len(dg) {
		checkLen("SwiGLUBackward", len(dg), len(du), len(dout), len(g), len(u))
	}
	switch level {
	case AVX512:
		swigluBackAVX512(dg, du, dout, g, u)
	case AVX2:
		swigluBackAVX2(dg, du, dout, g, u)
	default:
		swigluBackGo(dg, du, dout, g, u)
	}
}

func checkRoPE(op string, x, cos, sin []float32) {
	if len(sin) != len(cos) {
		checkLen(op+" (cos, sin)", len(cos), len(sin))
	}
	if len(cos) == 0 || len(x)%(2*len(cos)) != 0 {
		panic(fmt.Sprintf("simd: %s: row of %d is not a whole number of heads of %d", op, len(x), 2*len(cos)))
	}
}

// RoPE rotates in place each head of x, a row of consecutive heads of
// 2·len(cos) elements, with the rotate-half pairing: for the halves x1, x2
// of a head and tables c = cos, s = sin (one position),
//
//	x1' = x1·c − x2·s = fma(x1, c, −(x2·s))
//	x2' = x2·c + x1·s = fma(x2, c, x1·s)
func RoPE(x, cos, sin []float32) {
	if len(x) == 0 {
		return
	}
	checkRoPE("RoPE", x, cos, sin)
	heads := len(x) / (2 * len(cos))
	switch level {
	case AVX512:
		ropeAVX512(x, cos, sin, heads)
	case AVX2:
		ropeAVX2(x, cos, sin, heads)
	default:
		ropeGo(x, cos, sin, false)
	}
}

// RoPEInverse rotates like RoPE by the negative angle (the backward of
// RoPE): x1' = fma(x1, c, x2·s), x2' = fma(x2, c, −(x1·s)).
func RoPEInverse(x, cos, sin []float32) {
	if len(x) == 0 {
		return
	}
	checkRoPE("RoPEInverse", x, cos, sin)
	heads := len(x) / (2 * len(cos))
	switch level {
	case AVX512:
		ropeInvAVX512(x, cos, sin, heads)
	case AVX2:
		ropeInvAVX2(x, cos, sin, heads)
	default:
		ropeGo(x, cos, sin, true)
	}
}

// AdamW applies one AdamW step to the parameters p with gradients g and
// moments m, v, where bc1 = 1−β1^t and bc2 = 1−β2^t:
//
//	m ← fma(β1, m, (1−β1)·g)
//	v ← fma(β2, v, ((1−β2)·g)·g)
//	q = (m·(1/bc1)) / (sqrt(v·(1/bc2)) + eps)
//	p ← fma(−lr, fma(wd, p, q), p)
//
// that is p ← p − lr·(m̂/(sqrt(v̂)+eps) + wd·p); 1−β and 1/bc are rounded
// to float32 once per call.
func AdamW(p, g, m, v []float32, lr, beta1, beta2, eps, wd, bc1, bc2 float32) {
	if len(g) != len(p) || len(m) != len(p) || len(v) != len(p) {
		checkLen("AdamW", len(p), len(g), len(m), len(v))
	}
	hp := [9]float32{lr, beta1, beta2, eps, wd, 1 / bc1, 1 / bc2, 1 - beta1, 1 - beta2}
	switch level {
	case AVX512:
		adamwAVX512(p, g, m, v, &hp)
	case AVX2:
		adamwAVX2(p, g, m, v, &hp)
	default:
		adamwGo(p, g, m, v, &hp)
	}
}

// SoftmaxTemp prepares a draw from softmax(z/T), invT = 1/T finite and > 0: with
// m = Max(z) (0 if infinite) it writes dst[i] = e^((z[i] − m)·invT), returns
// their sum (lane layout) and the log-sum-exp of z at temperature 1 (as
// LogSumExp), so that SampleIndex(dst, sum, u) draws a token k whose raw
// log-probability is z[k] − lse. At invT = 1 it is one exponential per
// element, otherwise two. dst may be z if z is not needed afterwards.
func SoftmaxTemp(dst, z []float32, invT float32) (sum, lse float32) {
	if len(dst) != len(z) {
		checkLen("SoftmaxTemp", len(dst), len(z))
	}
	if len(z) == 0 {
		return 0, float32(math.Inf(-1))
	}
	m := shiftOf(Max(z))
	var s1 float32
	if invT == 1 {
		sum = expSum(dst, z, m)
		s1 = sum
	} else {
		switch level {
		case AVX512:
			sum, s1 = softmaxTempAVX512(dst, z, m, invT)
		case AVX2:
			sum, s1 = softmaxTempAVX2(dst, z, m, invT)
		default:
			sum, s1 = softmaxTempGo(dst, z, m, invT)
		}
	}
	return sum, m + log32(s1)
}

// sampleBlock is the block length of SampleIndex's first-level search.
const sampleBlock = 256

// SampleIndex returns the index k of a draw from the unnormalised weights
// w (non-negative, as SoftmaxTemp writes) with total sum, given a uniform
// u in [0, 1): the smallest k whose running sum exceeds u·sum. The running
// sum is kept in float64 over blocks of 256 weights (each summed with Sum)
// and then, inside the block reached, weight by weight. If rounding leaves
// the target unreached, the last positive weight is chosen. It returns −1
// when w is empty or has no positive weight.
func SampleIndex(w []float32, sum float32, u float64) int {
	target := u * float64(sum)
	var cum float64
	i := 0
	for ; i+sampleBlock <= len(w); i += sampleBlock {
		b := float64(Sum(w[i : i+sampleBlock]))
		if cum+b > target {
			break
		}
		cum += b
	}
	for ; i < len(w); i++ {
		cum += float64(w[i])
		if cum > target {
			return i
		}
	}
	for i = len(w) - 1; i >= 0 && !(w[i] > 0); i-- {
	}
	return i
}
