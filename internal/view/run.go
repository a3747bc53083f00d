package view

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/internal/metricsfile"
	"github.com/agentrl/agentrl/internal/report"
)

// Files of a run directory the view reads.
const (
	identityFile = "run.json"
	configFile   = "config.yaml"
	summaryFile  = "summary.json"
	transcripts  = "transcripts"
)

// liveWindow is how recently a run without a newer summary must have
// written a metrics row to count as running.
const liveWindow = 10 * time.Minute

// run is one run directory and what has been read of it. Its fields are
// guarded by mu; each method that reads files first refreshes what
// changed.
type run struct {
	dir string

	mu       sync.Mutex
	metrics  metricsCache
	identity cachedFile[map[string]string]
	config   cachedFile[runConfig]
	summary  cachedFile[json.RawMessage]
	tok      tokenCache
}

// runConfig is what the view reads of config.yaml.
type runConfig struct {
	Run struct {
		Steps int    `yaml:"steps"`
		Seed  uint64 `yaml:"seed"`
	} `yaml:"run"`
	Env struct {
		Name string `yaml:"name"`
	} `yaml:"env"`
	Model struct {
		Init string `yaml:"init"`
	} `yaml:"model"`
	Validation struct {
		Levels  int `yaml:"levels"`
		Samples int `yaml:"samples"`
	} `yaml:"validation"`
}

func newRun(dir string) *run {
	return &run{dir: dir,
		identity: cachedFile[map[string]string]{parse: func(b []byte) (map[string]string, error) {
			var id struct {
				Config map[string]string `json:"config"`
			}
			err := json.Unmarshal(b, &id)
			return id.Config, err
		}},
		config: cachedFile[runConfig]{parse: func(b []byte) (runConfig, error) {
			var c runConfig
			err := yaml.Unmarshal(b, &c)
			return c, err
		}},
		summary: cachedFile[json.RawMessage]{parse: func(b []byte) (json.RawMessage, error) {
			var v json.RawMessage
			err := json.Unmarshal(b, &v)
			return v, err
		}},
	}
}

// cachedFile is a small file parsed again only when its size or time
// changes.
type cachedFile[T any] struct {
	parse   func([]byte) (T, error)
	size    int64
	mod     time.Time
	present bool
	value   T
}

// get returns the parsed file and whether it exists and parses.
func (c *cachedFile[T]) get(path string) (T, bool) {
	st, err := os.Stat(path)
	if err != nil {
		var zero T
		c.present, c.value, c.mod = false, zero, time.Time{}
		return zero, false
	}
	if c.present && st.Size() == c.size && st.ModTime().Equal(c.mod) {
		return c.value, true
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return c.value, false
	}
	v, err := c.parse(raw)
	if err != nil {
		return c.value, false
	}
	c.value, c.present, c.size, c.mod = v, true, st.Size(), st.ModTime()
	return v, true
}

// state is a run's status line: what its summary says when the summary
// is newer than the metrics, "running" while rows keep coming, and
// "stopped" (without a summary) otherwise.
func (r *run) state() (status string, live bool) {
	mst, merr := os.Stat(filepath.Join(r.dir, metricsfile.Name))
	sst, serr := os.Stat(filepath.Join(r.dir, summaryFile))
	if serr == nil && (merr != nil || !sst.ModTime().Before(mst.ModTime())) {
		var s struct {
			Status string `json:"status"`
		}
		if raw, ok := r.summary.get(filepath.Join(r.dir, summaryFile)); ok && json.Unmarshal(raw, &s) == nil && s.Status != "" {
			return s.Status, false
		}
	}
	if merr == nil && time.Since(mst.ModTime()) < liveWindow {
		return "running", true
	}
	return "stopped", false
}

// valEpisodes is the number of validation episodes behind each
// validation success rate: validation levels × samples, from the summary
// or, before there is one, from the config.
func (r *run) valEpisodes() int {
	if raw, ok := r.summary.get(filepath.Join(r.dir, summaryFile)); ok {
		var s report.Summary
		if json.Unmarshal(raw, &s) == nil && s.Levels > 0 {
			return s.Episodes()
		}
	}
	if c, ok := r.config.get(filepath.Join(r.dir, configFile)); ok && c.Validation.Levels > 0 {
		return c.Validation.Levels * max(c.Validation.Samples, 1)
	}
	return 0
}

// settings returns the run's identity; a run without one gets its
// directory as its only setting, so that it forms an arm of its own.
func (r *run) settings() map[string]string {
	if id, ok := r.identity.get(filepath.Join(r.dir, identityFile)); ok && len(id) > 0 {
		return id
	}
	return map[string]string{"run.dir": r.dir}
}
