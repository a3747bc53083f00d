package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/server/openaiapi"
)

// streamPost sends body to path and reads the reply as a server-sent event
// stream: it checks the framing (every event "data: ...", blank-line
// separated, [DONE] last and only last) and returns the events' JSON
// objects.
func streamPost(t *testing.T, url, path string, body map[string]any) []map[string]any {
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
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	text := string(raw)
	if !strings.HasSuffix(text, "data: [DONE]\n\n") {
		t.Fatalf("the stream does not end with [DONE]: ...%q", text[max(0, len(text)-80):])
	}
	events := strings.Split(strings.TrimSuffix(text, "\n\n"), "\n\n")
	var out []map[string]any
	for i, ev := range events {
		payload, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(payload, "\n") {
			t.Fatalf("event %d is not one data line: %q", i, ev)
		}
		if payload == "[DONE]" {
			if i != len(events)-1 {
				t.Fatalf("[DONE] at event %d of %d", i, len(events))
			}
			break
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, payload)
		}
		out = append(out, m)
	}
	return out
}

// streamed is what the chunks of one choice add up to.
type streamed struct {
	chunks         int
	text           string
	finish, stop   any
	tokenIDs       []int
	promptTokenIDs []int
	logprobs       map[string][]any // completions: the lists concatenated
	content        []any            // chat: logprobs.content concatenated
	usage          []any            // each chunk's usage field, when present
}

// gather checks the chunks' common fields and sums them up per choice.
func gather(t *testing.T, events []map[string]any, object string, includeUsage bool, want map[string]any) (map[int]*streamed, map[string]any) {
	t.Helper()
	choices := map[int]*streamed{}
	var final map[string]any
	for i, ev := range events {
		if ev["object"] != object || ev["model"] != want["model"] {
			t.Fatalf("event %d: object %v, model %v", i, ev["object"], ev["model"])
		}
		if ev["id"] != events[0]["id"] || ev["created"] != events[0]["created"] {
			t.Errorf("event %d: id %v created %v, first event %v %v", i, ev["id"], ev["created"], events[0]["id"], events[0]["created"])
		}
		u, hasUsage := ev["usage"]
		chs := ev["choices"].([]any)
		if len(chs) == 0 {
			if final != nil || i != len(events)-1 {
				t.Fatalf("event %d has no choices and is not the last", i)
			}
			final = u.(map[string]any)
			continue
		}
		if len(chs) != 1 {
			t.Fatalf("event %d has %d choices", i, len(chs))
		}
		if hasUsage != includeUsage {
			t.Errorf("event %d: usage present %v, want %v", i, hasUsage, includeUsage)
		}
		ch := chs[0].(map[string]any)
		k := int(ch["index"].(float64))
		st := choices[k]
		if st == nil {
			st = &streamed{logprobs: map[string][]any{}}
			choices[k] = st
		}
		if st.finish != nil {
			t.Fatalf("event %d: choice %d has a chunk after its finish_reason", i, k)
		}
		if hasUsage {
			st.usage = append(st.usage, u)
		}
		st.chunks++
		st.finish, st.stop = ch["finish_reason"], ch["stop_reason"]
		if st.finish == nil && st.stop != nil {
			t.Errorf("event %d: stop_reason %v before the finish", i, st.stop)
		}
		st.tokenIDs = append(st.tokenIDs, ids(ch["token_ids"])...)
		if p, ok := ch["prompt_token_ids"]; ok {
			if st.promptTokenIDs != nil {
				t.Errorf("event %d: prompt_token_ids again", i)
			}
			st.promptTokenIDs = ids(p)
		}
		if p, ok := ev["prompt_token_ids"]; ok {
			if i != 0 {
				t.Errorf("event %d: prompt_token_ids after the first chunk", i)
			}
			st.promptTokenIDs = ids(p)
		}
		if object == "text_completion" {
			st.text += ch["text"].(string)
			if lp, ok := ch["logprobs"].(map[string]any); ok {
				for _, f := range []string{"text_offset", "token_logprobs", "tokens", "top_logprobs"} {
					st.logprobs[f] = append(st.logprobs[f], lp[f].([]any)...)
				}
			}
			continue
		}
		delta := ch["delta"].(map[string]any)
		if st.chunks == 1 {
			if !reflect.DeepEqual(delta, map[string]any{"role": "assistant", "content": ""}) || ch["logprobs"] != nil {
				t.Errorf("event %d: first chunk of choice %d: delta %v, logprobs %v", i, k, delta, ch["logprobs"])
			}
			continue
		}
		if _, ok := delta["role"]; ok || len(delta) > 1 {
			t.Errorf("event %d: delta %v", i, delta)
		}
		if c, ok := delta["content"]; ok {
			st.text += c.(string)
		}
		if lp, ok := ch["logprobs"].(map[string]any); ok {
			st.content = append(st.content, lp["content"].([]any)...)
		}
	}
	if includeUsage != (final != nil) {
		t.Fatalf("usage chunk %v with include_usage %v", final, includeUsage)
	}
	return choices, final
}

// letters is a stop set that the random tiny model hits within a few dozen
// tokens.
var letters = func() []int {
	var l []int
	for c := 'a'; c <= 'z'; c++ {
		l = append(l, int(c))
	}
	return l
}()

// stopped reports whether some choice of a reply ended on a stop_token_ids
// token.
func stopped(reply map[string]any) bool {
	for _, c := range reply["choices"].([]any) {
		if c.(map[string]any)["stop_reason"] != nil {
			return true
		}
	}
	return false
}

// stoppedOnString reports whether a choice of reply ended on a stop string.
func stoppedOnString(reply map[string]any) bool {
	for _, c := range reply["choices"].([]any) {
		if _, ok := c.(map[string]any)["stop_reason"].(string); ok {
			return true
		}
	}
	return false
}

// TestStreamCompletions checks /v1/completions with stream: true against
// the same request unstreamed.
func TestStreamCompletions(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{Model: "tiny-served"})
	pr := prompts(t, p, 2)
	usage := map[string]any{"include_usage": true}
	cases := []struct {
		name string
		body map[string]any
	}{
		{"text, n = 2, usage", map[string]any{"prompt": "Once upon a time", "n": 2, "seed": 5, "max_tokens": 24, "stream_options": usage}},
		{"ids, n = 2, logprobs, stops, token ids, usage", map[string]any{
			"prompt": pr, "n": 2, "seed": 7, "max_tokens": 40, "logprobs": 0, "return_token_ids": true,
			"stop_token_ids": letters, "stream_options": usage}},
		{"stops included", map[string]any{
			"prompt": pr, "n": 2, "seed": 7, "max_tokens": 40, "logprobs": 0, "include_stop_str_in_output": true,
			"stop_token_ids": letters, "stream_options": usage}},
		{"n = 2, logprobs, no usage", map[string]any{"prompt": pr[0], "n": 2, "seed": 8, "max_tokens": 16, "logprobs": 0}},
		{"echo with logprobs and prompt_logprobs", map[string]any{
			"prompt": []string{"ab", "xyz"}, "n": 2, "seed": 9, "max_tokens": 6, "echo": true, "logprobs": 0,
			"prompt_logprobs": 0, "return_token_ids": true, "stream_options": usage}},
		{"echo only", map[string]any{"prompt": pr[1], "max_tokens": 0, "echo": true, "logprobs": 0, "return_token_ids": true}},
		{"stop strings, top logprobs, usage", map[string]any{
			"prompt": pr, "n": 2, "seed": 7, "max_tokens": 40, "logprobs": 2, "return_token_ids": true,
			"stop": []string{"9", "y", "t"}, "stream_options": usage}},
		{"stop strings included", map[string]any{
			"prompt": pr, "n": 2, "seed": 7, "max_tokens": 40, "include_stop_str_in_output": true,
			"stop": []string{"9", "y", "t"}, "stream_options": usage}},
		{"special tokens kept, stop included", map[string]any{
			"prompt": pr[0], "n": 2, "seed": 11, "max_tokens": 30, "skip_special_tokens": false,
			"include_stop_str_in_output": true, "return_token_ids": true, "stream_options": usage}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := maps.Clone(c.body)
			delete(plain, "stream_options")
			code, want := post(t, ts.URL, "/v1/completions", plain)
			if code != 200 {
				t.Fatalf("status %d: %v", code, want)
			}
			if _, ok := c.body["stop_token_ids"]; ok && !stopped(want) {
				t.Fatalf("no choice stopped on a stop token: the case does not test stops")
			}
			if _, ok := c.body["stop"]; ok && !stoppedOnString(want) {
				t.Fatalf("no choice stopped on a stop string: the case does not test them: %v", want["choices"])
			}
			body := maps.Clone(c.body)
			body["stream"] = true
			_, includeUsage := body["stream_options"]
			events := streamPost(t, ts.URL, "/v1/completions", body)
			got, final := gather(t, events, "text_completion", includeUsage, want)
			if !strings.HasPrefix(events[0]["id"].(string), "cmpl-") {
				t.Errorf("id %v", events[0]["id"])
			}
			wantChoices := want["choices"].([]any)
			if len(got) != len(wantChoices) {
				t.Fatalf("%d choices streamed, %d unstreamed", len(got), len(wantChoices))
			}
			totalTokens := 0
			for k, wc := range wantChoices {
				w, g := wc.(map[string]any), got[k]
				if g == nil {
					t.Fatalf("choice %d not streamed", k)
				}
				if g.text != w["text"] {
					t.Errorf("choice %d: streamed text %q, unstreamed %q", k, g.text, w["text"])
				}
				if g.finish != w["finish_reason"] || g.stop != w["stop_reason"] {
					t.Errorf("choice %d: finish %v stop %v, unstreamed %v %v", k, g.finish, g.stop, w["finish_reason"], w["stop_reason"])
				}
				if wt, ok := w["token_ids"]; ok && wt != nil {
					if !slices.Equal(g.tokenIDs, ids(wt)) || !slices.Equal(g.promptTokenIDs, ids(w["prompt_token_ids"])) {
						t.Errorf("choice %d: token ids %v / %v, unstreamed %v / %v", k, g.tokenIDs, g.promptTokenIDs, wt, w["prompt_token_ids"])
					}
					if n := max(1, len(g.tokenIDs)); g.chunks != n {
						t.Errorf("choice %d: %d chunks for %d tokens", k, g.chunks, len(g.tokenIDs))
					}
					totalTokens += len(g.tokenIDs)
				} else if g.tokenIDs != nil || g.promptTokenIDs != nil {
					t.Errorf("choice %d: token ids without return_token_ids", k)
				}
				if wl, ok := w["logprobs"].(map[string]any); ok {
					for f, v := range wl {
						if !reflect.DeepEqual(g.logprobs[f], v) {
							t.Errorf("choice %d: streamed %s %v\nunstreamed %v", k, f, g.logprobs[f], v)
						}
					}
				} else if len(g.logprobs) > 0 {
					t.Errorf("choice %d: logprobs without logprobs", k)
				}
				for _, u := range g.usage {
					if u != nil {
						t.Errorf("choice %d: usage %v without continuous_usage_stats", k, u)
					}
				}
			}
			if final != nil && !reflect.DeepEqual(final, want["usage"]) {
				t.Errorf("usage chunk %v, unstreamed %v", final, want["usage"])
			}
			if _, ok := body["return_token_ids"]; ok && final != nil && int(final["completion_tokens"].(float64)) != totalTokens {
				t.Errorf("usage %v for %d streamed tokens", final, totalTokens)
			}
		})
	}
}

// TestStreamChat checks /v1/chat/completions with stream: true against the
// same request unstreamed.
func TestStreamChat(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{Model: "tiny-served"})
	msgs := []map[string]string{{"role": "user", "content": "Turn 1:\n#P_O# é"}}
	usage := map[string]any{"include_usage": true}
	cases := []struct {
		name string
		body map[string]any
	}{
		{"n = 2, usage", map[string]any{"messages": msgs, "n": 2, "seed": 3, "max_tokens": 40, "stream_options": usage}},
		{"n = 2, logprobs, token ids, usage", map[string]any{
			"messages": msgs, "n": 2, "seed": 4, "max_completion_tokens": 40, "logprobs": true, "return_token_ids": true, "stream_options": usage}},
		{"n = 2, logprobs, stops, no usage", map[string]any{
			"messages": msgs, "n": 2, "seed": 6, "max_tokens": 40, "logprobs": true, "stop_token_ids": letters}},
		{"stops included, token ids", map[string]any{
			"messages": msgs, "n": 2, "seed": 6, "max_tokens": 40, "include_stop_str_in_output": true, "return_token_ids": true,
			"stop_token_ids": letters}},
		{"stop strings, top logprobs, usage", map[string]any{
			"messages": msgs, "n": 2, "seed": 6, "max_tokens": 40, "logprobs": true, "top_logprobs": 2,
			"stop": []string{"9", "y", "t"}, "stream_options": usage}},
		{"special tokens kept", map[string]any{
			"messages": msgs, "n": 2, "seed": 12, "max_tokens": 30, "skip_special_tokens": false, "include_stop_str_in_output": true,
			"return_token_ids": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := maps.Clone(c.body)
			delete(plain, "stream_options")
			code, want := post(t, ts.URL, "/v1/chat/completions", plain)
			if code != 200 {
				t.Fatalf("status %d: %v", code, want)
			}
			if _, ok := c.body["stop_token_ids"]; ok && !stopped(want) {
				t.Fatalf("no choice stopped on a stop token: the case does not test stops")
			}
			if _, ok := c.body["stop"]; ok && !stoppedOnString(want) {
				t.Fatalf("no choice stopped on a stop string: the case does not test them: %v", want["choices"])
			}
			body := maps.Clone(c.body)
			body["stream"] = true
			_, includeUsage := body["stream_options"]
			events := streamPost(t, ts.URL, "/v1/chat/completions", body)
			got, final := gather(t, events, "chat.completion.chunk", includeUsage, want)
			if !strings.HasPrefix(events[0]["id"].(string), "chatcmpl-") {
				t.Errorf("id %v", events[0]["id"])
			}
			wantChoices := want["choices"].([]any)
			if len(got) != len(wantChoices) {
				t.Fatalf("%d choices streamed, %d unstreamed", len(got), len(wantChoices))
			}
			for k, wc := range wantChoices {
				w, g := wc.(map[string]any), got[k]
				if g == nil {
					t.Fatalf("choice %d not streamed", k)
				}
				if content := w["message"].(map[string]any)["content"]; g.text != content {
					t.Errorf("choice %d: streamed text %q, unstreamed %q", k, g.text, content)
				}
				if g.finish != w["finish_reason"] || g.stop != w["stop_reason"] {
					t.Errorf("choice %d: finish %v stop %v, unstreamed %v %v", k, g.finish, g.stop, w["finish_reason"], w["stop_reason"])
				}
				if wt, ok := w["token_ids"]; ok && wt != nil {
					if !slices.Equal(g.tokenIDs, ids(wt)) {
						t.Errorf("choice %d: token ids %v, unstreamed %v", k, g.tokenIDs, wt)
					}
					if g.chunks != 1+max(1, len(g.tokenIDs)) {
						t.Errorf("choice %d: %d chunks for %d tokens", k, g.chunks, len(g.tokenIDs))
					}
					if k == 0 && !slices.Equal(g.promptTokenIDs, ids(want["prompt_token_ids"])) {
						t.Errorf("prompt_token_ids %v, unstreamed %v", g.promptTokenIDs, want["prompt_token_ids"])
					}
				} else if g.tokenIDs != nil || g.promptTokenIDs != nil {
					t.Errorf("choice %d: token ids without return_token_ids", k)
				}
				if wl, ok := w["logprobs"].(map[string]any); ok {
					if !reflect.DeepEqual(g.content, wl["content"]) {
						t.Errorf("choice %d: streamed logprobs %v\nunstreamed %v", k, g.content, wl["content"])
					}
				} else if g.content != nil {
					t.Errorf("choice %d: logprobs without logprobs", k)
				}
			}
			if final != nil && !reflect.DeepEqual(final, want["usage"]) {
				t.Errorf("usage chunk %v, unstreamed %v", final, want["usage"])
			}
		})
	}
}

// TestStreamContinuousUsage checks continuous_usage_stats: every chunk has
// its choice's usage so far.
func TestStreamContinuousUsage(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	opts := map[string]any{"include_usage": true, "continuous_usage_stats": true}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		body := map[string]any{"n": 2, "seed": 1, "max_tokens": 12, "stream": true, "stream_options": opts, "return_token_ids": true}
		object := "text_completion"
		if path == "/v1/completions" {
			body["prompt"] = "abc"
		} else {
			body["messages"] = []map[string]string{{"role": "user", "content": "hi"}}
			object = "chat.completion.chunk"
		}
		events := streamPost(t, ts.URL, path, body)
		got, final := gather(t, events, object, true, map[string]any{"model": events[0]["model"]})
		prompt := final["prompt_tokens"].(float64)
		sum := 0.0
		for k, g := range got {
			var last float64
			for j, u := range g.usage {
				m := u.(map[string]any)
				c := m["completion_tokens"].(float64)
				if m["prompt_tokens"] != prompt || m["total_tokens"] != prompt+c || c < last || c > float64(j+1) {
					t.Errorf("%s choice %d chunk %d: usage %v", path, k, j, m)
				}
				last = c
			}
			if last != float64(len(g.tokenIDs)) {
				t.Errorf("%s choice %d: usage ends at %v for %d tokens", path, k, last, len(g.tokenIDs))
			}
			sum += last
		}
		if sum != final["completion_tokens"] {
			t.Errorf("%s: choices' usage adds up to %v, final %v", path, sum, final)
		}
	}
}

// failing is a policy whose Sample always fails.
type failing struct{ *local.Policy }

func (failing) Sample(context.Context, []policy.Request) ([]policy.Sample, error) {
	return nil, errors.New("the accelerator caught fire")
}

// TestStreamErrors checks the errors of streamed requests: before the
// stream starts, plain JSON replies; after, an error event and [DONE].
func TestStreamErrors(t *testing.T) {
	ts, _ := start(t, failing{tiny(t)}, openaiapi.Options{})
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/completions", map[string]any{"prompt": "abc", "stream": true, "max_tokens": 4, "n": 0}},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "stream": true, "top_p": 0}},
		{"/v1/completions", map[string]any{"prompt": "abc", "stream_options": map[string]any{"include_usage": true}}},
	} {
		data, _ := json.Marshal(c.body)
		resp, err := http.Post(ts.URL+c.path, "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e map[string]any
		if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(raw, &e) != nil || e["error"] == nil {
			t.Errorf("%s %v: status %d, %s: %s", c.path, c.body, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
	}

	// The policy fails after the stream started.
	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/completions", map[string]any{"prompt": "abc", "stream": true, "max_tokens": 4}},
		{"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "stream": true}},
	} {
		events := streamPost(t, ts.URL, c.path, c.body)
		if len(events) != 1 {
			t.Fatalf("%s: %d events before [DONE], want the error alone: %v", c.path, len(events), events)
		}
		e, _ := events[0]["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, "caught fire") || e["code"] != 500.0 || e["type"] != "server_error" {
			t.Errorf("%s: error event %v", c.path, events[0])
		}
	}

	// go-openai reports it from Recv.
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = ts.URL + "/v1"
	stream, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}, MaxCompletionTokens: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := stream.Recv(); err == nil || !strings.Contains(err.Error(), "caught fire") {
		t.Errorf("go-openai Recv after a failure: %v", err)
	}
}

// TestGoOpenAIStream reads streams with go-openai's stream readers: the
// text of each choice and the usage are the unstreamed ones.
func TestGoOpenAIStream(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{APIKey: "sesame", Model: "tiny-served"})
	cfg := openai.DefaultConfig("sesame")
	cfg.BaseURL = ts.URL + "/v1"
	oc := openai.NewClientWithConfig(cfg)
	ctx := context.Background()
	seed := 42

	chatReq := openai.ChatCompletionRequest{
		Model:               "tiny-served",
		Messages:            []openai.ChatCompletionMessage{{Role: "user", Content: "Turn 1:\n#P_O#"}},
		MaxCompletionTokens: 24, Temperature: 1, Seed: &seed, N: 2, LogProbs: true,
	}
	chat, err := oc.CreateChatCompletion(ctx, chatReq)
	if err != nil {
		t.Fatal(err)
	}
	chatReq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	cs, err := oc.CreateChatCompletionStream(ctx, chatReq)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	texts := map[int]string{}
	finish := map[int]openai.FinishReason{}
	lps := map[int][]openai.ChatCompletionTokenLogprob{}
	var gotUsage *openai.Usage
	for {
		chunk, err := cs.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Object != "chat.completion.chunk" || !strings.HasPrefix(chunk.ID, "chatcmpl-") || chunk.Model != "tiny-served" {
			t.Errorf("chunk %+v", chunk)
		}
		if chunk.Usage != nil {
			gotUsage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			texts[ch.Index] += ch.Delta.Content
			if ch.FinishReason != "" {
				finish[ch.Index] = ch.FinishReason
			}
			if ch.Logprobs != nil {
				lps[ch.Index] = append(lps[ch.Index], ch.Logprobs.Content...)
			}
		}
	}
	for _, ch := range chat.Choices {
		if texts[ch.Index] != ch.Message.Content || finish[ch.Index] != ch.FinishReason {
			t.Errorf("chat choice %d streamed %q (%s), unstreamed %q (%s)", ch.Index, texts[ch.Index], finish[ch.Index], ch.Message.Content, ch.FinishReason)
		}
		// The stream's logprobs have a type of their own in go-openai.
		if g, w := lps[ch.Index], ch.LogProbs.Content; len(g) != len(w) {
			t.Errorf("chat choice %d: %d streamed logprobs, %d unstreamed", ch.Index, len(g), len(w))
		} else {
			for j := range g {
				b := make([]byte, len(g[j].Bytes))
				for i, x := range g[j].Bytes {
					b[i] = byte(x)
				}
				if g[j].Token != w[j].Token || g[j].Logprob != w[j].LogProb || !bytes.Equal(b, w[j].Bytes) {
					t.Errorf("chat choice %d token %d: streamed logprob %+v, unstreamed %+v", ch.Index, j, g[j], w[j])
				}
			}
		}
	}
	if len(texts) != 2 || gotUsage == nil || *gotUsage != chat.Usage {
		t.Errorf("%d choices streamed, usage %+v, unstreamed %+v", len(texts), gotUsage, chat.Usage)
	}

	compReq := openai.CompletionRequest{
		Model: "tiny-served", Prompt: "Once upon a time", MaxTokens: 24, Temperature: 1, Seed: &seed, N: 2,
	}
	comp, err := oc.CreateCompletion(ctx, compReq)
	if err != nil {
		t.Fatal(err)
	}
	compReq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	ps, err := oc.CreateCompletionStream(ctx, compReq)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	texts = map[int]string{}
	finishes := map[int]string{}
	gotUsage = nil
	for {
		chunk, err := ps.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Usage != nil {
			gotUsage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			texts[ch.Index] += ch.Text
			if ch.FinishReason != "" {
				finishes[ch.Index] = ch.FinishReason
			}
		}
	}
	for _, ch := range comp.Choices {
		if texts[ch.Index] != ch.Text || finishes[ch.Index] != ch.FinishReason {
			t.Errorf("completion choice %d streamed %q (%s), unstreamed %q (%s)", ch.Index, texts[ch.Index], finishes[ch.Index], ch.Text, ch.FinishReason)
		}
	}
	if len(texts) != 2 || gotUsage == nil || *gotUsage != *comp.Usage {
		t.Errorf("%d choices streamed, usage %+v, unstreamed %+v", len(texts), gotUsage, comp.Usage)
	}
}
