package native

import (
	"runtime"

	"github.com/agentrl/agentrl/internal/hugemem"
	"github.com/agentrl/agentrl/internal/simd"
)

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
// index per-worker scratch space. It runs on the same goroutines as the
// parallel GEMMs (simd.Parallel), which then stay awake between products.
// With one worker it runs inline and does not allocate.
func parallelFor(n int, fn func(worker, i int)) {
	simd.Parallel(workers(n), n, fn)
}

// parallelRows splits [0, rows) into chunks and runs fn(lo, hi) on each, on
// up to GOMAXPROCS goroutines. Work smaller than minWork elements
// (rows·cols) runs inline: below that, handing it out costs more than it
// saves. The split only decides who computes a row, never how.
func parallelRows(rows, cols int, fn func(lo, hi int)) {
	const minWork = 1 << 15
	w := workers(rows)
	if w == 1 || rows*cols < minWork {
		fn(0, rows)
		return
	}
	// A few chunks per worker balance rows of uneven cost.
	chunks := min(rows, 4*w)
	simd.Parallel(w, chunks, func(_, c int) {
		fn(c*rows/chunks, (c+1)*rows/chunks)
	})
}

// grow returns s resized to n elements, reusing its backing array when it is
// large enough. Contents are not preserved or cleared.
func grow(s []float32, n int) []float32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]float32, n, n+n/4)
}

// residentPair returns two zeroed buffers of n floats that live as long as
// the model (weights and gradients, or the two AdamW moments), carved from
// one allocation on transparent huge pages (package hugemem).
func residentPair(n int) (a, b []float32) {
	s := hugemem.Floats(2*n, 0)
	return s[:n:n], s[n : 2*n : 2*n]
}

// growInt32 is grow for []int32.
func growInt32(s []int32, n int) []int32 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int32, n, n+n/4)
}
