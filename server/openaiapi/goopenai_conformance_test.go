package openaiapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// TestGoOpenAIConformance makes the calls of calls.mjs (see
// openai_node_test.go) with go-openai, an independent Go client, one
// subtest per call, named as calls.mjs names them.
//
// go-openai omits zero values from requests (omitempty): temperature 0,
// logprobs 0 and top_logprobs 0 cannot be sent. Greedy decoding is asked
// for with a tiny top_p instead (it keeps the most likely token only), and
// echo with logprobs uses logprobs 1.
func TestGoOpenAIConformance(t *testing.T) {
	goOpenAICalls(t, startConformance(t))
}

// goOpenAICalls makes the calls against c's server.
func goOpenAICalls(t *testing.T, c *conformance) {
	oc := c.goClient(c.key)
	ctx := context.Background()
	const prompt = "Once upon a time"
	hello := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Hello there"}}
	seed := func(s int) *int { return &s }

	t.Run("models.list", func(t *testing.T) {
		ms, err := oc.ListModels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ms.Models, func(m openai.Model) bool { return m.ID == c.model })
		if i < 0 {
			t.Fatalf("models %+v lack %q", ms.Models, c.model)
		}
		if m := ms.Models[i]; m.Object != "model" || m.OwnedBy == "" || m.CreatedAt == 0 {
			t.Errorf("model %+v", m)
		}
	})

	t.Run("models.retrieve", func(t *testing.T) {
		m, err := oc.GetModel(ctx, c.model)
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != c.model || m.Object != "model" || m.OwnedBy == "" {
			t.Errorf("model %+v", m)
		}
		_, err = oc.GetModel(ctx, "no-such-model")
		wantStatus(t, err, http.StatusNotFound, "GetModel of an unknown model")
	})

	t.Run("completions.basic", func(t *testing.T) {
		req := openai.CompletionRequest{Model: c.model, Prompt: prompt, MaxTokens: 8, TopP: 1e-6, Seed: seed(1)}
		a, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, a, 1, 8)
		req.Seed = seed(2)
		b, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, b, 1, 8)
		if a.Choices[0].Text != b.Choices[0].Text {
			t.Errorf("top_p 1e-6 is not greedy: %q vs %q", a.Choices[0].Text, b.Choices[0].Text)
		}
		if a.ID == b.ID {
			t.Errorf("two completions share the id %q", a.ID)
		}
	})

	t.Run("completions.multi_prompt_n2", func(t *testing.T) {
		r, err := oc.CreateCompletion(ctx, openai.CompletionRequest{Model: c.model, Prompt: []string{prompt, "The cat sat on"},
			N: 2, MaxTokens: 6, Temperature: 1, Seed: seed(4)})
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, r, 4, 6)
		// Prompt i's choices are 2i and 2i+1, and choice c of every prompt
		// samples with seed+c (doc.go).
		one, err := oc.CreateCompletion(ctx, openai.CompletionRequest{Model: c.model, Prompt: "The cat sat on", MaxTokens: 6, Temperature: 1, Seed: seed(4)})
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.Choices {
			if ch.Index == 2 && ch.Text != one.Choices[0].Text {
				t.Errorf("choice 2 %q is not the second prompt's seed-4 completion %q", ch.Text, one.Choices[0].Text)
			}
		}
	})

	t.Run("completions.logprobs", func(t *testing.T) {
		r, err := oc.CreateCompletion(ctx, openai.CompletionRequest{Model: c.model, Prompt: prompt, MaxTokens: 6, Temperature: 1, Seed: seed(5), LogProbs: 2})
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, r, 1, 6)
		lp, n := r.Choices[0].LogProbs, r.Usage.CompletionTokens
		if len(lp.Tokens) != n || len(lp.TokenLogprobs) != n || len(lp.TopLogprobs) != n || len(lp.TextOffset) != n {
			t.Fatalf("logprobs of %d tokens: %d tokens, %d token_logprobs, %d top_logprobs, %d text_offset",
				n, len(lp.Tokens), len(lp.TokenLogprobs), len(lp.TopLogprobs), len(lp.TextOffset))
		}
		for i, top := range lp.TopLogprobs {
			if len(top) < 1 || len(top) > 3 {
				t.Errorf("top_logprobs[%d] %v: %d entries, want 1..3 for logprobs 2", i, top, len(top))
			}
			best := float32(math.Inf(-1))
			for _, v := range top {
				best = max(best, v)
			}
			if lp.TokenLogprobs[i] > 1e-6 || best < lp.TokenLogprobs[i]-1e-4 {
				t.Errorf("token %d: logprob %v, top_logprobs %v", i, lp.TokenLogprobs[i], top)
			}
			if i > 0 && lp.TextOffset[i] < lp.TextOffset[i-1] {
				t.Errorf("text_offset %v decreases", lp.TextOffset)
			}
		}
		if n > 0 && lp.TextOffset[0] != 0 {
			t.Errorf("text_offset[0] = %d without echo", lp.TextOffset[0])
		}
	})

	t.Run("completions.stop", func(t *testing.T) {
		// Seeded sampling (the same seed samples the same tokens) rather
		// than greedy: a random model's greedy text repeats one token.
		req := openai.CompletionRequest{Model: c.model, Prompt: prompt, MaxTokens: 24, Temperature: 1, Seed: seed(6)}
		full, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, full, 1, 24)
		text := full.Choices[0].Text
		req.Stop = stopStrings(t, text)
		r, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, r, 1, 24)
		checkStopped(t, text, req.Stop, r.Choices[0].Text, r.Choices[0].FinishReason)
	})

	t.Run("completions.echo", func(t *testing.T) {
		req := openai.CompletionRequest{Model: c.model, Prompt: prompt, MaxTokens: 4, Temperature: 1, Seed: seed(7)}
		plain, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req.Echo = true
		r, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, r, 1, 4)
		if want := prompt + plain.Choices[0].Text; r.Choices[0].Text != want {
			t.Errorf("echo text %q, want %q", r.Choices[0].Text, want)
		}
	})

	t.Run("completions.echo_logprobs1", func(t *testing.T) {
		r, err := oc.CreateCompletion(ctx, openai.CompletionRequest{Model: c.model, Prompt: prompt, MaxTokens: 4, Temperature: 1, Seed: seed(7), Echo: true, LogProbs: 1})
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, r, 1, 4)
		lp, n := r.Choices[0].LogProbs, r.Usage.PromptTokens+r.Usage.CompletionTokens
		if !strings.HasPrefix(r.Choices[0].Text, prompt) || len(lp.Tokens) != n || len(lp.TokenLogprobs) != n || len(lp.TextOffset) != n {
			t.Errorf("echo with logprobs 1: text %q, %d tokens, %d token_logprobs, %d text_offset for %d prompt + completion tokens",
				r.Choices[0].Text, len(lp.Tokens), len(lp.TokenLogprobs), len(lp.TextOffset), n)
		}
	})

	t.Run("completions.stream_usage", func(t *testing.T) {
		req := openai.CompletionRequest{Model: c.model, Prompt: prompt, MaxTokens: 10, Temperature: 1, Seed: seed(8)}
		ref, err := oc.CreateCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkCompletion(t, ref, 1, 10)
		req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		st, err := oc.CreateCompletionStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var (
			text, finish, id string
			usage            *openai.Usage
			chunks           int
		)
		for {
			ch, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("after %d chunks: %v", chunks, err)
			}
			chunks++
			if usage != nil {
				t.Fatalf("a chunk after the usage chunk: %+v", ch)
			}
			if ch.Object != "text_completion" || ch.Model != c.model || ch.ID == "" || (id != "" && ch.ID != id) {
				t.Fatalf("chunk %+v (first id %q)", ch, id)
			}
			id = ch.ID
			if ch.Usage != nil {
				if len(ch.Choices) != 0 {
					t.Errorf("the usage chunk has choices %+v", ch.Choices)
				}
				usage = ch.Usage
				continue
			}
			for _, cc := range ch.Choices {
				if cc.Index != 0 || finish != "" {
					t.Fatalf("chunk choice %+v after finish_reason %q", cc, finish)
				}
				text += cc.Text
				finish = cc.FinishReason
			}
		}
		if text == "" || text != ref.Choices[0].Text || finish != ref.Choices[0].FinishReason {
			t.Errorf("streamed %q (finish %q), want the non-streamed %q (finish %q)", text, finish, ref.Choices[0].Text, ref.Choices[0].FinishReason)
		}
		if usage == nil {
			t.Fatal("no usage chunk with include_usage")
		}
		if usage.PromptTokens != ref.Usage.PromptTokens || usage.CompletionTokens != ref.Usage.CompletionTokens || usage.TotalTokens != ref.Usage.TotalTokens {
			t.Errorf("usage %+v, want %+v", *usage, *ref.Usage)
		}
	})

	t.Run("chat.basic", func(t *testing.T) {
		r, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 12, Seed: seed(9)})
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 1, 12)
	})

	t.Run("chat.multi_turn", func(t *testing.T) {
		last := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "And now go right."}
		r, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, MaxCompletionTokens: 8, Seed: seed(10),
			Messages: []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: "You play a grid game. Answer with one move."},
				{Role: openai.ChatMessageRoleUser, Content: "Turn 1: you are at the start."},
				{Role: openai.ChatMessageRoleAssistant, Content: "Left"},
				last,
			}})
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 1, 8)
		one, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, MaxCompletionTokens: 8, Seed: seed(10),
			Messages: []openai.ChatCompletionMessage{last}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Usage.PromptTokens <= one.Usage.PromptTokens+10 {
			t.Errorf("the history is not in the prompt: %d prompt tokens with it, %d without", r.Usage.PromptTokens, one.Usage.PromptTokens)
		}
	})

	t.Run("chat.n2_seed", func(t *testing.T) {
		req := openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 8, Temperature: 1, N: 2, Seed: seed(11)}
		r, err := oc.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 2, 8)
		// Choice i of an n > 1 request is the n = 1 request with seed+i.
		for _, ch := range r.Choices {
			req1 := req
			req1.N, req1.Seed = 0, seed(11+ch.Index)
			one, err := oc.CreateChatCompletion(ctx, req1)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Message.Content != one.Choices[0].Message.Content {
				t.Errorf("choice %d %q is not the seed %d reply %q", ch.Index, ch.Message.Content, 11+ch.Index, one.Choices[0].Message.Content)
			}
		}
	})

	t.Run("chat.logprobs", func(t *testing.T) {
		r, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 6, Seed: seed(12),
			LogProbs: true, TopLogProbs: 2})
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 1, 6)
		lp := r.Choices[0].LogProbs
		if lp == nil || len(lp.Content) != r.Usage.CompletionTokens {
			t.Fatalf("logprobs %+v for %d tokens", lp, r.Usage.CompletionTokens)
		}
		for i, e := range lp.Content {
			if e.LogProb > 1e-6 || len(e.TopLogProbs) != 2 {
				t.Errorf("content[%d] %+v: want a log-prob and 2 top_logprobs", i, e)
				continue
			}
			if top := e.TopLogProbs; top[0].LogProb < top[1].LogProb || top[0].LogProb < e.LogProb-1e-4 || top[0].LogProb > 1e-6 {
				t.Errorf("content[%d]: logprob %v, top_logprobs %+v", i, e.LogProb, top)
			}
		}
	})

	t.Run("chat.stop", func(t *testing.T) {
		req := openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 24, Temperature: 1, Seed: seed(13)}
		full, err := oc.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, full, c.model, 1, 24)
		text := full.Choices[0].Message.Content
		req.Stop = stopStrings(t, text)
		r, err := oc.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 1, 24)
		checkStopped(t, text, req.Stop, r.Choices[0].Message.Content, string(r.Choices[0].FinishReason))
	})

	chatStream := func(t *testing.T, seedValue int, includeUsage bool) {
		t.Helper()
		req := openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 10, Temperature: 1, Seed: seed(seedValue)}
		ref, err := oc.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, ref, c.model, 1, 10)
		if includeUsage {
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
		}
		st, err := oc.CreateChatCompletionStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if ct := st.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("Content-Type %q, want text/event-stream", ct)
		}
		var (
			text, id string
			finish   openai.FinishReason
			usage    *openai.Usage
			deltas   int
		)
		for {
			ch, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("after %d deltas: %v", deltas, err)
			}
			if usage != nil {
				t.Fatalf("a chunk after the usage chunk: %+v", ch)
			}
			if ch.Object != "chat.completion.chunk" || ch.Model != c.model || ch.ID == "" || (id != "" && ch.ID != id) || ch.Created == 0 {
				t.Fatalf("chunk %+v (first id %q)", ch, id)
			}
			id = ch.ID
			if ch.Usage != nil {
				if !includeUsage || len(ch.Choices) != 0 {
					t.Errorf("usage chunk %+v (include_usage %v)", ch, includeUsage)
				}
				usage = ch.Usage
				continue
			}
			for _, cc := range ch.Choices {
				if deltas == 0 && cc.Delta.Role != openai.ChatMessageRoleAssistant {
					t.Errorf("the first delta %+v has no role %q", cc.Delta, openai.ChatMessageRoleAssistant)
				}
				if cc.Index != 0 || finish != "" {
					t.Fatalf("chunk choice %+v after finish_reason %q", cc, finish)
				}
				deltas++
				text += cc.Delta.Content
				finish = cc.FinishReason
			}
		}
		want := ref.Choices[0]
		if deltas < 2 || text == "" || text != want.Message.Content || finish != want.FinishReason {
			t.Errorf("%d deltas: streamed %q (finish %q), want the non-streamed %q (finish %q)", deltas, text, finish, want.Message.Content, want.FinishReason)
		}
		switch {
		case includeUsage && usage == nil:
			t.Error("no usage chunk with include_usage")
		case includeUsage && (usage.PromptTokens != ref.Usage.PromptTokens || usage.CompletionTokens != ref.Usage.CompletionTokens || usage.TotalTokens != ref.Usage.TotalTokens):
			t.Errorf("usage %+v, want %+v", *usage, ref.Usage)
		}
	}
	t.Run("chat.stream", func(t *testing.T) { chatStream(t, 14, false) })
	t.Run("chat.stream_usage", func(t *testing.T) { chatStream(t, 15, true) })

	t.Run("chat.max_tokens_legacy", func(t *testing.T) {
		//lint:ignore SA1019 the legacy field is what this call tests
		r, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxTokens: 5, Seed: seed(16)})
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 1, 5)
	})

	t.Run("error.unknown_model", func(t *testing.T) {
		_, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "no-such-model", Messages: hello, MaxCompletionTokens: 4})
		wantStatus(t, err, http.StatusNotFound, "chat with an unknown model")
		_, err = oc.CreateCompletion(ctx, openai.CompletionRequest{Model: "no-such-model", Prompt: prompt, MaxTokens: 4})
		wantStatus(t, err, http.StatusNotFound, "completion with an unknown model")
	})

	t.Run("error.wrong_key", func(t *testing.T) {
		bad := c.goClient(c.key + "-wrong")
		_, err := bad.ListModels(ctx)
		wantStatus(t, err, http.StatusUnauthorized, "ListModels with a wrong key")
		_, err = bad.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 4})
		wantStatus(t, err, http.StatusUnauthorized, "chat with a wrong key")
	})

	t.Run("chat.with_response", func(t *testing.T) {
		r, err := oc.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: c.model, Messages: hello, MaxCompletionTokens: 4, Seed: seed(19)})
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, r, c.model, 1, 4)
		if ct := r.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type %q", ct)
		}
		if r.Header().Get("X-Request-Id") == "" {
			t.Log("no X-Request-Id header")
		}
	})

	t.Run("lora.flow", func(t *testing.T) {
		if c.adapter == "" {
			t.Skip("the server offers no runtime LoRA loading (see enableRuntimeAdapters)")
		}
		// vLLM's reply to these is plain text.
		status, body := c.postText(t, "/v1/load_lora_adapter", map[string]any{"lora_name": conformanceAdapter, "lora_path": c.adapter})
		if status != http.StatusOK {
			t.Fatalf("load_lora_adapter: status %d: %v", status, body)
		}
		unloaded := false
		unload := func() {
			if unloaded {
				return
			}
			unloaded = true
			if status, body := c.postText(t, "/v1/unload_lora_adapter", map[string]any{"lora_name": conformanceAdapter}); status != http.StatusOK {
				t.Errorf("unload_lora_adapter: status %d: %v", status, body)
			}
		}
		defer unload()
		ms, err := oc.ListModels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ms.Models, func(m openai.Model) bool { return m.ID == conformanceAdapter })
		if i < 0 || ms.Models[i].Parent != c.model || ms.Models[i].Object != "model" {
			t.Fatalf("models %+v: want the adapter %q with parent %q", ms.Models, conformanceAdapter, c.model)
		}
		req := openai.ChatCompletionRequest{Messages: hello, MaxCompletionTokens: 6, TopP: 1e-6, Seed: seed(20), LogProbs: true}
		req.Model = conformanceAdapter
		withA, err := oc.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		c.checkChat(t, withA, conformanceAdapter, 1, 6)
		req.Model = c.model
		base, err := oc.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		la, lb := withA.Choices[0].LogProbs, base.Choices[0].LogProbs
		if la == nil || lb == nil || len(la.Content) == 0 || len(lb.Content) == 0 {
			t.Fatalf("no logprobs to compare the adapter with the base model: %+v, %+v", la, lb)
		}
		if a, b := la.Content[0], lb.Content[0]; a.Token == b.Token && math.Abs(a.LogProb-b.LogProb) <= 1e-6 {
			t.Errorf("the adapter changes nothing: first token %+v with it, %+v without", a, b)
		}
		unload()
		req.Model = conformanceAdapter
		_, err = oc.CreateChatCompletion(ctx, req)
		wantStatus(t, err, http.StatusNotFound, "chat with the unloaded adapter")
	})
}

// goClient is a go-openai client of the server with the API key key.
func (c *conformance) goClient(key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = c.ts.URL + "/v1"
	return openai.NewClientWithConfig(cfg)
}

// postText posts body as JSON with the API key and returns the status and
// the reply.
func (c *conformance) postText(t *testing.T, path string, body any) (int, string) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, c.ts.URL+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(raw)
}

// wantStatus checks that err is the server's error reply with status.
func wantStatus(t *testing.T, err error, status int, what string) {
	t.Helper()
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case err == nil:
		t.Errorf("%s succeeded, want status %d", what, status)
	case errors.As(err, &ae):
		if ae.HTTPStatusCode != status || ae.Message == "" {
			t.Errorf("%s: %v (status %d), want status %d with a message", what, err, ae.HTTPStatusCode, status)
		}
	case errors.As(err, &re):
		t.Errorf("%s: %v: status %d without an OpenAI error body, want an APIError with status %d", what, err, re.HTTPStatusCode, status)
	default:
		t.Errorf("%s: %v, want an APIError with status %d", what, err, status)
	}
}

func checkGoUsage(t *testing.T, u openai.Usage, n, maxTokens int) {
	t.Helper()
	if u.PromptTokens <= 0 || u.CompletionTokens < 0 || u.PromptTokens+u.CompletionTokens != u.TotalTokens || u.CompletionTokens > n*maxTokens {
		t.Errorf("usage %+v for %d choices of at most %d tokens", u, n, maxTokens)
	}
}

func checkIndices(t *testing.T, idx []int) {
	t.Helper()
	slices.Sort(idx)
	for i, x := range idx {
		if x != i {
			t.Errorf("choice indices %v, want 0..%d", idx, len(idx)-1)
			return
		}
	}
}

// checkCompletion checks a CreateCompletion reply of n choices.
func (c *conformance) checkCompletion(t *testing.T, r openai.CompletionResponse, n, maxTokens int) {
	t.Helper()
	if r.ID == "" || r.Object != "text_completion" || r.Created < 1.5e9 || r.Model != c.model || len(r.Choices) != n {
		t.Fatalf("completion id %q object %q created %d model %q with %d choices, want %q with %d choices",
			r.ID, r.Object, r.Created, r.Model, len(r.Choices), c.model, n)
	}
	idx := make([]int, n)
	for i, ch := range r.Choices {
		idx[i] = ch.Index
		if ch.FinishReason != "stop" && ch.FinishReason != "length" {
			t.Errorf("choice %d: finish_reason %q", ch.Index, ch.FinishReason)
		}
	}
	checkIndices(t, idx)
	if r.Usage == nil {
		t.Fatal("no usage")
	}
	checkGoUsage(t, *r.Usage, n, maxTokens)
	if n == 1 && r.Choices[0].FinishReason == "length" && r.Usage.CompletionTokens != maxTokens {
		t.Errorf("finish_reason length after %d of %d tokens", r.Usage.CompletionTokens, maxTokens)
	}
}

// checkChat checks a CreateChatCompletion reply of n choices from model.
func (c *conformance) checkChat(t *testing.T, r openai.ChatCompletionResponse, model string, n, maxTokens int) {
	t.Helper()
	if r.ID == "" || r.Object != "chat.completion" || r.Created < 1.5e9 || r.Model != model || len(r.Choices) != n {
		t.Fatalf("chat id %q object %q created %d model %q with %d choices, want %q with %d choices",
			r.ID, r.Object, r.Created, r.Model, len(r.Choices), model, n)
	}
	idx := make([]int, n)
	for i, ch := range r.Choices {
		idx[i] = ch.Index
		if ch.Message.Role != openai.ChatMessageRoleAssistant {
			t.Errorf("choice %d: role %q", ch.Index, ch.Message.Role)
		}
		if ch.FinishReason != openai.FinishReasonStop && ch.FinishReason != openai.FinishReasonLength {
			t.Errorf("choice %d: finish_reason %q", ch.Index, ch.FinishReason)
		}
	}
	checkIndices(t, idx)
	checkGoUsage(t, r.Usage, n, maxTokens)
	if n == 1 && r.Choices[0].FinishReason == openai.FinishReasonLength && r.Usage.CompletionTokens != maxTokens {
		t.Errorf("finish_reason length after %d of %d tokens", r.Usage.CompletionTokens, maxTokens)
	}
}

// stopStrings picks stop strings for text: two characters from its middle
// whose first occurrence has two characters before it (as calls.mjs's
// stopFor), and "\n".
func stopStrings(t *testing.T, text string) []string {
	t.Helper()
	rs := []rune(text)
	for i := 2; i+3 <= len(rs); i++ {
		s := string(rs[i : i+2])
		if !strings.ContainsRune(s, utf8.RuneError) && strings.Index(text, s) == len(string(rs[:i])) {
			return []string{s, "\n"}
		}
	}
	t.Logf("the text %q has no stop string to pick; only \"\\n\" is tried", text)
	return []string{"\n"}
}

// checkStopped checks the text of a request with stop strings against the
// text of the same request without them.
func checkStopped(t *testing.T, full string, stops []string, got, finish string) {
	t.Helper()
	want, stopped := full, false
	for _, s := range stops {
		if i := strings.Index(full, s); i >= 0 && i < len(want) {
			want, stopped = full[:i], true
		}
	}
	if got != want {
		t.Errorf("stop %q: text %q, want %q (the text without stop strings is %q)", stops, got, want, full)
	}
	if len(stops) > 1 && (!stopped || len([]rune(want)) < 2) {
		t.Errorf("the stop strings %q do not cut %q after two characters", stops, full)
	}
	if stopped && finish != "stop" {
		t.Errorf("finish_reason %q after a stop string, want stop", finish)
	}
}
