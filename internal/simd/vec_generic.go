package simd

import "math"

// Portable implementations. Each performs, lane by lane, the operations of
// the assembly kernels in the same order (see the package documentation
// for the lane layout); a*b + c may or may not be fused by the compiler.

// lanes is the canonical number of reduction lanes: element i of a row
// accumulates into lane i mod lanes.
const lanes = Lanes

// treeSum combines the lanes: lane i += lane i+h for h = 16, 8, 4, 2, 1.
func treeSum(a *[lanes]float32) float32 {
	s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15 := a[0]+a[16], a[1]+a[17], a[2]+a[18], a[3]+a[19], a[4]+a[20], a[5]+a[21], a[6]+a[22], a[7]+a[23], a[8]+a[24], a[9]+a[25], a[10]+a[26], a[11]+a[27], a[12]+a[28], a[13]+a[29], a[14]+a[30], a[15]+a[31]
	t0, t1, t2, t3, t4, t5, t6, t7 := s0+s8, s1+s9, s2+s10, s3+s11, s4+s12, s5+s13, s6+s14, s7+s15
	u0, u1, u2, u3 := t0+t4, t1+t5, t2+t6, t3+t7
	v0, v1 := u0+u2, u1+u3
	w0 := v0 + v1
	return w0
}

// treeMax is treeSum with lane i = lane i+h if it is greater.
func treeMax(a *[lanes]float32) float32 {
	s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15 := gt(a[16], a[0]), gt(a[17], a[1]), gt(a[18], a[2]), gt(a[19], a[3]), gt(a[20], a[4]), gt(a[21], a[5]), gt(a[22], a[6]), gt(a[23], a[7]), gt(a[24], a[8]), gt(a[25], a[9]), gt(a[26], a[10]), gt(a[27], a[11]), gt(a[28], a[12]), gt(a[29], a[13]), gt(a[30], a[14]), gt(a[31], a[15])
	t0, t1, t2, t3, t4, t5, t6, t7 := gt(s8, s0), gt(s9, s1), gt(s10, s2), gt(s11, s3), gt(s12, s4), gt(s13, s5), gt(s14, s6), gt(s15, s7)
	u0, u1, u2, u3 := gt(t4, t0), gt(t5, t1), gt(t6, t2), gt(t7, t3)
	v0, v1 := gt(u2, u0), gt(u3, u1)
	w0 := gt(v1, v0)
	return w0
}

// gt returns v if v > a, else a (the order of VMAXPS v, a).
func gt(v, a float32) float32 {
	if v > a {
		return v
	}
	return a
}

// dotGo, sumGo and maxGo keep eight lanes at a time in registers: for
// each group of eight lanes they walk every block of 32 elements, which
// gives each lane the same sequential order as the layout.

func dotGo(x, y []float32) float32 {
	var acc [lanes]float32
	y = y[:len(x)]
	nb := len(x) &^ (lanes - 1)
	for g := 0; g < lanes; g += 8 {
		var a0, a1, a2, a3, a4, a5, a6, a7 float32
		for i := g; i < nb; i += lanes {
			xs, ys := x[i:i+8:i+8], y[i:i+8:i+8]
			a0 += xs[0] * ys[0]
			a1 += xs[1] * ys[1]
			a2 += xs[2] * ys[2]
			a3 += xs[3] * ys[3]
			a4 += xs[4] * ys[4]
			a5 += xs[5] * ys[5]
			a6 += xs[6] * ys[6]
			a7 += xs[7] * ys[7]
		}
		acc[g], acc[g+1], acc[g+2], acc[g+3], acc[g+4], acc[g+5], acc[g+6], acc[g+7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
	for j, v := range x[nb:] {
		acc[j] += v * y[nb+j]
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
	nb := len(x) &^ (lanes - 1)
	for g := 0; g < lanes; g += 8 {
		var a0, a1, a2, a3, a4, a5, a6, a7 float32
		for i := g; i < nb; i += lanes {
			xs := x[i : i+8 : i+8]
			a0 += xs[0]
			a1 += xs[1]
			a2 += xs[2]
			a3 += xs[3]
			a4 += xs[4]
			a5 += xs[5]
			a6 += xs[6]
			a7 += xs[7]
		}
		acc[g], acc[g+1], acc[g+2], acc[g+3], acc[g+4], acc[g+5], acc[g+6], acc[g+7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
	for j, v := range x[nb:] {
		acc[j] += v
	}
	return treeSum(&acc)
}

func maxGo(x []float32) float32 {
	var acc [lanes]float32
	nb := len(x) &^ (lanes - 1)
	for g := 0; g < lanes; g += 8 {
		a0 := float32(math.Inf(-1))
		a1, a2, a3, a4, a5, a6, a7 := a0, a0, a0, a0, a0, a0, a0
		for i := g; i < nb; i += lanes {
			xs := x[i : i+8 : i+8]
			a0 = gt(xs[0], a0)
			a1 = gt(xs[1], a1)
			a2 = gt(xs[2], a2)
			a3 = gt(xs[3], a3)
			a4 = gt(xs[4], a4)
			a5 = gt(xs[5], a5)
			a6 = gt(xs[6], a6)
			a7 = gt(xs[7], a7)
		}
		acc[g], acc[g+1], acc[g+2], acc[g+3], acc[g+4], acc[g+5], acc[g+6], acc[g+7] = a0, a1, a2, a3, a4, a5, a6, a7
	}
	for j, v := range x[nb:] {
		acc[j] = gt(v, acc[j])
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
