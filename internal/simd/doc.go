// Package simd holds the float32 numeric kernels of the embedded policy:
// packed, cache-blocked GEMM and vectorised elementwise and row kernels,
// written in Go assembly for amd64 (AVX2+FMA, and AVX-512 where present),
// with a portable Go implementation of every kernel that is used on other
// CPUs and tested against the assembly on every machine.
//
// # Arithmetic contract
//
// The AVX2 and AVX-512 paths compute every result with the same sequence of
// correctly rounded float32 operations (fused multiply-adds in the same
// order, reductions over the same fixed lane layout), so they agree bit for
// bit: a run gives the same numbers on any x86-64 machine with AVX2 and FMA.
// The portable path agrees with them to float32 rounding, not bit for bit.
// No result depends on the number of rows in a call or on how a caller
// splits work across goroutines (see the GEMM doc for how). Reductions use
// a fixed layout of Lanes partial sums whatever the vector width (see
// Lanes).
//
// # Choosing the path
//
// The path is chosen once at start-up from the CPU's features
// (golang.org/x/sys/cpu). The environment variable AGENTRL_SIMD=portable,
// avx2 or avx512 caps it (for comparisons and for testing the fallback);
// asking for more than the CPU has falls back to the best available.
package simd
