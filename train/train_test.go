package train_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
	"github.com/agentrl/agentrl/train/traintest"

	_ "github.com/agentrl/agentrl/envs/sokoban"
	"github.com/agentrl/agentrl/internal/simd"
	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
)

func TestRunWritesMetricsAndResumesOnTheSameCurve(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	for _, c := range []struct {
		name string
		sets []string
		want string // a metric the case must produce
	}{
		{"windowed GRPO", nil, "collapse_first_turn_sample/mi_estimate"},
		// The whole conversation as one sequence, with a KL loss to the
		// frozen reference, which a resumed run must reload.
		{"full conversation with KL", []string{"rollout.history_window=0", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.05"}, "actor/kl_loss"},
		// GAE with a critic, which is checkpointed and resumed beside the actor.
		{"PPO", []string{"algo.preset=PPO"}, "critic/vf_loss"},
	} {
		t.Run(c.name, func(t *testing.T) { checkResume(t, c.sets, c.want) })
	}
}

func checkResume(t *testing.T, sets []string, want string) {
	dir := t.TempDir()
	run := func(out string, steps int) []map[string]float64 {
		tr, err := train.New(traintest.TinyConfig(t, filepath.Join(dir, out), steps, sets...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ms, err := train.ReadMetrics(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	full := run("full", 4)
	run("split", 2)
	resumed := run("split", 4)

	if len(full) != 5 || len(resumed) != 5 { // step 0 (validation) + 4 steps
		t.Fatalf("metrics lines: full %d, resumed %d; want 5", len(full), len(resumed))
	}
	for i := range full {
		a, b := full[i], resumed[i]
		if a["step"] != b["step"] {
			t.Fatalf("line %d: steps %v vs %v", i, a["step"], b["step"])
		}
		for k, v := range a {
			if strings.HasPrefix(k, "timing_s/") {
				continue
			}
			w, ok := b[k]
			if !ok {
				t.Errorf("step %v: %s missing after resume", a["step"], k)
				continue
			}
			if !(v == w || (math.IsNaN(v) && math.IsNaN(w))) {
				t.Errorf("step %v: %s = %v uninterrupted, %v resumed", a["step"], k, v, w)
			}
		}
	}
	last := full[len(full)-1]
	for _, k := range []string{"train/success", "train/score", "actor/pg_loss", "rollout/filter_kept_ratio",
		"val-env/success", "val-env/random_success", want} {
		if _, ok := last[k]; !ok {
			t.Errorf("final metrics lack %s: %v", k, slices.Sorted(maps.Keys(last)))
		}
	}
	weights := "model.safetensors"
	if slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "model.lora.rank=") }) {
		weights = filepath.Join("adapter", "adapter_model.safetensors") // a LoRA run checkpoints its adapters
	}
	if slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "tinker.url=") }) {
		weights = "tinker.json" // the server holds the weights; the checkpoint says where
	}
	for _, name := range []string{train.ConfigFile, train.EventsDir, train.TranscriptsDir, filepath.Join(train.CheckpointsDir, train.LatestCheckpoint, weights)} {
		if _, err := os.Stat(filepath.Join(dir, "full", name)); err != nil {
			t.Errorf("run directory lacks %s: %v", name, err)
		}
	}
}

func TestInterruptSavesCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	cfg := traintest.TinyConfig(t, filepath.Join(dir, "run"), 50)
	tr, err := train.New(cfg, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the first step's metrics are written.
	go func() {
		for {
			if ms, err := train.ReadMetrics(cfg.Run.Out); err == nil && len(ms) >= 2 {
				cancel()
				return
			}
			if ctx.Err() != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err = tr.Run(ctx)
	if err != context.Canceled {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Run.Out, train.CheckpointsDir, train.LatestCheckpoint, train.StateFile)); err != nil {
		t.Errorf("no checkpoint after interrupt: %v", err)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		"run:\n  stepz: 3\n":               `unknown key "stepz"`,
		"algo:\n  preset: TRPO\n":          "algo.preset",
		"algo:\n  lr: -1\n":                "algo.lr",
		"filter:\n  strategy: best\n":      "filter",
		"rollout:\n  max_turns: 0\n":       "rollout.max_turns",
		"warm_start:\n  rationale: long\n": "warm_start.rationale",
		"model:\n  d_model: 30\n":          "model.d_model",
	}
	for doc, want := range cases {
		_, err := train.Parse([]byte(doc), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error naming %s", doc, err, want)
		}
	}
	cfg, err := train.Parse([]byte("algo:\n  preset: PPO\n"), []string{"algo.entropy_coeff=0", "env.config.dim_x=7"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Algo.UsesCritic() || cfg.Algo.EntropyCoeff != 0 {
		t.Errorf("preset PPO with override: %+v", cfg.Algo)
	}
	if _, err := train.New(cfg, traintest.QuietOptions()); err != nil {
		t.Errorf("env override rejected: %v", err)
	}
	bad, _ := train.Parse(nil, []string{"env.config.dim_z=7"})
	if _, err := train.New(bad, traintest.QuietOptions()); err == nil || !strings.Contains(err.Error(), "dim_z") {
		t.Errorf("unknown env key: %v", err)
	}
}

// nanAfterFirstUpdate is the native learner, whose weights become NaN in
// places once its first update is done.
type nanAfterFirstUpdate struct {
	train.Learner
	updates int
	// corrupted holds the weights right after they were corrupted.
	corrupted []float32
}

func (l *nanAfterFirstUpdate) Update(ctx context.Context, seqs *train.Sequences, opts train.UpdateOptions) (train.UpdateStats, error) {
	st, err := l.Learner.Update(ctx, seqs, opts)
	if l.updates++; l.updates == 1 {
		l.corrupted = l.withWeights(func(w []float32) {
			for i := range w {
				if i%7 == 0 {
					w[i] = float32(math.NaN())
				}
			}
		})
	}
	return st, err
}

// withWeights runs f on the actor's weights and returns a copy of them.
func (l *nanAfterFirstUpdate) withWeights(f func([]float32)) []float32 {
	p := l.Policy().(*local.Policy)
	m := p.Lock()
	defer p.Unlock()
	f(m.Params())
	return slices.Clone(m.Params())
}

// TestNonFiniteLossesSkipThenStop: once the weights hold NaN, every update
// is skipped (counted, the weights left as they are rather than spreading
// NaN), and run.nan_stop_streak such steps in a row stop the run.
func TestNonFiniteLossesSkipThenStop(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	out := filepath.Join(t.TempDir(), "run")
	cfg := traintest.TinyConfig(t, out, 10, "validation.every=0", "collapse.every=0")
	var l *nanAfterFirstUpdate
	opts := traintest.QuietOptions()
	opts.Learner = func(ctx context.Context, s *train.Start) (train.Learner, error) {
		inner, err := inprocess.New(ctx, s)
		l = &nanAfterFirstUpdate{Learner: inner}
		return l, err
	}
	tr, err := train.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); !errors.Is(err, train.ErrStopped) || !strings.Contains(err.Error(), "non-finite") {
		t.Fatalf("Run = %v, want a stop for non-finite losses", err)
	}
	ms, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + cfg.Run.NaNStopStreak; len(ms) != want {
		t.Fatalf("%d steps ran, want %d: one healthy, then a streak of %d", len(ms), want, cfg.Run.NaNStopStreak)
	}
	for i, m := range ms {
		if skipped := m["actor/skipped_updates"]; (i == 0) != (skipped == 0) {
			t.Errorf("step %v skipped %v updates", m["step"], skipped)
		}
	}
	// The non-NaN weights are those left after the corruption.
	after := l.withWeights(func([]float32) {})
	for i, v := range after {
		if i%7 != 0 && v != l.corrupted[i] {
			t.Fatalf("weight %d changed by a skipped update", i)
		}
	}
}

// TestKLInRewardRunEndsWithSummary: a KL penalty in the reward alone (no KL
// loss) builds the frozen reference and trains; the run ends with a
// summary on the console and in summary.json.
func TestKLInRewardRunEndsWithSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := traintest.TinyConfig(t, dir, 2, "rollout.history_window=0", "rollout.max_turns=2", "algo.use_kl_in_reward=true", "algo.kl_coef=0.05")
	var console strings.Builder
	opts := traintest.QuietOptions()
	opts.Console, opts.ConfigPath = &console, "my.yaml"
	tr, err := train.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, train.CheckpointsDir, train.LatestCheckpoint, "reference", "model.safetensors")); err != nil {
		t.Errorf("no reference policy in the checkpoint: %v", err)
	}
	ms, _ := train.ReadMetrics(dir)
	if len(ms) != 3 || math.IsNaN(ms[2]["actor/pg_loss"]) {
		t.Fatalf("metrics %v", ms)
	}
	out := console.String()
	for _, want := range []string{"run finished after 2 of 2 steps", "validation success on 4 held-out levels (95% interval)",
		"random policy", "warm start", "best (step", "final (step 2)", "go run ./trainer plot " + dir,
		"go run ./trainer eval -config my.yaml -checkpoint " + filepath.Join(dir, train.CheckpointsDir, train.LatestCheckpoint), "trainer serve"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, train.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum train.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 2 || sum.ValidationLevels != 4 || sum.Final.Step != 2 || sum.Final.Success == nil ||
		*sum.Final.Low > *sum.Final.Success || *sum.Final.High < *sum.Final.Success || sum.WarmStart.Success == nil {
		t.Errorf("summary.json %s", raw)
	}
	if want := ms[2]["val-env/success"]; *sum.Final.Success != want {
		t.Errorf("final success %v, metrics say %v", *sum.Final.Success, want)
	}
	if sum.WarmStartTime <= 0 || sum.WarmStartTime >= sum.WallTime || !strings.Contains(out, "(warm start ") {
		t.Errorf("warm start time %vs of %vs not reported:\n%s", sum.WarmStartTime, sum.WallTime, out)
	}
}

// TestSameRunOnEveryKernelPath: the same config and seed give the same
// metrics, bit for bit, on the AVX2 and the AVX-512 kernels and on one or
// two cores, warm start included: a run is reproducible on any x86-64
// machine with AVX2.
func TestSameRunOnEveryKernelPath(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	run := func(name string, level simd.Level, procs int) []map[string]float64 {
		prev := simd.SetLevel(level)
		defer simd.SetLevel(prev)
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		out := filepath.Join(dir, name)
		tr, err := train.New(traintest.TinyConfig(t, out, 2, "warm_start.cache_dir="+filepath.Join(dir, "cache-"+name)), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ms, err := train.ReadMetrics(out)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	want := run("reference", simd.Hardware(), 2)
	other := simd.Hardware()
	if other == simd.AVX512 {
		other = simd.AVX2 // the other SIMD path, where the machine has both
	}
	got := run("other", other, 1)
	if len(got) != len(want) {
		t.Fatalf("%d metrics rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !traintest.SameMetrics(want[i], got[i]) {
			t.Errorf("step %v differs between %v on 2 cores and %v on 1:\n%v\n%v", want[i]["step"], simd.Hardware(), other, want[i], got[i])
		}
	}
}

// TestTurnLevelCreditTrains runs GiGPO, CAST and bi-level PPO for two
// steps, with the whole conversation as one sequence and with a history
// window, and checks that each logs its credit statistics and a finite
// loss.
func TestTurnLevelCreditTrains(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	parent := t.TempDir()
	for _, c := range []struct {
		preset, metric string
	}{{"GiGPO", "credit/anchor_groups"}, {"CAST", "credit/solver_rms"}, {"BiLevelPPO", "critic/vf_loss"}} {
		for _, window := range []string{"0", "1"} {
			dir := filepath.Join(parent, c.preset+window)
			cfg := traintest.TinyConfig(t, dir, 2, "algo.preset="+c.preset, "rollout.history_window="+window, "rollout.max_turns=2")
			tr, err := train.New(cfg, traintest.QuietOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Run(context.Background()); err != nil {
				t.Fatalf("%s, history_window %s: %v", c.preset, window, err)
			}
			ms, err := train.ReadMetrics(dir)
			if err != nil {
				t.Fatal(err)
			}
			last := ms[len(ms)-1]
			if v, ok := last[c.metric]; !ok || math.IsNaN(v) {
				t.Errorf("%s, history_window %s: %s = %v, %v in %v", c.preset, window, c.metric, v, ok, last)
			}
			if v := last["actor/pg_loss"]; math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%s, history_window %s: pg_loss %v", c.preset, window, v)
			}
		}
	}
}

func TestSolverCreditNeedsASolver(t *testing.T) {
	cfg := traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, "algo.preset=CAST", "env.name=bandit")
	_, err := train.New(cfg, traintest.QuietOptions())
	if err == nil || !strings.Contains(err.Error(), "exact solver") {
		t.Fatalf("CAST on bandit: %v", err)
	}
}

// TestInactiveCreditSettingsAreNotIdentity: the settings of a credit
// method a run does not use are left out of its identity, so changing
// them (or a run recorded before they existed) still matches.
func TestInactiveCreditSettingsAreNotIdentity(t *testing.T) {
	ids := map[string]train.RunIdentity{}
	for _, sets := range [][]string{nil, {"algo.solver_alpha=0.5", "algo.high_level_gamma=0.5"}, {"algo.preset=CAST"}, {"algo.preset=CAST", "algo.solver_alpha=0.5"}} {
		tr, err := train.New(traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, sets...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		id, err := train.Identity(tr)
		if err != nil {
			t.Fatal(err)
		}
		ids[strings.Join(sets, " ")] = id
	}
	grpo, cast := ids[""], ids["algo.preset=CAST"]
	if _, ok := grpo.Config["algo.solver_alpha"]; ok {
		t.Errorf("GRPO identity holds algo.solver_alpha: %v", grpo.Config)
	}
	if grpo.ConfigHash != ids["algo.solver_alpha=0.5 algo.high_level_gamma=0.5"].ConfigHash {
		t.Error("an unused credit setting changed the identity")
	}
	if cast.Config["algo.solver_alpha"] != "0.1" || cast.Config["algo.credit"] != "solver" {
		t.Errorf("CAST identity: %v", cast.Config)
	}
	if cast.ConfigHash == ids["algo.preset=CAST algo.solver_alpha=0.5"].ConfigHash || cast.ConfigHash == grpo.ConfigHash {
		t.Error("the solver's α or the preset does not change the identity")
	}
}

// TestResumedSummaryCountsEverySession: a run interrupted after its first
// steps and resumed reports the wall time of both sessions (and the warm
// start of the first), not only the last session's. The clock is fake:
// every reading advances it one second.
func TestResumedSummaryCountsEverySession(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := filepath.Join(t.TempDir(), "run")
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	run := func(steps int) train.Summary {
		tr, err := train.New(traintest.TinyConfig(t, dir, steps, "warm_start.cache_dir="+filepath.Join(t.TempDir(), "fresh-cache")), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		train.SetClock(tr, tick)
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, train.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		var sum train.Summary
		if err := json.Unmarshal(raw, &sum); err != nil {
			t.Fatal(err)
		}
		return sum
	}
	first := run(1)
	resumed := run(2)
	if first.WarmStartTime <= 0 || resumed.WarmStartTime != first.WarmStartTime {
		t.Errorf("warm start %vs, then %vs after resuming", first.WarmStartTime, resumed.WarmStartTime)
	}
	if resumed.WallTime <= first.WallTime {
		t.Errorf("resumed run's wall time %vs is not more than the first session's %vs", resumed.WallTime, first.WallTime)
	}
	// Resuming a finished run adds only the new session's few readings.
	again := run(2)
	if again.WallTime < resumed.WallTime || again.WallTime > resumed.WallTime+20 {
		t.Errorf("re-opening the finished run: wall time %vs, was %vs", again.WallTime, resumed.WallTime)
	}
}

// TestCollapseAlarm: the regime is classified at every collapse step and
// logged; thresholds no reasoning can meet make the first reading a
// collapse, which stop_on turns into an early stop with the reason.
func TestCollapseAlarm(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cfg := traintest.TinyConfig(t, dir, 3, "collapse.every=1", "collapse.alarm.dependence_high=1", "collapse.alarm.dependence_low=0.999",
		"collapse.alarm.stop_on=[template_collapse, low_entropy_collapse]")
	var console strings.Builder
	opts := traintest.QuietOptions()
	opts.Console = &console
	tr, err := train.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); !errors.Is(err, train.ErrStopped) {
		t.Fatalf("run ended with %v, want ErrStopped; stop_on %v; console:\n%s", err, cfg.Collapse.Alarm.StopOn, console.String())
	}
	out := console.String()
	if !strings.Contains(out, "regime none -> ") || !strings.Contains(out, "stopped early: collapse alarm: the reasoning regime became") {
		t.Errorf("console:\n%s", out)
	}
	ms, _ := train.ReadMetrics(dir)
	last := ms[len(ms)-1]
	if code := last["collapse/regime"]; code != 3 && code != 4 {
		t.Errorf("collapse/regime = %v, want a collapsed regime (3 or 4): %v", code, last)
	}
	if last["collapse/regime_changed"] != 1 || last["step"] != 1 {
		t.Errorf("stopped at step %v, regime_changed %v", last["step"], last["collapse/regime_changed"])
	}

	// With the defaults the alarm classifies and stays on.
	cfg = traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run2"), 2, "collapse.every=1", "collapse.alarm.stop_on=[template_collapse]")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := train.Parse([]byte("collapse:\n  alarm:\n    stop_on: [templat_collapse]\n"), nil); err == nil || !strings.Contains(err.Error(), "stop_on") {
		t.Errorf("a misspelt regime: %v", err)
	}
}

// TestRebuttalFilters: within_group keeps every group and half of each;
// percentile_range keeps the ranked slice it names.
func TestRebuttalFilters(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "within")
	tr, err := train.New(traintest.TinyConfig(t, dir, 2, "filter.strategy=within_group", "filter.value=0.5"), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, _ := train.ReadMetrics(dir)
	last := ms[len(ms)-1]
	if last["rollout/within_group_kept_ratio"] != 0.5 || last["actor/kept_trajectories"] != 4 {
		t.Errorf("within_group: kept ratio %v, %v trajectories trained (want 0.5 and 4 of 2×4)", last["rollout/within_group_kept_ratio"], last["actor/kept_trajectories"])
	}
	dir = filepath.Join(parent, "percentile")
	tr, err = train.New(traintest.TinyConfig(t, dir, 2, "filter.strategy=percentile_range", "filter.percentile_low=0", "filter.percentile_high=0.5"), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, _ = train.ReadMetrics(dir)
	for _, m := range ms[1:] {
		if m["rollout/filter_kept_count"] != 1 {
			t.Errorf("percentile_range [0, 0.5) of 2 groups kept %v", m["rollout/filter_kept_count"])
		}
	}
}

// TestLegacyCheckpointKeepsItsWallTime: a checkpoint from before the
// state carried elapsed times resumes with those of the run's summary.
func TestLegacyCheckpointKeepsItsWallTime(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := filepath.Join(t.TempDir(), "run")
	tr, err := train.New(traintest.TinyConfig(t, dir, 1), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Make the checkpoint look old: no elapsed times in its state, and a
	// summary that says what the old session measured.
	statePath := filepath.Join(dir, train.CheckpointsDir, train.LatestCheckpoint, train.StateFile)
	raw, _ := os.ReadFile(statePath)
	var st map[string]any
	json.Unmarshal(raw, &st)
	delete(st, "elapsed_s")
	delete(st, "warm_start_s")
	raw, _ = json.Marshal(st)
	os.WriteFile(statePath, raw, 0o644)
	sumPath := filepath.Join(dir, train.SummaryFile)
	raw, _ = os.ReadFile(sumPath)
	var sum map[string]any
	json.Unmarshal(raw, &sum)
	sum["wall_time_s"], sum["warm_start_time_s"] = 1000.0, 400.0
	raw, _ = json.Marshal(sum)
	os.WriteFile(sumPath, raw, 0o644)

	tr, err = train.New(traintest.TinyConfig(t, dir, 1), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(sumPath)
	var after train.Summary
	json.Unmarshal(raw, &after)
	if after.WallTime < 1000 || after.WallTime > 1010 || after.WarmStartTime != 400 {
		t.Errorf("after resuming a legacy checkpoint: wall %vs, warm start %vs; want about 1000 and 400", after.WallTime, after.WarmStartTime)
	}
}

// TestGradientAnalysis: the gradient terms are measured per reward-std
// bucket, and measuring them does not change the run.
func TestGradientAnalysis(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	parent := t.TempDir()
	run := func(name string, sets ...string) []map[string]float64 {
		dir := filepath.Join(parent, name)
		tr, err := train.New(traintest.TinyConfig(t, dir, 2, append([]string{"algo.use_kl_loss=true", "algo.kl_loss_coef=0.1"}, sets...)...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ms, err := train.ReadMetrics(dir)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	plain := run("plain")
	measured := run("measured", "analysis.gradient_every=1", "analysis.gradient_buckets=2")
	last := measured[len(measured)-1]
	for _, k := range []string{"grad/task_norm/q1", "grad/task_norm/q2", "grad/entropy_norm/q1", "grad/kl_norm/q2", "grad/reward_std/q2"} {
		if _, ok := last[k]; !ok {
			t.Errorf("no %s in %v", k, last)
		}
	}
	// The entropy bonus and the KL pull on every token whatever the reward.
	if last["grad/entropy_norm/q1"] <= 0 || last["grad/entropy_norm/q2"] <= 0 {
		t.Errorf("entropy gradient norms %v, %v", last["grad/entropy_norm/q1"], last["grad/entropy_norm/q2"])
	}
	if last["grad/reward_std/q1"] > last["grad/reward_std/q2"] {
		t.Errorf("buckets out of order: std %v then %v", last["grad/reward_std/q1"], last["grad/reward_std/q2"])
	}
	for i := range plain {
		for _, k := range []string{"actor/pg_loss", "train/score", "val-env/success"} {
			if a, b := plain[i][k], measured[i][k]; a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
				t.Errorf("step %d %s: %v without the analysis, %v with it", i, k, a, b)
			}
		}
	}
}

// TestStoppedRunStaysStopped checks that resuming a run a stopping rule
// ended trains nothing more and ends with the same status.
func TestStoppedRunStaysStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	out := filepath.Join(t.TempDir(), "run")
	// Any regime stops the run: the alarm's first reading ends it.
	sets := []string{"collapse.every=1", "collapse.alarm.stop_on=[diverse,compressed,template_collapse,low_entropy_collapse,incoherent]"}
	run := func() error {
		tr, err := train.New(traintest.TinyConfig(t, out, 6, sets...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		return tr.Run(context.Background())
	}
	if err := run(); !errors.Is(err, train.ErrStopped) {
		t.Fatalf("first session: %v, want ErrStopped", err)
	}
	before, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if last := before[len(before)-1]["step"]; last >= 6 {
		t.Fatalf("the alarm did not stop the run: it reached step %v", last)
	}
	if err := run(); !errors.Is(err, train.ErrStopped) {
		t.Fatalf("resumed session: %v, want ErrStopped", err)
	}
	after, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the resumed session trained on: %d metric rows, had %d", len(after), len(before))
	}
	var sum train.Summary
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil || !strings.HasPrefix(sum.Status, "stopped early: collapse alarm") {
		t.Errorf("summary status %q (%v), want stopped early by the alarm", sum.Status, err)
	}
}

// TestResumeWarnsOnOtherArithmetic: a checkpoint records the arithmetic
// of the build that wrote it, and resuming it with a build that rounds
// differently (here: a checkpoint edited to claim another) warns, while
// resuming with the same arithmetic does not.
func TestResumeWarnsOnOtherArithmetic(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := filepath.Join(t.TempDir(), "run")
	cache := "warm_start.cache_dir=" + filepath.Join(t.TempDir(), "cache")
	run := func(steps int) string {
		var logs strings.Builder
		tr, err := train.New(traintest.TinyConfig(t, dir, steps, cache), train.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Console: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	run(1)
	statePath := filepath.Join(dir, train.CheckpointsDir, train.LatestCheckpoint, train.StateFile)
	raw, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	want, err := native.ArithmeticID()
	if err != nil {
		t.Fatal(err)
	}
	if st["arithmetic"] != want {
		t.Fatalf("checkpoint records arithmetic %v, want %s", st["arithmetic"], want)
	}
	const warning = "resuming with different arithmetic"
	if logs := run(2); strings.Contains(logs, warning) {
		t.Errorf("resuming with the same arithmetic warned:\n%s", logs)
	}
	st["arithmetic"] = "0123456789abcdef"
	raw, err = json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statePath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if logs := run(3); !strings.Contains(logs, warning) || !strings.Contains(logs, "0123456789abcdef") {
		t.Errorf("resuming a checkpoint of other arithmetic did not warn:\n%s", logs)
	}
}

// TestLoRAConfigAndIdentity: model.lora's keys are validated by name, and
// are part of the run identity only when adapters are on (so runs recorded
// before they existed still match).
func TestLoRAConfigAndIdentity(t *testing.T) {
	for doc, want := range map[string]string{
		"model:\n  lora:\n    rank: -1\n":                        "model.lora.rank",
		"model:\n  lora:\n    rank: 4\n    alpha: 0\n":           "model.lora.alpha",
		"model:\n  lora:\n    rank: 4\n    dropout: 0.1\n":       "model.lora.dropout: only 0 is supported",
		"model:\n  lora:\n    rank: 4\n    targets: [lm_head]\n": `model.lora.targets: unknown module "lm_head"`,
		"model:\n  lora:\n    rank: 4\n    targets: []\n":        "model.lora.targets: name at least one module",
		"model:\n  lora:\n    rank: 4\n    ranks: 4\n":           `unknown key "ranks"`,
	} {
		if _, err := train.Parse([]byte(doc), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", doc, err, want)
		}
	}
	cfg, err := train.Parse([]byte("model:\n  lora:\n    rank: 4\n    targets: [v_proj, q_proj]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Model.LoRA.Targets, []string{"v_proj", "q_proj"}) || cfg.Model.LoRA.Alpha != 16 {
		t.Errorf("model.lora %+v", cfg.Model.LoRA)
	}
	ids := map[string]train.RunIdentity{}
	for _, sets := range [][]string{nil, {"model.lora.alpha=32"}, {"model.lora.rank=8"}, {"model.lora.rank=8", "model.lora.alpha=32"}} {
		tr, err := train.New(traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, sets...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		id, err := train.Identity(tr)
		if err != nil {
			t.Fatal(err)
		}
		ids[strings.Join(sets, " ")] = id
	}
	off, on := ids[""], ids["model.lora.rank=8"]
	for k := range off.Config {
		if strings.HasPrefix(k, "model.lora") {
			t.Errorf("identity without adapters holds %s", k)
		}
	}
	if off.ConfigHash != ids["model.lora.alpha=32"].ConfigHash {
		t.Error("an unused adapter setting changed the identity")
	}
	if on.Config["model.lora.rank"] != "8" || on.Config["model.lora.targets.6"] != "down_proj" || on.ConfigHash == ids["model.lora.rank=8 model.lora.alpha=32"].ConfigHash {
		t.Errorf("identity with adapters: %v", on.Config)
	}
}

// TestLoRARunResumes trains adapters (model.lora) on the warm-started
// native model and on a Hugging Face model: a split run equals the
// uninterrupted one metric for metric (the adapters and their optimizer
// state are checkpointed, the base is rebuilt and checked), with a KL
// reference (the base model) and with a PPO critic (trained in full).
func TestLoRARunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lora := []string{"model.lora.rank=4", "model.lora.alpha=8"}
	for _, c := range []struct {
		name string
		sets []string
		want string
	}{
		{"native GRPO", nil, "actor/pg_loss"},
		{"native KL, q and v", []string{"algo.use_kl_loss=true", "algo.kl_loss_coef=0.05", "model.lora.targets=[q_proj, v_proj]"}, "actor/kl_loss"},
		{"HF PPO with KL", []string{"model.init=" + src.Path, "rollout.max_turns=2", "rollout.sampling.max_tokens=12",
			"algo.preset=PPO", "algo.use_kl_loss=true", "algo.kl_loss_coef=0.05"}, "critic/vf_loss"},
	} {
		t.Run(c.name, func(t *testing.T) { checkResume(t, append(slices.Clone(lora), c.sets...), c.want) })
	}
}

// TestStalenessIsExact: with rollout.staleness k the rollouts of step t
// sample exactly the weights after step t−1−k, sampled ahead while the
// learner trains: the run is the same run on one core and on two, and an
// interrupted and resumed one (its checkpoint holds the steps sampled
// ahead) equals it, metric for metric.
func TestStalenessIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	for _, k := range []int{1, 2} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			dir := t.TempDir()
			sets := []string{fmt.Sprintf("rollout.staleness=%d", k), "checkpoint.every=1", "warm_start.cache_dir=" + filepath.Join(dir, "cache")}
			run := func(name string, steps, procs int) []map[string]float64 {
				t.Helper()
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				out := filepath.Join(dir, name)
				tr, err := train.New(traintest.TinyConfig(t, out, steps, sets...), traintest.QuietOptions())
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				ms, err := train.ReadMetrics(out)
				if err != nil {
					t.Fatal(err)
				}
				return ms
			}
			want := run("two-cores", 5, 2)
			for i, m := range want[1:] {
				step := i + 1
				if v := m["rollout/policy_version"]; v != float64(max(0, step-1-k)) || m["rollout/staleness"] != float64(step-1)-v {
					t.Errorf("step %d sampled version %v (staleness %v), want %d", step, v, m["rollout/staleness"], max(0, step-1-k))
				}
			}
			same := func(what string, got []map[string]float64) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: %d metrics rows, want %d", what, len(got), len(want))
				}
				for i := range want {
					if !traintest.SameMetrics(want[i], got[i]) {
						t.Errorf("%s: step %v differs:\n%v\n%v", what, want[i]["step"], want[i], got[i])
					}
				}
			}
			same("one core", run("one-core", 5, 1))
			run("resumed", 2, 2)
			same("resumed at step 2", run("resumed", 5, 2))
		})
	}
}

// TestRolloutISCorrectsTheLag: sampling one step ahead with the old
// log-probs recomputed under the learner's current weights, the rollout
// importance weights (algo.rollout_is, truncated) carry the ratio of the
// current weights to the lagging sampler's, and the run records them.
func TestRolloutISCorrectsTheLag(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	out := filepath.Join(t.TempDir(), "run")
	tr, err := train.New(traintest.TinyConfig(t, out, 4, "rollout.staleness=1", "algo.recompute_old_log_prob=true",
		"algo.rollout_is=true", "algo.lr=0.01"), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	lagged := false
	for _, m := range ms[1:] {
		mean, ok := m["mismatch/rollout_is_mean"]
		if !ok || math.IsNaN(mean) || mean <= 0 {
			t.Fatalf("step %v: mismatch/rollout_is_mean %v (present %v)", m["step"], mean, ok)
		}
		// Steps 1 and 2 sample version 0 with the learner at 0 and 1.
		if m["step"] >= 2 && m["mismatch/mean_abs_logprob_diff"] > 1e-4 {
			lagged = true
		}
	}
	if !lagged {
		t.Error("the learner's recomputed log-probs never differed from the lagging sampler's: the test shows nothing")
	}
}
