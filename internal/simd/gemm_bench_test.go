package simd

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// benchShape is a product of the default training step or of decoding.
type benchShape struct {
	name           string
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int // 0: the row width
	beta           float32
	packed         bool // B packed once (GemmPackedB)
	serialOnly     bool // called on one goroutine (attention)
}

var benchShapes = func() []benchShape {
	var s []benchShape
	// Projections y = x·Wᵀ, W stored [out, in].
	for _, d := range [][2]int{{128, 384}, {128, 704}, {128, 512}, {128, 128}, {352, 128}} {
		s = append(s, benchShape{name: fmt.Sprintf("fwdNT/m2048n%dk%d", d[1], d[0]), transB: true, m: 2048, n: d[1], k: d[0]})
	}
	// dX = dY·W.
	for _, d := range [][2]int{{128, 384}, {128, 704}, {128, 512}, {128, 128}, {352, 128}} {
		s = append(s, benchShape{name: fmt.Sprintf("bwdNN/m2048n%dk%d", d[0], d[1]), m: 2048, n: d[0], k: d[1]})
	}
	// dW += dYᵀ·X.
	for _, d := range [][2]int{{128, 384}, {128, 704}, {128, 512}, {128, 128}, {352, 128}} {
		s = append(s, benchShape{name: fmt.Sprintf("dwTN/m%dn%dk2048", d[1], d[0]), transA: true, m: d[1], n: d[0], k: 2048, beta: 1})
	}
	// Attention of one head on a 64-row block, Q, K, V in a fused [T, 384]
	// matrix: scores Q·Kᵀ, P·V, and the backward's TN products.
	for _, hd := range []int{32, 16} {
		s = append(s, benchShape{name: fmt.Sprintf("attnNT/m64n256k%d", hd), transB: true, m: 64, n: 256, k: hd, lda: 384, ldb: 384, serialOnly: true})
	}
	s = append(s,
		benchShape{name: "attnNN/m64n32k256", m: 64, n: 32, k: 256, ldb: 384, ldc: 384, serialOnly: true},
		benchShape{name: "attnTN/m256n32k64", transA: true, m: 256, n: 32, k: 64, ldb: 384, ldc: 384, beta: 1, serialOnly: true},
		benchShape{name: "attnTN/m32n256k64", transA: true, m: 32, n: 256, k: 64, lda: 384, ldc: 256, serialOnly: true},
	)
	// Decoding against packed weights.
	for _, m := range []int{1, 8, 64} {
		for _, d := range [][2]int{{128, 384}, {128, 704}, {128, 512}, {352, 128}} {
			s = append(s, benchShape{name: fmt.Sprintf("decodePacked/m%dn%dk%d", m, d[1], d[0]), transB: true, m: m, n: d[1], k: d[0], packed: true})
		}
	}
	return s
}()

func (s benchShape) operands() (a, b, c []float32, lda, ldb, ldc int) {
	ar, ac := s.m, s.k
	if s.transA {
		ar, ac = s.k, s.m
	}
	br, bc := s.k, s.n
	if s.transB {
		br, bc = s.n, s.k
	}
	lda, ldb, ldc = max(s.lda, ac), max(s.ldb, bc), max(s.ldc, s.n)
	rng := rand.New(rand.NewPCG(1, 1))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = rng.Float32() - 0.5
		}
		return x
	}
	return fill((ar-1)*lda + ac), fill((br-1)*ldb + bc), fill((s.m-1)*ldc + s.n), lda, ldb, ldc
}

func blasTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// gonumRate times gonum's Sgemm on the shape with GOMAXPROCS = workers,
// in GFLOP/s.
func gonumRate(s benchShape, workers int, a, b, c []float32, lda, ldb, ldc int) float64 {
	prev := runtime.GOMAXPROCS(workers)
	defer runtime.GOMAXPROCS(prev)
	var impl gonum.Implementation
	call := func() {
		impl.Sgemm(blasTrans(s.transA), blasTrans(s.transB), s.m, s.n, s.k, 1, a, lda, b, ldb, s.beta, c, ldc)
	}
	return shapeRate(s, call, 100*time.Millisecond)
}

// shapeRate calls call once to warm up, then repeatedly for about d (at
// least 5 times), and returns the rate of the shape's product in GFLOP/s
// at the median call's duration. On a shared virtual machine a few calls
// take several times longer than the rest (another guest, the host); the
// median leaves them out, where the mean over all calls would not.
func shapeRate(s benchShape, call func(), d time.Duration) float64 {
	call()
	var times []time.Duration
	t0 := time.Now()
	for len(times) < 5 || time.Since(t0) < d {
		c0 := time.Now()
		call()
		times = append(times, time.Since(c0))
	}
	return medianRate(s, times)
}

// medianRate is the rate, in GFLOP/s, of the shape's product computed in
// the median of times.
func medianRate(s benchShape, times []time.Duration) float64 {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	n := len(sorted)
	med := sorted[n/2]
	if n%2 == 0 {
		med = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return 2 * float64(s.m*s.n*s.k) / med.Seconds() / 1e9
}

// BenchmarkPeak reports PeakGFLOPS at each level for 1 and 2 threads and,
// at the levels with a GEMM micro-kernel, the rate of that kernel's
// instruction mix alone (mixPeakGFLOPS) and its share of the FMA peak.
func BenchmarkPeak(b *testing.B) {
	for _, l := range levels() {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/threads%d", l, th), func(b *testing.B) {
				for b.Loop() {
				}
				b.ReportMetric(peakGFLOPS(l, th), "GFLOP/s")
				if mix := mixPeakGFLOPS(l, th); mix > 0 {
					b.ReportMetric(mix, "kernel-mix-GFLOP/s")
					b.ReportMetric(100*mix/peakGFLOPS(l, th), "kernel-mix-%peak")
				}
			})
		}
	}
}

// BenchmarkGemm reports, per shape, level and worker count, the GFLOP/s
// reached over all calls, the fraction of PeakGFLOPS(workers) (%peak, best
// hardware level), of the peak at the level that ran (%levelpeak) and of
// the rate of that level's micro-kernel instruction mix (%mixpeak). It
// also reports the rate at the median call's duration (med-GFLOP/s,
// med-%peak, timed by shapeRate after the loop, as the references are):
// on a shared virtual machine a few calls in a hundred take several times
// longer than the rest, which the mean counts and the median does not
// (the peak references, the best of batches of 100 runs of 2 ms, leave such
// interruptions out too). gonum's Sgemm runs on the same shape in the same
// run (with GOMAXPROCS = workers), timed the same way (gonum-GFLOP/s,
// x-gonum: median against median). Built with -tags netlib
// (CGO_LDFLAGS=-lopenblas OPENBLAS_NUM_THREADS=1) it also reports
// OpenBLAS's sgemm on the shape and worker count (openblas-%peak at its
// median call, x-openblas: median against median): the reference for what
// the machine allows beyond the FMA peak, which a kernel that feeds its
// FMAs from memory does not reach.
func BenchmarkGemm(b *testing.B) {
	peak := map[int]float64{1: PeakGFLOPS(1), 2: PeakGFLOPS(2)}
	for _, s := range benchShapes {
		a, bm, c, lda, ldb, ldc := s.operands()
		var p PackedB
		if s.packed {
			p.Pack(s.transB, s.k, s.n, bm, ldb)
		}
		workers := []int{1, 2}
		if s.serialOnly {
			workers = workers[:1]
		}
		for _, w := range workers {
			gonumGF := gonumRate(s, w, a, bm, c, lda, ldb, ldc)
			blasGF := openblasRate(s, w, a, bm, c, lda, ldb, ldc)
			for _, l := range levels() {
				if l == Portable {
					continue
				}
				b.Run(fmt.Sprintf("%s/%v/w%d", s.name, l, w), func(b *testing.B) {
					defer SetLevel(SetLevel(l))
					call := func() {
						if s.packed {
							GemmPackedB(w, s.transA, s.m, 1, a, lda, &p, s.beta, c, ldc)
						} else {
							GemmParallel(w, s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bm, ldb, s.beta, c, ldc)
						}
					}
					call()
					b.ResetTimer()
					for b.Loop() {
						call()
					}
					gf := 2 * float64(s.m*s.n*s.k) * float64(b.N) / b.Elapsed().Seconds() / 1e9
					b.StopTimer()
					med := shapeRate(s, call, 100*time.Millisecond)
					b.ReportMetric(gf, "GFLOP/s")
					b.ReportMetric(100*gf/peak[w], "%peak")
					b.ReportMetric(100*gf/peakGFLOPS(l, w), "%levelpeak")
					if mix := mixPeakGFLOPS(l, w); mix > 0 {
						b.ReportMetric(100*gf/mix, "%mixpeak")
					}
					b.ReportMetric(med, "med-GFLOP/s")
					b.ReportMetric(100*med/peak[w], "med-%peak")
					b.ReportMetric(gonumGF, "gonum-GFLOP/s")
					b.ReportMetric(med/gonumGF, "x-gonum")
					if blasGF > 0 {
						b.ReportMetric(100*blasGF/peak[w], "openblas-%peak")
						b.ReportMetric(med/blasGF, "x-openblas")
					}
				})
			}
		}
	}
}
