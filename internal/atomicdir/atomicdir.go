// Package atomicdir writes directories and files so that a crash at any
// instant leaves either the old complete version or the new one.
//
// A directory is built in a fresh temporary directory beside its final
// path, fsynced, and then swapped in with two renames: the old version is
// renamed aside to ".<name>.old", the new one into place, and the old one
// removed. A crash between the two renames leaves only the ".old" copy;
// Recover (which Write also runs first) puts it back.
package atomicdir

import (
	"fmt"
	"os"
	"path/filepath"
)

// oldPath is where the previous version waits during a swap.
func oldPath(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".old")
}

// Recover restores dir from its ".old" copy if a crash interrupted a swap
// after the old version was renamed aside and before the new one was
// renamed in. It does nothing when dir exists or no copy is waiting.
func Recover(dir string) error {
	dir = filepath.Clean(dir)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	old := oldPath(dir)
	if _, err := os.Stat(old); err != nil {
		return nil
	}
	if err := os.Rename(old, dir); err != nil {
		return fmt.Errorf("atomicdir: restoring %s: %w", dir, err)
	}
	return SyncDir(filepath.Dir(dir))
}

// Write creates or replaces dir with the directory that fill writes into
// tmp (an empty directory on the same file system). If fill fails, dir is
// left as it was. Files fill creates should be written with WriteFile (or
// fsynced by fill) so that they are on disk before the swap.
func Write(dir string, fill func(tmp string) error) error {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	if err := Recover(dir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := syncTree(tmp); err != nil {
		return err
	}
	old := oldPath(dir)
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	replaced := false
	if _, err := os.Stat(dir); err == nil {
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("atomicdir: %w", err)
		}
		replaced = true
	}
	if err := os.Rename(tmp, dir); err != nil {
		if replaced {
			os.Rename(old, dir)
		}
		return fmt.Errorf("atomicdir: %w", err)
	}
	done = true
	if err := SyncDir(parent); err != nil {
		return err
	}
	if replaced {
		return os.RemoveAll(old)
	}
	return nil
}

// syncTree fsyncs every directory under root (files are synced as they are
// written), so the directory entries reach the disk before the swap.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return SyncDir(path)
		}
		return nil
	})
}

// WriteFile writes data to path through a temporary file in the same
// directory that is fsynced and renamed over path, so readers and crashes
// see the old or the new content, never a mixture.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("atomicdir: writing %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, making its entries (renames, new files)
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("atomicdir: sync %s: %w", dir, err)
	}
	return nil
}
