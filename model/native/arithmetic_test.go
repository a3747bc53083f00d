package native

import (
	"runtime"
	"testing"

	"github.com/agentrl/agentrl/internal/simd"
)

// TestArithmeticID checks that the ID is the same wherever training gives
// the same bits — GOMAXPROCS, AVX2 or AVX-512 — and different where it
// does not: the portable kernels round differently from the SIMD ones.
func TestArithmeticID(t *testing.T) {
	id := func() string {
		t.Helper()
		s, err := computeArithmeticID()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want, err := ArithmeticID()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 16 {
		t.Fatalf("ArithmeticID() = %q, want 16 hex digits", want)
	}
	for _, procs := range []int{1, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			if got := id(); got != want {
				t.Errorf("GOMAXPROCS %d: ID %s, want %s", procs, got, want)
			}
		}()
	}
	if netlibGemm {
		return // OpenBLAS serves the large GEMMs at every level
	}
	ids := map[simd.Level]string{}
	for _, l := range simdLevels() {
		atSimdLevel(l, func() { ids[l] = id() })
	}
	if a, b := ids[simd.AVX2], ids[simd.AVX512]; a != "" && b != "" && a != b {
		t.Errorf("AVX2 and AVX-512 give IDs %s and %s, but train alike", a, b)
	}
	if p, a := ids[simd.Portable], ids[simd.AVX2]; a != "" && p == a {
		t.Errorf("the portable kernels and AVX2 share ID %s, but round differently", p)
	}
}

func BenchmarkArithmeticID(b *testing.B) {
	for b.Loop() {
		if _, err := computeArithmeticID(); err != nil {
			b.Fatal(err)
		}
	}
}
