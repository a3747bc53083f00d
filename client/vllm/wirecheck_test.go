package vllm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"

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
}

func (p *stopper) Sample(_ context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out := make([]policy.Sample, len(reqs))
	for i, r := range reqs {
		stops := r.Sampling.StopTokens
		if stops == nil {
			stops = p.Info().StopTokens
		}
		toks, finish := p.script, policy.FinishLength
		if k := slices.IndexFunc(toks, func(t int) bool { return slices.Contains(stops, t) }); k >= 0 {
			toks, finish = toks[:k+1], policy.FinishStop
		}
		if r.Sampling.MaxTokens > 0 && len(toks) > r.Sampling.MaxTokens {
			toks, finish = toks[:r.Sampling.MaxTokens], policy.FinishLength
		}
		out[i] = policy.Sample{Tokens: slices.Clone(toks), LogProbs: policytest.LogProbs(r.Prompt, toks), Finish: finish}
	}
	return out, nil
}

// TestStopTokensAreTheWholeStopSet: Sampling.StopTokens (or Info's) are the
// only tokens that end a sample, although vLLM, and the fake, add the
// model's EOS tokens to every request's stop set unless ignore_eos.
func TestStopTokensAreTheWholeStopSet(t *testing.T) {
	p := &stopper{Scripted: scripted(), script: []int{'a', tokenizer.EndID, 'b', tokenizer.EOSID, 'c', 'd'}}
	ts, srv := fake(t, p, nil)
	srv.EOS = []int{tokenizer.EndID, tokenizer.EOSID} // a tokenizer EOS and a generation_config one
	c := connect(t, quiet(ts.URL))
	ctx := context.Background()
	for _, stops := range [][]int{nil, {}, {'b'}, {'c'}, {tokenizer.EOSID}} {
		reqs := requests(t, p, 1, policy.Sampling{Temperature: 1, MaxTokens: 10, StopTokens: stops})
		got, err := c.Sample(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := p.Sample(ctx, reqs)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("StopTokens %v: over HTTP %+v, in process %+v", stops, got, want)
		}
	}
}

// vllmFields are the request fields of vLLM's request models
// (vllm/entrypoints/openai/completion/protocol.py CompletionRequest,
// vllm/entrypoints/serve/tokenize/protocol.py TokenizeCompletionRequest,
// TokenizeChatRequest and DetokenizeRequest, vllm/entrypoints/serve/lora
// LoadLoRAAdapterRequest and UnloadLoRAAdapterRequest), the subset a client
// might send. vLLM ignores any other field, so a misspelt one would change
// nothing and fail nothing against a real server.
var vllmFields = map[string][]string{
	"/v1/completions": {
		"model", "prompt", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
		"presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
		"use_beam_search", "top_k", "min_p", "repetition_penalty", "length_penalty", "stop_token_ids",
		"include_stop_str_in_output", "ignore_eos", "min_tokens", "skip_special_tokens",
		"spaces_between_special_tokens", "truncate_prompt_tokens", "allowed_token_ids", "prompt_logprobs",
		"bad_words", "add_special_tokens", "response_format", "structured_outputs", "priority", "request_id",
		"return_tokens_as_token_ids", "return_token_ids", "cache_salt", "kv_transfer_params", "vllm_xargs",
	},
	"/tokenize": {
		"model", "prompt", "messages", "add_special_tokens", "add_generation_prompt", "continue_final_message",
		"return_token_strs", "chat_template", "chat_template_kwargs", "mm_processor_kwargs", "tools",
	},
	"/detokenize":             {"model", "tokens"},
	"/v1/load_lora_adapter":   {"lora_name", "lora_path", "load_inplace"},
	"/v1/unload_lora_adapter": {"lora_name", "lora_int_id"},
	"/tokenize messages[]":    {"role", "content", "name"},
}

// TestRequestFieldsAreVLLMs sends every kind of request the client makes
// and checks each field name against vLLM's request models: a misspelt
// field fails here even if the fake were misspelt the same way (the fake
// itself rejects fields it does not know, see vllmtest).
func TestRequestFieldsAreVLLMs(t *testing.T) {
	p := scripted()
	var mu sync.Mutex
	sent := map[string][]map[string]any{}
	ts, _ := fake(t, p, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Errorf("%s: body %q is not a JSON object", r.URL.Path, body)
				}
				mu.Lock()
				sent[r.URL.Path] = append(sent[r.URL.Path], m)
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	c := connect(t, quiet(ts.URL)) // renders the stop-token probe and encodes
	ctx := context.Background()
	reqs := requests(t, p, 2, policy.Sampling{Temperature: 0.5, TopP: 0.9, TopK: 5, MaxTokens: 8, StopTokens: []int{'x'}})
	if got, err := c.Sample(ctx, reqs); err != nil || got[0].Err != nil {
		t.Fatal(err, got)
	}
	if _, err := c.Score(ctx, []policy.ScoreRequest{{Prompt: reqs[0].Prompt, Continuation: []int{'a', 'b'}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Encode(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decode(ctx, []int{'h', 'i'}); err != nil {
		t.Fatal(err)
	}
	if err := c.LoadLoRA(ctx, "v1", "/adapters/v1"); err != nil {
		t.Fatal(err)
	}
	if err := c.UnloadLoRA(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/completions", "/tokenize", "/detokenize", "/v1/load_lora_adapter", "/v1/unload_lora_adapter"} {
		bodies := sent[path]
		if len(bodies) == 0 {
			t.Errorf("no %s request sent", path)
		}
		for _, m := range bodies {
			for k, v := range m {
				if !slices.Contains(vllmFields[path], k) {
					t.Errorf("%s: field %q is not a field of vLLM's request", path, k)
				}
				if path == "/tokenize" && k == "messages" {
					for _, msg := range v.([]any) {
						for mk := range msg.(map[string]any) {
							if !slices.Contains(vllmFields["/tokenize messages[]"], mk) {
								t.Errorf("/tokenize: message field %q is not a field of vLLM's messages", mk)
							}
						}
					}
				}
			}
		}
	}
}
