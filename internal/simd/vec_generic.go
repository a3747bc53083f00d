package simd

import "math"

// Portable implementations. Each performs, lane by lane, the operations of
// the assembly kernels in the same order (see the package documentation
// for the lane layout); a*b + c may or may not be fused by the compiler.

// lanes is the canonical number of reduction lanes: element i of a row
// accumulates into lane i mod lanes.
const lanes = 32

// treeSum combines the lanes: lane i += lane i+h for h = 16, 8, 4, 2, 1.
func treeSum(acc *[lanes]float32) float32 {
	for h := lanes / 2; h >= 1; h /= 2 {
		for i := 0; i < h; i++ {
			acc[i] += acc[i+h]
		}
	}
	return acc[0]
}

// treeMax is treeSum with lane i = lane i+h if it is greater.
func treeMax(acc *[lanes]float32) float32 {
	for h := lanes / 2; h >= 1; h /= 2 {
		for i := 0; i < h; i++ {
			if acc[i+h] > acc[i] {
				acc[i] = acc[i+h]
			}
		}
	}
	return acc[0]
}

func dotGo(x, y []float32) float32 {
	var acc [lanes]float32
	y = y[:len(x)]
	for i, v := range x {
		acc[i%lanes] += v * y[i]
	}
	return treeSum(&acc)
}

func dot3Go(x, y, z []float32) float32 {
	var acc [lanes]float32
	y, z = y[:len(x)], z[:len(x)]
	for i, v := range x {
		t := v * y[i]
		acc[i%lanes] += t * z[i]
	}
	return treeSum(&acc)
}

func sumGo(x []float32) float32 {
	var acc [lanes]float32
	for i, v := range x {
		acc[i%lanes] += v
	}
	return treeSum(&acc)
}

func maxGo(x []float32) float32 {
	var acc [lanes]float32
	for i := range acc {
		acc[i] = float32(math.Inf(-1))
	}
	for i, v := range x {
		if v > acc[i%lanes] {
			acc[i%lanes] = v
		}
	}
	return treeMax(&acc)
}

func expSumGo(dst, x []float32, shift float32) float32 {
	var acc [lanes]float32
	dst = dst[:len(x)]
	for i, v := range x {
		e, _ := expGo(v - shift)
		dst[i] = e
		acc[i%lanes] += e
	}
	return treeSum(&acc)
}

func expSumNoStoreGo(x []float32, shift float32) float32 {
	var acc [lanes]float32
	for i, v := range x {
		e, _ := expGo(v - shift)
		acc[i%lanes] += e
	}
	return treeSum(&acc)
}

func tokStatsGo(z []float32, m float32) (s, t float32) {
	var sa, ta [lanes]float32
	for i, v := range z {
		e, xc := expGo(v - m)
		sa[i%lanes] += e
		ta[i%lanes] += e * xc
	}
	return treeSum(&sa), treeSum(&ta)
}

func softmaxTempGo(dst, z []float32, m, invT float32) (s, s1 float32) {
	var sa, s1a [lanes]float32
	dst = dst[:len(z)]
	for i, v := range z {
		d := v - m
		e, _ := expGo(d * invT)
		dst[i] = e
		sa[i%lanes] += e
		e1, _ := expGo(d)
		s1a[i%lanes] += e1
	}
	return treeSum(&sa), treeSum(&s1a)
}

func indexEqGo(x []float32, v float32) int {
	for i, y := range x {
		if y == v {
			return i
		}
	}
	return -1
}

func expVecGo(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i], _ = expGo(v)
	}
}

func sigmoidGo(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		e, _ := expGo(-v)
		dst[i] = 1 / (e + 1)
	}
}

func swigluGo(out, g, u []float32) {
	g, u = g[:len(out)], u[:len(out)]
	for i, gv := range g {
		e, _ := expGo(-gv)
		out[i] = gv / (e + 1) * u[i]
	}
}

func swigluBackGo(dg, du, dout, g, u []float32) {
	n := len(dg)
	du, dout, g, u = du[:n], dout[:n], g[:n], u[:n]
	for i, gv := range g {
		e, _ := expGo(-gv)
		s := 1 / (e + 1)
		do := dout[i]
		du[i] = gv * s * do
		b := gv*(1-s) + 1
		dg[i] = do * u[i] * s * b
	}
}

func ropeGo(x, cos, sin []float32, inverse bool) {
	half := len(cos)
	sin = sin[:half]
	for h := 0; h+2*half <= len(x); h += 2 * half {
		x1, x2 := x[h:h+half], x[h+half:h+2*half]
		for i, c := range cos {
			a, b, s := x1[i], x2[i], sin[i]
			t1, t2 := b*s, a*s
			if inverse {
				x1[i] = a*c + t1
				x2[i] = b*c - t2
			} else {
				x1[i] = a*c - t1
				x2[i] = b*c + t2
			}
		}
	}
}

func adamwGo(p, g, m, v []float32, hp *[9]float32) {
	lr, b1, b2, eps, wd, ibc1, ibc2, ob1, ob2 := hp[0], hp[1], hp[2], hp[3], hp[4], hp[5], hp[6], hp[7], hp[8]
	n := len(p)
	g, m, v = g[:n], m[:n], v[:n]
	for i, gi := range g {
		t := ob1 * gi
		t = m[i]*b1 + t
		m[i] = t
		u := ob2 * gi * gi
		u = v[i]*b2 + u
		v[i] = u
		t *= ibc1
		u *= ibc2
		den := float32(math.Sqrt(float64(u))) + eps
		q := t / den
		q = p[i]*wd + q
		p[i] -= q * lr
	}
}

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += v * alpha
	}
}

func scaleGo(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

func addGo(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += x[i]
	}
}

func addScalarGo(dst, x []float32, c float32) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = v + c
	}
}

func rmsScaleGo(out, x, w []float32, r float32) {
	x, w = x[:len(out)], w[:len(out)]
	for i, v := range x {
		out[i] = v * r * w[i]
	}
}

func rmsBackGo(dx, dy, x, w []float32, r, nc float32) {
	n := len(dx)
	dy, x, w = dy[:n], x[:n], w[:n]
	for i, d := range dy {
		t := d * w[i]
		a := t*r + dx[i]
		dx[i] = x[i]*nc + a
	}
}

func rmsWGradGo(dw, dy, x []float32, r float32) {
	n := len(dw)
	dy, x = dy[:n], x[:n]
	for i, d := range dy {
		t := d * x[i]
		dw[i] += t * r
	}
}

func softmaxBackGo(p, dp []float32, d, scale float32) {
	dp = dp[:len(p)]
	for i, pv := range p {
		dp[i] = (dp[i] - d) * pv * scale
	}
}

func tokBackGo(z []float32, lse, a, b float32) {
	for i, v := range z {
		e, lp := expGo(v - lse)
		z[i] = e * (lp*a + b)
	}
}
