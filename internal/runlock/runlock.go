// Package runlock gives one process at a time a directory: a run directory
// written by two trainers at once would interleave their files.
//
// The lock is an operating-system file lock on a file named .lock inside
// the directory (flock on Unix, LockFileEx on Windows), so it is released
// when its holder exits, however it exits: a run killed with SIGKILL leaves
// no stale lock behind. The lock file stays in the directory; it holds the
// holder's process id, for the error message of whoever finds it taken.
package runlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the lock file's name inside the locked directory.
const FileName = ".lock"

// ErrLocked is returned (wrapped) when another process holds the lock.
var ErrLocked = errors.New("directory is in use by another process")

// Lock is a held directory lock.
type Lock struct {
	f *os.File
}

// Acquire locks dir (creating it and its lock file if needed) without
// waiting: it fails with ErrLocked when another process holds the lock.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errWouldBlock) {
			holder := ""
			if b, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					holder = fmt.Sprintf(" (process %d)", pid)
				}
			}
			return nil, fmt.Errorf("%s: %w%s", dir, ErrLocked, holder)
		}
		return nil, fmt.Errorf("%s: locking: %w", dir, err)
	}
	// Record the holder; the lock, not the content, is what excludes.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release gives the lock up.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
