package native

import (
	"runtime"
	"sync"
	"sync/atomic"
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
