package runlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAcquireExcludesAndReleases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	a, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open files, so a second open in this process
	// conflicts just as another process would.
	if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire: %v, want ErrLocked", err)
	} else if !strings.Contains(err.Error(), "process") {
		t.Errorf("error does not name the holder: %v", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	b.Release()
}

// TestKilledHolderLeavesNoStaleLock: a process that dies holding the lock
// (SIGKILL) releases it.
func TestKilledHolderLeavesNoStaleLock(t *testing.T) {
	if os.Getenv("RUNLOCK_HOLD") != "" {
		if _, err := Acquire(os.Getenv("RUNLOCK_HOLD")); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		return
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledHolderLeavesNoStaleLock$")
	cmd.Env = append(os.Environ(), "RUNLOCK_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	if _, err := Acquire(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("while the child holds it: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	l.Release()
}
