package native

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// expf is a float32 exp accurate to about 2 ulp on the range that matters.
// The backend spike found float64 math.Exp to be the main non-BLAS cost, so the
// hot loops (softmax, SiLU) use this instead: range reduction x = n·ln2 + r with
// |r| ≤ ln2/2, a degree-6 Taylor polynomial for e^r (truncation error < 7e-8),
// and the exponent written straight into the float32 bits.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693145751953125
		ln2lo = 1.428606765330187045e-06
	)
	switch {
	case x != x: // NaN
		return x
	case x > 88:
		// Rare; near and past float32 overflow. Let the slow path produce the
		// right finite value or +Inf.
		return float32(math.Exp(float64(x)))
	case x < -87:
		// e^-87 ≈ 1.6e-38 is at the bottom of the normal range; flushing to
		// zero is harmless for softmax weights and sigmoids.
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

// sigmoidf is the logistic function 1/(1+e^-x) in float32.
func sigmoidf(x float32) float32 {
	return 1 / (1 + expf(-x))
}

// dot returns Σ a[i]·b[i] with four independent accumulators. It is used
// where a result must depend only on its own inputs (the inference attention),
// so the summation order is fixed and documented here: lanes i mod 4, then
// ((s0+s1)+(s2+s3)), then the tail in order.
func dot(a, b []float32) float32 {
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

// axpy computes y += alpha·x.
func axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// workers returns how many goroutines to use for n independent tasks.
func workers(n int) int {
	w := runtime.GOMAXPROCS(0)
	if n < w {
		w = n
	}
	if w < 1 {
		w = 1
	}
	return w
}

// parallelFor runs fn(worker, i) for i in [0, n) on up to GOMAXPROCS
// goroutines, handing out indices dynamically so uneven tasks (sequences of
// different lengths) balance. worker is in [0, workers(n)) and lets callers
// index per-worker scratch space. With one worker it runs inline and does not
// allocate.
func parallelFor(n int, fn func(worker, i int)) {
	w := workers(n)
	if w == 1 {
		for i := 0; i < n; i++ {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(w)
	for k := 0; k < w; k++ {
		go func(k int) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(k, i)
			}
		}(k)
	}
	wg.Wait()
}

// parallelRows splits [0, rows) into at most GOMAXPROCS contiguous chunks and
// runs fn(lo, hi) on each. Work smaller than minWork elements (rows·cols) runs
// inline: below that, goroutine start-up costs more than it saves.
func parallelRows(rows, cols int, fn func(lo, hi int)) {
	const minWork = 1 << 15
	w := workers(rows)
	if w == 1 || rows*cols < minWork {
		fn(0, rows)
		return
	}
	chunk := (rows + w - 1) / w
	var wg sync.WaitGroup
	for lo := 0; lo < rows; lo += chunk {
		hi := min(lo+chunk, rows)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, hi)
	}
	wg.Wait()
}

// grow returns s resized to n elements, reusing its backing array when it is
// large enough. Contents are not preserved or cleared.
func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n, n+n/4)
}

// growInt32 is grow for []int32.
func growInt32(s []int32, n int) []int32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int32, n, n+n/4)
}
