package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/metricsfile"
	"github.com/agentrl/agentrl/internal/tfevents"
	"github.com/agentrl/agentrl/rollout"
)

// Run directory layout.
const (
	metricsFile      = metricsfile.Name
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

// newRecorder opens the run's files for a run that continues after step
// keep (keep < 0: a new run). Everything a previous session wrote after
// keep — the metrics rows, the TensorBoard events and the transcripts of
// later steps, which an interrupted run wrote after its last checkpoint —
// is cut first (each file replaced atomically), so a resumed run's files
// hold each step once, as an uninterrupted run's do.
func newRecorder(dir string, keep int, log *slog.Logger) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, metricsFile)
	if err := trimMetrics(path, keep, log); err != nil {
		return nil, err
	}
	if err := trimTranscripts(filepath.Join(dir, transcriptsDir), keep); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ev, err := tfevents.Resume(filepath.Join(dir, eventsDir), int64(keep))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &recorder{dir: dir, metrics: f, events: ev}, nil
}

// trimMetrics rewrites metrics.jsonl with the rows of steps ≤ keep, in
// order. A torn last line (a process killed mid-write: no newline after
// it) is dropped with a warning naming it; any other line that is not a
// metrics row is an error naming it, rather than a silent cut.
func trimMetrics(path string, keep int, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []byte
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			log.Warn("dropping the torn last line of the metrics (a process killed while it wrote it)", "file", path, "line", n, "bytes", len(data))
			break
		}
		line := data[:i+1]
		data = data[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var row struct{ Step *int }
		if err := json.Unmarshal(line, &row); err != nil || row.Step == nil {
			return fmt.Errorf("%s line %d is not a metrics row (%.60q): repair or remove the line, then run again", path, n, line)
		}
		if *row.Step <= keep {
			kept = append(kept, line...)
		}
	}
	return atomicdir.WriteFile(path, kept, 0o644)
}

// transcriptName is the file of one step's transcripts.
func transcriptName(label string, step int) string {
	return fmt.Sprintf("%s-step%05d.txt", label, step)
}

// collapseName is the name of a collapse reading's matrices.
func collapseName(step int) string {
	return fmt.Sprintf("collapse-step%05d.json", step)
}

// collapse writes the cross-scoring matrices of a step's collapse reading.
func (r *recorder) collapse(step int, matrices []collapseMatrix) error {
	if len(matrices) == 0 {
		return nil
	}
	dir := filepath.Join(r.dir, transcriptsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.Marshal(struct {
		Step     int              `json:"step"`
		Matrices []collapseMatrix `json:"matrices"`
	}{step, matrices})
	if err != nil {
		return err
	}
	return atomicdir.WriteFile(filepath.Join(dir, collapseName(step)), raw, 0o644)
}

// tokensName is the name of the token ids beside a transcript.
func tokensName(label string, step int) string {
	return fmt.Sprintf("%s-step%05d.tokens.jsonl", label, step)
}

// tokenRecord is one episode's token ids as a transcript's .tokens.jsonl
// holds them: what the policy read and wrote, turn by turn, so that a run
// directory shows that training saw exactly the tokens sampled.
type tokenRecord struct {
	Group   int         `json:"group"`
	Sample  int         `json:"sample"`
	Seed    uint64      `json:"seed"`
	Version int         `json:"policy_version"`
	Turns   []tokenTurn `json:"turns"`
	// Tail are the ids after the last reply (the template's end of it).
	Tail []int `json:"tail,omitempty"`
	// Kept says the filter kept the episode's group, and the turns carry
	// the values it was trained with.
	Kept bool `json:"kept"`
	// Drift is the length of the suffix from which a fresh rendering of
	// the whole conversation differs from these tokens (0: none; absent:
	// not measured).
	Drift *int `json:"rerender_drift,omitempty"`
}

// tokenTurn is one turn: the prompt's new ids, then the reply's, with
// per-token values of the reply.
type tokenTurn struct {
	// Window is the whole prompt of a turn sampled after a history window,
	// which is not an extension of the turn before.
	Window []int `json:"window,omitempty"`
	Prompt []int `json:"prompt"`
	Reply  []int `json:"reply"`
	// LogProbs are the sampler's log-probs of the reply's tokens.
	LogProbs []jsonFloat `json:"logprobs"`
	// Advantage and OldLogProb are the advantage each reply token was
	// trained with and the learner's old log-prob of it (the learner's
	// recomputation, or the sampler's), for an episode whose group the
	// filter kept.
	Advantage  []jsonFloat `json:"advantage,omitempty"`
	OldLogProb []jsonFloat `json:"old_logprob,omitempty"`
}

// trajKey names a trajectory of a step across the step's batches.
type trajKey struct {
	seed   uint64
	sample int
}

// turnValues are the training values of one turn's reply tokens.
type turnValues struct{ advantage, oldLogProb []float64 }

// tokenValues maps the training sequences of the kept groups back to the
// turns of their trajectories.
func tokenValues(kept Batch, seqs *Sequences) map[trajKey][]turnValues {
	out := map[trajKey][]turnValues{}
	if seqs == nil || seqs.Advantages == nil {
		return out
	}
	next := 0 // the first sequence of trajectory i
	for i := range kept.Trajectories {
		tr := &kept.Trajectories[i]
		windowed := len(tr.Turns) > 0 && tr.Turns[0].Prompt != nil
		vals := make([]turnValues, len(tr.Turns))
		for k, turn := range tr.Turns {
			seq, lo, hi := next, turn.ReplyStart, turn.ReplyEnd
			if windowed {
				seq, lo, hi = next+k, len(turn.Prompt), len(turn.Prompt)+turn.ReplyEnd-turn.ReplyStart
			}
			if seq >= seqs.Len() || hi > len(seqs.Advantages[seq]) {
				return out // not this batch's sequences
			}
			vals[k] = turnValues{advantage: seqs.Advantages[seq][lo:hi], oldLogProb: seqs.OldLogProb[seq][lo:hi]}
		}
		if windowed {
			next += len(tr.Turns)
		} else {
			next++
		}
		out[trajKey{tr.Seed, tr.Sample}] = vals
	}
	return out
}

func jsonFloats(xs []float64) []jsonFloat {
	out := make([]jsonFloat, len(xs))
	for i, x := range xs {
		out[i] = jsonFloat(x)
	}
	return out
}

func newTokenRecord(tr *rollout.Trajectory, values map[trajKey][]turnValues) tokenRecord {
	rec := tokenRecord{Group: tr.Group, Sample: tr.Sample, Seed: tr.Seed, Version: tr.PolicyVersion}
	if tr.RerenderChecked {
		rec.Drift = &tr.RerenderDrift
	}
	vals, kept := values[trajKey{tr.Seed, tr.Sample}]
	rec.Kept = kept
	at := 0
	for k, turn := range tr.Turns {
		t := tokenTurn{Window: turn.Prompt, Prompt: tr.Tokens[at:turn.ReplyStart], Reply: tr.Tokens[turn.ReplyStart:turn.ReplyEnd],
			LogProbs: jsonFloats(tr.LogProbs[turn.ReplyStart:turn.ReplyEnd])}
		if kept && k < len(vals) {
			t.Advantage, t.OldLogProb = jsonFloats(vals[k].advantage), jsonFloats(vals[k].oldLogProb)
		}
		rec.Turns = append(rec.Turns, t)
		at = turn.ReplyEnd
	}
	rec.Tail = tr.Tokens[at:]
	return rec
}

// trimTranscripts removes the transcripts of steps after keep.
func trimTranscripts(dir string, keep int) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		i := strings.LastIndex(name, "-step")
		if i < 0 {
			continue
		}
		var num string
		ok := false
		for _, ext := range []string{".txt", ".tokens.jsonl", ".json"} {
			if num, ok = strings.CutSuffix(name[i+len("-step"):], ext); ok {
				break
			}
		}
		if !ok {
			continue
		}
		step, err := strconv.Atoi(num)
		if err != nil || step <= keep {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
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
func (r *recorder) transcripts(step int, label string, trajs []rollout.Trajectory, n int, values map[trajKey][]turnValues) error {
	dir := filepath.Join(r.dir, transcriptsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, transcriptName(label, step)))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := 0; i < len(trajs) && i < n; i++ {
		tr := &trajs[i]
		fmt.Fprintf(w, "=== group %d sample %d seed %d: score %.2f success %v actions %d policy %s version %d%s\n",
			tr.Group, tr.Sample, tr.Seed, tr.Score, tr.Success, tr.Actions, tr.Policy, tr.PolicyVersion, errSuffix(tr.Err))
		for _, m := range tr.Messages {
			fmt.Fprintf(w, "--- %s\n%s\n", m.Role, m.Content)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := 0; i < len(trajs) && i < n; i++ {
		if err := enc.Encode(newTokenRecord(&trajs[i], values)); err != nil {
			return err
		}
	}
	return atomicdir.WriteFile(filepath.Join(dir, tokensName(label, step)), b.Bytes(), 0o644)
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
func ReadMetrics(runDir string) ([]map[string]float64, error) { return metricsfile.Read(runDir) }

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
