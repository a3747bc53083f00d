package inprocess

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/agentrl/agentrl/envs/sokoban"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/text/tokenizer"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"
)

// startOf is the Start a new run of cfg gives its learner.
func startOf(t *testing.T, cfg train.Config, opts train.Options) *train.Start {
	t.Helper()
	tr, err := train.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.Start()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// warmStarterOf is the warm start of a new run of cfg.
func warmStarterOf(t *testing.T, cfg train.Config) warmStarter {
	s := startOf(t, cfg, traintest.QuietOptions())
	return warmStarter{cfg: s.Config, log: s.Log, now: s.Now, demo: s.Demonstrations, levels: s.Levels}
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
		cfg := traintest.TinyConfig(t, filepath.Join(dir, "run"), 1, append([]string{"warm_start.steps=40", "warm_start.cache_dir=" + filepath.Join(dir, cache)}, sets...)...)
		var logs strings.Builder
		start := startOf(t, cfg, train.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Console: io.Discard})
		if slow { // every reading of the clock is a minute later than the last
			now := time.Unix(0, 0)
			start.Now = func() time.Time { now = now.Add(time.Minute); return now }
		}
		ws, err := StartingModel(context.Background(), start)
		if err != nil {
			t.Fatal(err)
		}
		return ws.Model.Params(), logs.String()
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

// TestWarmStartCacheFollowsTheDemonstrations: a second start with the same
// config reuses the cached warm start, and the cache key covers the
// demonstrations' text, so an environment or expert that now writes
// anything differently gets a model trained on what it writes now.
func TestWarmStartCacheFollowsTheDemonstrations(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	cfg := traintest.TinyConfig(t, filepath.Join(dir, "run"), 1, "warm_start.steps=20", "warm_start.cache_dir="+filepath.Join(dir, "cache"))
	start := func() *Starting {
		t.Helper()
		ws, err := StartingModel(context.Background(), startOf(t, cfg, traintest.QuietOptions()))
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	first, second := start(), start()
	if first.Cached || !second.Cached || first.Dir != second.Dir {
		t.Fatalf("cached: first %v, second %v (dirs %s, %s); want a build, then the cached model", first.Cached, second.Cached, first.Dir, second.Dir)
	}
	if !slices.Equal(first.Model.Params(), second.Model.Params()) {
		t.Error("the cached model differs from the one built")
	}
	w := warmStarterOf(t, cfg)

	demos := []rollout.Trajectory{{Seed: 7, Messages: []policy.Message{{Role: "user", Content: "obs"}, {Role: "assistant", Content: "<answer>Up</answer>"}}}}
	key := func(d []rollout.Trajectory) string {
		k, err := w.key(d)
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
		k, err := warmStarterOf(t, traintest.TinyConfig(t, filepath.Join(dir, "run"), 1, set...)).key(demos)
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

// TestInterruptedWarmStartContinues interrupts the warm start part-way,
// reruns the command, and requires the cached warm-start model to equal,
// byte for byte, the one an uninterrupted warm start writes, and the
// interrupted one's saved progress to be gone after it.
func TestInterruptedWarmStartContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	run := func(ctx context.Context, parent string) error {
		tr, err := train.New(traintest.TinyConfig(t, filepath.Join(dir, parent, "run"), 1), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		return tr.Run(ctx)
	}
	cached := func(parent string) []byte {
		t.Helper()
		entries, err := filepath.Glob(filepath.Join(dir, parent, "cache", "warmstart-*"))
		if err != nil || len(entries) != 1 {
			t.Fatalf("cache of %s holds %v (%v), want one warm start", parent, entries, err)
		}
		raw, err := os.ReadFile(filepath.Join(entries[0], native.WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	if err := run(context.Background(), "whole"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookWarmStep = func(step int) {
		if step == 60 {
			cancel()
		}
	}
	err := run(ctx, "split")
	testHookWarmStep = nil
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v, want context.Canceled", err)
	}
	partial, _ := filepath.Glob(filepath.Join(dir, "split", "cache", "warmstart-*.partial"))
	if len(partial) != 1 {
		t.Fatalf("interrupted warm start left %v, want its saved progress", partial)
	}
	var resumedAt []int
	testHookWarmStep = func(step int) { resumedAt = append(resumedAt, step) }
	err = run(context.Background(), "split")
	testHookWarmStep = nil
	if err != nil {
		t.Fatal(err)
	}
	if len(resumedAt) == 0 || resumedAt[0] != 60 {
		t.Errorf("the rerun's warm start began at step %v, want 60", resumedAt[:min(len(resumedAt), 1)])
	}
	if !bytes.Equal(cached("whole"), cached("split")) {
		t.Error("the continued warm start's model differs from the uninterrupted one's")
	}
}
