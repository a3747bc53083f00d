package openaiapi_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// bruteTop scores every vocabulary token after prefix with the policy's
// Score and returns the k most likely, ties by the lower id.
func bruteTop(t *testing.T, p *local.Policy, prefix []int, k int) []policy.TokenLogprob {
	t.Helper()
	reqs := make([]policy.ScoreRequest, p.VocabSize())
	for v := range reqs {
		reqs[v] = policy.ScoreRequest{Prompt: prefix, Continuation: []int{v}}
	}
	sc, err := p.Score(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]policy.TokenLogprob, len(sc))
	for v := range sc {
		all[v] = policy.TokenLogprob{Token: v, LogProb: sc[v][0]}
	}
	slices.SortStableFunc(all, func(a, b policy.TokenLogprob) int { return cmp.Compare(b.LogProb, a.LogProb) })
	return all[:k]
}

// bruteRank is the 1-based rank of tok after prefix: 1 + the number of
// tokens the policy's Score finds more likely.
func bruteRank(t *testing.T, p *local.Policy, prefix []int, tok int) int {
	t.Helper()
	all := bruteTop(t, p, prefix, p.VocabSize())
	own := all[slices.IndexFunc(all, func(e policy.TokenLogprob) bool { return e.Token == tok })].LogProb
	rank := 0 // vLLM's count: every token at least as likely, tok included
	for _, e := range all {
		if e.LogProb >= own {
			rank++
		}
	}
	return rank
}

// tokText is the text of a token as a client reads it.
func tokText(t *testing.T, p *local.Policy, id int) string {
	t.Helper()
	b, err := p.TokenBytes(id)
	if err != nil {
		t.Fatal(err)
	}
	return viaJSON(t, string(b))
}

// wantDict is the completion top_logprobs entry of a position holding tok
// (text text, log-prob lp) with alternatives top: vLLM's N or N+1 entries
// by text, the more likely one kept where texts coincide.
func wantDict(t *testing.T, p *local.Policy, top []policy.TokenLogprob, tok int, text string, lp float64) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, e := range top {
		v := e.LogProb
		if e.Token == tok {
			v = lp
		}
		if k := tokText(t, p, e.Token); !hasKey(out, k) {
			out[k] = v
		}
	}
	if !hasKey(out, text) {
		out[text] = lp
	}
	return out
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

// dictOf reads a top_logprobs entry.
func dictOf(v any) map[string]float64 {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]float64{}
	for k, x := range m {
		out[k], _ = x.(float64)
	}
	return out
}

func floats(v any) []float64 {
	l, _ := v.([]any)
	out := make([]float64, len(l))
	for i, x := range l {
		out[i], _ = x.(float64)
	}
	return out
}

func sameDict(a, b map[string]float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || math.Abs(x-y) > tol {
			return false
		}
	}
	return true
}

// TestCompletionTopLogprobs checks logprobs N, echo with logprobs N and
// prompt_logprobs N on /v1/completions against the policy's own Score.
func TestCompletionTopLogprobs(t *testing.T) {
	ctx := context.Background()
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	pr := prompts(t, p, 1)[0]
	const seed, n, maxTokens = 3, 2, 8

	for _, k := range []int{1, 5, 20} {
		code, resp := post(t, ts.URL, "/v1/completions", map[string]any{
			"prompt": pr, "n": n, "seed": seed, "max_tokens": maxTokens, "logprobs": k, "return_token_ids": true, "stop_token_ids": []int{}, "ignore_eos": true,
		})
		if code != 200 {
			t.Fatalf("logprobs %d: status %d: %v", k, code, resp)
		}
		for c, x := range resp["choices"].([]any) {
			ch := x.(map[string]any)
			toks := ids(ch["token_ids"])
			want, _ := p.Sample(ctx, []policy.Request{{Prompt: pr, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: maxTokens, Seed: uint64(seed + c), StopTokens: []int{}}}})
			if !slices.Equal(toks, want[0].Tokens) {
				t.Fatalf("logprobs %d choice %d: tokens %v, want %v", k, c, toks, want[0].Tokens)
			}
			lp := ch["logprobs"].(map[string]any)
			// The sampled token's log-prob is the sampler's.
			if got := floats(lp["token_logprobs"]); !closeLogProbs(got, want[0].LogProbs, 0) {
				t.Errorf("logprobs %d choice %d: token_logprobs %v, sampler %v", k, c, got, want[0].LogProbs)
			}
			tokens := lp["tokens"].([]any)
			tops := lp["top_logprobs"].([]any)
			if len(tops) != len(toks) {
				t.Fatalf("logprobs %d choice %d: %d top_logprobs for %d tokens", k, c, len(tops), len(toks))
			}
			for i := range toks {
				prefix := append(slices.Clone(pr), toks[:i]...)
				w := wantDict(t, p, bruteTop(t, p, prefix, k), toks[i], tokens[i].(string), want[0].LogProbs[i])
				if got := dictOf(tops[i]); !sameDict(got, w, 1e-5) {
					t.Errorf("logprobs %d choice %d position %d: top_logprobs %v, want %v", k, c, i, got, w)
				}
			}
		}
	}

	// echo with logprobs 3: the prompt positions get their top 3 too,
	// after a null for the first; prompt_logprobs comes along at 3.
	seq := pr[:12]
	code, resp := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": seq, "max_tokens": 1, "echo": true, "logprobs": 3, "seed": 1})
	if code != 200 {
		t.Fatalf("echo: status %d: %v", code, resp)
	}
	ch := resp["choices"].([]any)[0].(map[string]any)
	lp := ch["logprobs"].(map[string]any)
	tops := lp["top_logprobs"].([]any)
	lps := lp["token_logprobs"].([]any)
	tokens := lp["tokens"].([]any)
	if len(tops) != len(seq)+1 || tops[0] != nil || lps[0] != nil {
		t.Fatalf("echo: top_logprobs %v", tops)
	}
	score, _ := p.Score(ctx, []policy.ScoreRequest{{Prompt: seq[:1], Continuation: seq[1:]}})
	for j := 1; j < len(seq); j++ {
		if d := lps[j].(float64) - score[0][j-1]; math.Abs(d) > 1e-6 {
			t.Errorf("echo position %d: logprob %v, Score %v", j, lps[j], score[0][j-1])
		}
		w := wantDict(t, p, bruteTop(t, p, seq[:j], 3), seq[j], tokens[j].(string), score[0][j-1])
		if got := dictOf(tops[j]); !sameDict(got, w, 1e-5) {
			t.Errorf("echo position %d: top_logprobs %v, want %v", j, got, w)
		}
	}
	if plp := ch["prompt_logprobs"].([]any); len(plp) != len(seq) || len(plp[1].(map[string]any)) < 3 {
		t.Errorf("echo: prompt_logprobs %v", plp)
	}

	// prompt_logprobs 4: the prompt token and the top 4, each with its
	// rank; the prompt token's, when it is not in the top 4, is its rank in
	// the whole distribution (ScoreRanks), as vLLM always writes it.
	{
		code, resp := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": seq, "max_tokens": 1, "prompt_logprobs": 4})
		if code != 200 {
			t.Fatalf("prompt_logprobs: status %d: %v", code, resp)
		}
		plp := resp["choices"].([]any)[0].(map[string]any)["prompt_logprobs"].([]any)
		if len(plp) != len(seq) || plp[0] != nil {
			t.Fatalf("prompt_logprobs %v", plp)
		}
		outside := 0
		for j := 1; j < len(seq); j++ {
			entry := plp[j].(map[string]any)
			top := bruteTop(t, p, seq[:j], 4)
			keys := map[string]bool{strconv.Itoa(seq[j]): true}
			for _, e := range top {
				keys[strconv.Itoa(e.Token)] = true
			}
			if len(entry) != len(keys) {
				t.Errorf("position %d: %d entries %v, want %v", j, len(entry), entry, keys)
			}
			for r, e := range top {
				got, ok := entry[strconv.Itoa(e.Token)].(map[string]any)
				if !ok || got["rank"] != float64(r+1) || math.Abs(got["logprob"].(float64)-e.LogProb) > 1e-5 || got["decoded_token"] != tokText(t, p, e.Token) {
					t.Errorf("position %d top %d: %v, want token %d rank %d logprob %v", j, r, got, e.Token, r+1, e.LogProb)
				}
			}
			own := entry[strconv.Itoa(seq[j])].(map[string]any)
			if math.Abs(own["logprob"].(float64)-score[0][j-1]) > 1e-6 || own["decoded_token"] != tokText(t, p, seq[j]) {
				t.Errorf("position %d: prompt token entry %v, Score %v", j, own, score[0][j-1])
			}
			place := slices.IndexFunc(top, func(e policy.TokenLogprob) bool { return e.Token == seq[j] })
			switch {
			case place >= 0:
				if own["rank"] != float64(place+1) {
					t.Errorf("position %d: prompt token in the top 4 at %d has rank %v", j, place+1, own["rank"])
				}
			default:
				outside++
				if r := bruteRank(t, p, seq[:j], seq[j]); own["rank"] != float64(r) {
					t.Errorf("position %d: rank %v, brute force %d", j, own["rank"], r)
				}
			}
		}
		if outside == 0 {
			t.Error("every prompt token is in the top 4: the test does not cover the rank outside it")
		}
	}
}

// TestChatTopLogprobs checks top_logprobs N on /v1/chat/completions
// against the policy's own Score.
func TestChatTopLogprobs(t *testing.T) {
	ctx := context.Background()
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	msgs := []map[string]string{{"role": "user", "content": "Turn 1:\n#P_O#"}}
	prompt, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "Turn 1:\n#P_O#"}}, true)
	for _, k := range []int{0, 3, 20} {
		code, resp := post(t, ts.URL, "/v1/chat/completions", map[string]any{
			"messages": msgs, "seed": 5, "max_tokens": 6, "logprobs": true, "top_logprobs": k, "return_token_ids": true, "n": 2,
		})
		if code != 200 {
			t.Fatalf("top_logprobs %d: status %d: %v", k, code, resp)
		}
		for c, x := range resp["choices"].([]any) {
			ch := x.(map[string]any)
			toks := ids(ch["token_ids"])
			want, _ := p.Sample(ctx, []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 6, Seed: uint64(5 + c), StopTokens: p.Info().StopTokens}}})
			if !slices.Equal(toks, want[0].Tokens) {
				t.Fatalf("choice %d: tokens %v, want %v", c, toks, want[0].Tokens)
			}
			content := ch["logprobs"].(map[string]any)["content"].([]any)
			if len(content) != len(toks) {
				t.Fatalf("choice %d: %d logprobs for %d tokens", c, len(content), len(toks))
			}
			for i, y := range content {
				e := y.(map[string]any)
				if e["logprob"].(float64) != want[0].LogProbs[i] {
					t.Errorf("choice %d position %d: logprob %v, sampler %v", c, i, e["logprob"], want[0].LogProbs[i])
				}
				alts := e["top_logprobs"].([]any)
				top := bruteTop(t, p, append(slices.Clone(prompt), toks[:i]...), k)
				if len(alts) != k {
					t.Fatalf("choice %d position %d: %d top_logprobs, want %d", c, i, len(alts), k)
				}
				for r, a := range alts {
					a := a.(map[string]any)
					b, _ := p.TokenBytes(top[r].Token)
					if a["token"] != viaJSON(t, string(b)) || !slices.Equal(ids(a["bytes"]), byteList(b)) || math.Abs(a["logprob"].(float64)-top[r].LogProb) > 1e-5 {
						t.Errorf("choice %d position %d alternative %d: %v, want token %d (%q) with %v", c, i, r, a, top[r].Token, b, top[r].LogProb)
					}
				}
			}
		}
	}
}

func byteList(b []byte) []int {
	out := make([]int, len(b))
	for i, x := range b {
		out[i] = int(x)
	}
	return out
}

// hidden is a policy without TopLogprobs (nor the vocabulary methods).
type hidden struct{ policy.Policy }

// TestTopLogprobsErrors checks the 400s of the top-k fields.
func TestTopLogprobsErrors(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	plain, _ := start(t, hidden{p}, openaiapi.Options{})
	pr := prompts(t, p, 1)[0]
	msgs := []map[string]string{{"role": "user", "content": "x"}}
	cases := []struct {
		name   string
		url    string
		path   string
		body   map[string]any
		status int
		param  string
	}{
		{"logprobs 21", ts.URL, "/v1/completions", map[string]any{"prompt": pr, "logprobs": 21}, 400, "logprobs"},
		{"logprobs -1", ts.URL, "/v1/completions", map[string]any{"prompt": pr, "logprobs": -1}, 400, "logprobs"},
		{"prompt_logprobs 21", ts.URL, "/v1/completions", map[string]any{"prompt": pr, "prompt_logprobs": 21}, 400, "prompt_logprobs"},
		{"prompt_logprobs -1", ts.URL, "/v1/completions", map[string]any{"prompt": pr, "prompt_logprobs": -1}, 400, "prompt_logprobs"},
		{"top_logprobs 21", ts.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "logprobs": true, "top_logprobs": 21}, 400, "top_logprobs"},
		{"top_logprobs -1", ts.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "logprobs": true, "top_logprobs": -1}, 400, "top_logprobs"},
		{"top_logprobs without logprobs", ts.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "top_logprobs": 2}, 400, "top_logprobs"},
		{"top_logprobs with logprobs false", ts.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "logprobs": false, "top_logprobs": 2}, 400, "top_logprobs"},
		{"logprobs 20", ts.URL, "/v1/completions", map[string]any{"prompt": pr, "logprobs": 20, "max_tokens": 2}, 200, ""},
		{"prompt_logprobs 20", ts.URL, "/v1/completions", map[string]any{"prompt": pr, "prompt_logprobs": 20, "max_tokens": 1}, 200, ""},
		{"top_logprobs 0 without logprobs", ts.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "top_logprobs": 0, "max_tokens": 2}, 200, ""},
		{"no TopLogprobs: logprobs 1", plain.URL, "/v1/completions", map[string]any{"prompt": pr, "logprobs": 1}, 400, "logprobs"},
		{"no TopLogprobs: prompt_logprobs 1", plain.URL, "/v1/completions", map[string]any{"prompt": pr, "prompt_logprobs": 1}, 400, "prompt_logprobs"},
		{"no TopLogprobs: top_logprobs 1", plain.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "logprobs": true, "top_logprobs": 1}, 400, "top_logprobs"},
		{"no TopLogprobs: logprobs 0", plain.URL, "/v1/completions", map[string]any{"prompt": pr, "logprobs": 0, "prompt_logprobs": 0, "max_tokens": 2}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, resp := post(t, c.url, c.path, c.body)
			if code != c.status {
				t.Fatalf("status %d, want %d: %v", code, c.status, resp)
			}
			if c.status != 200 {
				e := resp["error"].(map[string]any)
				if e["param"] != c.param || e["message"] == "" {
					t.Errorf("error %v, want param %q", e, c.param)
				}
				t.Logf("%v", e["message"])
			}
		})
	}
}

// TestGoOpenAITopLogprobsAndStop reads top log-probs and stop-string cuts
// with go-openai, an independent client.
func TestGoOpenAITopLogprobsAndStop(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = ts.URL + "/v1"
	oc := openai.NewClientWithConfig(cfg)
	ctx := context.Background()
	seed := 7
	req := openai.ChatCompletionRequest{
		Messages:            []openai.ChatCompletionMessage{{Role: "user", Content: "Turn 1:\n#P_O#"}},
		MaxCompletionTokens: 24, Seed: &seed, LogProbs: true, TopLogProbs: 3,
	}
	chat, err := oc.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	content := chat.Choices[0].LogProbs.Content
	for i, lp := range content {
		if len(lp.TopLogProbs) != 3 || lp.TopLogProbs[0].LogProb < lp.TopLogProbs[1].LogProb || lp.TopLogProbs[1].LogProb < lp.TopLogProbs[2].LogProb {
			t.Errorf("position %d: top_logprobs %+v", i, lp.TopLogProbs)
		}
	}
	// Stop at the first printable ASCII character after the third.
	text := chat.Choices[0].Message.Content
	at := -1
	for i := 3; i < len(text) && at < 0; i++ {
		if text[i] >= 'a' && text[i] <= 'z' && !strings.ContainsRune(text[:i], rune(text[i])) {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no letter to stop at in %q", text)
	}
	req.Stop = []string{text[at : at+1]}
	stopped, err := oc.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := stopped.Choices[0]; got.Message.Content != text[:at] || got.FinishReason != openai.FinishReasonStop || len(got.LogProbs.Content) >= len(content) {
		t.Errorf("stopped at %q: %q, %q, %d logprobs (unstopped %q, %d)", text[at:at+1], got.Message.Content, got.FinishReason, len(got.LogProbs.Content), text, len(content))
	}

	comp, err := oc.CreateCompletion(ctx, openai.CompletionRequest{Prompt: "Once upon a time", MaxTokens: 6, Seed: &seed, LogProbs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range comp.Choices[0].LogProbs.TopLogprobs {
		if len(m) < 1 || len(m) > 3 {
			t.Errorf("position %d: top_logprobs %v", i, m)
		}
	}
}
