package simd

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns a slice of n floats that ends where an inaccessible page
// begins, so that any read or write past its end faults.
func guarded(t *testing.T, n int) []float32 {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n*4+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	end := size - page
	return unsafe.Slice((*float32)(unsafe.Pointer(&mem[end-4*n])), n)
}

// TestTailsStayInBounds runs every kernel on rows that end at an
// inaccessible page: the masked tails must not touch memory past the row.
func TestTailsStayInBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, kc := range allCases() {
		for n := 1; n <= 70; n++ {
			in := kc.gen(r, n)
			for i, s := range in {
				g := guarded(t, len(s))
				copy(g, s)
				in[i] = g
			}
			for _, l := range levels() {
				atLevel(l, func() { kc.run(in) })
			}
		}
	}
	// Kernels whose outputs the cases allocate, with guarded outputs.
	for n := 1; n <= 70; n++ {
		a, b, c, d, e := guarded(t, n), guarded(t, n), guarded(t, n), guarded(t, n), guarded(t, n)
		for _, s := range [][]float32{a, b, c, d, e} {
			copy(s, randVec(r, n, -1, 1))
		}
		for _, l := range levels() {
			atLevel(l, func() {
				Exp(a, b)
				Sigmoid(a, b)
				SwiGLU(a, b, c)
				SwiGLUBackward(a, b, c, d, e)
				RMSNorm(a, b, c, 1e-5)
				LogSoftmax(a, b)
				SoftmaxTemp(a, b, 1)
				SoftmaxTemp(a, b, 2)
				AddScalar(a, b, 1)
			})
		}
	}
}
