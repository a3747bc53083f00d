package train_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	"github.com/agentrl/agentrl/server/tinkerapi"
	"github.com/agentrl/agentrl/train/inprocess"
)

// TestTinkerRunResumes: a run on the offline server, interrupted and
// resumed (a new server loading the checkpoint's saved state), follows the
// uninterrupted run's curve exactly.
func TestTinkerRunResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	checkResume(t, []string{"tinker.url=local"}, "actor/pg_loss")
}

// TestTinkerServerRestartMidRun: the server restarts during a run (a new
// process on the same state directory, which knows neither the run's model
// nor its requests). The failed step finds the model gone (Recover), the
// run resumes from its last checkpoint in the same process, on the
// restarted server, and finishes on its own with every metric of an
// uninterrupted run.
func TestTinkerServerRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	ctx := context.Background()
	dir := t.TempDir()
	sets := []string{"checkpoint.every=1", "validation.every=0", "warm_start.cache_dir=" + filepath.Join(dir, "cache")}
	probe := traintest.TinyConfig(t, filepath.Join(dir, "probe"), 3, append(sets, "tinker.url=local")...)
	tr, err := train.New(probe, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	start, err := tr.Start()
	if err != nil {
		t.Fatal(err)
	}
	ws, err := inprocess.StartingModel(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ws.Policy("sokoban")
	if err != nil {
		t.Fatal(err)
	}
	// serve is a server on a state directory that a restart swaps for a
	// new one after the given number of optimizer steps (0: never).
	serve := func(state string, restartAfter int32) *httptest.Server {
		newServer := func() *tinkerapi.Server {
			s, err := tinkerapi.New(p, tinkerapi.Options{Dir: state, Logger: traintest.QuietOptions().Logger})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		var current atomic.Pointer[tinkerapi.Server]
		current.Store(newServer())
		var optimSteps atomic.Int32
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/optim_step") && optimSteps.Add(1) == restartAfter+1 {
				old := current.Swap(newServer())
				old.Close()
			}
			current.Load().ServeHTTP(w, r)
		}))
		t.Cleanup(ts.Close)
		return ts
	}
	run := func(name string, restartAfter int32) ([]map[string]float64, string) {
		t.Helper()
		out := filepath.Join(dir, name)
		ts := serve(filepath.Join(dir, name+"-state"), restartAfter)
		var logs strings.Builder
		opts := traintest.QuietOptions()
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		tr, err := train.New(traintest.TinyConfig(t, out, 3, append(sets, "tinker.url="+ts.URL)...), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ms, err := train.ReadMetrics(out)
		if err != nil {
			t.Fatal(err)
		}
		return ms, logs.String()
	}
	want, _ := run("uninterrupted", 0)
	got, logs := run("restarted", 3) // mid-run: after the third optimizer step
	if !strings.Contains(logs, "resuming from the last checkpoint") {
		t.Errorf("the run did not resume after the restart:\n%s", logs)
	}
	if len(got) != len(want) || len(want) != 3 {
		t.Fatalf("metrics rows: %d restarted, %d uninterrupted", len(got), len(want))
	}
	for i := range want {
		if !traintest.SameMetrics(want[i], got[i]) {
			t.Errorf("step %v differs from the uninterrupted run:\n%v\n%v", want[i]["step"], want[i], got[i])
		}
	}
}

func TestTinkerConfigErrorsNameTheKey(t *testing.T) {
	for sets, want := range map[string]string{
		"tinker.url=ftp://x":                         "tinker.url",
		"tinker.url=local,tinker.loss=dpo":           "tinker.loss",
		"tinker.url=local,tinker.loss=ppo":           "algo.clip_ratio_c",
		"tinker.url=local,algo.preset=PPO":           "critic",
		"tinker.url=local,analysis.gradient_every=5": "analysis.gradient_every",
		"tinker.base_model=Qwen/Qwen3-8B":            "only applies with tinker.url",
		"tinker.url=local,tinker.future_timeout_s=0": "tinker.future_timeout_s",
		"tinker.url=local,tinker.base_model=x":       "tinker.base_model",
	} {
		_, err := train.Parse(nil, strings.Split(sets, ","))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", sets, err, want)
		}
	}
	if _, err := train.Parse(nil, []string{"tinker.url=local", "tinker.loss=ppo", "algo.clip_ratio_c=0", "algo.entropy_coeff=0"}); err != nil {
		t.Errorf("the server's ppo for a plain clipped objective: %v", err)
	}
}

// TestTinkerServerMissing: a URL that does not serve the Tinker API fails
// the run before any step with an error naming the key, and nothing is
// left half-open.
func TestTinkerServerMissing(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	cfg := traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, "tinker.url="+ts.URL, "warm_start.enabled=false")
	tr, err := train.New(cfg, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "tinker.url") {
		t.Fatalf("Run = %v, want an error naming tinker.url", err)
	}
}

// TestTinkerStaleness: with rollout.staleness 1 the rollouts sample the
// server's saved sampler weights of the step before, while the server
// trains; two runs are the same run.
func TestTinkerStaleness(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	dir := t.TempDir()
	run := func(name string) []map[string]float64 {
		out := filepath.Join(dir, name)
		tr, err := train.New(traintest.TinyConfig(t, out, 3, "tinker.url=local", "rollout.staleness=1",
			"warm_start.cache_dir="+filepath.Join(dir, "cache")), traintest.QuietOptions())
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
	a, b := run("a"), run("b")
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("%d and %d metrics rows", len(a), len(b))
	}
	for i := range a {
		if !traintest.SameMetrics(a[i], b[i]) {
			t.Errorf("step %v differs:\n%v\n%v", a[i]["step"], a[i], b[i])
		}
	}
	if v := a[3]["rollout/policy_version"]; v != 1 {
		t.Errorf("step 3 sampled version %v, want 1", v)
	}
}
