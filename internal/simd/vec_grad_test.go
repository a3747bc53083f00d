package simd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Finite-difference checks of the backward kernels: each loss is written
// in float64, its central differences are compared with the float32
// gradients of the kernels.

const fdStep = 1e-5

// fdGrad returns the central-difference gradient of loss at x.
func fdGrad(x []float64, loss func([]float64) float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		v := x[i]
		x[i] = v + fdStep
		lp := loss(x)
		x[i] = v - fdStep
		lm := loss(x)
		x[i] = v
		g[i] = (lp - lm) / (2 * fdStep)
	}
	return g
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// checkGrad compares got with want relative to the largest of mag and
// the entries of want.
func checkGrad(t *testing.T, what string, got []float32, want []float64, mag float64) {
	t.Helper()
	scale := mag
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > 1e-4*(scale+1e-3) {
			t.Fatalf("%s[%d] = %g, finite difference %g", what, i, got[i], want[i])
		}
	}
}

func TestGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, l := range levels() {
		for _, n := range []int{1, 5, 17, 40} {
			atLevel(l, func() {
				gradRMSNorm(t, r, n)
				gradSwiGLU(t, r, n)
				gradTokenLogProb(t, r, n)
				gradSoftmax(t, r, n)
			})
		}
	}
}

func gradRMSNorm(t *testing.T, r *rand.Rand, n int) {
	x, w, c := randVec(r, n, -2, 2), randVec(r, n, 0.5, 1.5), randVec(r, n, -1, 1)
	const eps = 1e-5
	loss := func(x, w []float64) float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		rr := 1 / math.Sqrt(ss/float64(len(x))+eps)
		var s float64
		for i := range x {
			s += float64(c[i]) * x[i] * rr * w[i]
		}
		return s
	}
	out := make([]float32, n)
	rr := RMSNorm(out, x, w, eps)
	dx, dw := make([]float32, n), make([]float32, n)
	RMSNormBackward(dx, c, x, w, rr)
	RMSNormWeightGrad(dw, c, x, rr)
	x64, w64 := to64(x), to64(w)
	// dx is a difference of terms of size r·|c·w|.
	var mag float64
	for i := range c {
		mag = math.Max(mag, float64(rr)*math.Abs(float64(c[i]*w[i])))
	}
	checkGrad(t, "RMSNorm dx", dx, fdGrad(x64, func(x []float64) float64 { return loss(x, w64) }), mag)
	checkGrad(t, "RMSNorm dw", dw, fdGrad(w64, func(w []float64) float64 { return loss(x64, w) }), 0)
}

func gradSwiGLU(t *testing.T, r *rand.Rand, n int) {
	g, u, c := randVec(r, n, -6, 6), randVec(r, n, -2, 2), randVec(r, n, -1, 1)
	loss := func(g, u []float64) float64 {
		var s float64
		for i := range g {
			s += float64(c[i]) * g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		return s
	}
	dg, du := make([]float32, n), make([]float32, n)
	SwiGLUBackward(dg, du, c, g, u)
	g64, u64 := to64(g), to64(u)
	checkGrad(t, "SwiGLU dg", dg, fdGrad(g64, func(g []float64) float64 { return loss(g, u64) }), 0)
	checkGrad(t, "SwiGLU du", du, fdGrad(u64, func(u []float64) float64 { return loss(g64, u) }), 0)
}

func gradTokenLogProb(t *testing.T, r *rand.Rand, n int) {
	z := randVec(r, n, -4, 4)
	target := r.IntN(n)
	const gl, ge = 0.6, -0.4
	loss := func(z []float64) float64 {
		m := math.Inf(-1)
		for _, v := range z {
			m = math.Max(m, v)
		}
		var s float64
		for _, v := range z {
			s += math.Exp(v - m)
		}
		lse := m + math.Log(s)
		var h float64
		for _, v := range z {
			h -= math.Exp(v-lse) * (v - lse)
		}
		return gl*(z[target]-lse) + ge*h
	}
	lse, _, h := TokenLogProb(z, target)
	dz := append([]float32(nil), z...)
	TokenLogProbBackward(dz, target, lse, h, gl, ge)
	checkGrad(t, "TokenLogProb dz", dz, fdGrad(to64(z), loss), 0)
}

func gradSoftmax(t *testing.T, r *rand.Rand, n int) {
	s, c := randVec(r, n, -3, 3), randVec(r, n, -1, 1)
	const scale = 0.5
	// L = Σ c·softmax(scale·s); dL/ds = scale·P ⊙ (c − ⟨P, c⟩).
	loss := func(s []float64) float64 {
		m := math.Inf(-1)
		for _, v := range s {
			m = math.Max(m, scale*v)
		}
		var z, l float64
		for _, v := range s {
			z += math.Exp(scale*v - m)
		}
		for i, v := range s {
			l += float64(c[i]) * math.Exp(scale*v-m) / z
		}
		return l
	}
	p := make([]float32, n)
	for i, v := range s {
		p[i] = scale * v
	}
	Softmax(p)
	dp := append([]float32(nil), c...)
	SoftmaxBackward(p, dp, scale)
	checkGrad(t, "SoftmaxBackward", dp, fdGrad(to64(s), loss), 0)
}

// TestRoPEInverseIsTranspose checks ⟨RoPE(x), y⟩ = ⟨x, RoPEInverse(y)⟩, so
// that RoPEInverse is the backward of RoPE, and that it undoes RoPE.
func TestRoPEInverseIsTranspose(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for _, l := range levels() {
		atLevel(l, func() {
			for _, half := range []int{1, 3, 8, 16, 32, 64} {
				th := randVec(r, half, -3, 3)
				c, s := make([]float32, half), make([]float32, half)
				for i, v := range th {
					c[i], s[i] = float32(math.Cos(float64(v))), float32(math.Sin(float64(v)))
				}
				x, y := randVec(r, 4*half, -1, 1), randVec(r, 4*half, -1, 1)
				rx, iy := append([]float32(nil), x...), append([]float32(nil), y...)
				RoPE(rx, c, s)
				RoPEInverse(iy, c, s)
				var a, b float64
				for i := range x {
					a += float64(rx[i]) * float64(y[i])
					b += float64(x[i]) * float64(iy[i])
				}
				if math.Abs(a-b) > 1e-5*float64(len(x)) {
					t.Fatalf("%v half %d: ⟨RoPE x, y⟩ = %g, ⟨x, RoPEInverse y⟩ = %g", l, half, a, b)
				}
				RoPEInverse(rx, c, s)
				for i := range x {
					if math.Abs(float64(rx[i]-x[i])) > 1e-6 {
						t.Fatalf("%v half %d: RoPEInverse(RoPE(x))[%d] = %g, want %g", l, half, i, rx[i], x[i])
					}
				}
			}
		})
	}
}
