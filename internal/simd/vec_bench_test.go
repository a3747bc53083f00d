package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkVec times every kernel at every level and the scalar Go code it
// replaces in the model ("scalar", reproduced below), per row length. It
// reports elements/ns beside the byte rate (bytes read plus written).
//
//	go test -run - -bench Vec -benchtime 20ms ./internal/simd
func BenchmarkVec(b *testing.B) {
	for _, bc := range vecBenches {
		b.Run(bc.name, func(b *testing.B) {
			for _, n := range benchLengths {
				if bc.maxLen > 0 && n > bc.maxLen {
					continue
				}
				st := bc.setup(n)
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
					variants := []string{"scalar"}
					for _, l := range levels() {
						variants = append(variants, l.String())
					}
					for _, v := range variants {
						b.Run(v, func(b *testing.B) {
							f := st.simd
							l := Portable
							if v == "scalar" {
								f = st.scalar
							} else {
								l, _ = ParseLevel(v)
							}
							atLevel(l, func() {
								b.SetBytes(int64(bc.bytes * n))
								for b.Loop() {
									f()
								}
								b.ReportMetric(float64(n)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "elem/ns")
							})
						})
					}
				})
			}
		})
	}
}

var benchLengths = []int{16, 32, 128, 352, 512, 4096, 152064}

type benchSetup struct{ simd, scalar func() }

type vecBench struct {
	name   string
	bytes  int // bytes read and written per element
	maxLen int // longest row benchmarked; 0 for all
	setup  func(n int) benchSetup
}

var sinkF float32
var sinkI int

func benchRow(n int, lo, hi float32, seed uint64) []float32 {
	return randVec(rand.New(rand.NewPCG(seed, 1)), n, lo, hi)
}

var vecBenches = []vecBench{
	{"Dot", 8, 0, func(n int) benchSetup {
		x, y := benchRow(n, -1, 1, 1), benchRow(n, -1, 1, 2)
		return benchSetup{func() { sinkF = Dot(x, y) }, func() { sinkF = oldDot(x, y) }}
	}},
	{"Sum", 4, 0, func(n int) benchSetup {
		x := benchRow(n, -1, 1, 1)
		return benchSetup{func() { sinkF = Sum(x) }, func() {
			var s float32
			for _, v := range x {
				s += v
			}
			sinkF = s
		}}
	}},
	{"Max", 4, 0, func(n int) benchSetup {
		x := benchRow(n, -1, 1, 1)
		return benchSetup{func() { sinkF = Max(x) }, func() {
			mx := float32(math.Inf(-1))
			for _, v := range x {
				mx = max(mx, v)
			}
			sinkF = mx
		}}
	}},
	{"Argmax", 4, 0, func(n int) benchSetup {
		x := benchRow(n, -1, 1, 1)
		return benchSetup{func() { sinkI = Argmax(x) }, func() {
			best := 0
			for i, v := range x {
				if v > x[best] {
					best = i
				}
			}
			sinkI = best
		}}
	}},
	{"Axpy", 12, 0, func(n int) benchSetup {
		x, y := benchRow(n, -1, 1, 1), benchRow(n, -1, 1, 2)
		return benchSetup{func() { Axpy(1e-3, x, y) }, func() { oldAxpy(1e-3, x, y) }}
	}},
	{"Exp", 8, 0, func(n int) benchSetup {
		x, y := benchRow(n, -20, 5, 1), make([]float32, n)
		return benchSetup{func() { Exp(y, x) }, func() {
			for i, v := range x {
				y[i] = oldExpf(v)
			}
		}}
	}},
	{"Sigmoid", 8, 0, func(n int) benchSetup {
		x, y := benchRow(n, -10, 10, 1), make([]float32, n)
		return benchSetup{func() { Sigmoid(y, x) }, func() {
			for i, v := range x {
				y[i] = 1 / (1 + oldExpf(-v))
			}
		}}
	}},
	{"LogSumExp", 4, 0, func(n int) benchSetup {
		x := benchRow(n, -10, 10, 1)
		return benchSetup{func() { sinkF = LogSumExp(x) }, func() { sinkF = oldRowLSE(x) }}
	}},
	// Softmax in place, applied again and again to the same row (which
	// stays a probability vector).
	{"Softmax", 8, 0, func(n int) benchSetup {
		w := benchRow(n, -10, 10, 1)
		return benchSetup{func() { sinkF = Softmax(w) }, func() {
			mx := w[0]
			for _, v := range w[1:] {
				mx = max(mx, v)
			}
			var sum float32
			for j, v := range w {
				e := oldExpf(v - mx)
				w[j] = e
				sum += e
			}
			inv := 1 / sum
			for j := range w {
				w[j] *= inv
			}
			sinkF = mx + float32(math.Log(float64(sum)))
		}}
	}},
	{"SoftmaxBackward", 12, 0, func(n int) benchSetup {
		p, dp := benchRow(n, 0, 1, 1), benchRow(n, -1, 1, 2)
		return benchSetup{func() { SoftmaxBackward(p, dp, 0.125) }, func() {
			d := oldDot(p, dp)
			for j := range p {
				dp[j] = p[j] * (dp[j] - d) * 0.125
			}
		}}
	}},
	{"TokenLogProb", 4, 0, func(n int) benchSetup {
		z := benchRow(n, -10, 10, 1)
		return benchSetup{func() { sinkF, _, _ = TokenLogProb(z, n/2) }, func() {
			l := oldRowLSE(z)
			var spz float32
			for _, v := range z {
				spz += oldExpf(v-l) * v
			}
			sinkF = l - spz + z[n/2] - l
		}}
	}},
	// TokenLogProbBackward includes copying the logits back in (16 bytes
	// per element in all).
	{"TokenLogProbBackward", 16, 0, func(n int) benchSetup {
		z0 := benchRow(n, -10, 10, 1)
		z := make([]float32, n)
		lse, _, h := TokenLogProb(z0, 3)
		return benchSetup{func() { copy(z, z0); TokenLogProbBackward(z, 3, lse, h, -1, 0.01) }, func() {
			copy(z, z0)
			const gl, ge = -1, 0.01
			var spz float32
			for _, v := range z {
				spz += oldExpf(v-lse) * v
			}
			h := lse - spz
			for j, v := range z {
				lp := v - lse
				p := oldExpf(lp)
				z[j] = -gl*p - ge*p*(lp+h)
			}
			z[3] += gl
		}}
	}},
	{"RMSNorm", 12, 0, func(n int) benchSetup {
		x, w, out := benchRow(n, -1, 1, 1), benchRow(n, 0.5, 1.5, 2), make([]float32, n)
		return benchSetup{func() { sinkF = RMSNorm(out, x, w, 1e-5) }, func() {
			s := oldDot(x, x)
			rs := float32(1 / math.Sqrt(float64(s/float32(len(x))+1e-5)))
			for i, v := range x {
				out[i] = v * rs * w[i]
			}
			sinkF = rs
		}}
	}},
	{"RMSNormBackward", 20, 0, func(n int) benchSetup {
		x, w, dy, dx := benchRow(n, -1, 1, 1), benchRow(n, 0.5, 1.5, 2), benchRow(n, -1, 1, 3), make([]float32, n)
		return benchSetup{func() { RMSNormBackward(dx, dy, x, w, 0.9) }, func() {
			const rs = 0.9
			var s float32
			for i, v := range x {
				s += dy[i] * w[i] * v
			}
			c := s * rs * rs * rs / float32(len(x))
			for i, v := range x {
				dx[i] += rs*dy[i]*w[i] - c*v
			}
		}}
	}},
	{"RMSNormWeightGrad", 16, 0, func(n int) benchSetup {
		x, dy, dw := benchRow(n, -1, 1, 1), benchRow(n, -1, 1, 3), make([]float32, n)
		return benchSetup{func() { RMSNormWeightGrad(dw, dy, x, 0.9) }, func() {
			for i, v := range x {
				dw[i] += dy[i] * v * 0.9
			}
		}}
	}},
	{"SwiGLU", 12, 0, func(n int) benchSetup {
		g, u, out := benchRow(n, -6, 6, 1), benchRow(n, -1, 1, 2), make([]float32, n)
		return benchSetup{func() { SwiGLU(out, g, u) }, func() {
			for j, gv := range g {
				out[j] = gv * (1 / (1 + oldExpf(-gv))) * u[j]
			}
		}}
	}},
	{"SwiGLUBackward", 20, 0, func(n int) benchSetup {
		g, u, do := benchRow(n, -6, 6, 1), benchRow(n, -1, 1, 2), benchRow(n, -1, 1, 3)
		dg, du := make([]float32, n), make([]float32, n)
		return benchSetup{func() { SwiGLUBackward(dg, du, do, g, u) }, func() {
			for j, gv := range g {
				sg := 1 / (1 + oldExpf(-gv))
				du[j] = do[j] * gv * sg
				dg[j] = do[j] * u[j] * sg * (1 + gv*(1-sg))
			}
		}}
	}},
	// RoPE: n is the half head dimension of one head.
	{"RoPE", 16, 512, func(n int) benchSetup { return ropeBench(n, 1) }},
	// RoPE over a row of 16 heads in one call.
	{"RoPE16Heads", 16, 64, func(n int) benchSetup { return ropeBench(n, 16) }},
	{"AdamW", 28, 0, func(n int) benchSetup {
		p, g, m, v := benchRow(n, -1, 1, 1), benchRow(n, -1, 1, 2), benchRow(n, -1, 1, 3), benchRow(n, 0, 1, 4)
		return benchSetup{func() { AdamW(p, g, m, v, 1e-9, 0.9, 0.999, 1e-8, 0.01, 0.1, 0.01) }, func() {
			const lr, beta1, beta2, eps, wd, bc1, bc2 = 1e-9, 0.9, 0.999, 1e-8, 0.01, 0.1, 0.01
			for i := range p {
				gi := g[i]
				mi := beta1*m[i] + (1-beta1)*gi
				vi := beta2*v[i] + (1-beta2)*gi*gi
				m[i], v[i] = mi, vi
				p[i] -= lr * (mi/bc1/(float32(math.Sqrt(float64(vi/bc2)))+eps) + wd*p[i])
			}
		}}
	}},
	// Sampling one token at T = 0.8 without truncation: the weights, their
	// sum, the draw and the raw log-prob (the scalar code is the model's
	// float64 sampler).
	{"Sample", 8, 0, func(n int) benchSetup {
		z, w := benchRow(n, -10, 10, 1), make([]float32, n)
		w64 := make([]float64, n)
		return benchSetup{func() {
			s, lse := SoftmaxTemp(w, z, 1/0.8)
			k := SampleIndex(w, s, 0.37)
			sinkF = z[k] - lse
		}, func() {
			mx := z[0]
			for _, x := range z {
				mx = max(mx, x)
			}
			var total float64
			for i, x := range z {
				w64[i] = math.Exp((float64(x) - float64(mx)) / 0.8)
				total += w64[i]
			}
			u := 0.37 * total
			var cum float64
			k := n - 1
			for i := range w64 {
				cum += w64[i]
				if u < cum {
					k = i
					break
				}
			}
			sinkF = z[k] - oldRowLSE(z)
		}}
	}},
}

func ropeBench(half, heads int) benchSetup {
	x, th := benchRow(2*half*heads, -1, 1, 1), benchRow(half, -3, 3, 2)
	c, s := make([]float32, half), make([]float32, half)
	for i, t := range th {
		c[i], s[i] = float32(math.Cos(float64(t))), float32(math.Sin(float64(t)))
	}
	return benchSetup{func() { RoPE(x, c, s) }, func() {
		for h := 0; h < heads; h++ {
			v := x[h*2*half : (h+1)*2*half]
			x1, x2 := v[:half], v[half:]
			for i := range half {
				a, b := x1[i], x2[i]
				x1[i] = a*c[i] - b*s[i]
				x2[i] = b*c[i] + a*s[i]
			}
		}
	}}
}

// The scalar code the kernels replace, as it was in model/native.

func oldExpf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693145751953125
		ln2lo = 1.428606765330187045e-06
	)
	switch {
	case x != x:
		return x
	case x > 88:
		return float32(math.Exp(float64(x)))
	case x < -87:
		return 0
	}
	t := x * log2e
	var n int32
	if t >= 0 {
		n = int32(t + 0.5)
	} else {
		n = int32(t - 0.5)
	}
	fn := float32(n)
	r := x - fn*ln2hi - fn*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(n+127)<<23)
}

func oldDot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func oldAxpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func oldRowLSE(z []float32) float32 {
	mx := float32(math.Inf(-1))
	for _, v := range z {
		if v > mx {
			mx = v
		}
	}
	var s float32
	for _, v := range z {
		s += oldExpf(v - mx)
	}
	return mx + float32(math.Log(float64(s)))
}

// BenchmarkExpf times the scalar exponential against the one it replaces.
func BenchmarkExpf(b *testing.B) {
	x := benchRow(1024, -20, 5, 1)
	for _, v := range []string{"scalar", "Expf"} {
		b.Run(v, func(b *testing.B) {
			for b.Loop() {
				var s float32
				if v == "scalar" {
					for _, t := range x {
						s += oldExpf(t)
					}
				} else {
					for _, t := range x {
						s += Expf(t)
					}
				}
				sinkF = s
			}
			b.ReportMetric(float64(len(x))*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "elem/ns")
		})
	}
}
