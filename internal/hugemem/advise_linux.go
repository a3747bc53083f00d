package hugemem

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const adviceSupported = true

// alignOffset returns the index of raw's first element on a PageBytes
// boundary.
func alignOffset(raw []float32) int {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	return int((PageBytes-p%PageBytes)%PageBytes) / 4
}

// advise marks s, which spans whole aligned huge pages, MADV_HUGEPAGE. An
// error (a kernel without THP) leaves ordinary pages, which are correct.
func advise(s []float32) {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*cap(s))
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
}
