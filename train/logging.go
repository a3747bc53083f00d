package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/tfevents"
	"github.com/agentrl/agentrl/rollout"
)

// Run directory layout.
const (
	metricsFile      = "metrics.jsonl"
	configFile       = "config.yaml"
	eventsDir        = "events"
	transcriptsDir   = "transcripts"
	checkpointsDir   = "checkpoints"
	latestCheckpoint = "latest"
)

// recorder writes metrics.jsonl, TensorBoard events and transcripts.
type recorder struct {
	dir     string
	metrics *os.File
	events  *tfevents.Writer
}

func newRecorder(dir string) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, metricsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ev, err := tfevents.Create(filepath.Join(dir, eventsDir))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &recorder{dir: dir, metrics: f, events: ev}, nil
}

// record appends one step's metrics. Non-finite values are written to
// metrics.jsonl as null (JSON has no NaN).
func (r *recorder) record(step int, m map[string]float64) error {
	obj := make(map[string]any, len(m)+1)
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			obj[k] = nil
		} else {
			obj[k] = v
		}
	}
	obj["step"] = step
	line, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if _, err := r.metrics.Write(append(line, '\n')); err != nil {
		return err
	}
	return r.events.Scalars(int64(step), m)
}

// transcripts writes readable conversations of a few trajectories.
func (r *recorder) transcripts(step int, label string, trajs []rollout.Trajectory, n int) error {
	dir := filepath.Join(r.dir, transcriptsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-step%05d.txt", label, step)))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := 0; i < len(trajs) && i < n; i++ {
		tr := &trajs[i]
		fmt.Fprintf(w, "=== group %d sample %d seed %d: score %.2f success %v actions %d%s\n",
			tr.Group, tr.Sample, tr.Seed, tr.Score, tr.Success, tr.Actions, errSuffix(tr.Err))
		for _, m := range tr.Messages {
			fmt.Fprintf(w, "--- %s\n%s\n", m.Role, m.Content)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " error: " + e
}

func (r *recorder) close() error {
	err1 := r.metrics.Close()
	err2 := r.events.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

// ReadMetrics reads a run's metrics.jsonl: one map per line (null values
// become NaN).
func ReadMetrics(runDir string) ([]map[string]float64, error) {
	f, err := os.Open(filepath.Join(runDir, metricsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeMetrics(f)
}

func decodeMetrics(r io.Reader) ([]map[string]float64, error) {
	var out []map[string]float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var raw map[string]*float64
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			return out, fmt.Errorf("%s line %d: %w", metricsFile, line, err)
		}
		m := make(map[string]float64, len(raw))
		for k, v := range raw {
			if v == nil {
				m[k] = math.NaN()
			} else {
				m[k] = *v
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// consoleKeys are the metrics shown on the progress line, with short labels.
var consoleKeys = []struct{ key, label, format string }{
	{"train/success", "success", "%.2f"},
	{"train/score", "score", "%.2f"},
	{"actor/entropy", "entropy", "%.3f"},
	{"rollout/filter_kept_ratio", "kept", "%.2f"},
	{"val-env/success", "val", "%.3f"},
	{algosFirstTurnMI, "MI", "%.3f"},
	{algosFirstTurnAcc, "ret.acc", "%.2f"},
}

// Collapse metrics shown on the console.
const (
	algosFirstTurnMI  = "collapse_first_turn_sample/mi_estimate"
	algosFirstTurnAcc = "collapse_first_turn_sample/retrieval_accuracy"
)

// progressLine formats one console line for a step.
// avgStep is the mean step time so far, for the ETA.
func progressLine(step, total int, stepTime, avgStep time.Duration, m map[string]float64) string {
	var b strings.Builder
	eta := avgStep * time.Duration(total-step)
	fmt.Fprintf(&b, "step %d/%d  %.1fs  eta %s", step, total, stepTime.Seconds(), eta.Round(time.Second))
	for _, k := range consoleKeys {
		if v, ok := m[k.key]; ok {
			fmt.Fprintf(&b, "  %s "+k.format, k.label, v)
		}
	}
	return b.String()
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]float64) []string { return slices.Sorted(maps.Keys(m)) }
