package openaiapi_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/tokenizer"
)

// stopResult is what a choice reports, on either endpoint.
type stopResult struct {
	tokens     []int
	logprobs   []float64
	text       string
	finish     string
	stopReason any
	usage      int
}

// stopRequest sends body (with the prompt, seed, max_tokens,
// return_token_ids and logprobs added) to the endpoint and reads choice 0.
func stopRequest(t *testing.T, url, endpoint string, body map[string]any) stopResult {
	t.Helper()
	body = mapsClone(body)
	body["seed"], body["max_tokens"], body["return_token_ids"] = stopSeed, 48, true
	path := "/v1/completions"
	if endpoint == "chat" {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": "Turn 1:\n#P_O#"}}
		body["logprobs"] = true
	} else {
		body["prompt"] = []int{tokenizer.BOSID, 'a', 'b'}
		body["logprobs"] = 0
	}
	code, resp := post(t, url, path, body)
	if code != 200 {
		t.Fatalf("status %d: %v", code, resp)
	}
	ch := resp["choices"].([]any)[0].(map[string]any)
	r := stopResult{tokens: ids(ch["token_ids"]), finish: ch["finish_reason"].(string), stopReason: ch["stop_reason"]}
	r.usage = int(resp["usage"].(map[string]any)["completion_tokens"].(float64))
	if endpoint == "chat" {
		r.text = ch["message"].(map[string]any)["content"].(string)
		for _, e := range ch["logprobs"].(map[string]any)["content"].([]any) {
			r.logprobs = append(r.logprobs, e.(map[string]any)["logprob"].(float64))
		}
	} else {
		r.text = ch["text"].(string)
		r.logprobs = floats(ch["logprobs"].(map[string]any)["token_logprobs"])
	}
	return r
}

// stopSeed is a seed whose unstopped samples have what the cases pick.
const stopSeed = 21

func mapsClone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// asciiRun returns the first i ≥ from such that toks[i:i+n] are printable
// ASCII bytes, or -1.
func asciiRun(toks []int, from, n int) int {
	for i := from; i+n <= len(toks); i++ {
		ok := true
		for _, tok := range toks[i : i+n] {
			ok = ok && tok >= 0x20 && tok < 0x7f
		}
		if ok {
			return i
		}
	}
	return -1
}

func asciiText(toks []int) string {
	b := make([]byte, len(toks))
	for i, tok := range toks {
		b[i] = byte(tok)
	}
	return string(b)
}

// expectStop is the reference: with stopIDs, the first of them in toks
// ends the sample (it is kept); then the first token whose text (bytes
// concatenated, specials dropped when skipSpecial), stop token excluded,
// contains a stop string ends it earlier, cut before the earliest stop
// string in it (after it with include).
func expectStop(t *testing.T, p *local.Policy, base stopResult, stops []string, stopIDs []int, skipSpecial, include bool) stopResult {
	t.Helper()
	toks, finish, reason := base.tokens, base.finish, any(nil)
	stopped := false
	if k := slices.IndexFunc(toks, func(tok int) bool { return slices.Contains(stopIDs, tok) }); k >= 0 {
		toks, finish, reason, stopped = toks[:k+1], policy.FinishStop, float64(toks[k]), true
	}
	text := func(ids []int) []byte {
		var buf []byte
		for _, id := range ids {
			if !skipSpecial || !tokenizer.IsSpecial(id) {
				b, _ := p.TokenBytes(id)
				buf = append(buf, b...)
			}
		}
		return buf
	}
	n := len(toks)
	if stopped {
		n--
	}
	for i := range n {
		buf := text(toks[:i+1])
		at, which := -1, ""
		for _, s := range stops {
			if j := bytes.Index(buf, []byte(s)); s != "" && j >= 0 && (at < 0 || j < at) {
				at, which = j, s
			}
		}
		if at >= 0 {
			if include {
				at += len(which)
			}
			return stopResult{tokens: toks[:i+1], logprobs: base.logprobs[:i+1], text: viaJSON(t, string(buf[:at])),
				finish: policy.FinishStop, stopReason: which, usage: i + 1}
		}
	}
	shown := toks
	if stopped && !include {
		shown = toks[:n]
	}
	return stopResult{tokens: toks, logprobs: base.logprobs[:len(toks)], text: viaJSON(t, string(text(shown))),
		finish: finish, stopReason: reason, usage: len(toks)}
}

// TestStopStrings checks stop strings on both endpoints against the
// unstopped reply of the same seed: the tokens kept are its first ones,
// through the token that completed the stop string.
func TestStopStrings(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	type pick struct {
		stop    any // the stop field
		stopIDs []int
	}
	cases := []struct {
		name                 string
		skipSpecial, include bool
		// pick chooses the fields from the unstopped tokens; ok false
		// means this sample has nothing to pick.
		pick     func(toks []int) (pick, bool)
		midToken bool   // the cut must fall inside a token
		ends     string // what ends the sample: "string", "token" or "" (max_tokens)
	}{
		{name: "a string", ends: "string", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 3, 2)
			return pick{stop: asciiText(toks[i : i+2])}, i >= 0
		}},
		{name: "a one-token string", ends: "string", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 5, 1)
			return pick{stop: []string{asciiText(toks[i : i+1])}}, i >= 0
		}},
		{name: "include_stop_str_in_output", ends: "string", skipSpecial: true, include: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 3, 2)
			return pick{stop: asciiText(toks[i : i+2])}, i >= 0
		}},
		{name: "the earliest of a list", ends: "string", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 3, 2)
			j := asciiRun(toks, i+3, 2)
			if i < 0 || j < 0 || bytes.Contains([]byte(asciiText(toks[:j+1])), []byte(asciiText(toks[j:j+2]))) {
				return pick{}, false
			}
			return pick{stop: []string{asciiText(toks[j : j+2]), asciiText(toks[i : i+2])}}, true
		}},
		{name: "the earliest start among strings one token completes", ends: "string", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 3, 2)
			if i < 0 || slices.Contains(toks[:i+1], toks[i+1]) {
				return pick{}, false
			}
			s := asciiText(toks[i : i+2])
			return pick{stop: []string{s[1:], s}}, true // both complete at token i+1; s starts first
		}},
		{name: "a stop token whose text is a stop string", ends: "token", skipSpecial: true, include: true, pick: func(toks []int) (pick, bool) {
			k := asciiRun(toks, 2, 1)
			if k < 0 || slices.Contains(toks[:k], toks[k]) {
				return pick{}, false
			}
			return pick{stop: asciiText(toks[k : k+1]), stopIDs: []int{toks[k]}}, true
		}},
		{name: "absent", ends: "", skipSpecial: true, pick: func([]int) (pick, bool) {
			return pick{stop: []string{"not in this text ü"}}, true
		}},
		{name: "empty strings ignored", ends: "", skipSpecial: true, pick: func([]int) (pick, bool) {
			return pick{stop: []string{"", ""}}, true
		}},
		{name: "empty string", ends: "", skipSpecial: true, pick: func([]int) (pick, bool) { return pick{stop: ""}, true }},
		{name: "null", ends: "", skipSpecial: true, pick: func([]int) (pick, bool) { return pick{stop: nil}, true }},
		{name: "a stop token first", ends: "token", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 6, 2)
			if i < 0 || slices.Index(toks, toks[2]) != 2 {
				return pick{}, false
			}
			return pick{stop: asciiText(toks[i : i+2]), stopIDs: []int{toks[2]}}, true
		}},
		{name: "a stop token first, included", ends: "token", skipSpecial: true, include: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 6, 2)
			if i < 0 || slices.Index(toks, toks[2]) != 2 {
				return pick{}, false
			}
			return pick{stop: asciiText(toks[i : i+2]), stopIDs: []int{toks[2]}}, true
		}},
		{name: "a stop string before the stop token", ends: "string", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := asciiRun(toks, 2, 2)
			if i < 0 || i+4 >= len(toks) || slices.Index(toks, toks[i+4]) != i+4 {
				return pick{}, false
			}
			return pick{stop: asciiText(toks[i : i+2]), stopIDs: []int{toks[i+4]}}, true
		}},
		{name: "a special token's text, kept", ends: "string", skipSpecial: false, midToken: true, pick: func(toks []int) (pick, bool) {
			i := slices.IndexFunc(toks, tokenizer.IsSpecial)
			if i < 0 {
				return pick{}, false
			}
			s, _ := tokenizer.SpecialText(toks[i])
			return pick{stop: s[2:4]}, true // inside the token
		}},
		{name: "a special token's text, skipped", ends: "", skipSpecial: true, pick: func(toks []int) (pick, bool) {
			i := slices.IndexFunc(toks, tokenizer.IsSpecial)
			if i < 0 {
				return pick{}, false
			}
			s, _ := tokenizer.SpecialText(toks[i])
			return pick{stop: []string{s}}, true
		}},
	}
	for _, endpoint := range []string{"completions", "chat"} {
		bases := map[bool]stopResult{}
		for _, skip := range []bool{false, true} {
			bases[skip] = stopRequest(t, ts.URL, endpoint, map[string]any{"stop_token_ids": []int{}, "ignore_eos": true, "skip_special_tokens": skip})
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", endpoint, c.name), func(t *testing.T) {
				base := bases[c.skipSpecial]
				pk, ok := c.pick(base.tokens)
				if !ok {
					t.Fatalf("seed %d: the unstopped sample %v has nothing to pick", stopSeed, base.tokens)
				}
				stopIDs := pk.stopIDs
				if stopIDs == nil {
					stopIDs = []int{}
				}
				got := stopRequest(t, ts.URL, endpoint, map[string]any{
					"stop": pk.stop, "stop_token_ids": stopIDs, "ignore_eos": true, "skip_special_tokens": c.skipSpecial, "include_stop_str_in_output": c.include,
				})
				var stops []string
				switch s := pk.stop.(type) {
				case string:
					stops = []string{s}
				case []string:
					stops = s
				}
				want := expectStop(t, p, base, stops, pk.stopIDs, c.skipSpecial, c.include)
				if !slices.Equal(got.tokens, want.tokens) || got.text != want.text || got.finish != want.finish ||
					got.stopReason != want.stopReason || got.usage != want.usage || !closeLogProbs(got.logprobs, want.logprobs, 0) {
					t.Errorf("stop %q, stop_token_ids %v:\n got %+v\nwant %+v\nunstopped %+v", pk.stop, pk.stopIDs, got, want, base)
				}
				switch _, isString := want.stopReason.(string); {
				case c.ends == "string" && !isString, c.ends == "token" && (isString || want.stopReason == nil), c.ends == "" && want.stopReason != nil:
					t.Errorf("the case should end on %q, ends with %+v", c.ends, want)
				}
				if c.ends == "string" && len(want.tokens) == len(base.tokens) {
					t.Errorf("nothing cut: %+v", want)
				}
				if c.midToken {
					if s, ok := want.stopReason.(string); !ok || len(want.text) == 0 {
						t.Errorf("no stop string cut: %+v", want)
					} else if b, _ := p.TokenBytes(want.tokens[len(want.tokens)-1]); len(b) <= len(s) {
						t.Errorf("the cut does not fall inside token %q", b)
					}
				}
			})
		}
	}
}

// TestStopErrors checks that a stop field that is not a string or a list
// of strings is a 400 on both endpoints.
func TestStopErrors(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	for _, stop := range []string{`3`, `true`, `{"a": 1}`, `["a", 3]`, `["a", null]`, `[["a"]]`} {
		for _, body := range []string{
			`{"prompt": [1, 2], "max_tokens": 2, "stop": ` + stop + `}`,
			`{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2, "stop": ` + stop + `}`,
		} {
			path := "/v1/completions"
			if bytes.Contains([]byte(body), []byte("messages")) {
				path = "/v1/chat/completions"
			}
			code, resp := post(t, ts.URL, path, body)
			if code != 400 {
				t.Errorf("%s stop %s: status %d: %v", path, stop, code, resp)
				continue
			}
			if e := resp["error"].(map[string]any); e["param"] != "stop" {
				t.Errorf("%s stop %s: error %v", path, stop, e)
			}
		}
	}
	// Many stop strings are fine.
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("stop %d", i)
	}
	if code, resp := post(t, ts.URL, "/v1/completions", map[string]any{"prompt": []int{1, 2}, "max_tokens": 2, "stop": many}); code != 200 {
		t.Errorf("100 stop strings: status %d: %v", code, resp)
	}
}

// scripted samples fixed tokens, and decodes as a tokenizer that cleans up
// tokenization spaces (" ," becomes ",").
type scripted struct {
	*local.Policy
	tokens []int
}

func (s *scripted) Sample(_ context.Context, reqs []policy.Request) ([]policy.Sample, error) {
	out := make([]policy.Sample, len(reqs))
	for i := range out {
		out[i] = policy.Sample{Tokens: slices.Clone(s.tokens), LogProbs: make([]float64, len(s.tokens)), Finish: policy.FinishLength}
	}
	return out, nil
}

func (s *scripted) Decode(ctx context.Context, ids []int) (string, error) {
	text, err := s.Policy.Decode(ctx, ids)
	return strings.ReplaceAll(text, " ,", ","), err
}

// TestStopStringDecoderRewrites checks the cut when the decoder rewrites
// the stop string away: the tokens' bytes are cut instead.
func TestStopStringDecoderRewrites(t *testing.T) {
	toks := []int{'a', 'b', ' ', ',', 'c', ' ', ',', 'd'}
	ts, _ := start(t, &scripted{Policy: tiny(t), tokens: toks}, openaiapi.Options{})
	for _, c := range []struct {
		stop    string
		include bool
		text    string
		keep    int
	}{
		{"b ,", false, "a", 4},
		{"b ,", true, "ab ,", 4},
		{"b,", false, "ab,c,d", 8}, // the bytes never spell it: not a stop
		{"c", false, "ab,", 5},     // the decoded text is cut where it has the stop string
	} {
		code, resp := post(t, ts.URL, "/v1/completions", map[string]any{
			"prompt": []int{'x'}, "max_tokens": len(toks), "stop": c.stop, "include_stop_str_in_output": c.include, "return_token_ids": true,
		})
		if code != 200 {
			t.Fatalf("status %d: %v", code, resp)
		}
		ch := resp["choices"].([]any)[0].(map[string]any)
		if ch["text"] != c.text || !slices.Equal(ids(ch["token_ids"]), toks[:c.keep]) {
			t.Errorf("stop %q include %v: text %q, tokens %v; want %q, %v", c.stop, c.include, ch["text"], ids(ch["token_ids"]), c.text, toks[:c.keep])
		}
	}
}
