package vllm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/vllm"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/tokenizer"
)

func TestRoundTrip(t *testing.T) {
	p := scripted()
	ts, _ := fake(t, p, nil)
	c := connect(t, quiet(ts.URL+"/v1/"))
	ctx := context.Background()

	info := c.Info()
	if info.Name != "test-model" || info.MaxContext != 4096 || !slices.Equal(info.StopTokens, []int{tokenizer.EndID}) {
		t.Fatalf("Info = %+v", info)
	}

	msgs := []policy.Message{{Role: policy.RoleSystem, Content: "Be brief."}, {Role: policy.RoleUser, Content: "héllo <think>"}}
	for _, gen := range []bool{false, true} {
		got, err := c.RenderChat(ctx, msgs, gen)
		want, _ := p.RenderChat(ctx, msgs, gen)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("RenderChat(%v) = %v, %v; want %v", gen, got, err, want)
		}
	}
	ids, err := c.Encode(ctx, "héllo <think>")
	if want, _ := p.Encode(ctx, "héllo <think>"); err != nil || !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v, %v; want %v", ids, err, want)
	}
	if text, err := c.Decode(ctx, ids); err != nil || text != "héllo <think>" {
		t.Fatalf("Decode = %q, %v", text, err)
	}
	if ids, err := c.Encode(ctx, ""); err != nil || len(ids) != 0 {
		t.Fatalf("Encode(\"\") = %v, %v", ids, err)
	}

	reqs := requests(t, p, 7, policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 64})
	reqs[3].Sampling.MaxTokens = 4 // truncated: FinishLength
	reqs[5].Sampling.Seed = 1<<63 | 5
	got, err := c.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Sample(ctx, reqs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Sample over HTTP differs from the policy's\n got %+v\nwant %+v", got, want)
	}
	if got[3].Finish != policy.FinishLength || got[0].Finish != policy.FinishStop {
		t.Fatalf("finish reasons %q %q", got[3].Finish, got[0].Finish)
	}

	var sreqs []policy.ScoreRequest
	for _, s := range got {
		sreqs = append(sreqs, policy.ScoreRequest{Prompt: reqs[0].Prompt, Continuation: s.Tokens})
	}
	sreqs = append(sreqs, policy.ScoreRequest{Prompt: []int{5}})
	scores, err := c.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range got {
		if !slices.Equal(scores[i], s.LogProbs) || !slices.Equal(scores[i], policytest.LogProbs(reqs[0].Prompt, s.Tokens)) {
			t.Fatalf("score %d = %v, want the sampled log-probs %v", i, scores[i], s.LogProbs)
		}
	}
	if s := scores[len(scores)-1]; s == nil || len(s) != 0 {
		t.Fatalf("empty continuation scored %v", s)
	}
}

// capture records the raw bodies of /v1/completions requests.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capture) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			body, _ := io.ReadAll(r.Body)
			c.mu.Lock()
			c.bodies = append(c.bodies, body)
			c.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}

func (c *capture) last(t *testing.T) map[string]any {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(c.bodies[len(c.bodies)-1], &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRequestsSendExplicitZeroValues(t *testing.T) {
	p := scripted()
	var cp capture
	ts, _ := fake(t, p, cp.wrap)
	c := connect(t, quiet(ts.URL))
	ctx := context.Background()

	reqs := requests(t, p, 1, policy.Sampling{Temperature: 0, TopP: 0, TopK: 0, MaxTokens: 9, Seed: 0})
	reqs[0].Sampling.Seed = 0
	if got, err := c.Sample(ctx, reqs); err != nil || got[0].Err != nil {
		t.Fatal(err, got)
	}
	m := cp.last(t)
	want := map[string]any{
		"model": "test-model", "n": 1.0, "max_tokens": 9.0, "seed": 0.0,
		"temperature": 0.0, "top_p": 1.0, "top_k": -1.0, "min_p": 0.0,
		"repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
		"logprobs": 0.0, "return_token_ids": true, "skip_special_tokens": false,
		"add_special_tokens": false, "include_stop_str_in_output": true,
		"stop_token_ids": []any{float64(tokenizer.EndID)}, "ignore_eos": true,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("sampling request %s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := m["prompt_logprobs"]; ok {
		t.Error("sampling request sets prompt_logprobs (it would disable prefix caching)")
	}
	if prompt, ok := m["prompt"].([]any); !ok || len(prompt) != len(reqs[0].Prompt) {
		t.Errorf("sampling prompt = %v, want the %d token ids", m["prompt"], len(reqs[0].Prompt))
	}

	// Explicit empty stop tokens are sent as [].
	reqs[0].Sampling.StopTokens = []int{}
	if _, err := c.Sample(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if got := cp.last(t)["stop_token_ids"]; !reflect.DeepEqual(got, []any{}) {
		t.Errorf("stop_token_ids = %v, want []", got)
	}

	if _, err := c.Score(ctx, []policy.ScoreRequest{{Prompt: []int{1, 2}, Continuation: []int{3}}}); err != nil {
		t.Fatal(err)
	}
	m = cp.last(t)
	for k, v := range map[string]any{"max_tokens": 1.0, "prompt_logprobs": 0.0, "return_token_ids": true, "add_special_tokens": false,
		"prompt": []any{[]any{1.0, 2.0, 3.0}}} {
		if got := m[k]; !reflect.DeepEqual(got, v) {
			t.Errorf("scoring request %s = %v, want %v", k, got, v)
		}
	}
	if _, ok := m["logprobs"]; ok {
		t.Error("scoring request sets logprobs")
	}
}

func TestScoreBatches(t *testing.T) {
	p := scripted()
	ts, srv := fake(t, p, nil)
	opts := quiet(ts.URL)
	opts.ScoreBatch = 4
	c := connect(t, opts)
	var reqs []policy.ScoreRequest
	for i := range 10 {
		reqs = append(reqs, policy.ScoreRequest{Prompt: []int{1, 2, i}, Continuation: []int{i + 3, 7, 8}[:1+i%3]})
	}
	before := srv.Count("/v1/completions")
	got, err := c.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Count("/v1/completions") - before; n != 3 {
		t.Errorf("%d requests for 10 sequences in batches of 4", n)
	}
	for i, r := range reqs {
		if !slices.Equal(got[i], policytest.LogProbs(r.Prompt, r.Continuation)) {
			t.Fatalf("score %d = %v", i, got[i])
		}
	}
	// Too long for the context (one token must be generated).
	long := make([]int, 4096)
	if _, err := c.Score(context.Background(), []policy.ScoreRequest{{Prompt: long[:4000], Continuation: long[4000:]}}); err == nil || !strings.Contains(err.Error(), "MaxContext") {
		t.Errorf("over-long score: %v", err)
	}
	if _, err := c.Score(context.Background(), []policy.ScoreRequest{{Continuation: []int{1}}}); err == nil {
		t.Error("empty prompt scored")
	}
}

func TestMaxTokensFitTheContext(t *testing.T) {
	p := scripted()
	p.MaxContext = 64
	p.Reply = func(string, uint64) string { return strings.Repeat("long reply ", 20) }
	ts, _ := fake(t, p, nil)
	c := connect(t, quiet(ts.URL))
	if c.Info().MaxContext != 64 {
		t.Fatalf("MaxContext %d", c.Info().MaxContext)
	}
	prompt := make([]int, 60)
	for i := range prompt {
		prompt[i] = 'a'
	}
	reqs := []policy.Request{
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 100}},
		{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1}},
		{Prompt: append(prompt, prompt[:4]...), Sampling: policy.Sampling{Temperature: 1, MaxTokens: 10}},
	}
	got, err := c.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Sample(context.Background(), reqs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if len(got[0].Tokens) != 4 || got[0].Finish != policy.FinishLength || len(got[2].Tokens) != 0 || got[2].Err != nil {
		t.Fatalf("unexpected samples %+v", got)
	}
}

func TestLoRA(t *testing.T) {
	p := scripted()
	var cp capture
	ts1, s1 := fake(t, p, cp.wrap)
	ts2, s2 := fake(t, p, cp.wrap)
	c := connect(t, quiet(ts1.URL, ts2.URL))
	ctx := context.Background()
	if err := c.LoadLoRA(ctx, "policy-step-1", "/ckpt/step-1"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s1.Adapters(), []string{"policy-step-1"}) || !slices.Equal(s2.Adapters(), []string{"policy-step-1"}) {
		t.Fatalf("adapters %v %v", s1.Adapters(), s2.Adapters())
	}
	c.SetModel("policy-step-1")
	if c.Info().Name != "policy-step-1" || c.BaseModel() != "test-model" {
		t.Fatalf("Info().Name %q", c.Info().Name)
	}
	if got, err := c.Sample(ctx, requests(t, p, 1, policy.Sampling{Temperature: 1, MaxTokens: 8})); err != nil || got[0].Err != nil {
		t.Fatal(err, got)
	}
	if m := cp.last(t)["model"]; m != "policy-step-1" {
		t.Fatalf("sampled with model %v", m)
	}
	err := c.LoadLoRA(ctx, "policy-step-1", "/ckpt/step-1")
	var herr *vllm.HTTPError
	if !errors.As(err, &herr) || herr.StatusCode != 400 || !strings.Contains(err.Error(), "already been loaded") {
		t.Fatalf("loading twice: %v", err)
	}
	if err := c.UnloadLoRA(ctx, "policy-step-1"); err != nil {
		t.Fatal(err)
	}
	c.SetModel("")
	if c.Info().Name != "test-model" || len(s1.Adapters())+len(s2.Adapters()) != 0 {
		t.Fatalf("after unload: %q %v %v", c.Info().Name, s1.Adapters(), s2.Adapters())
	}
	if err := c.UnloadLoRA(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "cannot be found") {
		t.Fatalf("unloading an unknown adapter: %v", err)
	}
}

func TestNew(t *testing.T) {
	p := scripted()
	ts, srv := fake(t, p, nil)
	srv.APIKey = "sekret"
	ctx := context.Background()

	if _, err := vllm.New(ctx, quiet(ts.URL)); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("missing key: %v", err)
	}
	opts := quiet(ts.URL)
	opts.APIKey = "sekret"
	opts.Model = "other"
	if _, err := vllm.New(ctx, opts); err == nil || !strings.Contains(err.Error(), `does not serve model "other"`) {
		t.Fatalf("unknown model: %v", err)
	}
	opts.Model = ""
	opts.StopTokens = []int{}
	opts.MaxContext = 100
	c := connect(t, opts)
	if info := c.Info(); info.Name != "test-model" || info.MaxContext != 100 || info.StopTokens == nil || len(info.StopTokens) != 0 {
		t.Fatalf("Info = %+v", info)
	}
	for _, bad := range [][]string{nil, {"localhost:8000"}, {"ftp://x"}, {"http://x/?q=1"}} {
		o := quiet(bad...)
		if _, err := vllm.New(ctx, o); err == nil {
			t.Errorf("New accepted base URLs %q", bad)
		}
	}
}

func TestLogProbSentinelIsMinusInf(t *testing.T) {
	// The fake writes -Inf as -9999, as vLLM does.
	p := scripted()
	inf := &infPolicy{Scripted: p}
	ts2, _ := fake(t, inf, nil)
	c := connect(t, quiet(ts2.URL))
	got, err := c.Sample(context.Background(), requests(t, p, 1, policy.Sampling{Temperature: 1, MaxTokens: 8}))
	if err != nil || got[0].Err != nil {
		t.Fatal(err, got)
	}
	if !math.IsInf(got[0].LogProbs[0], -1) || math.IsInf(got[0].LogProbs[1], -1) {
		t.Fatalf("log-probs %v: want -Inf first only", got[0].LogProbs)
	}
	sc, err := c.Score(context.Background(), []policy.ScoreRequest{{Prompt: []int{1}, Continuation: []int{2, 3}}})
	if err != nil || !math.IsInf(sc[0][0], -1) {
		t.Fatalf("scores %v, %v", sc, err)
	}
}

// infPolicy reports -Inf as the first log-prob of every sample and score.
type infPolicy struct{ *policytest.Scripted }

func (p *infPolicy) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out, err := p.Scripted.Sample(ctx, reqs)
	for i := range out {
		if len(out[i].LogProbs) > 0 {
			out[i].LogProbs[0] = math.Inf(-1)
		}
	}
	return out, err
}

func (p *infPolicy) Score(ctx context.Context, reqs []policy.ScoreRequest) ([][]float64, error) {
	out, err := p.Scripted.Score(ctx, reqs)
	for i := range out {
		if len(out[i]) > 0 {
			out[i][0] = math.Inf(-1)
		}
	}
	return out, err
}

func TestRequestsSpreadOverServers(t *testing.T) {
	p := scripted()
	// Every completion is held until all 20 have arrived (or a second
	// passed), so each request is routed while the earlier ones are in
	// flight, whatever the machine's load: the split shows the balancer,
	// not the scheduler.
	var arrived atomic.Int32
	all := make(chan struct{})
	hold := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/completions" {
				if arrived.Add(1) == 20 {
					close(all)
				}
				select {
				case <-all:
				case <-time.After(time.Second):
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	ts1, s1 := fake(t, p, hold)
	ts2, s2 := fake(t, p, hold)
	c := connect(t, quiet(ts1.URL, ts2.URL))
	reqs := requests(t, p, 20, policy.Sampling{Temperature: 1, MaxTokens: 16})
	got, err := c.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Sample(context.Background(), reqs)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("samples differ")
	}
	n1, n2 := s1.Count("/v1/completions"), s2.Count("/v1/completions")
	if n1+n2 != 20 || n1 < 9 || n2 < 9 {
		t.Fatalf("requests split %d / %d", n1, n2)
	}
}
