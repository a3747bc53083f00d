package openaiapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentrl/agentrl/envs"
	_ "github.com/agentrl/agentrl/envs/frozenlake" // registers "frozenlake"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// TestClientMatchesLocal checks that client/vllm's client, talking to the
// server, computes what the served policy computes in process.
func TestClientMatchesLocal(t *testing.T) {
	ctx := context.Background()
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	c := connect(t, ts.URL, "")

	if got, want := c.Info(), p.Info(); got.MaxContext != want.MaxContext || !slices.Equal(got.StopTokens, want.StopTokens) || got.Name != want.Name {
		t.Errorf("Info over HTTP %+v, in process %+v", got, want)
	}
	msgs := []policy.Message{{Role: policy.RoleSystem, Content: "Be brief."}, {Role: policy.RoleUser, Content: "Turn 1:\n#P_O#\n<think>é?"}}
	for _, gen := range []bool{false, true} {
		got, err := c.RenderChat(ctx, msgs, gen)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.RenderChat(ctx, msgs, gen)
		if !slices.Equal(got, want) {
			t.Errorf("RenderChat(gen=%v) = %v, want %v", gen, got, want)
		}
	}
	for _, text := range []string{"", "hello <answer>Left</answer> ünïcode"} {
		got, err := c.Encode(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Encode(ctx, text)
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", text, got, want)
		}
		dec, err := c.Decode(ctx, want)
		if err != nil || dec != text {
			t.Errorf("Decode = %q, %v; want %q", dec, err, text)
		}
	}

	var reqs []policy.Request
	for i, pr := range prompts(t, p, 6) {
		sp := policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 24, Seed: uint64(1000 + i)}
		switch i {
		case 3:
			sp.Temperature = 0 // greedy
		case 4:
			sp.TopK, sp.TopP, sp.Temperature = 20, 0.9, 0.7
		case 5:
			sp.StopTokens = []int{'a', 'e'}
			sp.Seed = 1<<63 + 5 // the whole uint64 range survives the int64 seed
		}
		reqs = append(reqs, policy.Request{Prompt: pr, Sampling: sp})
	}
	got, err := c.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	var sreqs []policy.ScoreRequest
	for i := range reqs {
		g, w := got[i], want[i]
		if g.Err != nil || w.Err != nil {
			t.Fatalf("sample %d: %v / %v", i, g.Err, w.Err)
		}
		if !slices.Equal(g.Tokens, w.Tokens) || g.Finish != w.Finish || !closeLogProbs(g.LogProbs, w.LogProbs, 1e-5) {
			t.Errorf("sample %d over HTTP %+v\nin process %+v", i, g, w)
		}
		sreqs = append(sreqs, policy.ScoreRequest{Prompt: reqs[i].Prompt, Continuation: w.Tokens})
	}
	gs, err := c.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := p.Score(ctx, sreqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sreqs {
		if !closeLogProbs(gs[i], ws[i], 1e-5) {
			t.Errorf("score %d over HTTP %v\nin process %v", i, gs[i], ws[i])
		}
	}
}

// TestEngineOverHTTPMatchesInProcess is the token-in, token-out proof: the
// rollout engine gets the same trajectories from the policy served over
// HTTP (through client/vllm) as from the policy in process.
func TestEngineOverHTTPMatchesInProcess(t *testing.T) {
	run := func(p policy.Policy) []rollout.Trajectory {
		t.Helper()
		f, err := envs.NewFactory("frozenlake", nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := rollout.DefaultConfig()
		cfg.PromptStyle = rollout.PromptCompact
		cfg.Sampling.MaxTokens = 16
		cfg.MaxTurns = 3
		e, err := rollout.New(context.Background(), cfg, p, f)
		if err != nil {
			t.Fatal(err)
		}
		trajs, err := e.Run(context.Background(), []uint64{0, 1, 2}, 3, 7)
		if err != nil {
			t.Fatal(err)
		}
		return trajs
	}
	p := tiny(t)
	direct := run(p)
	ts, _ := start(t, p, openaiapi.Options{})
	overHTTP := run(connect(t, ts.URL, ""))
	if len(direct) != 9 || len(overHTTP) != len(direct) {
		t.Fatalf("%d and %d trajectories", len(direct), len(overHTTP))
	}
	turns := 0
	for i := range direct {
		d, h := direct[i], overHTTP[i]
		if d.Err != "" || h.Err != "" {
			t.Fatalf("trajectory %d failed: %q / %q", i, d.Err, h.Err)
		}
		if len(d.Turns) == 0 || len(d.Tokens) == 0 {
			t.Fatalf("trajectory %d is empty", i)
		}
		turns += len(d.Turns)
		for name, eq := range map[string]bool{
			"Tokens":   reflect.DeepEqual(d.Tokens, h.Tokens),
			"LossMask": reflect.DeepEqual(d.LossMask, h.LossMask),
			"Turns":    reflect.DeepEqual(viaJSON(t, d.Turns), h.Turns),
			"LogProbs": closeLogProbs(d.LogProbs, h.LogProbs, 1e-5),
		} {
			if !eq {
				t.Errorf("trajectory %d: %s differ over HTTP", i, name)
			}
		}
	}
	if turns <= len(direct) {
		t.Fatalf("only %d turns in %d episodes: the test does not cover multi-turn play", turns, len(direct))
	}
}

// TestGoOpenAI uses go-openai, an independent client, against the server.
func TestGoOpenAI(t *testing.T) {
	p := tiny(t)
	ts, s := start(t, p, openaiapi.Options{APIKey: "sesame", Model: "tiny-served"})
	cfg := openai.DefaultConfig("sesame")
	cfg.BaseURL = ts.URL + "/v1"
	oc := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	models, err := oc.ListModels(ctx)
	if err != nil || len(models.Models) != 1 || models.Models[0].ID != s.Model() {
		t.Fatalf("ListModels = %+v, %v", models, err)
	}
	seed := 42
	chat, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:               "tiny-served",
		Messages:            []openai.ChatCompletionMessage{{Role: "user", Content: "Turn 1:\n#P_O#"}},
		MaxCompletionTokens: 12, Temperature: 1, Seed: &seed, N: 2, LogProbs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(chat.Choices) != 2 || chat.Object != "chat.completion" {
		t.Fatalf("chat reply %+v", chat)
	}
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "Turn 1:\n#P_O#"}}, true)
	for i, ch := range chat.Choices {
		// Choice i samples with seed+i.
		want, err := p.Sample(ctx, []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{
			Temperature: 1, TopP: 1, MaxTokens: 12, Seed: uint64(seed + i), StopTokens: p.Info().StopTokens}}})
		if err != nil {
			t.Fatal(err)
		}
		w := want[0]
		if ch.LogProbs == nil || len(ch.LogProbs.Content) != len(w.Tokens) {
			t.Fatalf("choice %d: logprobs %+v for %d tokens", i, ch.LogProbs, len(w.Tokens))
		}
		var text []byte
		for j, lp := range ch.LogProbs.Content {
			if diff := lp.LogProb - w.LogProbs[j]; diff > 1e-5 || diff < -1e-5 {
				t.Errorf("choice %d token %d: logprob %v, want %v", i, j, lp.LogProb, w.LogProbs[j])
			}
			b, _ := p.Tokenizer().TokenBytes(w.Tokens[j])
			if string(lp.Bytes) != string(b) {
				t.Errorf("choice %d token %d: bytes %v, want %v", i, j, lp.Bytes, b)
			}
			if (j < len(w.Tokens)-1 || w.Finish != policy.FinishStop) && !tokenizer.IsSpecial(w.Tokens[j]) {
				text = append(text, b...)
			}
		}
		if string(ch.FinishReason) != w.Finish {
			t.Errorf("choice %d: finish %q, want %q", i, ch.FinishReason, w.Finish)
		}
		if want := viaJSON(t, string(text)); ch.Message.Content != want {
			t.Errorf("choice %d: content %q, want %q", i, ch.Message.Content, want)
		}
	}
	if chat.Usage.PromptTokens != len(prompt) {
		t.Errorf("usage %+v for a prompt of %d tokens", chat.Usage, len(prompt))
	}

	comp, err := oc.CreateCompletion(ctx, openai.CompletionRequest{
		Model: "tiny-served", Prompt: "Once upon a time", MaxTokens: 8, Temperature: 0.5, Seed: &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Choices) != 1 || comp.Usage.PromptTokens != 1+len("Once upon a time") || comp.Usage.CompletionTokens == 0 {
		t.Fatalf("completion %+v", comp)
	}

	badCfg := openai.DefaultConfig("wrong")
	badCfg.BaseURL = ts.URL + "/v1"
	bad := openai.NewClientWithConfig(badCfg)
	if _, err := bad.ListModels(ctx); err == nil {
		t.Error("request without the API key accepted")
	}
}

// TestCompletionFeatures covers n, seeds, echo, prompt_logprobs, text
// prompts and return_token_ids on the raw API.
func TestCompletionFeatures(t *testing.T) {
	ctx := context.Background()
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	pr := prompts(t, p, 2)

	// n = 3 with seed s is the n = 1 requests with seeds s, s+1, s+2; a
	// list of prompts is answered prompt-major.
	code, resp := post(t, ts.URL, "/v1/completions", map[string]any{
		"prompt": pr, "n": 3, "seed": 9, "max_tokens": 10, "logprobs": 0, "return_token_ids": true, "stop_token_ids": []int{}, "ignore_eos": true,
	})
	if code != 200 {
		t.Fatalf("status %d: %v", code, resp)
	}
	choices := resp["choices"].([]any)
	if len(choices) != 6 {
		t.Fatalf("%d choices", len(choices))
	}
	for k, c := range choices {
		ch := c.(map[string]any)
		i, j := k/3, k%3
		want, _ := p.Sample(ctx, []policy.Request{{Prompt: pr[i], Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 10, Seed: uint64(9 + j), StopTokens: []int{}}}})
		if got := ids(ch["token_ids"]); !slices.Equal(got, want[0].Tokens) || int(ch["index"].(float64)) != k {
			t.Errorf("choice %d: tokens %v, want %v", k, got, want[0].Tokens)
		}
		if got := ids(ch["prompt_token_ids"]); !slices.Equal(got, pr[i]) {
			t.Errorf("choice %d: prompt_token_ids %v", k, got)
		}
		if ch["finish_reason"] != "length" {
			t.Errorf("choice %d: finish_reason %v with no stop tokens", k, ch["finish_reason"])
		}
	}
	if u := resp["usage"].(map[string]any); int(u["prompt_tokens"].(float64)) != len(pr[0])+len(pr[1]) || int(u["completion_tokens"].(float64)) != 60 {
		t.Errorf("usage %v", u)
	}

	// prompt_logprobs 0: per choice, null first, then the teacher-forced
	// log-probs keyed by token id, with the token's rank.
	seq := pr[0]
	code, resp = post(t, ts.URL, "/v1/completions", map[string]any{"prompt": [][]int{seq}, "max_tokens": 1, "prompt_logprobs": 0, "echo": true, "logprobs": 0})
	if code != 200 {
		t.Fatalf("status %d: %v", code, resp)
	}
	ch := resp["choices"].([]any)[0].(map[string]any)
	plp := ch["prompt_logprobs"].([]any)
	want, _ := p.Score(ctx, []policy.ScoreRequest{{Prompt: seq[:1], Continuation: seq[1:]}})
	if len(plp) != len(seq) || plp[0] != nil {
		t.Fatalf("prompt_logprobs %v", plp)
	}
	for j := 1; j < len(seq); j++ {
		e := plp[j].(map[string]any)[strconv.Itoa(seq[j])].(map[string]any)
		if d := e["logprob"].(float64) - want[0][j-1]; d > 1e-5 || d < -1e-5 {
			t.Errorf("position %d: logprob %v, want %v", j, e["logprob"], want[0][j-1])
		}
		if r, ok := e["rank"].(float64); !ok || r < 1 || r > float64(p.Tokenizer().VocabSize()) || r != float64(int(r)) {
			t.Errorf("position %d: rank %v", j, e["rank"])
		}
	}
	// echo with logprobs prepends the prompt: null, then the prompt's
	// log-probs, then the generated token's.
	lps := ch["logprobs"].(map[string]any)["token_logprobs"].([]any)
	if len(lps) != len(seq)+1 || lps[0] != nil || lps[1].(float64) != plp[1].(map[string]any)[strconv.Itoa(seq[1])].(map[string]any)["logprob"] {
		t.Errorf("echoed token_logprobs %v", lps)
	}
	// Ranks match a brute-force count on one position.
	all := make([]policy.ScoreRequest, p.Tokenizer().VocabSize())
	for v := range all {
		all[v] = policy.ScoreRequest{Prompt: seq[:3], Continuation: []int{v}}
	}
	sc, _ := p.Score(ctx, all)
	rank := 0 // vLLM's count: the tokens at least as likely, this one included
	for _, s := range sc {
		if s[0] >= sc[seq[3]][0] {
			rank++
		}
	}
	if got := plp[3].(map[string]any)[strconv.Itoa(seq[3])].(map[string]any)["rank"]; got != float64(rank) {
		t.Errorf("rank at position 3 = %v, want %d", got, rank)
	}

	// A text prompt gets <|bos|> with add_special_tokens (the default).
	code, resp = post(t, ts.URL, "/v1/completions", map[string]any{"prompt": []string{"ab", "c"}, "max_tokens": 2, "return_token_ids": true, "seed": 1})
	if code != 200 {
		t.Fatalf("status %d: %v", code, resp)
	}
	bos, _ := p.RenderChat(ctx, nil, false)
	for k, want := range [][]int{append(slices.Clone(bos), 'a', 'b'), append(slices.Clone(bos), 'c')} {
		if got := ids(resp["choices"].([]any)[k].(map[string]any)["prompt_token_ids"]); !slices.Equal(got, want) {
			t.Errorf("text prompt %d: ids %v, want %v", k, got, want)
		}
	}

	// /tokenize and /detokenize, raw.
	code, resp = post(t, ts.URL, "/tokenize", map[string]any{"prompt": "hi", "return_token_strs": true})
	if code != 200 || !slices.Equal(ids(resp["tokens"]), append(slices.Clone(bos), 'h', 'i')) || int(resp["max_model_len"].(float64)) != 1024 {
		t.Errorf("tokenize: %d %v", code, resp)
	}
	code, resp = post(t, ts.URL, "/detokenize", map[string]any{"tokens": []int{'o', 'k'}})
	if code != 200 || resp["prompt"] != "ok" {
		t.Errorf("detokenize: %d %v", code, resp)
	}
}

// TestErrors checks that bad requests get a 4xx with an OpenAI error body.
func TestErrors(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{APIKey: "k", MaxRequestBytes: 4096, MaxTokensCap: 512, MaxN: 8})
	auth := []string{"Authorization", "Bearer k"}
	ok := []int{257, 260, 'h', 'i', 262, 261}
	long := make([]int, 1024)
	for i := range long {
		long[i] = 'x'
	}
	huge := make([]int, 3000)
	cases := []struct {
		name   string
		path   string
		body   any
		header []string
		status int
		param  string
	}{
		{"malformed JSON", "/v1/completions", `{"prompt": [1, 2`, auth, 400, ""},
		{"trailing data", "/v1/completions", `{"prompt": [1]} {}`, auth, 400, ""},
		{"not an object", "/v1/completions", `[1, 2]`, auth, 400, ""},
		{"empty body", "/v1/completions", ``, auth, 400, ""},
		{"wrong type n", "/v1/completions", `{"prompt": [1], "n": "two"}`, auth, 400, "n"},
		{"wrong type temperature", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}`, auth, 400, "temperature"},
		{"wrong type max_tokens", "/v1/completions", `{"prompt": [1], "max_tokens": "many"}`, auth, 400, "max_tokens"},
		{"wrong type stop_token_ids", "/v1/completions", `{"prompt": [1], "stop_token_ids": [true]}`, auth, 400, "stop_token_ids"},
		{"wrong type messages", "/v1/chat/completions", `{"messages": "hi"}`, auth, 400, "messages"},
		{"wrong type content", "/v1/chat/completions", `{"messages": [{"role": "user", "content": 3}]}`, auth, 400, "messages"},
		{"float token id", "/v1/completions", `{"prompt": [1.5]}`, auth, 400, "prompt"},
		{"n = 0", "/v1/completions", map[string]any{"prompt": ok, "n": 0}, auth, 400, "n"},
		{"n too large", "/v1/completions", map[string]any{"prompt": ok, "n": 9}, auth, 400, "n"},
		{"negative max_tokens", "/v1/completions", map[string]any{"prompt": ok, "max_tokens": -1}, auth, 400, "max_tokens"},
		{"huge max_tokens", "/v1/completions", map[string]any{"prompt": ok, "max_tokens": 1 << 30}, auth, 400, "max_tokens"},
		{"max_tokens over the context", "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "x"}}, "max_tokens": 1020}, auth, 400, "max_tokens"},
		{"out-of-vocab id", "/v1/completions", map[string]any{"prompt": []int{1, 99999}}, auth, 400, "prompt"},
		{"negative id", "/v1/completions", map[string]any{"prompt": [][]int{{1}, {-1}}}, auth, 400, "prompt"},
		{"prompt fills the context", "/v1/completions", nil, nil, 400, "prompt"},
		{"empty prompt", "/v1/completions", map[string]any{"prompt": []int{}}, auth, 400, "prompt"},
		{"missing prompt", "/v1/completions", map[string]any{"max_tokens": 3}, auth, 400, "prompt"},
		{"logprobs over 20", "/v1/completions", map[string]any{"prompt": ok, "logprobs": 21}, auth, 400, "logprobs"},
		{"min_p", "/v1/completions", map[string]any{"prompt": ok, "min_p": 0.1}, auth, 400, "min_p"},
		{"top_p 0", "/v1/completions", map[string]any{"prompt": ok, "top_p": 0}, auth, 400, "top_p"},
		{"stream_options without stream", "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "x"}}, "stream_options": map[string]any{"include_usage": true}}, auth, 400, "stream_options"},
		{"stream_options with stream false", "/v1/completions", map[string]any{"prompt": ok, "stream": false, "stream_options": map[string]any{"include_usage": true}}, auth, 400, "stream_options"},
		{"wrong type stream_options", "/v1/completions", map[string]any{"prompt": ok, "stream": true, "stream_options": true}, auth, 400, "stream_options"},
		{"bad n with stream", "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "x"}}, "n": 0, "stream": true}, auth, 400, "n"},
		{"bad prompt with stream", "/v1/completions", map[string]any{"prompt": []int{1, 99999}, "stream": true}, auth, 400, "prompt"},
		{"stop not a string", "/v1/completions", map[string]any{"prompt": ok, "stop": []any{"\n", 3}}, auth, 400, "stop"},
		{"unknown role", "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "wizard", "content": "x"}}}, auth, 400, "messages"},
		{"no messages", "/v1/chat/completions", map[string]any{"messages": []any{}}, auth, 400, "messages"},
		{"unknown model", "/v1/completions", map[string]any{"model": "gpt-9", "prompt": ok}, auth, 404, "model"},
		{"body over the limit", "/v1/completions", map[string]any{"prompt": huge}, auth, 413, ""},
		{"missing API key", "/v1/completions", map[string]any{"prompt": ok}, nil, 401, ""},
		{"wrong API key", "/v1/completions", map[string]any{"prompt": ok}, []string{"Authorization", "Bearer nope"}, 401, ""},
		{"unknown path", "/v1/embeddings", map[string]any{}, auth, 404, ""},
		{"wrong method", "/health", map[string]any{}, auth, 405, ""},
		{"detokenize out of vocab", "/detokenize", map[string]any{"tokens": []int{100000}}, nil, 400, "tokens"},
	}
	// The too-long prompt does not fit the small body limit: it goes to a
	// second server.
	ts2, _ := start(t, p, openaiapi.Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, status := ts.URL, c.status
			if c.body == nil {
				url, c.body = ts2.URL, map[string]any{"prompt": long, "max_tokens": 1}
			}
			code, resp := post(t, url, c.path, c.body, c.header...)
			if code != status {
				t.Fatalf("status %d, want %d: %v", code, status, resp)
			}
			e, ok := resp["error"].(map[string]any)
			if !ok {
				t.Fatalf("no error object: %v", resp)
			}
			if msg, _ := e["message"].(string); msg == "" {
				t.Errorf("no message: %v", e)
			}
			if _, ok := e["type"].(string); !ok {
				t.Errorf("no type: %v", e)
			}
			if code, _ := e["code"].(float64); int(code) != status {
				t.Errorf("code %v, want %d", e["code"], status)
			}
			if c.param != "" && e["param"] != c.param {
				t.Errorf("param %v, want %q (%v)", e["param"], c.param, e["message"])
			}
			if status == 400 && e["type"] != "invalid_request_error" {
				t.Errorf("type %v", e["type"])
			}
		})
	}
	// Unknown fields are ignored, as vLLM does; GET routes work without a
	// body.
	code, resp := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": ok, "max_tokens": 2, "frobnicate": true}, auth...)
	if code != 200 {
		t.Errorf("unknown field: %d %v", code, resp)
	}
}

// gated holds its first Sample call until release is closed, so that
// requests arriving meanwhile must queue for the next call whatever the
// scheduling of the machine.
type gated struct {
	*counting
	first   sync.Once
	release chan struct{}
}

func (g *gated) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	g.first.Do(func() { <-g.release })
	return g.counting.Sample(ctx, reqs)
}

// TestBatching checks that concurrent requests share policy.Sample calls
// and get the answers they would get alone.
func TestBatching(t *testing.T) {
	ctx := context.Background()
	cp := &counting{Policy: tiny(t)}
	g := &gated{counting: cp, release: make(chan struct{})}
	srv := openaiapi.New(g, openaiapi.Options{BatchWindow: 50 * time.Millisecond, MaxBatch: 64, Logger: quietLogger()})
	var arrived atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			arrived.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.Close(); srv.Close() })
	c := connect(t, ts.URL, "")
	const n = 16
	pr := prompts(t, cp, n)
	reqs := make([]policy.Request, n)
	want := make([]policy.Sample, n)
	for i := range reqs {
		reqs[i] = policy.Request{Prompt: pr[i], Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 20, Seed: uint64(i * 7)}}
		// Alone: one request per call.
		s, err := cp.Policy.Sample(ctx, reqs[i:i+1])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = s[0]
	}
	before := cp.calls.Load()
	go func() {
		// Release the first call once every request has reached the server.
		for deadline := time.Now().Add(10 * time.Second); arrived.Load() < n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		close(g.release)
	}()
	got := make([]policy.Sample, n)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			s, err := c.Sample(ctx, reqs[i:i+1])
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = s[0]
		})
	}
	wg.Wait()
	calls := cp.calls.Load() - before
	// The first call holds what had been checked when it started; the rest
	// queue behind it and go out together (a straggler still being read
	// may make one more).
	if calls > 3 {
		t.Errorf("%d concurrent requests made %d Sample calls, want at most 3", n, calls)
	}
	if st := srv.Stats(); st.SampleCalls != calls || st.Sequences != n {
		t.Errorf("stats %+v after %d calls", st, calls)
	}
	t.Logf("%d concurrent requests: %d Sample calls", n, calls)
	for i := range got {
		if got[i].Err != nil || !slices.Equal(got[i].Tokens, want[i].Tokens) || !closeLogProbs(got[i].LogProbs, want[i].LogProbs, 1e-5) {
			t.Errorf("request %d batched %+v\nalone %+v", i, got[i], want[i])
		}
	}
}

// blocking is a policy whose Sample, for requests of 900 tokens, blocks
// until its context ends.
type blocking struct {
	*local.Policy
	cancelled chan error
}

func (b *blocking) Sample(ctx context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	if len(reqs) > 0 && reqs[0].Sampling.MaxTokens == 900 {
		<-ctx.Done()
		b.cancelled <- ctx.Err()
		return nil, ctx.Err()
	}
	return b.Policy.Sample(ctx, reqs)
}

// TestCancelledRequest checks that a client that disconnects cancels its
// generation, and that the server keeps serving.
func TestCancelledRequest(t *testing.T) {
	bp := &blocking{Policy: tiny(t), cancelled: make(chan error, 1)}
	ts, _ := start(t, bp, openaiapi.Options{})
	c := connect(t, ts.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	pr := prompts(t, bp, 1)[0]
	if s, err := c.Sample(ctx, []policy.Request{{Prompt: pr, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 900}}}); err == nil {
		t.Fatalf("a sample that never ends returned %+v", s)
	}
	select {
	case err := <-bp.cancelled:
		if err != context.Canceled {
			t.Errorf("the policy call ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the generation of a disconnected client was not cancelled")
	}
	code, _ := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": pr, "max_tokens": 2})
	if code != 200 {
		t.Fatalf("status %d after a cancelled request", code)
	}
}
