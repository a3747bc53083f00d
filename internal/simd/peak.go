package simd

import (
	"runtime"
	"sync"
	"time"
)

// PeakGFLOPS reports the measured float32 FMA throughput of this machine
// in GFLOP/s (an FMA counts as two operations) with threads goroutines,
// each locked to its own OS thread, running independent multiply-add
// chains at the best level the hardware supports (Hardware, not Current).
// It measures once per thread count (for 0.4 s to 1.6 s) and caches the
// result; the reference for GEMM efficiency figures.
func PeakGFLOPS(threads int) float64 { return peakGFLOPS(Hardware(), threads) }

// peakLoop is a throughput loop: run(n) performs n·flops operations.
type peakLoop struct {
	run   func(n int)
	flops int
}

// peakLoops holds each level's loop; levels without one use the portable
// loop.
var peakLoops = [AVX512 + 1]peakLoop{Portable: {run: peakGo, flops: 8 * 2}}

// mixLoops holds, for the levels with a GEMM micro-kernel, a loop of that
// kernel's instruction mix alone (its loads of B, broadcasts of A and
// FMAs, on operands that stay in L1).
var mixLoops [AVX512 + 1]peakLoop

var peakCache struct {
	mu sync.Mutex
	m  map[[3]int]float64
}

// peakGFLOPS is PeakGFLOPS at level l (at most Hardware()).
func peakGFLOPS(l Level, threads int) float64 {
	l = min(l, Hardware())
	loop := peakLoops[l]
	if loop.run == nil {
		loop = peakLoops[Portable]
	}
	return cachedPeak(0, l, threads, loop)
}

// mixPeakGFLOPS is the rate of the GEMM micro-kernel's instruction mix at
// level l (at most Hardware()) on threads goroutines, in GFLOP/s: what a
// kernel that feeds its FMAs from memory reaches here at best, below the
// FMA peak by what the loads cost on this CPU. It is 0 at levels without
// an assembly kernel. Kernel benchmarks report their share of it beside
// their share of the FMA peak, which stays the reference.
func mixPeakGFLOPS(l Level, threads int) float64 {
	l = min(l, Hardware())
	if mixLoops[l].run == nil {
		return 0
	}
	return cachedPeak(1, l, threads, mixLoops[l])
}

// cachedPeak measures loop once per kind, level and thread count.
func cachedPeak(kind int, l Level, threads int, loop peakLoop) float64 {
	threads = max(threads, 1)
	peakCache.mu.Lock()
	defer peakCache.mu.Unlock()
	key := [3]int{kind, int(l), threads}
	if r, ok := peakCache.m[key]; ok {
		return r
	}
	r := measurePeak(loop, threads)
	if peakCache.m == nil {
		peakCache.m = make(map[[3]int]float64)
	}
	peakCache.m[key] = r
	return r
}

// measurePeak takes the best of timed runs of about peakRun each, in
// batches of peakReps, until two batches agree. A reference measured low
// (a neighbour on a shared host, a frequency dip) would inflate every
// share of it, so the runs are short and many: on a 2-vCPU AMD EPYC
// (Zen 4) VM, twelve measurements of 8 runs of 25 ms read 210–225 GFLOP/s
// on two threads and 106–110 on one; of 100 runs of 2 ms, 223–230 and
// 110–117. Runs of 2 ms are about as long as the calls of the train
// step's larger products, whose median a GEMM benchmark reports against
// it. One batch is not always enough: on such a VM the two-thread peak of
// a whole batch (0.2 s) once read half of the machine's, as if both
// threads shared one core, and the GEMM shapes then read 140–190% of it.
// So a batch whose best is not within peakAgree of the best so far is
// followed by another, up to peakBatches.
const (
	peakReps    = 100
	peakRun     = 2 * time.Millisecond
	peakAgree   = 0.02
	peakBatches = 8
)

func measurePeak(loop peakLoop, threads int) float64 {
	n := 1 << 10
	for {
		t0 := time.Now()
		loop.run(n)
		if d := time.Since(t0); d > peakRun/4 {
			n = int(float64(n) * float64(peakRun) / float64(d))
			break
		}
		n *= 4
	}
	return bestOfBatches(func() float64 { return peakBatch(loop, threads, n) })
}

// bestOfBatches runs batch until one result is within peakAgree of the
// best before it, at most peakBatches times, and returns the best.
func bestOfBatches(batch func() float64) float64 {
	best := batch()
	for b := 1; b < peakBatches; b++ {
		r := batch()
		agree := r >= best*(1-peakAgree) && r <= best*(1+peakAgree)
		best = max(best, r)
		if agree {
			break
		}
	}
	return best
}

// peakBatch is the best rate, in GFLOP/s, of peakReps runs of loop.run(n)
// on threads goroutines, each locked to its own OS thread.
func peakBatch(loop peakLoop, threads, n int) float64 {
	best := 0.0
	for rep := 0; rep < peakReps; rep++ {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		ready.Add(threads)
		done.Add(threads)
		for i := 0; i < threads; i++ {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				ready.Done()
				<-start
				loop.run(n)
				done.Done()
			}()
		}
		ready.Wait()
		t0 := time.Now()
		close(start)
		done.Wait()
		d := time.Since(t0).Seconds()
		best = max(best, float64(threads)*float64(n)*float64(loop.flops)/d/1e9)
	}
	return best
}

// peakGo runs n iterations of 8 independent scalar multiply-add chains.
func peakGo(n int) {
	x0, x1, x2, x3, x4, x5, x6, x7 := float32(0), float32(1), float32(2), float32(3), float32(4), float32(5), float32(6), float32(7)
	const y, z = 0.999, 0.001
	for i := 0; i < n; i++ {
		x0 = x0*y + z
		x1 = x1*y + z
		x2 = x2*y + z
		x3 = x3*y + z
		x4 = x4*y + z
		x5 = x5*y + z
		x6 = x6*y + z
		x7 = x7*y + z
	}
	runtime.KeepAlive(x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7)
}
