package tinkerlearner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/server/tinkerapi"
	"github.com/agentrl/agentrl/train"
	"github.com/agentrl/agentrl/train/inprocess"
	"github.com/agentrl/agentrl/train/traintest"
)

// The three kinds of server a Tinker learner meets, built on the offline
// server (server/tinkerapi) over HTTP:
//
//   - the offline server as it is: protobuf forward bodies and results
//     (SDK 0.25.0's dialect), engine "agentrl";
//   - the same with Options.JSONOnly: the JSON dialect of SDKs up to
//     0.24.1 and of servers before protobuf (415 for a protobuf body);
//   - skyRLLike: the offline server behind what SkyRL's Tinker server does
//     differently (skyrl/tinker/api.py, skyrl/backends/jax.py, per
//     /api/v1 route): client/config answers pjwt_auth_enabled alone and
//     GET / names "Tinker API Mock"; create_model fixes alpha at 32;
//     optim_step drops grad_clip_norm and reports skyrl.ai/grad_norm and
//     skyrl.ai/learning_rate; forward_backward reports no metrics; prompt
//     log-probs come one fewer than the prompt's tokens, the first left
//     out (the JAX backend), in JSON or protobuf; save_weights and
//     save_weights_for_sampler are not deduplicated by seq_id, so that a
//     retry after a lost reply meets 409 "already exists" (the first reply
//     of each is lost here, on purpose).

// servedPolicy is the starting model of cfg, to serve.
func servedPolicy(t *testing.T, cfg train.Config) *local.Policy {
	t.Helper()
	ws, err := inprocess.StartingModel(context.Background(), startOf(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ws.Policy(cfg.Env.Name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// offlineServer serves p with opts over HTTP, counting requests by route
// and content type.
func offlineServer(t *testing.T, p *local.Policy, opts tinkerapi.Options) (*tinkerapi.Server, *routeCounter) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	opts.Logger = traintest.QuietOptions().Logger
	s, err := tinkerapi.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &routeCounter{h: s, n: map[string]int{}}
}

// routeCounter counts the requests it passes to h, by "route content-type".
type routeCounter struct {
	h  http.Handler
	mu sync.Mutex
	n  map[string]int
}

func (rc *routeCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mt, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	rc.mu.Lock()
	rc.n[strings.TrimPrefix(r.URL.Path, tinker.APIPrefix+"/")+" "+mt]++
	rc.mu.Unlock()
	rc.h.ServeHTTP(w, r)
}

func (rc *routeCounter) count(key string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n[key]
}

// skyRLLike is the offline server behind SkyRL's differences (see above).
type skyRLLike struct {
	inner http.Handler
	mu    sync.Mutex
	route map[string]string // request id → the route that made it
	lost  map[string]bool   // routes whose first reply was lost already
	// conflicts counts the 409s of save routes, which the retries met.
	conflicts int
}

func newSkyRLLike(inner http.Handler) *skyRLLike {
	return &skyRLLike{inner: inner, route: map[string]string{}, lost: map[string]bool{}}
}

func (s *skyRLLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" {
		writeTestJSON(w, 200, map[string]any{"name": "Tinker API Mock", "version": "0.0.1"})
		return
	}
	route := strings.TrimPrefix(r.URL.Path, tinker.APIPrefix+"/")
	body, _ := io.ReadAll(r.Body)
	switch route {
	case "client/config":
		writeTestJSON(w, 200, map[string]any{"pjwt_auth_enabled": false})
		return
	case "client/dynamic_config":
		writeTestJSON(w, 404, map[string]any{"detail": "Not Found"})
		return
	case "create_model":
		body = editJSON(body, func(m map[string]any) {
			if lc, ok := m["lora_config"].(map[string]any); ok {
				lc["alpha"] = 32.0
			}
		})
	case "optim_step":
		body = editJSON(body, func(m map[string]any) {
			if p, ok := m["adam_params"].(map[string]any); ok {
				delete(p, "grad_clip_norm")
			}
		})
	case "save_weights", "save_weights_for_sampler":
		body = editJSON(body, func(m map[string]any) { delete(m, "seq_id") })
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	s.inner.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	ct := rec.Header().Get("Content-Type")

	s.mu.Lock()
	defer s.mu.Unlock()
	switch route {
	case "get_server_capabilities":
		out = editJSON(out, func(m map[string]any) {
			delete(m, "engine")
			for _, sm := range m["supported_models"].([]any) {
				delete(sm.(map[string]any), "max_context_length")
			}
		})
	case "retrieve_future":
		var req tinker.RetrieveFutureRequest
		json.Unmarshal(body, &req)
		if rec.Code == 200 {
			out = s.result(s.route[req.RequestID], ct, out)
		}
	case "save_weights", "save_weights_for_sampler":
		if rec.Code == http.StatusConflict {
			s.conflicts++
		}
		if rec.Code == 200 && !s.lost[route] {
			// The server took it; the reply does not arrive.
			s.lost[route] = true
			writeTestJSON(w, http.StatusBadGateway, map[string]any{"detail": "upstream connection reset"})
			return
		}
	}
	if rec.Code == 200 && route != "retrieve_future" {
		var fr tinker.FutureResponse
		if json.Unmarshal(out, &fr) == nil && fr.RequestID != "" {
			kind := route
			if route == "forward_backward" && strings.Contains(r.Header.Get("Content-Type"), "protobuf") {
				kind = "forward_backward" // forward_only or not: the same result shape
			}
			s.route[fr.RequestID] = kind
		}
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	w.Write(out)
}

// result rewrites a result of route as SkyRL's JAX engine reports it.
func (s *skyRLLike) result(route, ct string, out []byte) []byte {
	proto := strings.Contains(ct, "protobuf")
	switch route {
	case "asample":
		var r tinker.SampleResponse
		if proto {
			if r.UnmarshalProto(out) != nil {
				return out
			}
		} else if json.Unmarshal(out, &r) != nil {
			return out
		}
		if len(r.PromptLogprobs) == 0 {
			return out
		}
		r.PromptLogprobs = r.PromptLogprobs[1:]
		if proto {
			out, _ = r.MarshalProto()
		} else {
			out, _ = json.Marshal(r)
		}
	case "forward", "forward_backward":
		var r tinker.ForwardBackwardOutput
		if proto {
			if r.UnmarshalProto(out, 1<<20) != nil {
				return out
			}
		} else if json.Unmarshal(out, &r) != nil {
			return out
		}
		r.Metrics = map[string]float64{}
		if proto {
			out, _ = r.MarshalProto()
		} else {
			out, _ = json.Marshal(r)
		}
	case "optim_step":
		var r tinker.OptimStepResponse
		if json.Unmarshal(out, &r) != nil || r.Metrics == nil {
			return out
		}
		out, _ = json.Marshal(tinker.OptimStepResponse{Metrics: map[string]float64{
			"skyrl.ai/grad_norm": r.Metrics["grad_norm:mean"], "skyrl.ai/learning_rate": float64(float32(lastLR))}})
	}
	return out
}

// lastLR is the learning rate the runs of these tests send (algo.lr),
// which skyRLLike reports back as JAX does (float32).
const lastLR = 0.001

func editJSON(data []byte, edit func(map[string]any)) []byte {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	edit(m)
	out, _ := json.Marshal(m)
	return out
}

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// serverRunSets are the settings of the runs through each server: LoRA
// at SkyRL's fixed alpha, no gradient clipping (SkyRL-JAX has none), a KL
// loss to the base model (its reference log-probs are prompt log-probs)
// and a checkpoint every step (save_weights).
var serverRunSets = []string{"warm_start.enabled=false", "model.lora.rank=4", "model.lora.alpha=32", "algo.grad_clip=0",
	"algo.use_kl_loss=true", "algo.kl_loss_coef=0.05", "checkpoint.every=1", "validation.every=0"}

// TestTrainsThroughEachServer runs the same two steps through the offline
// server in the protobuf dialect, in the JSON one, and behind SkyRL's
// differences: every metric of every step is equal (the arithmetic is the
// same: the linearised loss's weights round to the same float32 gradient
// in either dialect, and SkyRL's alpha and clipping are the run's), and
// each server was spoken to as it speaks.
func TestTrainsThroughEachServer(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model three times")
	}
	dir := t.TempDir()
	p := servedPolicy(t, traintest.TinyConfig(t, filepath.Join(dir, "probe"), 2, append(serverRunSets, "tinker.url=local")...))

	run := func(name string, h http.Handler) ([]map[string]float64, string) {
		t.Helper()
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		var logs syncBuffer
		opts := traintest.QuietOptions()
		opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		out := filepath.Join(dir, name)
		tr, err := train.New(traintest.TinyConfig(t, out, 2, append(serverRunSets, "tinker.url="+ts.URL)...), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, logs.String())
		}
		ms, err := train.ReadMetrics(out)
		if err != nil {
			t.Fatal(err)
		}
		return ms, logs.String()
	}

	_, protoCount := offlineServer(t, p, tinkerapi.Options{})
	want, protoLogs := run("proto", protoCount)
	_, jsonCount := offlineServer(t, p, tinkerapi.Options{JSONOnly: true})
	gotJSON, jsonLogs := run("json", jsonCount)
	_, skyCount := offlineServer(t, p, tinkerapi.Options{})
	sky := newSkyRLLike(skyCount)
	gotSky, skyLogs := run("skyrl", sky)

	for name, c := range map[string]struct{ logs, engine string }{
		"proto": {protoLogs, "agentrl"},
		"json":  {jsonLogs, "agentrl"},
		"skyrl": {skyLogs, "skyrl-jax"},
	} {
		if !strings.Contains(c.logs, "engine="+c.engine) {
			t.Errorf("%s: the engine was not identified as %s:\n%s", name, c.engine, grep(c.logs, "engine identified"))
		}
	}
	// run.json records the engine and what it ignores; the log says it
	// once.
	for name, c := range map[string]struct {
		logs, engine string
		ignored      []string
	}{
		"proto": {protoLogs, "agentrl", nil},
		"skyrl": {skyLogs, "skyrl-jax", []string{"model.lora.targets:", "tinker.loss:"}},
	} {
		raw, err := os.ReadFile(filepath.Join(dir, name, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		var id struct {
			Model struct {
				Config struct {
					Engine   string   `json:"engine"`
					Evidence []string `json:"engine_evidence"`
					Ignored  []string `json:"ignored_settings"`
				} `json:"config"`
			} `json:"model"`
		}
		if err := json.Unmarshal(raw, &id); err != nil {
			t.Fatal(err)
		}
		mc := id.Model.Config
		if mc.Engine != c.engine || len(mc.Evidence) == 0 || mc.Ignored == nil {
			t.Errorf("%s: run.json records engine %q, evidence %q, ignored %q", name, mc.Engine, mc.Evidence, mc.Ignored)
		}
		joined := strings.Join(mc.Ignored, "\n")
		for _, k := range c.ignored {
			if !strings.Contains(joined, k) {
				t.Errorf("%s: run.json's ignored_settings has no %s line:\n%s", name, k, joined)
			}
		}
		warned := strings.Count(c.logs, "does not apply these settings")
		if want := min(len(mc.Ignored), 1); warned != want {
			t.Errorf("%s: %d warnings of ignored settings for %d settings, want %d:\n%s", name, warned, len(mc.Ignored), want, grep(c.logs, "does not apply"))
		}
		for _, line := range mc.Ignored {
			if !strings.Contains(c.logs, strings.SplitN(line, ":", 2)[0]) {
				t.Errorf("%s: the warning does not name %q", name, line)
			}
		}
	}
	if !strings.Contains(jsonLogs, "does not read protobuf forward bodies") {
		t.Errorf("the JSON server's client did not fall back to JSON:\n%s", grep(jsonLogs, "tinker"))
	}
	// The dialects on the wire: protobuf forward bodies, forward passes
	// through forward_backward; JSON ones to forward, after one refused
	// protobuf body (415).
	if protoCount.count("forward_backward application/x-protobuf") == 0 || protoCount.count("forward application/json")+protoCount.count("forward_backward application/json") != 0 {
		t.Errorf("protobuf server: %v", protoCount.n)
	}
	if jsonCount.count("forward application/json") == 0 || jsonCount.count("forward_backward application/x-protobuf") != 1 {
		t.Errorf("JSON server: %v", jsonCount.n)
	}
	if sky.conflicts < 2 {
		t.Errorf("the saves retried after a lost reply met %d 409s, want both routes' (the retry path was not taken)", sky.conflicts)
	}
	if !strings.Contains(skyLogs, "had saved the first attempt already") {
		t.Errorf("the retried saves were not resolved:\n%s", grep(skyLogs, "tinker"))
	}
	for name, got := range map[string][]map[string]float64{"json": gotJSON, "skyrl": gotSky} {
		if len(got) != len(want) || len(want) != 2 {
			t.Fatalf("%s: %d metric rows, protobuf %d", name, len(got), len(want))
		}
		for i := range want {
			if !traintest.SameMetrics(want[i], got[i]) {
				t.Errorf("%s: step %v differs from the protobuf run:\n%v\n%v", name, want[i]["step"], want[i], got[i])
			}
		}
	}
	if _, ok := want[1]["actor/grad_norm"]; !ok {
		t.Errorf("no actor/grad_norm: %v", want[1])
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func grep(logs, s string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestLearnerOnSkyRLLike: on a SkyRL-like server the learner identifies
// the JAX engine, refuses the settings it would get wrong (naming each
// key), and reports the others (IgnoredSettings); the start-up probe and
// the KL reference read its n−1 prompt log-probs, and Prepare's reference
// equals the offline server's.
func TestLearnerOnSkyRLLike(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	base := append(slices.Clone(serverRunSets), "algo.entropy_coeff=0")
	p := servedPolicy(t, traintest.TinyConfig(t, filepath.Join(dir, "probe"), 1, append(base, "tinker.url=local")...))
	_, inner := offlineServer(t, p, tinkerapi.Options{})
	sky := httptest.NewServer(newSkyRLLike(inner))
	t.Cleanup(sky.Close)
	plain := httptest.NewServer(inner)
	t.Cleanup(plain.Close)

	for sets, keys := range map[string][]string{
		"algo.grad_clip=1":                                 {"algo.grad_clip"},
		"model.lora.alpha=16":                              {"model.lora.alpha"},
		"model.lora.alpha=16;algo.grad_clip=1":             {"model.lora.alpha", "algo.grad_clip"},
		"model.lora.rank=0":                                {"model.lora.rank"},
		"model.lora.targets=[q_proj,v_proj]":               {"model.lora.targets"},
		"model.lora.targets=[q_proj,k_proj,v_proj,o_proj]": {"model.lora.targets"},
	} {
		cfg := traintest.TinyConfig(t, filepath.Join(t.TempDir(), "refused"), 1, append(append(slices.Clone(base), "tinker.url="+sky.URL), strings.Split(sets, ";")...)...)
		_, err := New(ctx, startOf(t, cfg))
		if err == nil {
			t.Errorf("%s: accepted", sets)
			continue
		}
		for _, k := range keys {
			if !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "skyrl-jax") {
				t.Errorf("%s: %v, want an error naming %s and the engine", sets, err, k)
			}
		}
	}

	learner := func(url string) *tinkerLearner {
		l, err := New(ctx, startOf(t, traintest.TinyConfig(t, filepath.Join(t.TempDir(), "ok"), 1, append(slices.Clone(base), "tinker.url="+url)...)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.(io.Closer).Close() })
		return l.(*tinkerLearner)
	}
	sl, pl := learner(sky.URL), learner(plain.URL)
	if sl.Engine().Engine != tinker.EngineSkyRLJAX || pl.Engine().Engine != tinker.EngineAgentrl {
		t.Fatalf("engines %v and %v", sl.Engine(), pl.Engine())
	}
	ignored := strings.Join(sl.IgnoredSettings(), "\n")
	for _, k := range []string{"model.lora.targets:", "tinker.loss:"} {
		if !strings.Contains(ignored, k) {
			t.Errorf("IgnoredSettings has no %s line:\n%s", k, ignored)
		}
	}
	if len(pl.IgnoredSettings()) != 0 {
		t.Errorf("the offline server ignores %v", pl.IgnoredSettings())
	}
	batch := tinkerBatch(t, pl.Policy(), 6)
	a, b := batch.Subset(batch.Episode), batch.Subset(batch.Episode)
	if err := pl.Prepare(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := sl.Prepare(ctx, b); err != nil {
		t.Fatal(err)
	}
	if d := maxAbsDiff(a.RefLogProb, b.RefLogProb); a.RefLogProb == nil || d != 0 {
		t.Errorf("reference log-probs differ by %g", d)
	}
}
