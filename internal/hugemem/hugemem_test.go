package hugemem

import (
	"testing"
	"unsafe"
)

func withEnabled(t *testing.T, on bool) {
	t.Helper()
	old := SetEnabled(on)
	t.Cleanup(func() { SetEnabled(old) })
}

func TestFloatsShapes(t *testing.T) {
	for _, on := range []bool{false, true} {
		withEnabled(t, on)
		if enabled != (on && adviceSupported) {
			t.Fatalf("SetEnabled(%v) left enabled = %v", on, enabled)
		}
		for _, tc := range []struct{ n, c int }{
			{0, 0}, {1, 0}, {7, 100}, {MinBytes/4 - 1, 0}, {MinBytes / 4, 0},
			{PageBytes/4 + 3, 0}, {5, 3 * PageBytes / 4}, {3 * PageBytes / 4, 3*PageBytes/4 + 1},
		} {
			s := Floats(tc.n, tc.c)
			if len(s) != tc.n || cap(s) < max(tc.n, tc.c) {
				t.Fatalf("enabled=%v Floats(%d, %d): len %d cap %d", enabled, tc.n, tc.c, len(s), cap(s))
			}
			s = s[:cap(s)]
			for i, x := range s {
				if x != 0 {
					t.Fatalf("Floats(%d, %d)[%d] = %v, want 0", tc.n, tc.c, i, x)
				}
			}
			big := 4*max(tc.n, tc.c) >= MinBytes
			if enabled && big {
				if p := uintptr(unsafe.Pointer(unsafe.SliceData(s))); p%PageBytes != 0 {
					t.Fatalf("Floats(%d, %d) starts at %#x, not on a huge page", tc.n, tc.c, p)
				}
				if cap(s)%(PageBytes/4) != 0 {
					t.Fatalf("Floats(%d, %d): cap %d is not whole huge pages", tc.n, tc.c, cap(s))
				}
			}
			if !big && cap(s) != max(tc.n, tc.c) {
				t.Fatalf("small Floats(%d, %d): cap %d, want exact", tc.n, tc.c, cap(s))
			}
		}
	}
}

func TestFloatsNegative(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Floats(-1, 0) did not panic")
		}
	}()
	Floats(-1, 0)
}

func TestParseEnv(t *testing.T) {
	for s, want := range map[string]bool{"": true, "on": true, "1": true, "off": false, "0": false} {
		if got := parseEnv(s); got != want {
			t.Errorf("parseEnv(%q) = %v, want %v", s, got, want)
		}
	}
}
