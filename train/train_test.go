package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/agentrl/agentrl/envs/sokoban"
	"github.com/agentrl/agentrl/internal/simd"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// tinyConfig is a run small enough for the test suite: a 2-layer 32-wide
// model, a short warm start, 2 groups of 4.
func tinyConfig(t *testing.T, out string, steps int, overrides ...string) Config {
	t.Helper()
	cfg, err := tinyConfigFor(out, steps, overrides...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func tinyConfigFor(out string, steps int, overrides ...string) (Config, error) {
	return Parse([]byte(`
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

func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Console: io.Discard}
}

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
		tr, err := New(tinyConfig(t, filepath.Join(dir, out), steps, sets...), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ms, err := ReadMetrics(filepath.Join(dir, out))
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
			t.Errorf("final metrics lack %s: %v", k, sortedKeys(last))
		}
	}
	weights := "model.safetensors"
	if slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "model.lora.rank=") }) {
		weights = filepath.Join(adapterDir, "adapter_model.safetensors") // a LoRA run checkpoints its adapters
	}
	if slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "tinker.url=") }) {
		weights = tinkerFile // the server holds the weights; the checkpoint says where
	}
	for _, name := range []string{configFile, eventsDir, transcriptsDir, filepath.Join(checkpointsDir, latestCheckpoint, weights)} {
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
	cfg := tinyConfig(t, filepath.Join(dir, "run"), 50)
	tr, err := New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the first step's metrics are written.
	go func() {
		for {
			if ms, err := ReadMetrics(cfg.Run.Out); err == nil && len(ms) >= 2 {
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
	if _, err := os.Stat(filepath.Join(cfg.Run.Out, checkpointsDir, latestCheckpoint, stateFile)); err != nil {
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
		_, err := Parse([]byte(doc), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error naming %s", doc, err, want)
		}
	}
	cfg, err := Parse([]byte("algo:\n  preset: PPO\n"), []string{"algo.entropy_coeff=0", "env.config.dim_x=7"})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Algo.UsesCritic() || cfg.Algo.EntropyCoeff != 0 {
		t.Errorf("preset PPO with override: %+v", cfg.Algo)
	}
	if _, err := New(cfg, quietOptions()); err != nil {
		t.Errorf("env override rejected: %v", err)
	}
	bad, _ := Parse(nil, []string{"env.config.dim_z=7"})
	if _, err := New(bad, quietOptions()); err == nil || !strings.Contains(err.Error(), "dim_z") {
		t.Errorf("unknown env key: %v", err)
	}
}

func TestNonFiniteLossesSkipThenStop(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	cfg := tinyConfig(t, filepath.Join(dir, "run"), 10)
	cfg.Validation.Every = 0
	cfg.Collapse.Every = 0
	tr, err := New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	actor := s.learner.(*nativeLearner).actor
	// Healthy first step, then the weights blow up.
	m, err := s.step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m["actor/skipped_updates"] != 0 || s.state.NaNStreak != 0 {
		t.Fatalf("healthy step skipped updates: %v", m["actor/skipped_updates"])
	}
	before := append([]float32(nil), actor.Params()...)
	for i := range actor.Params() {
		if i%7 == 0 {
			actor.Params()[i] = float32(math.NaN())
		}
	}
	for i := 1; i <= cfg.Run.NaNStopStreak; i++ {
		m, err := s.step(context.Background())
		if err != nil {
			t.Fatalf("step with NaN weights: %v", err)
		}
		if m["actor/skipped_updates"] == 0 || s.state.NaNStreak != i {
			t.Fatalf("NaN step %d: skipped %v, streak %d", i, m["actor/skipped_updates"], s.state.NaNStreak)
		}
	}
	if s.state.Stopped == "" {
		t.Error("run not stopped after a streak of non-finite losses")
	}
	// Skipped updates leave the (NaN) weights untouched rather than
	// spreading NaN: the non-NaN entries are unchanged from before.
	for i, v := range actor.Params() {
		if i%7 != 0 && v != before[i] {
			t.Fatalf("param %d changed by a skipped update", i)
		}
	}
}

func TestTrainingConversations(t *testing.T) {
	msgs := []policy.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "u1"}, {Role: "assistant", Content: "a1"},
		{Role: "user", Content: "u2"}, {Role: "assistant", Content: "a2"}, {Role: "user", Content: "u3"}, {Role: "assistant", Content: "a3"}}
	if got := trainingConversations(msgs, 0); len(got) != 1 || len(got[0]) != 7 {
		t.Errorf("window 0: %v", got)
	}
	got := trainingConversations(msgs, 1)
	want := [][]string{{"S", "u1", "a1"}, {"S", "u2", "a2"}, {"S", "u3", "a3"}}
	check := func(got [][]tokenizer.Message, want [][]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %d conversations, want %d", len(got), len(want))
		}
		for i := range want {
			var contents []string
			for _, m := range got[i] {
				contents = append(contents, m.Content)
			}
			if strings.Join(contents, ",") != strings.Join(want[i], ",") {
				t.Errorf("conversation %d = %v, want %v", i, contents, want[i])
			}
		}
	}
	check(got, want)
	check(trainingConversations(msgs, 2), [][]string{{"S", "u1", "a1"}, {"S", "u1", "a1", "u2", "a2"}, {"S", "u2", "a2", "u3", "a3"}})
}

func TestTrainingLevelsAvoidValidationLayouts(t *testing.T) {
	cfg, err := Parse([]byte("validation:\n  levels: 300\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.buildValidationSet(); err != nil {
		t.Fatal(err)
	}
	if len(tr.valSeeds) != 300 || len(tr.valKeys) != 300 {
		t.Fatalf("%d validation seeds, %d distinct layouts; want 300 each", len(tr.valSeeds), len(tr.valKeys))
	}
	env, _ := tr.factory.New()
	for _, base := range []uint64{cfg.Run.TrainSeedBase, warmSeedBase} {
		seeds, next, err := tr.nextSeeds(base, 2000)
		if err != nil {
			t.Fatal(err)
		}
		skipped := int(next-base) - len(seeds)
		for _, s := range seeds {
			key, _ := env.Reset(s)
			if tr.valKeys[key] {
				t.Fatalf("seed %d reuses a validation layout", s)
			}
		}
		// The generator repeats itself: some seeds must have been skipped,
		// or the check above proves nothing.
		if skipped == 0 {
			t.Errorf("no seed from %d on shared a layout with the validation set; expected some", base)
		}
	}
}

func TestDynamicSamplingRefills(t *testing.T) {
	if testing.Short() {
		t.Skip("samples from a small model")
	}
	dir := t.TempDir()
	cfg := tinyConfig(t, filepath.Join(dir, "run"), 1)
	cfg.Filter.DynamicSampling, cfg.Filter.MaxSampleRounds = true, 2
	tr, err := New(cfg, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	// Group 0 all scored alike (dropped), group 1 varies (kept).
	var trajs []rollout.Trajectory
	for g, scores := range [][]float64{{1, 1, 1, 1}, {0, 1, 0, 2}} {
		for i, sc := range scores {
			trajs = append(trajs, rollout.Trajectory{Group: g, Sample: i, Seed: uint64(100 + g), Score: sc})
		}
	}
	m := metrics{}
	out, next, err := s.dynamicSampling(context.Background(), 1, newBatch(trajs), 5000, m)
	if err != nil {
		t.Fatal(err)
	}
	if m["rollout/dynamic_sampling_rounds"] != 2 || m["rollout/dynamic_sampling_dropped"] < 1 || next <= 5000 {
		t.Errorf("metrics %v, next seed %d", m, next)
	}
	if n := len(out.Trajectories); n%4 != 0 || n < 4 || n > 8 || len(out.Groups) != n/4 {
		t.Fatalf("%d trajectories in %d groups back", n, len(out.Groups))
	}
	for i := 0; i < 4; i++ {
		tr := out.Trajectories[out.Groups[0][i]]
		if tr.Seed != 101 || tr.Group != 0 || tr.Score != []float64{0, 1, 0, 2}[i] {
			t.Errorf("trajectory %d = group %d seed %d score %v; want the varied group first, renumbered 0", i, tr.Group, tr.Seed, tr.Score)
		}
	}
	for _, i := range slices.Concat(out.Groups[1:]...) {
		if tr := out.Trajectories[i]; tr.Group != 1 || tr.Seed < 5000 {
			t.Errorf("refill trajectory %d: group %d seed %d", i, tr.Group, tr.Seed)
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
	cfg := tinyConfig(t, dir, 2, "rollout.history_window=0", "rollout.max_turns=2", "algo.use_kl_in_reward=true", "algo.kl_coef=0.05")
	var console strings.Builder
	opts := quietOptions()
	opts.Console, opts.ConfigPath = &console, "my.yaml"
	tr, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, checkpointsDir, latestCheckpoint, referenceDir, "model.safetensors")); err != nil {
		t.Errorf("no reference policy in the checkpoint: %v", err)
	}
	ms, _ := ReadMetrics(dir)
	if len(ms) != 3 || math.IsNaN(ms[2]["actor/pg_loss"]) {
		t.Fatalf("metrics %v", ms)
	}
	out := console.String()
	for _, want := range []string{"run finished after 2 of 2 steps", "validation success on 4 held-out levels (95% interval)",
		"random policy", "warm start", "best (step", "final (step 2)", "go run ./trainer plot " + dir,
		"go run ./trainer eval -config my.yaml -checkpoint " + filepath.Join(dir, checkpointsDir, latestCheckpoint), "trainer serve"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, summaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum Summary
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

// TestWarmStartIsStepBudgeted: the warm start trains warm_start.steps
// steps however slow the clock says the machine is; only the optional
// max_duration cap reads the clock, and it warns when it binds.
func TestWarmStartIsStepBudgeted(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	warm := func(cache string, slow bool, sets ...string) ([]float32, string) {
		t.Helper()
		cfg := tinyConfig(t, filepath.Join(dir, "run"), 1, append([]string{"warm_start.steps=40", "warm_start.cache_dir=" + filepath.Join(dir, cache)}, sets...)...)
		var logs strings.Builder
		tr, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Console: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if slow { // every reading of the clock is a minute later than the last
			now := time.Unix(0, 0)
			tr.now = func() time.Time { now = now.Add(time.Minute); return now }
		}
		ws, err := tr.warmStart(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ws.model.Params(), logs.String()
	}
	fast, _ := warm("a", false)
	slow, _ := warm("b", true)
	if !slices.Equal(fast, slow) {
		t.Error("the same config gave different warm-started models under a slow clock")
	}
	capped, logs := warm("c", true, "warm_start.max_duration=5m")
	if slices.Equal(fast, capped) || !strings.Contains(logs, "max_duration reached") {
		t.Errorf("a binding max_duration neither stopped the warm start early nor warned:\n%s", logs)
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
		tr, err := New(tinyConfig(t, out, 2, "warm_start.cache_dir="+filepath.Join(dir, "cache-"+name)), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ms, err := ReadMetrics(out)
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
		if !sameMetrics(want[i], got[i]) {
			t.Errorf("step %v differs between %v on 2 cores and %v on 1:\n%v\n%v", want[i]["step"], simd.Hardware(), other, want[i], got[i])
		}
	}
}

// TestWarmStartCacheFollowsTheDemonstrations: a second start with the same
// config reuses the cached warm start, and the cache key covers the
// demonstrations' text, so an environment or expert that now writes
// anything differently gets a model trained on what it writes now.
func TestWarmStartCacheFollowsTheDemonstrations(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	cfg := tinyConfig(t, filepath.Join(dir, "run"), 1, "warm_start.steps=20", "warm_start.cache_dir="+filepath.Join(dir, "cache"))
	start := func() (*Trainer, *warmStartResult) {
		t.Helper()
		tr, err := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Console: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		ws, err := tr.warmStart(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return tr, ws
	}
	_, first := start()
	tr, second := start()
	if first.cached || !second.cached || first.dir != second.dir {
		t.Fatalf("cached: first %v, second %v (dirs %s, %s); want a build, then the cached model", first.cached, second.cached, first.dir, second.dir)
	}
	if !slices.Equal(first.model.Params(), second.model.Params()) {
		t.Error("the cached model differs from the one built")
	}

	demos := []rollout.Trajectory{{Seed: 7, Messages: []policy.Message{{Role: "user", Content: "obs"}, {Role: "assistant", Content: "<answer>Up</answer>"}}}}
	key := func(d []rollout.Trajectory) string {
		k, err := tr.warmStartKey(d)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	same := []rollout.Trajectory{{Seed: 7, Messages: slices.Clone(demos[0].Messages)}}
	changed := []rollout.Trajectory{{Seed: 7, Messages: slices.Clone(demos[0].Messages)}}
	changed[0].Messages[1].Content = "<answer>Down</answer>"
	if key(demos) != key(same) {
		t.Error("equal demonstrations gave different cache keys")
	}
	if key(demos) == key(changed) {
		t.Error("a demonstration that acts differently kept the cache key")
	}

	// The key is the same on every start of a config whose YAML nodes
	// (validation.env_config) are decoded anew each time, and follows
	// what they say.
	keyOf := func(set ...string) string {
		t.Helper()
		tr, err := New(tinyConfig(t, filepath.Join(dir, "run"), 1, set...), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		k, err := tr.warmStartKey(demos)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if a, b := keyOf("validation.env_config.max_steps=50"), keyOf("validation.env_config.max_steps=50"); a != b {
		t.Errorf("two starts of one config gave cache keys %s and %s", a, b)
	}
	// Settings the warm start never reads do not split the cache: the
	// runs of a sweep over them share one starting model.
	if keyOf("validation.env_config.max_steps=50") != keyOf("validation.env_config.max_steps=60") {
		t.Error("validation.env_config, which the warm start never reads, changed the cache key")
	}
	if keyOf("rollout.sampling.max_tokens=24") != keyOf("rollout.sampling.max_tokens=96", "rollout.sampling.temperature=0.5") {
		t.Error("rollout.sampling, which the warm start never reads, changed the cache key")
	}
	// warm_start.env_config is what the demonstrations are played on:
	// a setting there counts as in env.config, and one equal to env.config's
	// own value is no change at all.
	if keyOf("warm_start.env_config.max_steps=50") == keyOf() {
		t.Error("warm_start.env_config does not change the cache key")
	}
	if keyOf("warm_start.env_config.max_steps=50") != keyOf("env.config.max_steps=50") {
		t.Error("warm_start.env_config and env.config saying the same gave different cache keys")
	}
	if keyOf("env.config.max_steps=60", "warm_start.env_config.max_steps=50") != keyOf("env.config.max_steps=50") {
		t.Error("a warm start on the same demonstration environment did not share the cache key")
	}
	if keyOf("rollout.concurrency=1") != keyOf("rollout.concurrency=3") {
		t.Error("rollout.concurrency, which changes no result, changed the cache key")
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
			cfg := tinyConfig(t, dir, 2, "algo.preset="+c.preset, "rollout.history_window="+window, "rollout.max_turns=2")
			tr, err := New(cfg, quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Run(context.Background()); err != nil {
				t.Fatalf("%s, history_window %s: %v", c.preset, window, err)
			}
			ms, err := ReadMetrics(dir)
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
	cfg := tinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, "algo.preset=CAST", "env.name=bandit")
	_, err := New(cfg, quietOptions())
	if err == nil || !strings.Contains(err.Error(), "exact solver") {
		t.Fatalf("CAST on bandit: %v", err)
	}
}

// TestInactiveCreditSettingsAreNotIdentity: the settings of a credit
// method a run does not use are left out of its identity, so changing
// them (or a run recorded before they existed) still matches.
func TestInactiveCreditSettingsAreNotIdentity(t *testing.T) {
	ids := map[string]runIdentity{}
	for _, sets := range [][]string{nil, {"algo.solver_alpha=0.5", "algo.high_level_gamma=0.5"}, {"algo.preset=CAST"}, {"algo.preset=CAST", "algo.solver_alpha=0.5"}} {
		tr, err := New(tinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, sets...), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		id, err := tr.identity()
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
	run := func(steps int) Summary {
		tr, err := New(tinyConfig(t, dir, steps, "warm_start.cache_dir="+filepath.Join(t.TempDir(), "fresh-cache")), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		tr.now = tick
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, summaryFile))
		if err != nil {
			t.Fatal(err)
		}
		var sum Summary
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
	cfg := tinyConfig(t, dir, 3, "collapse.every=1", "collapse.alarm.dependence_high=1", "collapse.alarm.dependence_low=0.999",
		"collapse.alarm.stop_on=[template_collapse, low_entropy_collapse]")
	var console strings.Builder
	opts := quietOptions()
	opts.Console = &console
	tr, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("run ended with %v, want ErrStopped; stop_on %v; console:\n%s", err, cfg.Collapse.Alarm.StopOn, console.String())
	}
	out := console.String()
	if !strings.Contains(out, "regime none -> ") || !strings.Contains(out, "stopped early: collapse alarm: the reasoning regime became") {
		t.Errorf("console:\n%s", out)
	}
	ms, _ := ReadMetrics(dir)
	last := ms[len(ms)-1]
	if code := last["collapse/regime"]; code != 3 && code != 4 {
		t.Errorf("collapse/regime = %v, want a collapsed regime (3 or 4): %v", code, last)
	}
	if last["collapse/regime_changed"] != 1 || last["step"] != 1 {
		t.Errorf("stopped at step %v, regime_changed %v", last["step"], last["collapse/regime_changed"])
	}

	// With the defaults the alarm classifies and stays on.
	cfg = tinyConfig(t, filepath.Join(t.TempDir(), "run2"), 2, "collapse.every=1", "collapse.alarm.stop_on=[template_collapse]")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte("collapse:\n  alarm:\n    stop_on: [templat_collapse]\n"), nil); err == nil || !strings.Contains(err.Error(), "stop_on") {
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
	tr, err := New(tinyConfig(t, dir, 2, "filter.strategy=within_group", "filter.value=0.5"), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, _ := ReadMetrics(dir)
	last := ms[len(ms)-1]
	if last["rollout/within_group_kept_ratio"] != 0.5 || last["actor/kept_trajectories"] != 4 {
		t.Errorf("within_group: kept ratio %v, %v trajectories trained (want 0.5 and 4 of 2×4)", last["rollout/within_group_kept_ratio"], last["actor/kept_trajectories"])
	}
	dir = filepath.Join(parent, "percentile")
	tr, err = New(tinyConfig(t, dir, 2, "filter.strategy=percentile_range", "filter.percentile_low=0", "filter.percentile_high=0.5"), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ms, _ = ReadMetrics(dir)
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
	tr, err := New(tinyConfig(t, dir, 1), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Make the checkpoint look old: no elapsed times in its state, and a
	// summary that says what the old session measured.
	statePath := filepath.Join(dir, checkpointsDir, latestCheckpoint, stateFile)
	raw, _ := os.ReadFile(statePath)
	var st map[string]any
	json.Unmarshal(raw, &st)
	delete(st, "elapsed_s")
	delete(st, "warm_start_s")
	raw, _ = json.Marshal(st)
	os.WriteFile(statePath, raw, 0o644)
	sumPath := filepath.Join(dir, summaryFile)
	raw, _ = os.ReadFile(sumPath)
	var sum map[string]any
	json.Unmarshal(raw, &sum)
	sum["wall_time_s"], sum["warm_start_time_s"] = 1000.0, 400.0
	raw, _ = json.Marshal(sum)
	os.WriteFile(sumPath, raw, 0o644)

	tr, err = New(tinyConfig(t, dir, 1), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(sumPath)
	var after Summary
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
		tr, err := New(tinyConfig(t, dir, 2, append([]string{"algo.use_kl_loss=true", "algo.kl_loss_coef=0.1"}, sets...)...), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		ms, err := ReadMetrics(dir)
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
		tr, err := New(tinyConfig(t, out, 6, sets...), quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		return tr.Run(context.Background())
	}
	if err := run(); !errors.Is(err, ErrStopped) {
		t.Fatalf("first session: %v, want ErrStopped", err)
	}
	before, err := ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if last := before[len(before)-1]["step"]; last >= 6 {
		t.Fatalf("the alarm did not stop the run: it reached step %v", last)
	}
	if err := run(); !errors.Is(err, ErrStopped) {
		t.Fatalf("resumed session: %v, want ErrStopped", err)
	}
	after, err := ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the resumed session trained on: %d metric rows, had %d", len(after), len(before))
	}
	var sum Summary
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
		tr, err := New(tinyConfig(t, dir, steps, cache), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Console: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	run(1)
	statePath := filepath.Join(dir, checkpointsDir, latestCheckpoint, stateFile)
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
