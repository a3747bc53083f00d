package simd

import "math"

// Constants of the exponential, shared with the assembly generator
// (_asm/vec). Each is exactly representable in float32.
const (
	expHi    = 89   // e^89 overflows float32; larger inputs are clamped here
	expLo    = -104 // e^-104 < 2^-150 rounds to 0; smaller inputs are clamped here
	expLog2e = 1.44269504088896341
	// ln 2 ≈ expLn2Hi + expLn2Lo. expLn2Hi has 9 significant bits, so
	// n·expLn2Hi and x − n·expLn2Hi are exact for |n| ≤ 150.
	expLn2Hi = 0.693359375
	expLn2Lo = -2.12194440e-4
	// e^r ≈ 1 + r + c2·r² + … + c6·r⁶ on |r| ≤ 0.347 (relative error 1.1e-8).
	expC2 = 0.5
	expC3 = 0.16666576266288757
	expC4 = 0.04166655242443085
	expC5 = 0.00836324691772461
	expC6 = 0.001392626785673201
	// roundMagic rounds a float32 t with |t| < 2^22 to an integer, ties to
	// even: (t + roundMagic) − roundMagic.
	roundMagic = 0x1.8p23
)

// Expf returns e^x in float32: at the AVX2 and AVX-512 levels bit for bit
// what a lane of Exp computes, at the portable level what the portable Exp
// computes.
//
// The algorithm, the same on every path: x is clamped to [−104, 89] (NaN
// passes through); n = roundeven(x·log₂e); r = x − n·ln2 by a two-step
// Cody–Waite reduction (the first step exact, the second a fused
// multiply-add); e^r ≈ 1 + r + c2·r² + … + c6·r⁶, a minimax polynomial
// evaluated by Horner's rule in fused multiply-adds; the result is p·2^n,
// rounded once, so subnormal results are correctly rounded and results past
// the float32 range are +Inf. The error is below 1 ulp of the exact result
// over the whole float32 range; inputs below about −103.97 give 0 and NaN
// gives NaN.
func Expf(x float32) float32 {
	if level >= AVX2 {
		return expf1AVX2(x)
	}
	e, _ := expGo(x)
	return e
}

// expGo is the portable lane of the exponential. It also returns the
// clamped argument, which the entropy and log-prob kernels multiply by so
// that −Inf arguments contribute 0 rather than 0·(−Inf).
func expGo(x float32) (e, xc float32) {
	if x < expLo {
		x = expLo
	}
	if x > expHi {
		x = expHi
	}
	xc = x
	t := x * expLog2e
	n := (t + roundMagic) - roundMagic
	r := x - n*expLn2Hi // exact, fused or not
	r = r - n*expLn2Lo
	p := expC6*r + expC5
	p = p*r + expC4
	p = p*r + expC3
	p = p*r + expC2
	p = p*r + 1
	p = p*r + 1
	return scale2(p, int32(n)), xc
}

// scale2 returns p·2^n rounded once, for p in [0.5, 2] and n in [−150, 128],
// as (p·2^(n>>1))·2^(n−n>>1): the first product is exact.
func scale2(p float32, n int32) float32 {
	n1 := n >> 1
	n2 := n - n1
	p *= math.Float32frombits(uint32(n1+127) << 23)
	return p * math.Float32frombits(uint32(n2+127)<<23)
}
