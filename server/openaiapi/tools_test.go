package openaiapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/policy/policytest"
	"github.com/agentrl/agentrl/server/openaiapi"
	"github.com/agentrl/agentrl/text/toolcall"
)

// weatherSchema and searchSchema are the tools' parameters in these tests.
const (
	weatherSchema = `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer","minimum":1,"maximum":14},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}`
	searchSchema  = `{"type":"object","properties":{"query":{"type":"string","minLength":2,"maxLength":8},"k":{"type":"integer","minimum":1,"maximum":5}},"required":["query"]}`
)

func goTools() []openai.Tool {
	return []openai.Tool{
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "get_weather", Description: "The weather in a city.", Parameters: json.RawMessage(weatherSchema)}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "search", Description: "Search the web.", Parameters: json.RawMessage(searchSchema)}},
	}
}

func policyTools() []toolcall.Tool {
	return []toolcall.Tool{{Name: "get_weather", Parameters: json.RawMessage(weatherSchema)}, {Name: "search", Parameters: json.RawMessage(searchSchema)}}
}

// hermesTemplate is a ChatML template with Qwen2.5's tools, calls and tool
// results.
const hermesTemplate = `{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

<tools>{% for tool in tools %}
{{ tool | tojson }}{% endfor %}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags.<|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}{%- if message.role == 'system' %}{%- elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% elif message.tool_calls %}<|im_start|>assistant
{{ message.content or '' }}{% for tc in message.tool_calls %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{% endfor %}<|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// hermesModel is a tiny random Qwen2 model whose template has tools.
func hermesModel(t *testing.T) *local.Policy {
	t.Helper()
	d, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tools"), hftest.Options{Seed: 11, ChatTemplate: hermesTemplate})
	if err != nil {
		t.Fatal(err)
	}
	p, err := local.LoadHF(d.Path, "qwen2-tools", 2048)
	if err != nil {
		t.Fatal(err)
	}
	if f := p.ToolCallFormat(); f != "hermes" {
		t.Fatalf("the template's call format is %q, want hermes", f)
	}
	return p
}

// scriptedTools is a Scripted policy with the hermes tool template that
// calls get_weather (and, when the prompt asks for two, search too) until
// it has a tool response, and then answers in text; "garbled" makes it
// write a call that does not parse.
func scriptedTools() *policytest.Scripted {
	parser, _ := toolcall.New("hermes")
	return &policytest.Scripted{ToolFormat: "hermes", Reply: func(prompt string, _ uint64) string {
		switch {
		case strings.Contains(prompt, "<tool_response>"):
			return "It is sunny in Paris."
		case strings.Contains(prompt, "garbled"):
			return "Let me look. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>"
		case strings.Contains(prompt, "two"):
			return "Checking both." + "\n" + parser.Format([]toolcall.Call{
				{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"c"}`)},
				{Name: "search", Arguments: json.RawMessage(`{"query":"Paris news"}`)},
			})
		}
		return parser.Format([]toolcall.Call{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"c"}`)}})
	}}
}

func goClient(url string) *openai.Client {
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = url + "/v1"
	return openai.NewClientWithConfig(cfg)
}

// streamedChat runs a streamed chat request and assembles its one choice:
// content, tool calls (by index) and finish reason, checking the deltas'
// shape as OpenAI streams them.
func streamedChat(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) (string, []openai.ToolCall, openai.FinishReason) {
	t.Helper()
	req.Stream = true
	st, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var content strings.Builder
	var calls []openai.ToolCall
	var finish openai.FinishReason
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			content.WriteString(c.Delta.Content)
			for _, d := range c.Delta.ToolCalls {
				if d.Index == nil {
					t.Fatalf("a tool call delta without an index: %+v", d)
				}
				i := *d.Index
				switch {
				case i == len(calls):
					if d.ID == "" || d.Type != openai.ToolTypeFunction || d.Function.Name == "" || d.Function.Arguments != "" {
						t.Fatalf("call %d's first delta %+v: want its id, type, name and empty arguments", i, d)
					}
					calls = append(calls, d)
				case i < len(calls):
					if d.ID != "" || d.Function.Name != "" {
						t.Fatalf("call %d: a later delta repeats the id or name: %+v", i, d)
					}
					calls[i].Function.Arguments += d.Function.Arguments
				default:
					t.Fatalf("call index %d before call %d", i, len(calls))
				}
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	return content.String(), calls, finish
}

// TestToolCallsAuto: go-openai's tool flow against a model that writes
// chosen calls: tools offered through the template, the reply parsed into
// tool_calls with finish_reason "tool_calls", the result sent back as a
// tool message and answered; streamed the same; parallel calls, and
// parallel_tool_calls false keeping the first; a garbled call returned as
// content.
func TestToolCallsAuto(t *testing.T) {
	sc := scriptedTools()
	ts, _ := start(t, sc, openaiapi.Options{})
	c := goClient(ts.URL)
	ctx := context.Background()
	user := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "Weather in Paris?"}
	req := openai.ChatCompletionRequest{Model: "scripted", Messages: []openai.ChatCompletionMessage{user}, Tools: goTools()}
	r, err := c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	ch := r.Choices[0]
	if ch.FinishReason != openai.FinishReasonToolCalls || len(ch.Message.ToolCalls) != 1 || ch.Message.Content != "" {
		t.Fatalf("reply %+v: want one tool call, finish_reason tool_calls, no content", ch)
	}
	call := ch.Message.ToolCalls[0]
	if call.Type != openai.ToolTypeFunction || call.Function.Name != "get_weather" || !strings.HasPrefix(call.ID, "chatcmpl-tool-") {
		t.Errorf("call %+v", call)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || args["city"] != "Paris" {
		t.Errorf("arguments %q: %v", call.Function.Arguments, err)
	}

	content, calls, finish := streamedChat(t, c, req)
	if content != "" || finish != openai.FinishReasonToolCalls || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != call.Function.Arguments {
		t.Errorf("streamed: content %q, finish %q, calls %+v; unstreamed call %+v", content, finish, calls, call)
	}

	// /tokenize renders the tools as the chat request does.
	raw := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + mustJSON(t, goTools()) + `}`
	var chat struct {
		PromptTokenIDs []int `json:"prompt_token_ids"`
	}
	var tok struct {
		Tokens []int `json:"tokens"`
	}
	postJSON(t, ts.URL+"/v1/chat/completions", raw[:len(raw)-1]+`,"return_token_ids":true}`, &chat)
	postJSON(t, ts.URL+"/tokenize", raw, &tok)
	if len(chat.PromptTokenIDs) == 0 || !slices.Equal(chat.PromptTokenIDs, tok.Tokens) {
		t.Errorf("/tokenize with tools: %d ids, the chat prompt %d", len(tok.Tokens), len(chat.PromptTokenIDs))
	}
	if p, _ := sc.Decode(ctx, tok.Tokens); !strings.Contains(p, `"name":"get_weather"`) {
		t.Errorf("the prompt does not offer the tools: %q", p)
	}

	// The result goes back as a tool message; the template renders the
	// call and the result, and the model answers.
	req.Messages = append(req.Messages, ch.Message, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: `{"sky":"sunny"}`})
	r, err = c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := r.Choices[0]; ch.Message.Content != "It is sunny in Paris." || len(ch.Message.ToolCalls) != 0 || ch.FinishReason != openai.FinishReasonStop {
		t.Errorf("the answer to the tool result: %+v", ch)
	}

	// Two calls in one reply, with content before them.
	req.Messages = []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "two things"}}
	r, err = c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := r.Choices[0]; len(ch.Message.ToolCalls) != 2 || ch.Message.Content != "Checking both." || ch.Message.ToolCalls[1].Function.Name != "search" || ch.Message.ToolCalls[0].ID == ch.Message.ToolCalls[1].ID {
		t.Errorf("two calls: %+v", ch.Message)
	}
	content, calls, _ = streamedChat(t, c, req)
	if content != "Checking both." || len(calls) != 2 || calls[1].Function.Arguments != `{"query":"Paris news"}` {
		t.Errorf("two calls streamed: %q %+v", content, calls)
	}
	req.ParallelToolCalls = false
	r, err = c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := r.Choices[0]; len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Errorf("parallel_tool_calls false: %+v", ch.Message)
	}
	req.ParallelToolCalls = nil

	// A call that does not parse is content, as vLLM returns it.
	req.Messages = []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "garbled"}}
	r, err = c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := r.Choices[0]; len(ch.Message.ToolCalls) != 0 || !strings.Contains(ch.Message.Content, "<tool_call>") || ch.FinishReason != openai.FinishReasonStop {
		t.Errorf("a garbled call: %+v", ch)
	}

	// tool_choice none: the call text stays content.
	req.Messages = []openai.ChatCompletionMessage{user}
	req.ToolChoice = "none"
	r, err = c.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ch := r.Choices[0]; len(ch.Message.ToolCalls) != 0 || !strings.Contains(ch.Message.Content, "<tool_call>") {
		t.Errorf("tool_choice none: %+v", ch)
	}
}

// TestToolChoiceForcesValidCalls: random models (a Hugging Face one whose
// template has tools, and the embedded one, whose tools are described in
// the system message) forced by tool_choice "required" or a named
// function always reply with a call whose arguments the tool's schema
// accepts (constrained decoding), streamed as unstreamed; and
// response_format json_schema always gives content the schema accepts.
func TestToolChoiceForcesValidCalls(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    *local.Policy
	}{{"hf-hermes", hermesModel(t)}, {"embedded-compact", tiny(t)}} {
		t.Run(tt.name, func(t *testing.T) {
			ts, _ := start(t, tt.p, openaiapi.Options{})
			c := goClient(ts.URL)
			ctx := context.Background()
			names := map[string]int{}
			multi := 0
			for seed := range 12 {
				req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "Weather in Paris?"}},
					Tools: goTools(), ToolChoice: "required", Seed: &seed, Temperature: 1, MaxCompletionTokens: 120}
				named := seed%3 == 2
				if named {
					req.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: "search"}}
				}
				switch seed {
				case 5:
					req.N = 3
				case 4, 7:
					req.ParallelToolCalls = false
				}
				r, err := c.CreateChatCompletion(ctx, req)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for _, ch := range r.Choices {
					// required may make several calls, unless
					// parallel_tool_calls is false; a named function one.
					if n := len(ch.Message.ToolCalls); n < 1 || n > 1 && (named || req.ParallelToolCalls == false) {
						t.Fatalf("seed %d: %d calls: %+v", seed, n, ch.Message)
					}
					if len(ch.Message.ToolCalls) > 1 {
						multi++
					}
					for _, call := range ch.Message.ToolCalls {
						if err := toolcall.Check(policyTools(), toolcall.Call{Name: call.Function.Name, Arguments: json.RawMessage(call.Function.Arguments)}); err != nil {
							t.Fatalf("seed %d: %+v: %v", seed, call, err)
						}
					}
					call := ch.Message.ToolCalls[0]
					want := openai.FinishReasonToolCalls
					if named {
						want = openai.FinishReasonStop
						if call.Function.Name != "search" {
							t.Fatalf("seed %d: named search, called %s", seed, call.Function.Name)
						}
					}
					if ch.FinishReason != want {
						t.Errorf("seed %d: finish_reason %q, want %q", seed, ch.FinishReason, want)
					}
					names[call.Function.Name]++
				}
				if seed < 2 {
					t.Logf("seed %d: %s(%s)", seed, r.Choices[0].Message.ToolCalls[0].Function.Name, r.Choices[0].Message.ToolCalls[0].Function.Arguments)
					_, calls, finish := streamedChat(t, c, req)
					want := r.Choices[0].Message.ToolCalls[0]
					if len(calls) != len(r.Choices[0].Message.ToolCalls) || calls[0].Function != want.Function || finish != r.Choices[0].FinishReason {
						t.Errorf("seed %d streamed: %+v (%s), unstreamed %+v (%s)", seed, calls, finish, want, r.Choices[0].FinishReason)
					}
				}
			}
			if names["get_weather"] == 0 {
				t.Errorf("required never called get_weather: %v", names)
			}
			t.Logf("%d replies made several calls", multi)

			// A stop string of the request's own may cut a forced call:
			// the text is then content, with the stop string as
			// stop_reason.
			var cut struct {
				Choices []struct {
					Message struct {
						Content   *string `json:"content"`
						ToolCalls []any   `json:"tool_calls"`
					} `json:"message"`
					StopReason any `json:"stop_reason"`
				} `json:"choices"`
			}
			postJSON(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":`+mustJSON(t, goTools())+
				`,"tool_choice":"required","stop":["{"],"seed":1,"max_tokens":100}`, &cut)
			if ch := cut.Choices[0]; ch.StopReason == nil || len(ch.Message.ToolCalls) != 0 || ch.Message.Content == nil {
				t.Errorf("a forced call cut by a stop string: %+v", ch)
			}

			schema := `{"type":"object","properties":{"answer":{"type":"integer","minimum":0,"maximum":99},"sure":{"type":"boolean"}},"required":["answer","sure"],"additionalProperties":false}`
			for seed := range 6 {
				req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "2+2?"}},
					Seed: &seed, Temperature: 1, MaxCompletionTokens: 60,
					ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
						JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{Name: "answer", Schema: json.RawMessage(schema)}}}
				r, err := c.CreateChatCompletion(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				text := r.Choices[0].Message.Content
				if err := toolcall.Check([]toolcall.Tool{{Name: "f", Parameters: json.RawMessage(schema)}}, toolcall.Call{Name: "f", Arguments: json.RawMessage(text)}); err != nil {
					t.Fatalf("seed %d: response_format content %q: %v", seed, text, err)
				}
			}
		})
	}
}

// TestToolRequestErrors: bad tools, tool choices and formats are 400s
// that say what is wrong.
func TestToolRequestErrors(t *testing.T) {
	p := tiny(t)
	ts, _ := start(t, p, openaiapi.Options{})
	tsScripted, _ := start(t, scriptedTools(), openaiapi.Options{})
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":` + weatherSchema + `}}]`
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tt := range []struct {
		url, body, want string
	}{
		{ts.URL, `{` + msgs + `,"tools":` + tools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, `names the function "nope", which is not among the tools`},
		{ts.URL, `{` + msgs + `,"tools":` + tools + `,"tool_choice":"sometimes"}`, `tool_choice must be "none", "auto", "required"`},
		{ts.URL, `{` + msgs + `,"tool_choice":"required"}`, `tool_choice "required" needs tools`},
		{ts.URL, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":"object"}}]}`, `function.parameters must be a JSON schema object`},
		{ts.URL, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"enum":[]}},"required":["a"]}}}],"tool_choice":"required"}`, `no value satisfies the schema`},
		{ts.URL, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}],"tool_choice":"required"}`, `allows no object`},
		{ts.URL, `{` + msgs + `,"tools":[{"type":"retrieval"}]}`, `type must be "function"`},
		{ts.URL, `{` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, `given twice`},
		{ts.URL, `{` + msgs + `,"tools":` + tools + `,"tool_choice":"required","max_tokens":5}`, `max_tokens 5 is too small`},
		{ts.URL, `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","minLength":3,"maxLength":1}}}}`, `no value satisfies the schema`},
		{ts.URL, `{` + msgs + `,"response_format":{"type":"yaml"}}`, `response_format type must be`},
		{ts.URL, `{` + msgs + `,"tools":` + tools + `,"tool_choice":"required","response_format":{"type":"json_object"}}`, `cannot be combined`},
		{ts.URL, `{` + msgs + `,"tools":` + tools + `,"tool_choice":"required","ignore_eos":true}`, `needs a stop token`},
		{tsScripted.URL, `{` + msgs + `,"tools":` + tools + `,"tool_choice":"required"}`, `needs constrained decoding`},
	} {
		resp, err := http.Post(tt.url+"/v1/chat/completions", "application/json", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error.Message, tt.want) {
			t.Errorf("%.90s...: %d %q (%v), want 400 with %q", tt.body[len(msgs)+2:], resp.StatusCode, e.Error.Message, err, tt.want)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// postJSON posts body to url and decodes a 200 reply into out.
func postJSON(t *testing.T, url, body string, out any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}
