package tinker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/client/tinker"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// samplerSetup starts a fake with sampler weights saved and a Sampler on
// them; local is the same scripted policy the fake samples with.
func samplerSetup(t *testing.T, opts ...tinker.SamplerOption) (*fake, *tinker.Sampler, *policytest.Scripted) {
	t.Helper()
	return samplerSetupWith(t, nil, opts...)
}

// samplerSetupWith is samplerSetup with the fake and options set by mod.
func samplerSetupWith(t *testing.T, mod func(*fake, *tinker.Options), opts ...tinker.SamplerOption) (*fake, *tinker.Sampler, *policytest.Scripted) {
	t.Helper()
	f, c, m := setup(t, mod)
	path, err := m.SaveWeightsForSampler(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	return f, tinker.NewSampler(c, f.local, tinker.SamplerTarget{ModelPath: path}, opts...), f.local
}

// prompts renders n chat prompts with seeds 100, 101, ….
func prompts(t *testing.T, p policy.Policy, n int, sp policy.Sampling) []policy.Request {
	t.Helper()
	reqs := make([]policy.Request, n)
	for i := range reqs {
		ids, err := p.RenderChat(context.Background(), []policy.Message{{Role: policy.RoleUser, Content: fmt.Sprintf("question %d", i)}}, true)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = policy.Request{Prompt: ids, Sampling: sp}
		reqs[i].Sampling.Seed = uint64(100 + i)
	}
	return reqs
}

// sampleBodies decodes the asample requests the fake received.
func sampleBodies(t *testing.T, f *fake) []tinker.SampleRequest {
	t.Helper()
	var out []tinker.SampleRequest
	for _, r := range f.requests("asample") {
		var req tinker.SampleRequest
		if err := json.Unmarshal(r.Body, &req); err != nil {
			t.Fatal(err)
		}
		out = append(out, req)
	}
	return out
}

func TestSamplerSamplesOnTheServer(t *testing.T) {
	f, s, local := samplerSetup(t)
	ctx := context.Background()
	reqs := prompts(t, local, 5, policy.Sampling{Temperature: 1, MaxTokens: 32})
	got, err := s.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := local.Sample(ctx, reqs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if info := s.Info(); info.Name != s.Target().ModelPath || info.MaxContext != 4096 || !reflect.DeepEqual(info.StopTokens, []int{tokenizer.EndID}) {
		t.Fatalf("%+v", info)
	}

	// Score reproduces the sampled log-probs (the policy package's
	// convention), read from prompt_logprobs.
	var sreqs []policy.ScoreRequest
	for i, r := range reqs {
		sreqs = append(sreqs, policy.ScoreRequest{Prompt: r.Prompt, Continuation: got[i].Tokens})
	}
	before := f.count("asample")
	scores, err := s.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range scores {
		if !reflect.DeepEqual(scores[i], got[i].LogProbs) {
			t.Fatalf("score %d: %v, sampled %v", i, scores[i], got[i].LogProbs)
		}
	}
	bodies := sampleBodies(t, f)[before:]
	for _, b := range bodies {
		toks, _ := b.Prompt.Tokens()
		if b.SamplingParams.MaxTokens != 1 || b.PromptLogprobs == nil || !*b.PromptLogprobs || b.NumSamples != 1 || len(toks) < 2 {
			t.Fatalf("score request %+v", b)
		}
	}
}

func TestSamplerRequestBodies(t *testing.T) {
	f, s, local := samplerSetup(t)
	ctx := context.Background()
	greedy := prompts(t, local, 1, policy.Sampling{Temperature: 0, MaxTokens: 5, TopK: 0, TopP: 0, StopTokens: []int{'k'}})
	greedy[0].Sampling.Seed = 1<<40 + 3 // high bits are folded in
	truncated := prompts(t, local, 1, policy.Sampling{Temperature: 0.7, TopK: 20, TopP: 0.9})
	if _, err := s.Sample(ctx, append(greedy, truncated...)); err != nil {
		t.Fatal(err)
	}
	bodies := sampleBodies(t, f)
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	g, tr := bodies[0], bodies[1] // sent concurrently, in either order
	if g.SamplingParams.Temperature != 0 {
		g, tr = tr, g
	}
	var greedyRaw string
	for _, r := range f.requests("asample") {
		if strings.Contains(string(r.Body), `"temperature":0,`) {
			greedyRaw = string(r.Body)
		}
	}
	// Greedy is sent as temperature 0; the policy's "disabled" top_k 0 and
	// top_p 0 as the API's -1 and 1; the request's stop tokens as ids.
	if !strings.Contains(greedyRaw, `"sampling_params":{"max_tokens":5,"seed":`) ||
		!strings.Contains(greedyRaw, `"stop":[107],"temperature":0,"top_k":-1,"top_p":1}`) {
		t.Fatalf("greedy body %s", greedyRaw)
	}
	if *g.SamplingParams.Seed < 0 || *g.SamplingParams.Seed >= 1<<31 || *g.SamplingParams.Seed == 3 {
		t.Fatalf("seed %d", *g.SamplingParams.Seed)
	}
	toks, _ := tr.Prompt.Tokens()
	if tr.SamplingParams.TopK != 20 || tr.SamplingParams.TopP != 0.9 || tr.SamplingParams.Stop != nil ||
		*tr.SamplingParams.Seed != 100 || tr.SamplingParams.MaxTokens != 4096-len(toks) || *tr.ModelPath != s.Target().ModelPath || tr.BaseModel != nil {
		t.Fatalf("%+v", tr.SamplingParams)
	}
}

func TestSamplerSetModelPath(t *testing.T) {
	f, c, m := setup(t, nil)
	ctx := context.Background()
	s := tinker.NewSampler(c, f.local, tinker.SamplerTarget{BaseModel: "Qwen/Qwen3-8B"})
	if s.Info().Name != "Qwen/Qwen3-8B" {
		t.Fatal(s.Info().Name)
	}
	reqs := prompts(t, f.local, 1, policy.Sampling{Temperature: 1, MaxTokens: 4})
	if _, err := s.Sample(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	path, err := m.SaveWeightsForSampler(ctx, "v2")
	if err != nil {
		t.Fatal(err)
	}
	s.SetModelPath(path)
	if s.Info().Name != path {
		t.Fatal(s.Info().Name)
	}
	if _, err := s.Sample(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	b := sampleBodies(t, f)
	if *b[0].BaseModel != "Qwen/Qwen3-8B" || b[0].ModelPath != nil || *b[1].ModelPath != path || b[1].BaseModel != nil {
		t.Fatalf("%+v / %+v", b[0], b[1])
	}
	bad := tinker.NewSampler(c, f.local, tinker.SamplerTarget{BaseModel: "a", ModelPath: "b"})
	if _, err := bad.Sample(ctx, reqs); err == nil {
		t.Fatal("a target with both a model path and a base model was accepted")
	}
}

// editSample makes a fault that lets the fake answer retrieve_future
// and edits the sample result of the asample request with seed.
func editSample(f *fake, seed int64, edit func(*tinker.SampleResponse)) func(http.ResponseWriter, *http.Request, string, []byte, http.Handler) bool {
	return func(w http.ResponseWriter, r *http.Request, route string, body []byte, h http.Handler) bool {
		if route != "retrieve_future" {
			return false
		}
		var req tinker.RetrieveFutureRequest
		json.Unmarshal(body, &req)
		f.mu.Lock()
		s, ok := f.seedOf[req.RequestID]
		f.mu.Unlock()
		if !ok || (seed >= 0 && s != seed) {
			return false
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var res tinker.SampleResponse
		if rec.Header().Get("Content-Type") == tinker.ContentTypeProto {
			if err := res.UnmarshalProto(rec.Body.Bytes()); err != nil {
				panic(err)
			}
			edit(&res)
			data, err := res.MarshalProto()
			if err != nil {
				panic(err)
			}
			w.Header().Set("Content-Type", tinker.ContentTypeProto)
			w.Write(data)
			return true
		}
		json.Unmarshal(rec.Body.Bytes(), &res)
		edit(&res)
		writeJSON(w, 200, res)
		return true
	}
}

func TestSamplerFailuresStayInTheirSample(t *testing.T) {
	cases := map[string]struct {
		edit func(*tinker.SampleResponse)
		want string
	}{
		"logprobs length": {func(r *tinker.SampleResponse) { r.Sequences[0].Logprobs = r.Sequences[0].Logprobs[1:] }, "logprobs for"},
		"no logprobs":     {func(r *tinker.SampleResponse) { r.Sequences[0].Logprobs = nil }, "no logprobs"},
		"too many tokens": {func(r *tinker.SampleResponse) {
			r.Sequences[0].Tokens = append(r.Sequences[0].Tokens, make([]int, 40)...)
			r.Sequences[0].Logprobs = append(r.Sequences[0].Logprobs, make([]float64, 40)...)
		}, "more than max_tokens"},
		"two sequences": {func(r *tinker.SampleResponse) { r.Sequences = append(r.Sequences, r.Sequences[0]) }, "2 sequences for num_samples 1"},
		"stop reason":   {func(r *tinker.SampleResponse) { r.Sequences[0].StopReason = "abort" }, `stop_reason "abort"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, s, local := samplerSetup(t)
			f.fault = editSample(f, 101, tc.edit)
			reqs := prompts(t, local, 3, policy.Sampling{Temperature: 1, MaxTokens: 32})
			got, err := s.Sample(context.Background(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := local.Sample(context.Background(), reqs)
			for i := range got {
				if i == 1 {
					if !errors.Is(got[i].Err, tinker.ErrMalformed) || !strings.Contains(got[i].Err.Error(), tc.want) || len(got[i].Tokens) != 0 {
						t.Fatalf("Err = %v, want ErrMalformed with %q", got[i].Err, tc.want)
					}
				} else if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("sample %d affected: %+v", i, got[i])
				}
			}
		})
	}

	// A request the server refuses.
	f, s, local := samplerSetup(t)
	f.fault = func(w http.ResponseWriter, _ *http.Request, route string, body []byte, _ http.Handler) bool {
		if route == "asample" && strings.Contains(string(body), `"seed":100,`) {
			detail(w, 400, "prompt too long")
			return true
		}
		return false
	}
	got, err := s.Sample(context.Background(), prompts(t, local, 2, policy.Sampling{Temperature: 1, MaxTokens: 8}))
	var aerr *tinker.APIError
	if err != nil || !errors.As(got[0].Err, &aerr) || aerr.Status != 400 || got[1].Err != nil {
		t.Fatalf("%v %+v", err, got)
	}
}

func TestSamplerScoreFaults(t *testing.T) {
	cases := map[string]struct {
		edit func(*tinker.SampleResponse)
		want string
	}{
		"too few prompt_logprobs": {func(r *tinker.SampleResponse) { r.PromptLogprobs = r.PromptLogprobs[2:] }, "prompt_logprobs for"},
		// n−1 entries are SkyRL-JAX's list without its leading null; the
		// last one missing instead is neither form.
		"one fewer, the first null": {func(r *tinker.SampleResponse) { r.PromptLogprobs = r.PromptLogprobs[:len(r.PromptLogprobs)-1] }, "neither the full list"},
		"first entry not null": {func(r *tinker.SampleResponse) {
			v := -1.0
			r.PromptLogprobs[0] = &v
		}, "want null"},
		"null continuation entry": {func(r *tinker.SampleResponse) { r.PromptLogprobs[len(r.PromptLogprobs)-1] = nil }, "is null"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, s, _ := samplerSetup(t)
			f.fault = editSample(f, 0, tc.edit)
			_, err := s.Score(context.Background(), []policy.ScoreRequest{{Prompt: []int{1, 2}, Continuation: []int{3, 4}}})
			if !errors.Is(err, tinker.ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrMalformed with %q", err, tc.want)
			}
		})
	}
}

// TestSamplerScoreShiftedPromptLogprobs: SkyRL's JAX backend
// (skyrl/tx/utils/generator.py) returns prompt_length − 1 prompt
// log-probs, without the leading null; scoring reads them as the full
// list shifted by one, in both dialects.
func TestSamplerScoreShiftedPromptLogprobs(t *testing.T) {
	reqs := []policy.ScoreRequest{{Prompt: []int{1, 2}, Continuation: []int{3, 4}}, {Prompt: []int{5}, Continuation: []int{6}}}
	_, s, _ := samplerSetup(t)
	want, err := s.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []bool{false, true} {
		f, s, _ := samplerSetupWith(t, func(f *fake, o *tinker.Options) {
			if f.proto = proto; proto {
				o.Wire = tinker.WireAuto
			}
		})
		f.fault = editSample(f, -1, func(r *tinker.SampleResponse) { r.PromptLogprobs = r.PromptLogprobs[1:] })
		got, err := s.Score(context.Background(), reqs)
		if err != nil {
			t.Fatalf("proto %v: %v", proto, err)
		}
		// Protobuf carries float32.
		for i := range want {
			for k := range want[i] {
				if len(got[i]) != len(want[i]) || float32(got[i][k]) != float32(want[i][k]) {
					t.Fatalf("proto %v: scores %v, want %v", proto, got, want)
				}
			}
		}
	}
}

func TestSamplerEdges(t *testing.T) {
	f, s, local := samplerSetup(t)
	ctx := context.Background()
	long := make([]int, 5000)
	got, err := s.Sample(ctx, []policy.Request{{Prompt: long}, {Prompt: nil}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Err != nil || len(got[0].Tokens) != 0 || got[0].Finish != policy.FinishLength || got[1].Err == nil {
		t.Fatalf("%+v", got)
	}
	if n := f.count("asample"); n != 0 {
		t.Fatalf("%d requests for prompts with no room", n)
	}
	scores, err := s.Score(ctx, []policy.ScoreRequest{{Prompt: []int{1}, Continuation: nil}})
	if err != nil || len(scores[0]) != 0 {
		t.Fatalf("%v %v", scores, err)
	}
	if _, err := s.Score(ctx, []policy.ScoreRequest{{Prompt: nil, Continuation: []int{1}}}); err == nil {
		t.Fatal("an empty prompt was scored")
	}
	// RenderChat, Encode, Decode are local.
	ids, _ := s.Encode(ctx, "hi")
	want, _ := local.Encode(ctx, "hi")
	text, _ := s.Decode(ctx, ids)
	if !reflect.DeepEqual(ids, want) || text != "hi" {
		t.Fatalf("%v %q", ids, text)
	}
}

func TestSamplerBoundsRequestsInFlight(t *testing.T) {
	f, s, local := samplerSetup(t, tinker.WithConcurrency(2))
	f.pollDelay = 20 * time.Millisecond
	reqs := prompts(t, local, 8, policy.Sampling{Temperature: 1, MaxTokens: 4})
	if _, err := s.Sample(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	if n := f.maxFlight.Load(); n != 2 {
		t.Fatalf("%d polls in flight at once, want 2", n)
	}
}

func TestSamplerContextEnds(t *testing.T) {
	f, s, local := samplerSetup(t)
	f.never["asample"] = true
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Sample(ctx, prompts(t, local, 3, policy.Sampling{Temperature: 1, MaxTokens: 4})); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}
