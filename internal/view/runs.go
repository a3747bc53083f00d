package view

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/metricsfile"
)

// rescanEvery is how often the patterns are expanded again, so that a run
// started after the server shows up.
const rescanEvery = 2 * time.Second

// maxDepth is how deep below a named directory run directories are
// looked for.
const maxDepth = 4

// skipDirs are the directories inside a run directory, which hold no run.
var skipDirs = map[string]bool{"checkpoints": true, "transcripts": true, "events": true, "plots": true, "adapters": true, "cache": true}

// isRunDir reports whether dir is a run directory: it holds a metrics
// file or a run identity.
func isRunDir(dir string) bool {
	for _, name := range []string{metricsfile.Name, "run.json"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// findRuns expands patterns into run directories, sorted: a pattern is a
// run directory, a glob, or a directory searched (maxDepth deep) for the
// run directories below it.
func findRuns(patterns []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(dir string) {
		dir = filepath.Clean(dir)
		if !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	for _, p := range patterns {
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err != nil || !st.IsDir() {
				continue
			}
			if isRunDir(m) {
				add(m)
				continue
			}
			base := strings.Count(filepath.Clean(m), string(filepath.Separator))
			filepath.WalkDir(m, func(path string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				if path != m && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				if isRunDir(path) {
					add(path)
					return filepath.SkipDir
				}
				if strings.Count(filepath.Clean(path), string(filepath.Separator))-base >= maxDepth {
					return filepath.SkipDir
				}
				return nil
			})
		}
	}
	slices.Sort(out)
	return out, nil
}

// scan returns the run directories, expanding the patterns again when
// the last scan is older than rescanEvery (or always, with force).
func (s *Server) scan(force bool) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !force && time.Since(s.scanned) < rescanEvery {
		return s.dirs, nil
	}
	dirs, err := findRuns(s.patterns)
	if err != nil {
		return s.dirs, err
	}
	if len(dirs) == 0 && len(s.dirs) == 0 {
		return nil, fmt.Errorf("no run directory in %s (a run directory holds %s)", strings.Join(s.patterns, " "), metricsfile.Name)
	}
	if len(dirs) == 0 {
		dirs = s.dirs // gone for a moment (a directory replaced): keep showing what was there
	}
	for _, d := range dirs {
		if s.runs[d] == nil {
			s.runs[d] = newRun(d)
		}
	}
	s.dirs, s.scanned = dirs, time.Now()
	return dirs, nil
}

// errUnknownRun answers a request that names a run the server does not
// show.
var errUnknownRun = errors.New("unknown run")

// run returns the run of directory id, one of the scanned ones.
func (s *Server) run(id string) (*run, error) {
	if _, err := s.scan(false); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[id]; r != nil && slices.Contains(s.dirs, id) {
		return r, nil
	}
	return nil, fmt.Errorf("%w %q", errUnknownRun, id)
}

// all returns the scanned runs, in order.
func (s *Server) all() ([]*run, error) {
	dirs, err := s.scan(false)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*run, len(dirs))
	for i, d := range dirs {
		out[i] = s.runs[d]
	}
	return out, nil
}

// names are short labels of run directories: their paths relative to the
// directory they all share (the base name of a lone run).
func names(dirs []string) []string {
	out := make([]string, len(dirs))
	if len(dirs) == 1 {
		out[0] = filepath.Base(dirs[0])
		return out
	}
	common := filepath.Dir(dirs[0])
	for _, d := range dirs[1:] {
		for common != "." && common != string(filepath.Separator) && !strings.HasPrefix(d, common+string(filepath.Separator)) {
			common = filepath.Dir(common)
		}
	}
	for i, d := range dirs {
		if rel, err := filepath.Rel(common, d); err == nil && common != "." {
			out[i] = rel
		} else {
			out[i] = d
		}
	}
	return out
}
