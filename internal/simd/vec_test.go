package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// testLengths covers empty rows, every partial-vector case around the
// AVX2 and AVX-512 widths and the 32-lane blocks, and long rows.
var testLengths = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 47, 63, 64, 65, 127, 129, 1000, 4097}

// kcase is one kernel under test: gen makes its inputs for a row of n,
// run calls the kernel on copies and returns every output (slices and
// scalar results) as one vector, ref computes the same outputs in float64
// together with the magnitude each output's error is measured against.
type kcase struct {
	name string
	gen  func(r *rand.Rand, n int) [][]float32
	run  func(in [][]float32) []float32
	ref  func(in [][]float32) (want, mag []float64)
	tol  float64 // allowed |got − want| / mag
}

func clone(in [][]float32) [][]float32 {
	out := make([][]float32, len(in))
	for i, s := range in {
		out[i] = append([]float32(nil), s...)
	}
	return out
}

func randVec(r *rand.Rand, n int, lo, hi float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float32()
	}
	return v
}

func f64(x float32) float64 { return float64(x) }

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func expRef(x float64) float64 { return math.Exp(x) }

func sigRef(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// lseRef returns log Σ e^x and the softmax probabilities.
func lseRef(x []float32) (float64, []float64) {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, f64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(f64(v) - m)
	}
	p := make([]float64, len(x))
	for i, v := range x {
		p[i] = math.Exp(f64(v)-m) / s
	}
	return m + math.Log(s), p
}

var kcases = []kcase{
	{
		name: "Dot",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -2, 2), randVec(r, n, -2, 2)}
		},
		run: func(in [][]float32) []float32 { return []float32{Dot(in[0], in[1])} },
		ref: func(in [][]float32) ([]float64, []float64) {
			var s, m float64
			for i := range in[0] {
				s += f64(in[0][i]) * f64(in[1][i])
				m += math.Abs(f64(in[0][i]) * f64(in[1][i]))
			}
			return []float64{s}, []float64{m + 1e-30}
		},
		tol: 1e-5,
	},
	{
		name: "Sum",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -3, 5)} },
		run:  func(in [][]float32) []float32 { return []float32{Sum(in[0])} },
		ref: func(in [][]float32) ([]float64, []float64) {
			var s, m float64
			for _, v := range in[0] {
				s += f64(v)
				m += math.Abs(f64(v))
			}
			return []float64{s}, []float64{m + 1e-30}
		},
		tol: 1e-5,
	},
	{
		name: "Max",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -3, 5)} },
		run:  func(in [][]float32) []float32 { return []float32{Max(in[0])} },
		ref: func(in [][]float32) ([]float64, []float64) {
			m := math.Inf(-1)
			for _, v := range in[0] {
				m = math.Max(m, f64(v))
			}
			return []float64{m}, []float64{1}
		},
	},
	{
		name: "Argmax",
		gen: func(r *rand.Rand, n int) [][]float32 {
			v := randVec(r, n, -3, 5)
			for i := range v { // ties
				v[i] = float32(math.Round(float64(v[i]) * 2))
			}
			return [][]float32{v}
		},
		run: func(in [][]float32) []float32 { return []float32{float32(Argmax(in[0]))} },
		ref: func(in [][]float32) ([]float64, []float64) {
			best := -1
			for i, v := range in[0] {
				if best < 0 || v > in[0][best] {
					best = i
				}
			}
			return []float64{float64(best)}, []float64{1}
		},
	},
	{
		name: "Axpy",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -2, 2), randVec(r, n, -2, 2)}
		},
		run: func(in [][]float32) []float32 { Axpy(0.75, in[0], in[1]); return in[1] },
		ref: func(in [][]float32) ([]float64, []float64) {
			w, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i := range w {
				w[i] = f64(in[1][i]) + 0.75*f64(in[0][i])
				m[i] = math.Abs(f64(in[1][i])) + math.Abs(0.75*f64(in[0][i]))
			}
			return w, m
		},
		tol: 1e-7,
	},
	{
		name: "Scale",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -2, 2)} },
		run:  func(in [][]float32) []float32 { Scale(-1.3, in[0]); return in[0] },
		ref: func(in [][]float32) ([]float64, []float64) {
			w, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i, v := range in[0] {
				w[i] = -1.3 * f64(v)
				m[i] = math.Abs(w[i])
			}
			return w, m
		},
		tol: 1e-7,
	},
	{
		name: "Add",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -2, 2), randVec(r, n, -2, 2)}
		},
		run: func(in [][]float32) []float32 { Add(in[0], in[1]); return in[0] },
		ref: func(in [][]float32) ([]float64, []float64) {
			w, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i := range w {
				w[i] = f64(in[0][i]) + f64(in[1][i])
				m[i] = math.Abs(f64(in[0][i])) + math.Abs(f64(in[1][i]))
			}
			return w, m
		},
		tol: 1e-7,
	},
	{
		name: "Exp",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -110, 95)} },
		run: func(in [][]float32) []float32 {
			out := make([]float32, len(in[0]))
			Exp(out, in[0])
			return out
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			w, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i, v := range in[0] {
				w[i] = expRef(f64(v))
				m[i] = math.Max(w[i], 0x1p-126)
				if math.IsInf(float64(float32(w[i])), 1) {
					w[i], m[i] = math.Inf(1), 1
				}
			}
			return w, m
		},
		tol: 2.5e-7,
	},
	{
		name: "Sigmoid",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -30, 30)} },
		run: func(in [][]float32) []float32 {
			out := make([]float32, len(in[0]))
			Sigmoid(out, in[0])
			return out
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			w, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i, v := range in[0] {
				w[i] = sigRef(f64(v))
				m[i] = w[i]
			}
			return w, m
		},
		tol: 4e-7,
	},
	{
		name: "LogSumExp",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -20, 20)} },
		run:  func(in [][]float32) []float32 { return []float32{LogSumExp(in[0])} },
		ref: func(in [][]float32) ([]float64, []float64) {
			l, _ := lseRef(in[0])
			return []float64{l}, []float64{math.Max(math.Abs(l), 1)}
		},
		tol: 1e-6,
	},
	{
		name: "Softmax",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -20, 20)} },
		run: func(in [][]float32) []float32 {
			l := Softmax(in[0])
			return append(in[0], l)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			l, p := lseRef(in[0])
			m := make([]float64, len(p)+1)
			for i := range p {
				// x − max is rounded to float32.
				m[i] = p[i]*(1+math.Abs(f64(in[0][i]))+math.Abs(l)) + 1e-38
			}
			m[len(p)] = math.Max(math.Abs(l), 1)
			return append(p, l), m
		},
		tol: 1e-6,
	},
	{
		name: "LogSoftmax",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -20, 20)} },
		run: func(in [][]float32) []float32 {
			out := make([]float32, len(in[0]))
			l := LogSoftmax(out, in[0])
			return append(out, l)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			l, _ := lseRef(in[0])
			w, m := make([]float64, len(in[0])+1), make([]float64, len(in[0])+1)
			for i, v := range in[0] {
				w[i] = f64(v) - l
				m[i] = math.Abs(f64(v)) + math.Abs(l) + 1
			}
			w[len(in[0])], m[len(in[0])] = l, math.Max(math.Abs(l), 1)
			return w, m
		},
		tol: 1e-6,
	},
	{
		name: "ExpSum",
		gen:  func(r *rand.Rand, n int) [][]float32 { return [][]float32{randVec(r, n, -20, 3)} },
		run: func(in [][]float32) []float32 {
			s := ExpSum(in[0], 1.5)
			return append(in[0], s)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			w, m := make([]float64, len(in[0])+1), make([]float64, len(in[0])+1)
			var s float64
			for i, v := range in[0] {
				w[i] = math.Exp(f64(v - 1.5))
				m[i] = w[i] + 1e-38
				s += w[i]
			}
			w[len(in[0])], m[len(in[0])] = s, s+1e-38
			return w, m
		},
		tol: 1e-6,
	},
	{
		name: "SoftmaxBackward",
		gen: func(r *rand.Rand, n int) [][]float32 {
			p := randVec(r, n, -3, 3)
			Softmax(p)
			return [][]float32{p, randVec(r, n, -1, 1)}
		},
		run: func(in [][]float32) []float32 { SoftmaxBackward(in[0], in[1], 0.125); return in[1] },
		ref: func(in [][]float32) ([]float64, []float64) {
			p, dp := in[0], in[1]
			var d, dm float64
			for i := range p {
				d += f64(p[i]) * f64(dp[i])
				dm += math.Abs(f64(p[i]) * f64(dp[i]))
			}
			w, m := make([]float64, len(p)), make([]float64, len(p))
			for i := range p {
				w[i] = f64(p[i]) * (f64(dp[i]) - d) * 0.125
				m[i] = f64(p[i]) * (math.Abs(f64(dp[i])) + dm) * 0.125
			}
			return w, m
		},
		tol: 1e-6,
	},
	{
		name: "TokenLogProb",
		gen: func(r *rand.Rand, n int) [][]float32 {
			if n == 0 {
				n = 1
			}
			z := randVec(r, n, -15, 15)
			if n > 3 {
				z[2] = float32(math.Inf(-1)) // a masked logit
			}
			return [][]float32{z, {float32(r.IntN(n))}}
		},
		run: func(in [][]float32) []float32 {
			l, lp, h := TokenLogProb(in[0], int(in[1][0]))
			return []float32{l, lp, h}
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			l, p := lseRef(in[0])
			var h float64
			for i, v := range in[0] {
				if p[i] > 0 {
					h -= p[i] * (f64(v) - l)
				}
			}
			t := int(in[1][0])
			return []float64{l, f64(in[0][t]) - l, h}, []float64{math.Max(math.Abs(l), 1), math.Abs(f64(in[0][t])) + math.Abs(l) + 1, 1 + math.Abs(h)}
		},
		tol: 2e-6,
	},
	{
		name: "TokenLogProbBackward",
		gen: func(r *rand.Rand, n int) [][]float32 {
			if n == 0 {
				n = 1
			}
			z := randVec(r, n, -15, 15)
			if n > 3 {
				z[2] = float32(math.Inf(-1))
			}
			return [][]float32{z, {float32(r.IntN(n))}}
		},
		run: func(in [][]float32) []float32 {
			t := int(in[1][0])
			l, _, h := TokenLogProb(in[0], t)
			TokenLogProbBackward(in[0], t, l, h, -0.7, 0.3)
			return in[0]
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			l, p := lseRef(in[0])
			var h float64
			for i, v := range in[0] {
				if p[i] > 0 {
					h -= p[i] * (f64(v) - l)
				}
			}
			t := int(in[1][0])
			w, m := make([]float64, len(p)), make([]float64, len(p))
			for i, v := range in[0] {
				lp := f64(v) - l
				if p[i] == 0 {
					lp = 0
				}
				w[i] = 0.7*p[i] - 0.3*p[i]*(lp+h)
				m[i] = p[i]*(1+math.Abs(lp)+math.Abs(h)) + 1e-30
				if i == t {
					w[i] -= 0.7
					m[i] += 0.7
				}
			}
			return w, m
		},
		tol: 4e-6,
	},
	{
		name: "RMSNorm",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -2, 2), randVec(r, n, 0.5, 1.5)}
		},
		run: func(in [][]float32) []float32 {
			out := make([]float32, len(in[0]))
			rr := RMSNorm(out, in[0], in[1], 1e-5)
			return append(out, rr)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			x, w := in[0], in[1]
			if len(x) == 0 {
				return []float64{0}, []float64{1}
			}
			var ss float64
			for _, v := range x {
				ss += f64(v) * f64(v)
			}
			rr := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
			o, m := make([]float64, len(x)+1), make([]float64, len(x)+1)
			for i := range x {
				o[i] = f64(x[i]) * rr * f64(w[i])
				m[i] = math.Abs(o[i]) + 1e-30
			}
			o[len(x)], m[len(x)] = rr, rr
			return o, m
		},
		tol: 1e-6,
	},
	{
		name: "RMSNormBackward",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -1, 1), randVec(r, n, -2, 2), randVec(r, n, 0.5, 1.5), randVec(r, n, -1, 1)}
		},
		run: func(in [][]float32) []float32 {
			dx, dy, x, w := in[0], in[1], in[2], in[3]
			RMSNormBackward(dx, dy, x, w, 0.8)
			return dx
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			dx, dy, x, w := in[0], in[1], in[2], in[3]
			var s, sm float64
			for i := range x {
				s += f64(dy[i]) * f64(w[i]) * f64(x[i])
				sm += math.Abs(f64(dy[i]) * f64(w[i]) * f64(x[i]))
			}
			const rr = 0.8
			n := float64(len(x))
			o, m := make([]float64, len(x)), make([]float64, len(x))
			for i := range x {
				o[i] = f64(dx[i]) + rr*f64(dy[i])*f64(w[i]) - f64(x[i])*rr*rr*rr/n*s
				m[i] = math.Abs(f64(dx[i])) + math.Abs(rr*f64(dy[i])*f64(w[i])) + math.Abs(f64(x[i])*rr*rr*rr/n)*sm
			}
			return o, m
		},
		tol: 1e-6,
	},
	{
		name: "RMSNormWeightGrad",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -1, 1), randVec(r, n, -2, 2), randVec(r, n, -2, 2)}
		},
		run: func(in [][]float32) []float32 { RMSNormWeightGrad(in[0], in[1], in[2], 0.7); return in[0] },
		ref: func(in [][]float32) ([]float64, []float64) {
			o, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i := range o {
				t := f64(in[1][i]) * f64(in[2][i]) * 0.7
				o[i] = f64(in[0][i]) + t
				m[i] = math.Abs(f64(in[0][i])) + math.Abs(t)
			}
			return o, m
		},
		tol: 1e-6,
	},
	{
		name: "SwiGLU",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -12, 12), randVec(r, n, -2, 2)}
		},
		run: func(in [][]float32) []float32 {
			out := make([]float32, len(in[0]))
			SwiGLU(out, in[0], in[1])
			return out
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			o, m := make([]float64, len(in[0])), make([]float64, len(in[0]))
			for i, g := range in[0] {
				o[i] = f64(g) * sigRef(f64(g)) * f64(in[1][i])
				m[i] = math.Abs(o[i]) + 1e-30
			}
			return o, m
		},
		tol: 1e-6,
	},
	{
		name: "SwiGLUBackward",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -12, 12), randVec(r, n, -2, 2), randVec(r, n, -1, 1)}
		},
		run: func(in [][]float32) []float32 {
			n := len(in[0])
			dg, du := make([]float32, n), make([]float32, n)
			SwiGLUBackward(dg, du, in[2], in[0], in[1])
			return append(dg, du...)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			n := len(in[0])
			o, m := make([]float64, 2*n), make([]float64, 2*n)
			for i, gf := range in[0] {
				g, u, d := f64(gf), f64(in[1][i]), f64(in[2][i])
				s := sigRef(g)
				o[i] = d * u * s * (1 + g*(1-s))
				m[i] = math.Abs(d*u*s)*(1+math.Abs(g)*(1-s)) + 1e-30
				o[n+i] = d * g * s
				m[n+i] = math.Abs(o[n+i]) + 1e-30
			}
			return o, m
		},
		tol: 1e-6,
	},
	{
		name: "AdamW",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -1, 1), randVec(r, n, -1, 1), randVec(r, n, -0.1, 0.1), randVec(r, n, 0, 0.01)}
		},
		run: func(in [][]float32) []float32 {
			p, g, m, v := in[0], in[1], in[2], in[3]
			AdamW(p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 1-0.9*0.9, 1-0.999*0.999)
			return append(append(p, m...), v...)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			p, g, m, v := in[0], in[1], in[2], in[3]
			n := len(p)
			o, mg := make([]float64, 3*n), make([]float64, 3*n)
			b1, b2 := f64(0.9), f64(0.999)
			bc1, bc2 := f64(1-0.9*0.9), f64(1-0.999*0.999)
			for i := range p {
				mi := b1*f64(m[i]) + (1-b1)*f64(g[i])
				vi := b2*f64(v[i]) + (1-b2)*f64(g[i])*f64(g[i])
				q := mi / bc1 / (math.Sqrt(vi/bc2) + f64(1e-8))
				o[i] = f64(p[i]) - f64(1e-3)*(q+f64(0.01)*f64(p[i]))
				mg[i] = math.Abs(f64(p[i])) + 1e-3*(math.Abs(q)+0.01*math.Abs(f64(p[i])))
				o[n+i], mg[n+i] = mi, math.Abs(b1*f64(m[i]))+math.Abs((1-b1)*f64(g[i]))
				o[2*n+i], mg[2*n+i] = vi, math.Abs(vi)
			}
			return o, mg
		},
		tol: 1e-6,
	},
}

// ropeCase tests RoPE and RoPEInverse on rows of several heads, with n as
// the half head dimension.
func ropeCase(inverse bool) kcase {
	name := "RoPE"
	if inverse {
		name = "RoPEInverse"
	}
	return kcase{
		name: name,
		gen: func(r *rand.Rand, n int) [][]float32 {
			if n == 0 {
				n = 1
			}
			n = min(n, 130)
			th := randVec(r, n, -3, 3)
			c, s := make([]float32, n), make([]float32, n)
			for i, t := range th {
				c[i], s[i] = float32(math.Cos(f64(t))), float32(math.Sin(f64(t)))
			}
			return [][]float32{randVec(r, 3*2*n, -2, 2), c, s}
		},
		run: func(in [][]float32) []float32 {
			if inverse {
				RoPEInverse(in[0], in[1], in[2])
			} else {
				RoPE(in[0], in[1], in[2])
			}
			return in[0]
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			x, c, s := in[0], in[1], in[2]
			half := len(c)
			o, m := make([]float64, len(x)), make([]float64, len(x))
			sg := 1.0
			if inverse {
				sg = -1
			}
			for h := 0; h < len(x); h += 2 * half {
				for i := 0; i < half; i++ {
					a, b := f64(x[h+i]), f64(x[h+half+i])
					o[h+i] = a*f64(c[i]) - sg*b*f64(s[i])
					o[h+half+i] = b*f64(c[i]) + sg*a*f64(s[i])
					m[h+i] = math.Abs(a) + math.Abs(b)
					m[h+half+i] = m[h+i]
				}
			}
			return o, m
		},
		tol: 2e-7,
	}
}

func allCases() []kcase {
	return append(kcases, ropeCase(false), ropeCase(true), sampleCase())
}

func sampleCase() kcase {
	return kcase{
		name: "SoftmaxTemp+SampleIndex",
		gen: func(r *rand.Rand, n int) [][]float32 {
			return [][]float32{randVec(r, n, -8, 8), {r.Float32()}}
		},
		run: func(in [][]float32) []float32 {
			z := in[0]
			w := make([]float32, len(z))
			s, l := SoftmaxTemp(w, z, 1/0.7)
			w1 := make([]float32, len(z))
			s1, l1 := SoftmaxTemp(w1, z, 1)
			k := SampleIndex(w, s, f64(in[1][0]))
			return append(append(w, s, l, s1, l1, float32(k)), w1...)
		},
		ref: func(in [][]float32) ([]float64, []float64) {
			z := in[0]
			n := len(z)
			l, _ := lseRef(z)
			mx := math.Inf(-1)
			for _, v := range z {
				mx = math.Max(mx, f64(v))
			}
			w, w1 := make([]float64, n), make([]float64, n)
			var s, s1 float64
			for i, v := range z {
				w[i] = math.Exp((f64(v) - mx) / 0.7)
				w1[i] = math.Exp(f64(v) - mx)
				s += w[i]
				s1 += w1[i]
			}
			k, cum := -1, 0.0
			for i := range w {
				cum += w[i]
				if cum > f64(in[1][0])*s {
					k = i
					break
				}
			}
			if n == 0 {
				l, s1 = math.Inf(-1), 0
			}
			want := append(append(w, s, l, s1, l, float64(k)), w1...)
			m := make([]float64, len(want))
			for i, v := range want {
				m[i] = math.Abs(v) + 1e-30
			}
			m[n+4] = 1e-30 // the sampled index: exact
			return want, m
		},
		tol: 2e-6,
	}
}

// TestKernels checks every kernel at every level against its float64
// reference, the SIMD levels bit for bit against each other and the
// portable path against them to float32 rounding.
func TestKernels(t *testing.T) {
	for _, kc := range allCases() {
		t.Run(kc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(kc.name))))
			for _, n := range testLengths {
				for rep := 0; rep < 3; rep++ {
					in := kc.gen(r, n)
					want, mag := kc.ref(in)
					outs := map[Level][]float32{}
					for _, l := range levels() {
						atLevel(l, func() { outs[l] = kc.run(clone(in)) })
						got := outs[l]
						if len(got) != len(want) {
							t.Fatalf("n=%d %v: %d outputs, want %d", n, l, len(got), len(want))
						}
						for i := range got {
							if !close64(f64(got[i]), want[i], kc.tol*mag[i]) {
								t.Fatalf("n=%d %v: out[%d] = %g, want %g (tol %g)", n, l, i, got[i], want[i], kc.tol*mag[i])
							}
						}
					}
					if a, b := outs[AVX2], outs[AVX512]; a != nil && b != nil {
						for i := range a {
							if !sameBits(a[i], b[i]) {
								t.Fatalf("n=%d: AVX2 and AVX-512 differ at out[%d]: %g (%#x) vs %g (%#x)", n, i, a[i], math.Float32bits(a[i]), b[i], math.Float32bits(b[i]))
							}
						}
					}
				}
			}
		})
	}
}

func close64(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= tol
}

// TestSplitAndAlignment checks that elementwise results do not depend on
// how a row is split or where it starts in memory.
func TestSplitAndAlignment(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	x := randVec(r, 300, -30, 30)
	for _, l := range levels() {
		atLevel(l, func() {
			whole := make([]float32, len(x))
			Exp(whole, x)
			parts := make([]float32, len(x))
			for lo := 0; lo < len(x); {
				hi := min(len(x), lo+1+r.IntN(40))
				Exp(parts[lo:hi], x[lo:hi])
				lo = hi
			}
			for i := range whole {
				if !sameBits(whole[i], parts[i]) {
					t.Fatalf("%v: split Exp differs at %d", l, i)
				}
			}
			// Reductions of the same row at different offsets in memory.
			buf := make([]float32, 400)
			want := Dot(x, x)
			for off := 0; off < 17; off++ {
				y := buf[off : off+len(x)]
				copy(y, x)
				if got := Dot(y, y); !sameBits(got, want) {
					t.Fatalf("%v: Dot at offset %d = %g, want %g", l, off, got, want)
				}
			}
		})
	}
}

// TestLaneLayout checks the documented layout directly: each reduction
// equals the portable model of lanes and tree exactly when no rounding is
// involved (Max) and at every SIMD level equals the others (TestKernels).
func TestLaneLayout(t *testing.T) {
	// With ±0 the order of the max tree is visible.
	x := make([]float32, 70)
	for i := range x {
		if i%3 == 0 {
			x[i] = float32(math.Copysign(0, -1))
		}
	}
	want := maxGo(x)
	for _, l := range levels() {
		atLevel(l, func() {
			if got := Max(x); !sameBits(got, want) {
				t.Errorf("%v: Max over ±0 = %v (%#x), want %#x", l, got, math.Float32bits(got), math.Float32bits(want))
			}
		})
	}
}

func TestEmptyAndBounds(t *testing.T) {
	for _, l := range levels() {
		atLevel(l, func() {
			if m := Max(nil); !math.IsInf(f64(m), -1) {
				t.Errorf("%v: Max(nil) = %g", l, m)
			}
			if m := LogSumExp(nil); !math.IsInf(f64(m), -1) {
				t.Errorf("%v: LogSumExp(nil) = %g", l, m)
			}
			if i := Argmax(nil); i != -1 {
				t.Errorf("%v: Argmax(nil) = %d", l, i)
			}
			if s := Sum(nil); s != 0 {
				t.Errorf("%v: Sum(nil) = %g", l, s)
			}
			if k := SampleIndex(nil, 0, 0.5); k != -1 {
				t.Errorf("%v: SampleIndex(nil) = %d", l, k)
			}
			RoPE(nil, nil, nil)
			Exp(nil, nil)
			Softmax(nil)
		})
	}
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	a, b := make([]float32, 3), make([]float32, 4)
	mustPanic("Dot", func() { Dot(a, b) })
	mustPanic("Axpy", func() { Axpy(1, a, b) })
	mustPanic("Exp", func() { Exp(a, b) })
	mustPanic("RoPE", func() { RoPE(b, a, a) })
	mustPanic("RoPE cos/sin", func() { RoPE(b, a[:2], b[:1]) })
	mustPanic("SwiGLU", func() { SwiGLU(a, a, b) })
	mustPanic("AdamW", func() { AdamW(a, a, a, b, 1, 1, 1, 1, 1, 1, 1) })
	mustPanic("TokenLogProb", func() { TokenLogProb(a, 3) })
	mustPanic("RMSNorm", func() { RMSNorm(a, a, b, 1) })
}

func TestSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, l := range levels() {
		atLevel(l, func() {
			x := []float32{nan, inf, -inf, 0, float32(math.Copysign(0, -1)), 89, 88.72283, 88.72284, -87.33655, -103.97, -104, -1e30, 1e30, 1e-40}
			e := make([]float32, len(x))
			Exp(e, x)
			for i, v := range x {
				if got := Expf(v); !sameBits(got, e[i]) {
					t.Errorf("%v: Expf(%g) = %g, Exp lane %g", l, v, got, e[i])
				}
			}
			want := []float64{math.NaN(), math.Inf(1), 0, 1, 1, math.Inf(1), 3.4027e38, math.Inf(1), 1.1755e-38, 1.4e-45, 0, 0, math.Inf(1), 1}
			for i := range x {
				w := want[i]
				if !(math.IsNaN(w) && e[i] != e[i]) && !(math.IsInf(w, 0) && f64(e[i]) == w) && math.Abs(f64(e[i])-w) > 1e-3*math.Abs(w) {
					t.Errorf("%v: Exp(%g) = %g, want about %g", l, x[i], e[i], w)
				}
			}
			// Softmax rows.
			row := []float32{1, 2, -inf, 3}
			lse := Softmax(row)
			if row[2] != 0 || math.Abs(f64(row[0]+row[1]+row[3])-1) > 1e-6 || math.Abs(f64(lse)-math.Log(math.E+math.E*math.E+math.E*math.E*math.E)) > 1e-5 {
				t.Errorf("%v: Softmax with −Inf: %v lse %g", l, row, lse)
			}
			eq := []float32{5, 5, 5, 5, 5}
			Softmax(eq)
			for _, p := range eq {
				if math.Abs(f64(p)-0.2) > 1e-7 {
					t.Errorf("%v: Softmax of equal row: %v", l, eq)
				}
			}
			huge := []float32{3e38, -3e38, 3e38}
			Softmax(huge)
			if huge[0] != 0.5 || huge[1] != 0 || huge[2] != 0.5 {
				t.Errorf("%v: Softmax of huge row: %v", l, huge)
			}
			if v := LogSumExp([]float32{-inf, -inf}); !math.IsInf(f64(v), -1) {
				t.Errorf("%v: LogSumExp of −Inf row = %g", l, v)
			}
			if v := LogSumExp([]float32{1, inf}); !math.IsInf(f64(v), 1) {
				t.Errorf("%v: LogSumExp with +Inf = %g", l, v)
			}
			if v := LogSumExp([]float32{1, nan, 2}); v == v {
				t.Errorf("%v: LogSumExp with NaN = %g", l, v)
			}
			if m := Max([]float32{nan, 1, nan, 3, 2}); m != 3 {
				t.Errorf("%v: Max ignoring NaN = %g", l, m)
			}
			if i := Argmax([]float32{nan, nan}); i != 0 {
				t.Errorf("%v: Argmax of NaN row = %d", l, i)
			}
			long := make([]float32, 100)
			long[77], long[90] = 4, 4
			if i := Argmax(long); i != 77 {
				t.Errorf("%v: Argmax tie = %d", l, i)
			}
			long[99] = 5
			if i := Argmax(long); i != 99 {
				t.Errorf("%v: Argmax in tail = %d", l, i)
			}
			s := make([]float32, 4)
			Sigmoid(s, []float32{-inf, inf, nan, -200})
			if s[0] != 0 || s[1] != 1 || s[2] == s[2] || s[3] != 0 {
				t.Errorf("%v: Sigmoid specials = %v", l, s)
			}
		})
	}
}

// TestSampleIndex checks the search against a float64 cumulative sum on
// a row long enough to use the block search.
func TestSampleIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	w := randVec(r, 5000, 0, 1)
	for i := 0; i < 100; i++ {
		w[r.IntN(len(w))] = 0
	}
	for _, l := range levels() {
		atLevel(l, func() {
			s := Sum(w)
			for k := 0; k < 200; k++ {
				u := r.Float64()
				got := SampleIndex(w, s, u)
				var cum float64
				want := -1
				for i, v := range w {
					cum += f64(v)
					if cum > u*f64(s) {
						want = i
						break
					}
				}
				// Different summation orders may move a boundary by one
				// weight at most.
				if got != want && (got < want-1 || got > want+1 || w[got] == 0) {
					t.Fatalf("%v: SampleIndex(u=%g) = %d, want %d", l, u, got, want)
				}
			}
			if k := SampleIndex([]float32{0, 1, 0}, 1, 0.99999); k != 1 {
				t.Errorf("%v: SampleIndex skips to a zero weight: %d", l, k)
			}
		})
	}
}

func ExampleSoftmaxTemp() {
	logits := []float32{1, 3, 2, 0.5}
	w := make([]float32, len(logits))
	sum, lse := SoftmaxTemp(w, logits, 1/0.8)
	k := SampleIndex(w, sum, 0.6)
	fmt.Printf("token %d, log-prob %.4f\n", k, logits[k]-lse)
	// Output: token 1, log-prob -0.4608
}
