// Package traintest holds what the tests of package train and of the
// learners beside it share: a run small enough for a test suite, quiet
// options, and a comparison of metrics rows that ignores timings.
package traintest

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/train"
)

// TinyConfig is a Sokoban run small enough for a test suite: a 1-layer,
// 32-wide model, a warm start of 150 steps, 2 groups of 4, validation and
// checkpoints every 2 steps. Its warm-start cache is a "cache" directory
// beside out. overrides are `key=value` settings over it.
func TinyConfig(t testing.TB, out string, steps int, overrides ...string) train.Config {
	t.Helper()
	cfg, err := TinyConfigFor(out, steps, overrides...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TinyConfigFor is TinyConfig returning its error, for a process without
// a testing.TB (a test's child process).
func TinyConfigFor(out string, steps int, overrides ...string) (train.Config, error) {
	return train.Parse([]byte(`
env:
  name: sokoban
run:
  steps: `+fmt.Sprint(steps)+`
  groups: 2
  group_size: 4
  out: `+out+`
  transcripts_every: 2
model:
  d_model: 32
  layers: 1
  heads: 2
  kv_heads: 2
  d_ff: 64
  max_seq: 640
  vocab_size: 300
rollout:
  max_turns: 3
  sampling:
    max_tokens: 24
algo:
  ppo_mini_batch_size: 4
  lr: 0.001
  entropy_coeff: 0.01
filter:
  value: 1
  include_zero: true
collapse:
  every: 2
  samples: 8
validation:
  every: 2
  levels: 4
warm_start:
  episodes: 40
  steps: 150
  batch: 8
  cache_dir: `+filepath.Join(filepath.Dir(out), "cache")+`
checkpoint:
  every: 2
`), overrides)
}

// QuietOptions discard the logs and the console.
func QuietOptions() train.Options {
	return train.Options{Logger: slog.New(slog.DiscardHandler), Console: io.Discard}
}

// SameMetrics reports whether two metrics rows agree in every value but
// the timings (NaN equal to NaN).
func SameMetrics(a, b map[string]float64) bool {
	strip := func(m map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if !strings.HasPrefix(k, "timing_s/") {
				out[k] = v
			}
		}
		return out
	}
	return maps.EqualFunc(strip(a), strip(b), func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) })
}
