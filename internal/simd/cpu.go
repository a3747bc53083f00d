package simd

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// Level is an instruction-set level a kernel path targets.
type Level int

// The levels, in increasing order of capability.
const (
	Portable Level = iota // plain Go
	AVX2                  // AVX2 + FMA (x86-64-v3)
	AVX512                // AVX-512 F/DQ/BW/VL (x86-64-v4)
)

// String returns the level's name as AGENTRL_SIMD spells it.
func (l Level) String() string {
	switch l {
	case Portable:
		return "portable"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// hardware is the best level this CPU (and OS) supports.
var hardware = detect()

// level is the path the kernels take; it never exceeds hardware.
var level = initialLevel()

func detect() Level {
	// x/sys/cpu fills the X86 fields on 386 too, where there is no assembly.
	if runtime.GOARCH != "amd64" || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		return Portable
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL {
		return AVX512
	}
	return AVX2
}

func initialLevel() Level {
	l := hardware
	if s := os.Getenv("AGENTRL_SIMD"); s != "" {
		want, err := ParseLevel(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentrl: ignoring AGENTRL_SIMD: %v\n", err)
		} else {
			l = min(want, hardware)
		}
	}
	return l
}

// ParseLevel parses a level name (portable, avx2, avx512).
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "portable", "generic", "go":
		return Portable, nil
	case "avx2":
		return AVX2, nil
	case "avx512":
		return AVX512, nil
	}
	return 0, fmt.Errorf("unknown SIMD level %q (want portable, avx2 or avx512)", s)
}

// Hardware reports the best level the CPU supports.
func Hardware() Level { return hardware }

// Current reports the level the kernels use.
func Current() Level { return level }

// SetLevel makes the kernels use min(l, Hardware()) and returns the level
// in use before, so tests and benchmarks can compare paths in one process.
// It must not be called while kernels run on other goroutines.
func SetLevel(l Level) (previous Level) {
	previous = level
	level = min(l, hardware)
	return previous
}
