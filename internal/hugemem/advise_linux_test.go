package hugemem

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// TestAdviceRecorded checks that the kernel recorded MADV_HUGEPAGE ("hg" in
// VmFlags) for the mapping holding a large buffer. Whether the pages are
// then huge depends on free memory, so that is not asserted.
func TestAdviceRecorded(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("kernel without transparent huge pages")
	}
	withEnabled(t, true)
	s := Floats(3*PageBytes/4, 0)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	flags, err := vmFlags(addr)
	if err != nil {
		t.Skipf("cannot read /proc/self/smaps: %v", err)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Fatalf("mapping of %#x has VmFlags %q, want hg", addr, flags)
	}
	s[0] = 1 // keep s alive past the check
}

// vmFlags returns the VmFlags line of the mapping that contains addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Count(strings.Fields(line)[0], "-") == 1 {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping contains %#x", addr)
}
