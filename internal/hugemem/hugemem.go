// Package hugemem allocates the long-lived float32 buffers of the embedded
// model (weights, gradients, optimizer moments, the training workspace) so
// that the operating system can back them with transparent huge pages.
//
// Why: the train step streams about 100 MB of buffers a few megabytes each.
// On 4 KiB pages that is some 25,000 translations, beyond the second-level
// TLB, and under a hypervisor every TLB miss is a two-dimensional page walk.
// On Linux with transparent huge pages in "madvise" mode (a common
// default), memory is backed by 2 MiB pages only where a program asks for
// it, and Go's heap does not ask. Measured on a 2-vCPU Xeon VM with
// BenchmarkTrainStepHugePages (model/native: two models stepping in turn
// in one process), the model whose weights, optimizer moments and training
// workspace were on huge pages took 0.6–2.8% less time per step at the
// median in four runs of 150 pairs, and was the faster in 58% of the 600
// pairs. It costs little memory: 110 MiB resident for the d128 train step
// against 102 (docs/kernels.md).
//
// Floats returns ordinary Go memory, which the garbage collector frees as
// usual: it over-allocates by one huge page, starts the buffer on a 2 MiB
// boundary and marks its whole huge pages MADV_HUGEPAGE. Fresh memory is
// then faulted in as huge pages; memory the heap reuses may already be on
// small pages, which the kernel's khugepaged can merge later. Buffers
// smaller than MinBytes are plain allocations. Where huge pages are
// unavailable (another OS, THP "never") the advice does nothing, and the
// environment variable AGENTRL_HUGEPAGES=off turns it off, for comparisons
// or to save the memory.
//
// Only buffers that live long should come from here: a fresh huge page is
// zeroed whole when first touched, which costs more than it saves for
// buffers allocated per call (measured: scoring 6–10% slower).
//
// The placement of a buffer never changes what is computed in it.
package hugemem

import (
	"fmt"
	"os"
)

// PageBytes is the huge page size buffers are aligned to.
const PageBytes = 2 << 20

// MinBytes is the smallest buffer placed on huge pages. Below it the
// rounding to whole huge pages would cost more memory than the buffer.
const MinBytes = 1 << 20

// enabled is false when AGENTRL_HUGEPAGES=off, after SetEnabled(false), or
// when the OS offers no advice.
var enabled = adviceSupported && parseEnv(os.Getenv("AGENTRL_HUGEPAGES"))

func parseEnv(s string) bool {
	switch s {
	case "", "on", "1":
		return true
	case "off", "0":
		return false
	}
	fmt.Fprintf(os.Stderr, "agentrl: ignoring AGENTRL_HUGEPAGES=%q (want on or off)\n", s)
	return true
}

// Enabled reports whether Floats places large buffers on huge pages.
func Enabled() bool { return enabled }

// Floats returns a zeroed slice of n float32s with capacity at least c
// (c < n counts as n). A buffer of MinBytes or more starts on a PageBytes
// boundary, its capacity is rounded up to whole huge pages, and those pages
// are advised as huge.
func Floats(n, c int) []float32 {
	if n < 0 {
		panic(fmt.Sprintf("hugemem: Floats: negative length %d", n))
	}
	c = max(c, n)
	if !enabled || 4*c < MinBytes {
		return make([]float32, n, c)
	}
	const pageFloats = PageBytes / 4
	span := (c + pageFloats - 1) / pageFloats * pageFloats
	raw := make([]float32, span+pageFloats)
	off := alignOffset(raw)
	s := raw[off : off+span : off+span]
	advise(s)
	return s[:n]
}

// SetEnabled turns the huge-page placement of later allocations on or off
// and returns the previous setting; buffers already allocated stay where
// they are. It is meant for comparisons within one process (benchmarks,
// tests), not to be changed while other goroutines allocate.
func SetEnabled(on bool) (was bool) {
	was, enabled = enabled, on && adviceSupported
	return was
}
