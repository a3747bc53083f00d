package train

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
)

// traj is a trajectory of one sequence: prompt token 1, reply tokens 2, 3.
func traj(group int, score float64, failed bool) rollout.Trajectory {
	tr := rollout.Trajectory{Group: group, Score: score, Tokens: []int{1, 2, 3},
		LossMask: []bool{false, true, true}, LogProbs: []float64{0, -0.5, -0.25},
		Turns: []rollout.Turn{{ReplyStart: 1, ReplyEnd: 3}}}
	if failed {
		tr.Err = "env: boom"
	}
	return tr
}

func TestBatchDropsFailedGroupsAndSelects(t *testing.T) {
	var trajs []rollout.Trajectory
	for g, scores := range [][]float64{{1, 0}, {2, 3}, {4, 5}} {
		for i, sc := range scores {
			trajs = append(trajs, traj(g, sc, g == 1 && i == 1))
		}
	}
	b := newBatch(trajs)
	if len(b.Groups) != 3 || !slices.Equal(b.Groups[2], []int{4, 5}) {
		t.Fatalf("groups %v", b.Groups)
	}
	ok, dropped := b.WithoutFailedGroups()
	if dropped != 1 || len(ok.Groups) != 2 || !slices.Equal(ok.Scores(), []float64{1, 0, 4, 5}) {
		t.Fatalf("without failed: dropped %d, groups %v, scores %v", dropped, ok.Groups, ok.Scores())
	}
	// The filter's group indices refer to ok's groups: keeping group 1 of
	// ok keeps the original group 2, renumbered 0, trajectories contiguous.
	kept := ok.Select([]int{1})
	if !slices.Equal(kept.Scores(), []float64{4, 5}) || !slices.Equal(kept.Groups[0], []int{0, 1}) || kept.Trajectories[1].Group != 0 {
		t.Errorf("selected %v %v group field %d", kept.Scores(), kept.Groups, kept.Trajectories[1].Group)
	}
	if len(b.Trajectories) != 6 || b.Trajectories[4].Group != 2 {
		t.Error("selecting changed the original batch")
	}
	seqs := kept.Sequences()
	if seqs.Len() != 2 || !slices.Equal(seqs.Episode, []int{0, 1}) || seqs.OldLogProb[1][2] != -0.25 || !seqs.Mask[0][1] {
		t.Errorf("sequences %+v", seqs)
	}
	sub := seqs.Subset([]int{1})
	if sub.Len() != 1 || sub.Episode[0] != 1 || sub.Advantages != nil {
		t.Errorf("subset %+v", sub)
	}
	empty, _ := newBatch(nil).WithoutFailedGroups()
	if len(empty.Trajectories) != 0 || empty.Sequences().Len() != 0 {
		t.Error("empty batch")
	}
}

func TestIdentityKeysAndMismatch(t *testing.T) {
	a, err := Parse(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Scheduling and reporting settings do not change the run's identity.
	b, err := Parse(nil, []string{"run.steps=999", "run.out=elsewhere", "checkpoint.every=3", "validation.every=5",
		"collapse.every=0", "warm_start.cache_dir=/tmp/x", "run.transcripts_every=0", "rollout.concurrency=1",
		"env.config.dim_x=6"}) // the environment's default, spelled out
	if err != nil {
		t.Fatal(err)
	}
	identity := func(c Config) runIdentity {
		t.Helper()
		tr, err := New(c, unitOptions())
		if err != nil {
			t.Fatal(err)
		}
		id, err := tr.identity()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ia, ib := identity(a), identity(b)
	if ia.ConfigHash != ib.ConfigHash || ia.mismatch(ib, "d") != nil {
		t.Errorf("scheduling settings changed the identity: %v", ia.mismatch(ib, "d"))
	}
	for _, key := range []string{"algo.lr", "model.d_model", "env.config.dim_x", "warm_start.steps", "validation.levels", "run.seed"} {
		if _, ok := ia.Config[key]; !ok {
			t.Errorf("identity lacks %s: %v", key, slices.Sorted(maps.Keys(ia.Config)))
		}
	}
	c, _ := Parse(nil, []string{"algo.lr=1e-3", "model.d_model=128"})
	ic := identity(c)
	err = ic.mismatch(ia, "runs/x")
	if !errors.Is(err, ErrRunMismatch) {
		t.Fatalf("different lr and width: %v", err)
	}
	for _, want := range []string{"algo.lr: 0.0005 there, 0.001 here", "model.d_model: 64 there, 128 here", "runs/x"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("mismatch error lacks %q:\n%v", want, err)
		}
	}
}

func TestTrimMetricsAndTranscripts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, metricsFile)
	rows := `{"step":0,"a":1}` + "\n" + `{"step":1,"a":2}` + "\n" + `{"step":2,"a":3}` + "\n" + `{"step":3,"a"`
	if err := os.WriteFile(path, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	if err := trimMetrics(path, 1, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != `{"step":0,"a":1}`+"\n"+`{"step":1,"a":2}`+"\n" {
		t.Errorf("trimmed metrics %q", got)
	}
	if !strings.Contains(logs.String(), "torn last line") || !strings.Contains(logs.String(), "line=4") {
		t.Errorf("the torn line was dropped without a word naming it: %q", logs.String())
	}
	// A corrupted line inside the file is an error naming it.
	os.WriteFile(path, []byte(`{"step":0,"a":1}`+"\n"+`{"step":1,"a":`+"\n"+`{"step":2,"a":3}`+"\n"), 0o644)
	if err := trimMetrics(path, 1, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a corrupted line: %v", err)
	}
	td := filepath.Join(dir, transcriptsDir)
	os.MkdirAll(td, 0o755)
	for _, name := range []string{transcriptName("train", 2), transcriptName("val", 10), transcriptName("val", 11), tokensName("val", 10), tokensName("val", 11), "notes.txt"} {
		os.WriteFile(filepath.Join(td, name), nil, 0o644)
	}
	if err := trimTranscripts(td, 10); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(td)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"notes.txt", "train-step00002.txt", "val-step00010.tokens.jsonl", "val-step00010.txt"}) {
		t.Errorf("transcripts left: %v", names)
	}
}

func TestConfigChecksKLAndWarmStartKeys(t *testing.T) {
	_, err := Parse([]byte("algo:\n  use_kl_in_reward: true\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "algo.use_kl_in_reward") || !strings.Contains(err.Error(), "history_window") {
		t.Errorf("KL in reward with a windowed group estimator: %v", err)
	}
	cfg, err := Parse([]byte("algo:\n  use_kl_in_reward: true\n  kl_coef: 0.1\nrollout:\n  history_window: 0\n"), nil)
	if err != nil || !cfg.NeedsReference() {
		t.Errorf("KL in reward over whole conversations: %v, reference %v", err, cfg.NeedsReference())
	}
	_, err = Parse([]byte("warm_start:\n  duration: 100s\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "warm_start.steps") {
		t.Errorf("the old warm_start.duration key: %v", err)
	}
	if _, err = Parse([]byte("warm_start:\n  steps: 0\n"), nil); err == nil || !strings.Contains(err.Error(), "warm_start.steps") {
		t.Errorf("zero warm-start steps: %v", err)
	}
	cfg, _ = Parse([]byte("filter:\n  variance_early_stop: true\n  empty_stop_steps: 7\n"), nil)
	if es := cfg.earlyStop(); es.Patience == 0 || es.EmptyStopSteps != 7 {
		t.Errorf("early-stop settings %+v", es)
	}
}

// unitOptions are quiet Options whose learner cannot be built: the unit
// tests of the package drive its parts without one.
func unitOptions() Options {
	return Options{Logger: slog.New(slog.DiscardHandler), Console: io.Discard,
		Learner: func(context.Context, *Start) (Learner, error) { return nil, errors.New("no learner in unit tests") }}
}

// fakeLearner records what the loop hands it.
type fakeLearner struct {
	prepared, updated *Sequences
	opts              UpdateOptions
	skip              int
}

func (f *fakeLearner) Policy() policy.Policy { return nil }
func (f *fakeLearner) Prepare(_ context.Context, s *Sequences) error {
	f.prepared = s
	return nil
}
func (f *fakeLearner) Update(_ context.Context, s *Sequences, o UpdateOptions) (UpdateStats, error) {
	f.updated, f.opts = s, o
	return UpdateStats{Metrics: map[string]float64{"actor/pg_loss": 1}, MiniBatches: 2, Skipped: f.skip}, nil
}
func (f *fakeLearner) Save(context.Context, string) error { return nil }
func (f *fakeLearner) Model() ModelInfo                   { return ModelInfo{Kind: "fake"} }

// windowed is a trajectory of the given number of turns under a history
// window: one training sequence per turn.
func windowed(group int, score float64, turns int) rollout.Trajectory {
	tr := rollout.Trajectory{Group: group, Score: score}
	for i := range turns {
		start := len(tr.Tokens)
		tr.Tokens = append(tr.Tokens, 7, 8)
		tr.LossMask = append(tr.LossMask, true, true)
		tr.LogProbs = append(tr.LogProbs, -1, -1)
		tr.Turns = append(tr.Turns, rollout.Turn{Prompt: []int{1, i + 2}, ReplyStart: start, ReplyEnd: start + 2})
	}
	return tr
}

// TestUpdateMapsKeptGroupsToSequences: after the filter, the learner gets
// one sequence per turn of the kept episodes, with each episode's
// advantage spread over its turns, and the step's learning rate and seed.
func TestUpdateMapsKeptGroupsToSequences(t *testing.T) {
	cfg, err := Parse([]byte("algo:\n  preset: DrGRPO\n  warmup_steps: 4\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(cfg, unitOptions())
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeLearner{}
	s := &session{Trainer: tr, learner: fake, state: tr.newState(),
		sched: native.Schedule{Peak: 1, Min: 1, Warmup: 4}}
	// Group 0 (dropped by the caller's filter), group 1: a 1-turn success
	// and a 3-turn failure.
	b := newBatch([]rollout.Trajectory{windowed(0, 1, 2), windowed(0, 1, 2), windowed(1, 1, 1), windowed(1, 0, 3)})
	kept := b.Select([]int{1})
	m := metrics{}
	seqs, err := s.prepare(context.Background(), 3, kept, m)
	if err != nil {
		t.Fatal(err)
	}
	if fake.prepared != seqs || seqs.Len() != 4 || !slices.Equal(seqs.Episode, []int{0, 1, 1, 1}) {
		t.Fatalf("sequences: %+v", seqs)
	}
	// Dr.GRPO: A = ±0.5, scaled by (4 sequences / 2 episodes) / turns.
	for i, want := range []float64{1, -1.0 / 3, -1.0 / 3, -1.0 / 3} {
		if got := seqs.Advantages[i][3]; math.Abs(got-want) > 1e-12 || seqs.Advantages[i][0] != 0 {
			t.Errorf("sequence %d: advantages %v, want %v on the reply", i, seqs.Advantages[i], want)
		}
	}
	// Step 3's learning rate is the warmup schedule's after 2 steps.
	if o := s.updateOptions(3); o.LR != 0.75 || o.Seed != seed(cfg.Run.Seed, 3, streamUpdate, 0) || o.CriticLR != cfg.Algo.CriticLR {
		t.Errorf("options %+v", o)
	}
}

// TestSkippedUpdatesStopTheRun: run.nan_stop_streak steps in a row whose
// updates skipped mini-batches stop the run; a clean step in between
// starts the count again.
func TestSkippedUpdatesStopTheRun(t *testing.T) {
	st := State{}
	skipped, clean := UpdateStats{MiniBatches: 2, Skipped: 1}, UpdateStats{MiniBatches: 2}
	for i, u := range []UpdateStats{skipped, skipped, clean, skipped, skipped} {
		if st.observeUpdate(u, 3) != (u.Skipped > 0) || st.Stopped != "" {
			t.Fatalf("step %d: streak %d, stopped %q", i, st.NaNStreak, st.Stopped)
		}
	}
	st.observeUpdate(skipped, 3)
	if st.NaNStreak != 3 || st.Stopped == "" {
		t.Errorf("three skipped steps in a row: streak %d, stopped %q", st.NaNStreak, st.Stopped)
	}
}

// TestConfigRefusesNonFiniteAndHugeValues: a NaN or infinite float
// anywhere in the config, and a size past its bound, is an error naming
// the key (and the bound), not a poisoned or runaway run.
func TestConfigRefusesNonFiniteAndHugeValues(t *testing.T) {
	for set, want := range map[string]string{
		"algo.lr=.inf":                       "algo.lr: must be a finite number",
		"algo.weight_decay=.inf":             "algo.weight_decay: must be a finite number",
		"rollout.sampling.temperature=.nan":  "rollout.sampling.temperature: must be a finite number",
		"rollout.format_penalty=.nan":        "rollout.format_penalty: must be a finite number",
		"algo.clip_ratio_high=-.inf":         "algo.clip_ratio_high: must be a finite number",
		"validation.temperature=.inf":        "validation.temperature: must be a finite number",
		"run.group_size=1000000000":          "run.group_size: 1000000000 is above the largest this build takes, 1024",
		"run.groups=1000000000":              "run.groups: 1000000000 is above the largest",
		"warm_start.batch=1000000000":        "warm_start.batch: 1000000000 is above the largest",
		"rollout.sampling.max_tokens=999999": "rollout.sampling.max_tokens: 999999 is above the largest",
	} {
		if _, err := Parse(nil, []string{set}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", set, err, want)
		}
	}
}
