package simd

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
)

// expfExact is the exponential's algorithm written with an exact float32
// fused multiply-add (fmaf), so it is the bit-exact model of a SIMD lane.
func expfExact(x float32) float32 {
	if x != x {
		return math.Float32frombits(math.Float32bits(x) | 1<<22)
	}
	x = min(max(x, expLo), expHi)
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	r := fmaf(-n, expLn2Hi, x)
	r = fmaf(-n, expLn2Lo, r)
	p := fmaf(expC6, r, expC5)
	p = fmaf(p, r, expC4)
	p = fmaf(p, r, expC3)
	p = fmaf(p, r, expC2)
	p = fmaf(p, r, 1)
	p = fmaf(p, r, 1)
	return scale2(p, int32(n))
}

// fmaf returns a·b+c rounded once to float32, for results in the normal
// range or zero. The product is exact in float64, so the float64 sum is the
// exact result rounded once; converting it to float32 rounds correctly
// unless it fell exactly halfway between two float32 values, in which case
// the sign of the float64 rounding error decides.
func fmaf(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	if uint32(math.Float64bits(s))<<3 == 1<<31 {
		bb := s - p
		e := (p - (s - bb)) + (float64(c) - bb) // the error of s (TwoSum)
		if e > 0 {
			s = math.Nextafter(s, math.Inf(1))
		} else if e < 0 {
			s = math.Nextafter(s, math.Inf(-1))
		}
	}
	return float32(s)
}

// ulpErr returns |got − e^x| in units of the last place of e^x in float32
// (subnormal spacing below the normal range).
func ulpErr(got, x float32) float64 {
	want := math.Exp(float64(x))
	if math.IsInf(float64(float32(want)), 1) || want > math.MaxFloat32 {
		if math.IsInf(float64(got), 1) {
			return 0
		}
		return math.Abs(float64(got)-want) / 0x1p104
	}
	ulp := 0x1p-149
	if want >= 0x1p-126 {
		_, e := math.Frexp(want)
		ulp = math.Ldexp(1, e-24)
	}
	return math.Abs(float64(got)-want) / ulp
}

// ulpDist returns how many float32 values apart two non-negative results
// are.
func ulpDist(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	return max(d, -d)
}

// expInputs returns special and random inputs for the exponential.
func expInputs(r *rand.Rand, n int) []float32 {
	x := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 88.72283, 88.72284, 89, 89.5, -87.33654, -87.33655,
		-103.97, -103.98, -104, -104.5, 1e-30, -1e-30, 1e-45, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7fa00001), math.Float32frombits(0xffc12345), math.MaxFloat32, -math.MaxFloat32}
	for len(x) < n {
		switch len(x) % 3 {
		case 0:
			x = append(x, math.Float32frombits(r.Uint32()))
		case 1:
			x = append(x, -110+200*r.Float32())
		default:
			x = append(x, float32(r.IntN(300)-150)*0.693147182+(r.Float32()-0.5)*1e-5)
		}
	}
	return x
}

// TestExpLanes checks every SIMD lane of Exp and Expf bit for bit against
// the exact model, and the portable path to rounding.
func TestExpLanes(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	x := expInputs(r, 200000)
	e := make([]float32, len(x))
	for _, l := range levels() {
		atLevel(l, func() {
			Exp(e, x)
			for i, v := range x {
				w := expfExact(v)
				if l == Portable || !haveAsm {
					if !sameBits(e[i], w) && ulpDist(e[i], w) > 2 {
						t.Fatalf("portable: Exp(%g) = %g, model %g", v, e[i], w)
					}
					continue
				}
				if math.Float32bits(e[i]) != math.Float32bits(w) {
					t.Fatalf("%v: Exp(%g [%#x]) = %#x, model %#x", l, v, math.Float32bits(v), math.Float32bits(e[i]), math.Float32bits(w))
				}
				if f := Expf(v); math.Float32bits(f) != math.Float32bits(w) {
					t.Fatalf("%v: Expf(%g) = %#x, model %#x", l, v, math.Float32bits(f), math.Float32bits(w))
				}
			}
		})
	}
}

// TestExpAccuracy measures the error of the exponential on a sample of
// every float32 (all of them with AGENTRL_EXHAUSTIVE=1, a few minutes),
// and checks the SIMD lanes bit for bit against the exact model.
func TestExpAccuracy(t *testing.T) {
	stride := uint64(4099)
	if os.Getenv("AGENTRL_EXHAUSTIVE") != "" {
		stride = 1
	} else if testing.Short() {
		stride = 65537
	}
	defer SetLevel(SetLevel(Hardware()))
	workers := runtime.GOMAXPROCS(0)
	type result struct {
		maxUlp, maxUlpPortable float64
		at                     float32
		bad                    string
	}
	res := make([]result, workers)
	var wg sync.WaitGroup
	const chunk = 1 << 12
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rs := &res[w]
			xs := make([]float32, 0, chunk)
			e, e2 := make([]float32, chunk), make([]float32, chunk)
			flush := func() {
				Exp(e[:len(xs)], xs) // the hardware level
				if haveAsm && Hardware() >= AVX2 {
					expAVX2(e2[:len(xs)], xs)
				}
				for i, v := range xs {
					got := e[i]
					if haveAsm && Hardware() >= AVX2 && rs.bad == "" &&
						(math.Float32bits(got) != math.Float32bits(expfExact(v)) || math.Float32bits(e2[i]) != math.Float32bits(got)) {
						rs.bad = "SIMD lane differs from the model"
						rs.at = v
					}
					if v != v {
						continue
					}
					if u := ulpErr(got, v); u > rs.maxUlp {
						rs.maxUlp, rs.at = u, v
					}
					p, _ := expGo(v)
					if u := ulpErr(p, v); u > rs.maxUlpPortable {
						rs.maxUlpPortable = u
					}
				}
				xs = xs[:0]
			}
			for b := uint64(w) * stride; b < 1<<32; b += uint64(workers) * stride {
				xs = append(xs, math.Float32frombits(uint32(b)))
				if len(xs) == chunk {
					flush()
				}
			}
			flush()
		}(w)
	}
	wg.Wait()
	var worst result
	for _, r := range res {
		if r.bad != "" {
			t.Fatalf("%s at %g", r.bad, r.at)
		}
		if r.maxUlp > worst.maxUlp {
			worst.maxUlp, worst.at = r.maxUlp, r.at
		}
		worst.maxUlpPortable = max(worst.maxUlpPortable, r.maxUlpPortable)
	}
	t.Logf("stride %d: max error %.3f ulp (at %g), portable %.3f ulp", stride, worst.maxUlp, worst.at, worst.maxUlpPortable)
	if worst.maxUlp > 2 || worst.maxUlpPortable > 2 {
		t.Errorf("error above 2 ulp")
	}
}

// FuzzExp compares the SIMD exponential with the exact model and the
// portable path on arbitrary inputs.
func FuzzExp(f *testing.F) {
	f.Add(uint32(0x42b17218), uint32(0xc2cff1b5), uint32(0x7fc00000))
	f.Fuzz(func(t *testing.T, a, b, c uint32) {
		x := []float32{math.Float32frombits(a), math.Float32frombits(b), math.Float32frombits(c)}
		e := make([]float32, 3)
		Exp(e, x)
		for i, v := range x {
			w := expfExact(v)
			if haveAsm && Current() >= AVX2 && !sameBits(e[i], w) {
				t.Fatalf("Exp(%g) = %g, model %g", v, e[i], w)
			}
			p, _ := expGo(v)
			if !sameBits(p, w) && ulpDist(p, w) > 2 {
				t.Fatalf("portable Exp(%g) = %g, model %g", v, p, w)
			}
		}
	})
}

// FuzzSoftmax compares Softmax and TokenLogProb across levels on rows
// built from arbitrary bytes.
func FuzzSoftmax(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 200, 0, 0, 128}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, scale uint8) {
		row := make([]float32, len(data)/2)
		for i := range row {
			row[i] = float32(int16(uint16(data[2*i])|uint16(data[2*i+1])<<8)) / float32(1+int(scale))
		}
		var outs [][]float32
		for _, l := range levels() {
			atLevel(l, func() {
				p := append([]float32(nil), row...)
				lse := Softmax(p)
				var lp, h float32
				if len(row) > 0 {
					_, lp, h = TokenLogProb(row, 0)
				}
				outs = append(outs, append(p, lse, lp, h))
			})
		}
		for k := 1; k < len(outs); k++ {
			for i := range outs[k] {
				a, b := outs[0][i], outs[k][i]
				if k == 2 && !sameBits(outs[1][i], b) {
					t.Fatalf("AVX2 and AVX-512 differ at %d: %g vs %g", i, outs[1][i], b)
				}
				if math.Abs(float64(a)-float64(b)) > 1e-5*(1+math.Abs(float64(a))) {
					t.Fatalf("portable and level %d differ at %d: %g vs %g", k, i, a, b)
				}
			}
		}
		var s float64
		for _, p := range outs[len(outs)-1][:len(row)] {
			if p < 0 || p > 1 {
				t.Fatalf("probability %g", p)
			}
			s += float64(p)
		}
		if len(row) > 0 && math.Abs(s-1) > 1e-5 {
			t.Fatalf("probabilities sum to %g", s)
		}
	})
}
