package atomicdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteReplacesOrKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	put := func(content string) func(string) error {
		return func(tmp string) error {
			if err := os.Mkdir(filepath.Join(tmp, "sub"), 0o755); err != nil {
				return err
			}
			return WriteFile(filepath.Join(tmp, "sub", "f"), []byte(content), 0o644)
		}
	}
	if err := Write(dir, put("one")); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, put("two")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "sub", "f")); got != "two" {
		t.Errorf("after replace: %q", got)
	}
	boom := errors.New("boom")
	if err := Write(dir, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failing fill: %v", err)
	}
	if got := read(t, filepath.Join(dir, "sub", "f")); got != "two" {
		t.Errorf("a failed write changed the directory: %q", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("leftovers beside the directory: %v", entries)
	}
}

func TestRecoverAfterCrashBetweenRenames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ck")
	if err := Write(dir, func(tmp string) error { return WriteFile(filepath.Join(tmp, "f"), []byte("old"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	// The state a crash after the first rename leaves.
	if err := os.Rename(dir, oldPath(dir)); err != nil {
		t.Fatal(err)
	}
	if err := Recover(dir); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "f")); got != "old" {
		t.Errorf("recovered %q", got)
	}
	if err := Recover(dir); err != nil { // nothing to do
		t.Fatal(err)
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.json")
	for _, s := range []string{"first", "second"} {
		if err := WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := read(t, path); got != s {
			t.Errorf("got %q want %q", got, s)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if err := WriteFile(filepath.Join(path, "x"), nil, 0o644); err == nil {
		t.Error("writing under a file succeeded")
	}
}
