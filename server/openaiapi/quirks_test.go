package openaiapi_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// eosSeed finds a seed whose unstopped sample of prompt (maxTokens long)
// holds the model's EOS (<|end|>) followed by a token not sampled before
// it, and returns it with the sample, the EOS's index and that token.
func eosSeed(t *testing.T, p *local.Policy, prompt []int, maxTokens int) (uint64, policy.Sample, int, int) {
	t.Helper()
	reqs := make([]policy.Request, 200)
	for i := range reqs {
		reqs[i] = policy.Request{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: maxTokens, Seed: uint64(i), StopTokens: []int{}}}
	}
	got, err := p.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range got {
		k := slices.Index(s.Tokens, tokenizer.EndID)
		if k < 0 {
			continue
		}
		for _, tok := range s.Tokens[k+1:] {
			if !slices.Contains(s.Tokens[:k], tok) {
				return uint64(i), s, k, tok
			}
		}
	}
	t.Fatal("no seed samples <|end|> then a new token: the test covers nothing")
	return 0, policy.Sample{}, 0, 0
}

// TestEOSEndsGeneration: as in vLLM, the model's EOS tokens (the policy's
// stop tokens) end generation besides stop_token_ids, unless ignore_eos,
// with stop_reason null; stop_token_ids are additional.
func TestEOSEndsGeneration(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	pr := prompts(t, p, 1)[0]
	const maxTokens = 48
	seed, free, end, after := eosSeed(t, p, pr, maxTokens) // after stops the sample only with ignore_eos
	for _, endpoint := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := func(extra map[string]any) map[string]any {
			b := map[string]any{"seed": seed, "max_tokens": maxTokens, "return_token_ids": true}
			if endpoint == "/v1/completions" {
				b["prompt"] = pr
			} else {
				// The chat prompt is the rendered conversation; sample it in
				// process below.
				b["messages"] = []map[string]string{{"role": "user", "content": "Turn 1:\n#P_O#"}}
			}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
		prompt := pr
		if endpoint != "/v1/completions" {
			prompt, _ = p.RenderChat(context.Background(), []policy.Message{{Role: "user", Content: "Turn 1:\n#P_O#"}}, true)
		}
		want := func(stops []int) policy.Sample {
			out, err := p.Sample(context.Background(), []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: maxTokens, Seed: seed, StopTokens: stops}}})
			if err != nil {
				t.Fatal(err)
			}
			return out[0]
		}
		cases := []struct {
			name  string
			extra map[string]any
			stops []int
		}{
			{"stop_token_ids add to the EOS", map[string]any{"stop_token_ids": []int{after}}, []int{after, tokenizer.EndID}},
			{"no stop_token_ids", nil, []int{tokenizer.EndID}},
			{"ignore_eos", map[string]any{"stop_token_ids": []int{after}, "ignore_eos": true}, []int{after}},
			{"ignore_eos, no stops", map[string]any{"stop_token_ids": []int{}, "ignore_eos": true}, []int{}},
		}
		for _, c := range cases {
			code, resp := post(t, ts.URL, endpoint, body(c.extra))
			if code != 200 {
				t.Fatalf("%s %s: status %d: %v", endpoint, c.name, code, resp)
			}
			ch := resp["choices"].([]any)[0].(map[string]any)
			w := want(c.stops)
			if got := ids(ch["token_ids"]); !slices.Equal(got, w.Tokens) || ch["finish_reason"] != w.Finish {
				t.Errorf("%s %s: tokens %v finish %v, want %v %v", endpoint, c.name, got, ch["finish_reason"], w.Tokens, w.Finish)
			}
			var reason any
			if w.Finish == policy.FinishStop && w.Tokens[len(w.Tokens)-1] != tokenizer.EndID {
				reason = float64(w.Tokens[len(w.Tokens)-1])
			}
			if ch["stop_reason"] != reason {
				t.Errorf("%s %s: stop_reason %v, want %v (null for the EOS)", endpoint, c.name, ch["stop_reason"], reason)
			}
		}
	}
	// The completions case does end on the EOS, not on the stop token.
	code, resp := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": pr, "seed": seed, "max_tokens": maxTokens, "return_token_ids": true, "stop_token_ids": []int{after}})
	if got := ids(resp["choices"].([]any)[0].(map[string]any)["token_ids"]); code != 200 || !slices.Equal(got, free.Tokens[:end+1]) {
		t.Errorf("stop_token_ids %v: %d tokens %v, want the sample up to <|end|> %v", []int{after}, code, got, free.Tokens[:end+1])
	}
}

// TestClientIgnoresEOS: client/vllm's Sampling.StopTokens are the whole stop
// set over HTTP too, although the server adds the EOS without ignore_eos.
func TestClientIgnoresEOS(t *testing.T) {
	ctx := context.Background()
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	c := connect(t, ts.URL, "")
	pr := prompts(t, p, 1)[0]
	seed, free, _, after := eosSeed(t, p, pr, 48)
	for _, stops := range [][]int{{}, {after}, nil} {
		req := []policy.Request{{Prompt: pr, Sampling: policy.Sampling{Temperature: 1, TopP: 1, MaxTokens: 48, Seed: seed, StopTokens: stops}}}
		got, err := c.Sample(ctx, req)
		if err != nil || got[0].Err != nil {
			t.Fatal(err, got)
		}
		want, _ := p.Sample(ctx, req)
		if !slices.Equal(got[0].Tokens, want[0].Tokens) || got[0].Finish != want[0].Finish {
			t.Errorf("StopTokens %v: over HTTP %v %s, in process %v %s", stops, got[0].Tokens, got[0].Finish, want[0].Tokens, want[0].Finish)
		}
	}
	if len(free.Tokens) != 48 {
		t.Errorf("the unstopped sample has %d tokens", len(free.Tokens))
	}
}

// TestNullMaxTokens: max_tokens null on /v1/completions is vLLM's default
// of 16 (its normalize_null_max_tokens validator), as absent is.
func TestNullMaxTokens(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	pr := prompts(t, p, 1)[0]
	for _, body := range []map[string]any{
		{"prompt": pr, "seed": 1, "stop_token_ids": []int{}, "ignore_eos": true, "return_token_ids": true},
		{"prompt": pr, "seed": 1, "stop_token_ids": []int{}, "ignore_eos": true, "return_token_ids": true, "max_tokens": nil},
	} {
		code, resp := post(t, ts.URL, "/v1/completions", body)
		if code != 200 {
			t.Fatalf("status %d: %v", code, resp)
		}
		if n := len(ids(resp["choices"].([]any)[0].(map[string]any)["token_ids"])); n != 16 {
			t.Errorf("max_tokens %v: %d tokens, want 16", body["max_tokens"], n)
		}
	}
	// In chat, absent or null means the rest of the context.
	msgs := []map[string]string{{"role": "user", "content": "x"}}
	code, resp := post(t, ts.URL, "/v1/chat/completions", map[string]any{"messages": msgs, "seed": 1, "max_tokens": nil, "ignore_eos": true, "return_token_ids": true})
	prompt, _ := p.RenderChat(context.Background(), []policy.Message{{Role: "user", Content: "x"}}, true)
	if n := len(ids(resp["choices"].([]any)[0].(map[string]any)["token_ids"])); code != 200 || n != p.Info().MaxContext-len(prompt) {
		t.Errorf("chat: %d, %d tokens, want %d", code, n, p.Info().MaxContext-len(prompt))
	}
}

// TestChatAddSpecialTokens: the chat form of /tokenize and chat requests
// add the special tokens on top of the template only with
// add_special_tokens true (vLLM's default is false).
func TestChatAddSpecialTokens(t *testing.T) {
	ctx := context.Background()
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	rendered, _ := p.RenderChat(ctx, []policy.Message{{Role: "user", Content: "hi"}}, true)
	bos := p.TextPrefix()
	if len(bos) == 0 {
		t.Fatal("no text prefix")
	}
	for _, special := range []any{nil, false, true} {
		want := rendered
		if special == true {
			want = slices.Concat(bos, rendered)
		}
		body := map[string]any{"messages": msgs}
		if special != nil {
			body["add_special_tokens"] = special
		}
		code, resp := post(t, ts.URL, "/tokenize", body)
		if code != 200 || !slices.Equal(ids(resp["tokens"]), want) {
			t.Errorf("/tokenize add_special_tokens %v: %d %v, want %v", special, code, resp["tokens"], want)
		}
		body["max_tokens"], body["return_token_ids"] = 1, true
		code, resp = post(t, ts.URL, "/v1/chat/completions", body)
		if code != 200 || !slices.Equal(ids(resp["prompt_token_ids"]), want) {
			t.Errorf("chat add_special_tokens %v: %d %v, want %v", special, code, resp["prompt_token_ids"], want)
		}
	}
}
