package vllmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/client/vllm/vllmtest"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// stopper is a scripted policy that honours Sampling.StopTokens: every
// sample is script, cut just after the first stop token (nil StopTokens
// meaning Info().StopTokens) or at MaxTokens.
type stopper struct {
	*policytest.Scripted
	script []int
	seen   [][]int // the StopTokens of each request
}

func (p *stopper) Sample(_ context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out := make([]policy.Sample, len(reqs))
	for i, r := range reqs {
		stops := r.Sampling.StopTokens
		if stops == nil {
			stops = p.Info().StopTokens
		}
		p.seen = append(p.seen, slices.Clone(stops))
		toks, finish := p.script, policy.FinishLength
		if k := slices.IndexFunc(toks, func(t int) bool { return slices.Contains(stops, t) }); k >= 0 {
			toks, finish = toks[:k+1], policy.FinishStop
		}
		if len(toks) > r.Sampling.MaxTokens {
			toks, finish = toks[:r.Sampling.MaxTokens], policy.FinishLength
		}
		out[i] = policy.Sample{Tokens: slices.Clone(toks), LogProbs: policytest.LogProbs(r.Prompt, toks), Finish: finish}
	}
	return out, nil
}

func serve(t *testing.T, s *vllmtest.Server) string {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

func post(t *testing.T, url, path string, body any) (int, map[string]any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: status %d, body %q: %v", path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

func ids(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

func choice(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	chs, ok := resp["choices"].([]any)
	if !ok || len(chs) != 1 {
		t.Fatalf("choices %v", resp)
	}
	return chs[0].(map[string]any)
}

func longReply(string, uint64) string { return strings.Repeat("word ", 10) }

// TestDefaultMaxTokens: vLLM's max_tokens on /v1/completions is 16 when
// absent or null, not the rest of the context.
func TestDefaultMaxTokens(t *testing.T) {
	url := serve(t, vllmtest.New(&policytest.Scripted{Reply: longReply}))
	for _, body := range []map[string]any{
		{"model": "test-model", "prompt": []int{'a'}, "return_token_ids": true},
		{"model": "test-model", "prompt": []int{'a'}, "return_token_ids": true, "max_tokens": nil},
	} {
		code, resp := post(t, url, "/v1/completions", body)
		if code != 200 {
			t.Fatalf("status %d: %v", code, resp)
		}
		ch := choice(t, resp)
		if n := len(ids(ch["token_ids"])); n != 16 || ch["finish_reason"] != "length" {
			t.Errorf("%v: %d tokens, finish %v; want 16 and length", body, n, ch["finish_reason"])
		}
	}
	// Near the end of the context the default is the room left.
	s := vllmtest.New(&policytest.Scripted{Reply: longReply, MaxContext: 10})
	code, resp := post(t, serve(t, s), "/v1/completions", map[string]any{"model": "test-model", "prompt": []int{'a', 'b'}, "return_token_ids": true})
	if code != 200 || len(ids(choice(t, resp)["token_ids"])) != 8 {
		t.Errorf("near the end of the context: %d %v", code, resp)
	}
}

// TestEOSStops: the model's EOS tokens end generation besides
// stop_token_ids, unless ignore_eos; stop_reason is null for the primary
// EOS and the token id otherwise.
func TestEOSStops(t *testing.T) {
	script := []int{'a', 'b', tokenizer.EndID, 'c', 'd', tokenizer.EOSID, 'e'}
	cases := []struct {
		name      string
		eos       []int
		body      map[string]any
		wantStops []int
		n         int
		reason    any
	}{
		{"stop_token_ids and EOS", nil, map[string]any{"stop_token_ids": []int{'c'}}, []int{'c', tokenizer.EndID}, 3, nil},
		{"ignore_eos", nil, map[string]any{"stop_token_ids": []int{'c'}, "ignore_eos": true}, []int{'c'}, 4, float64('c')},
		{"no stop_token_ids", nil, map[string]any{}, []int{tokenizer.EndID}, 3, nil},
		{"empty stop set", nil, map[string]any{"stop_token_ids": []int{}, "ignore_eos": true}, []int{}, 7, nil},
		{"the primary EOS given as a stop token", nil, map[string]any{"stop_token_ids": []int{tokenizer.EndID}}, []int{tokenizer.EndID}, 3, nil},
		{"a second EOS (generation_config)", []int{tokenizer.EndID, 'b'}, map[string]any{}, []int{tokenizer.EndID, 'b'}, 2, float64('b')},
		{"ignore_eos drops every EOS", []int{tokenizer.EndID, 'b'}, map[string]any{"stop_token_ids": []int{tokenizer.EOSID}, "ignore_eos": true}, []int{tokenizer.EOSID}, 6, float64(tokenizer.EOSID)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &stopper{Scripted: &policytest.Scripted{}, script: script}
			s := vllmtest.New(p)
			s.EOS = c.eos
			body := map[string]any{"model": "test-model", "prompt": []int{'x'}, "max_tokens": 20, "return_token_ids": true}
			for k, v := range c.body {
				body[k] = v
			}
			code, resp := post(t, serve(t, s), "/v1/completions", body)
			if code != 200 {
				t.Fatalf("status %d: %v", code, resp)
			}
			if len(p.seen) != 1 || !slices.Equal(p.seen[0], c.wantStops) {
				t.Errorf("stop set %v, want %v", p.seen, c.wantStops)
			}
			ch := choice(t, resp)
			toks := ids(ch["token_ids"])
			finish := "stop"
			if c.n == len(script) {
				finish = "length"
			}
			if !slices.Equal(toks, script[:c.n]) || ch["finish_reason"] != finish || ch["stop_reason"] != c.reason {
				t.Errorf("tokens %v finish %v stop_reason %v; want %v %v %v", toks, ch["finish_reason"], ch["stop_reason"], script[:c.n], finish, c.reason)
			}
		})
	}
}

// TestTokenizeDefaults: text /tokenize adds the special tokens by default,
// the chat form does not (but adds the generation prompt).
func TestTokenizeDefaults(t *testing.T) {
	p := &policytest.Scripted{}
	url := serve(t, vllmtest.New(p))
	ctx := context.Background()
	text, _ := p.Encode(ctx, "hi")
	msgs := []policy.Message{{Role: policy.RoleUser, Content: "hi"}}
	gen, _ := p.RenderChat(ctx, msgs, true)
	noGen, _ := p.RenderChat(ctx, msgs, false)
	bos := []int{tokenizer.BOSID}
	cases := []struct {
		name string
		body map[string]any
		want []int
	}{
		{"text, default", map[string]any{"prompt": "hi"}, slices.Concat(bos, text)},
		{"text, add_special_tokens true", map[string]any{"prompt": "hi", "add_special_tokens": true}, slices.Concat(bos, text)},
		{"text, add_special_tokens false", map[string]any{"prompt": "hi", "add_special_tokens": false}, text},
		{"chat, default", map[string]any{"messages": msgs}, gen},
		{"chat, add_generation_prompt false", map[string]any{"messages": msgs, "add_generation_prompt": false}, noGen},
		{"chat, add_special_tokens true", map[string]any{"messages": msgs, "add_special_tokens": true}, slices.Concat(bos, gen)},
	}
	for _, c := range cases {
		c.body["model"] = "test-model"
		code, resp := post(t, url, "/tokenize", c.body)
		if code != 200 || !slices.Equal(ids(resp["tokens"]), c.want) {
			t.Errorf("%s: %d %v, want tokens %v", c.name, code, resp, c.want)
		}
	}
	code, resp := post(t, url, "/tokenize", map[string]any{"model": "test-model", "messages": msgs, "continue_final_message": true, "add_generation_prompt": true})
	if code != 400 {
		t.Errorf("continue_final_message with add_generation_prompt: %d %v", code, resp)
	}
}

// TestLogprobsShape: a completion's logprobs object is vLLM's, its
// top_logprobs a list with one dict per position.
func TestLogprobsShape(t *testing.T) {
	p := &policytest.Scripted{Reply: func(string, uint64) string { return "héy" }}
	url := serve(t, vllmtest.New(p))
	code, resp := post(t, url, "/v1/completions", map[string]any{"model": "test-model", "prompt": []int{'x'}, "logprobs": 0, "return_token_ids": true})
	if code != 200 {
		t.Fatalf("status %d: %v", code, resp)
	}
	ch := choice(t, resp)
	toks := ids(ch["token_ids"])
	lp := ch["logprobs"].(map[string]any)
	want := policytest.LogProbs([]int{'x'}, toks)
	tops, ok := lp["top_logprobs"].([]any)
	if !ok || len(tops) != len(toks) {
		t.Fatalf("top_logprobs %v for %d tokens", lp["top_logprobs"], len(toks))
	}
	off := 0
	for i, tok := range toks {
		text, _ := p.Decode(context.Background(), []int{tok})
		text = strings.ToValidUTF8(text, "\uFFFD") // as JSON carries a byte of a character
		if got := lp["tokens"].([]any)[i]; got != text {
			t.Errorf("tokens[%d] = %q, want %q", i, got, text)
		}
		if got := lp["text_offset"].([]any)[i]; got != float64(off) {
			t.Errorf("text_offset[%d] = %v, want %d", i, got, off)
		}
		off += len([]rune(text))
		d, ok := tops[i].(map[string]any)
		if !ok || len(d) != 1 || d[text] != want[i] {
			t.Errorf("top_logprobs[%d] = %v, want {%q: %v}", i, tops[i], text, want[i])
		}
		if got := lp["token_logprobs"].([]any)[i]; got != want[i] {
			t.Errorf("token_logprobs[%d] = %v, want %v", i, got, want[i])
		}
	}
}

// TestLogprobsLimits: vLLM rejects negative logprobs and prompt_logprobs
// and values over --max-logprobs (20).
func TestLogprobsLimits(t *testing.T) {
	url := serve(t, vllmtest.New(&policytest.Scripted{Reply: longReply}))
	for _, field := range []string{"logprobs", "prompt_logprobs"} {
		for _, v := range []int{-1, -2, 21} {
			code, resp := post(t, url, "/v1/completions", map[string]any{"model": "test-model", "prompt": []int{'x', 'y'}, "max_tokens": 1, field: v})
			if code != 400 {
				t.Errorf("%s %d: %d %v", field, v, code, resp)
			}
		}
		code, resp := post(t, url, "/v1/completions", map[string]any{"model": "test-model", "prompt": []int{'x', 'y'}, "max_tokens": 1, field: 0})
		if code != 200 {
			t.Errorf("%s 0: %d %v", field, code, resp)
		}
	}
}

// TestUnknownFieldsRejected: unlike vLLM, which ignores them, the fake
// answers a misspelt field with a 400, so a client test sees it.
func TestUnknownFieldsRejected(t *testing.T) {
	url := serve(t, vllmtest.New(&policytest.Scripted{Reply: longReply}))
	for path, body := range map[string]map[string]any{
		"/v1/completions": {"model": "test-model", "prompt": []int{'x'}, "max_tokens": 2, "stop_token_id": []int{1}},
		"/tokenize":       {"model": "test-model", "prompt": "x", "add_special_token": false},
		"/detokenize":     {"model": "test-model", "tokens": []int{'x'}, "token": []int{'y'}},
	} {
		if code, resp := post(t, url, path, body); code != 400 {
			t.Errorf("%s with a misspelt field: %d %v", path, code, resp)
		}
	}
}

// TestPromptLogprobsRank: every prompt_logprobs entry has its rank, as
// vLLM writes it, from the policy's ScoreRanks.
func TestPromptLogprobsRank(t *testing.T) {
	p := &policytest.Scripted{Reply: longReply}
	url := serve(t, vllmtest.New(p))
	prompt := []int{tokenizer.BOSID, 'h', 'e', 'l', 'l', 'o'}
	code, resp := post(t, url, "/v1/completions", map[string]any{"model": "test-model", "prompt": [][]int{prompt}, "max_tokens": 1, "prompt_logprobs": 0})
	if code != 200 {
		t.Fatalf("status %d: %v", code, resp)
	}
	lps, ranks, _ := p.ScoreRanks(context.Background(), []policy.ScoreRequest{{Prompt: prompt[:1], Continuation: prompt[1:]}})
	plp := choice(t, resp)["prompt_logprobs"].([]any)
	if len(plp) != len(prompt) || plp[0] != nil {
		t.Fatalf("prompt_logprobs %v", plp)
	}
	for j := 1; j < len(prompt); j++ {
		e := plp[j].(map[string]any)[strconv.Itoa(prompt[j])].(map[string]any)
		if e["rank"] != float64(ranks[0][j-1]) || e["logprob"] != lps[0][j-1] {
			t.Errorf("position %d: %v, want rank %d logprob %v", j, e, ranks[0][j-1], lps[0][j-1])
		}
	}
}

// TestModelsAdapterCard: an adapter's card has max_model_len null, as in
// vLLM; the base model's has the context length.
func TestModelsAdapterCard(t *testing.T) {
	url := serve(t, vllmtest.New(&policytest.Scripted{}))
	load, err := http.Post(url+"/v1/load_lora_adapter", "application/json", strings.NewReader(`{"lora_name": "a", "lora_path": "/x"}`))
	if err != nil {
		t.Fatal(err)
	}
	load.Body.Close()
	if load.StatusCode != 200 {
		t.Fatalf("load: %d", load.StatusCode)
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 2 || list.Data[0]["max_model_len"] != float64(4096) || list.Data[1]["max_model_len"] != nil || list.Data[1]["parent"] != "test-model" {
		t.Errorf("models %v", list.Data)
	}
}
