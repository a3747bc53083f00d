package chattemplate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// namedConv is one conversation of the reference corpus.
type namedConv struct {
	name string
	ctx  Context
}

func sp(s string) *string { return &s }
func bp(b bool) *bool     { return &b }

func sys(s string) Message  { return Message{Role: "system", Content: s} }
func user(s string) Message { return Message{Role: "user", Content: s} }
func asst(s string) Message { return Message{Role: "assistant", Content: s} }
func tool(s string) Message { return Message{Role: "tool", Content: s} }

var weatherTool = json.RawMessage(`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}`)

var searchTool = Object{
	{"type", "function"},
	{"function", Object{
		{"name", "search"},
		{"description", "Search the web — returns «snippets» with \"quotes\" and \\backslashes\\."},
		{"parameters", Object{
			{"type", "object"},
			{"properties", Object{
				{"query", Object{{"type", "string"}}},
				{"top_k", Object{{"type", "integer"}, {"default", 5}, {"minimum", 1}, {"multipleOf", 0.5}}},
				{"items", Object{{"type", "array"}, {"items", Object{{"type", "number"}}}}},
			}},
			{"required", []any{"query"}},
		}},
	}},
}

func callWeather(city string) ToolCall {
	return ToolCall{ID: "call_1", Name: "get_weather", Arguments: Object{{"city", city}, {"unit", "celsius"}}}
}

// handConversations are the hand-written cases.
func handConversations() []namedConv {
	var cs []namedConv
	add := func(name string, ctx Context) { cs = append(cs, namedConv{name, ctx}) }
	for _, gen := range []bool{false, true} {
		g := fmt.Sprintf("gen=%v", gen)
		add("single user "+g, Context{Messages: []Message{user("Hello!")}, AddGenerationPrompt: gen})
		add("system+user "+g, Context{Messages: []Message{sys("You are helpful."), user("Hi")}, AddGenerationPrompt: gen})
		add("multi-turn "+g, Context{Messages: []Message{sys("Be brief."), user("What is 2+2?"), asst("4"), user("And 3+3?"), asst("6"), user("Thanks")}, AddGenerationPrompt: gen})
		for _, et := range []*bool{nil, bp(true), bp(false)} {
			name := "absent"
			if et != nil {
				name = fmt.Sprint(*et)
			}
			add("enable_thinking="+name+" "+g, Context{Messages: []Message{user("Think about it.")}, AddGenerationPrompt: gen, EnableThinking: et})
			add("enable_thinking="+name+" history "+g, Context{Messages: []Message{user("a"), asst("<think>\nr1\n</think>\n\nb"), user("c")}, AddGenerationPrompt: gen, EnableThinking: et})
		}
		add("ends with assistant "+g, Context{Messages: []Message{user("Hi"), asst("Hello there.")}, AddGenerationPrompt: gen})
	}
	// Reasoning in content and in reasoning_content.
	add("think in last assistant", Context{Messages: []Message{user("q"), asst("<think>\nLet me think.\n</think>\n\nThe answer.")}})
	add("think in earlier assistant", Context{Messages: []Message{user("q1"), asst("<think>\nold reasoning\n</think>\n\nold answer"), user("q2"), asst("<think>\nnew reasoning\n</think>\n\nnew answer")}})
	add("reasoning_content last", Context{Messages: []Message{user("q"), {Role: "assistant", Content: "answer", ReasoningContent: sp("because")}}})
	add("reasoning_content earlier", Context{Messages: []Message{user("q1"), {Role: "assistant", Content: "a1", ReasoningContent: sp("r1")}, user("q2"), {Role: "assistant", Content: "a2", ReasoningContent: sp("r2")}}, AddGenerationPrompt: true})
	add("reasoning_content empty", Context{Messages: []Message{user("q"), {Role: "assistant", Content: "<think>\nin content\n</think>\n\nanswer", ReasoningContent: sp("")}}})
	add("reasoning_content and think", Context{Messages: []Message{user("q"), {Role: "assistant", Content: "<think>x</think>y", ReasoningContent: sp("field wins")}}})
	add("think without newlines", Context{Messages: []Message{user("q"), asst("<think>compact</think>answer")}})
	add("think close only", Context{Messages: []Message{user("q"), asst("reasoning</think>\n\nanswer")}})
	add("think open only", Context{Messages: []Message{user("q"), asst("<think>\nunfinished")}})
	add("two think blocks", Context{Messages: []Message{user("q"), asst("<think>a</think>b<think>c</think>\n\nd")}})
	add("think empty", Context{Messages: []Message{user("q"), asst("<think>\n\n</think>\n\nanswer")}})
	add("think then assistant after tool", Context{Messages: []Message{user("q"), {Role: "assistant", Content: "<think>\nplan\n</think>\n\n", ToolCalls: []ToolCall{callWeather("Oslo")}}, tool("rainy"), asst("<think>\nsummarize\n</think>\n\nIt rains.")}})
	add("multi-step reasoning kept after last query", Context{Messages: []Message{user("first"), asst("<think>\nr0\n</think>\n\na0"), user("second"), {Role: "assistant", Content: "", ReasoningContent: sp("r1"), ToolCalls: []ToolCall{callWeather("Rome")}}, tool("sunny"), {Role: "assistant", Content: "a2", ReasoningContent: sp("r2")}}, AddGenerationPrompt: true})
	// Tools.
	tools := []any{weatherTool, searchTool}
	add("tools no system", Context{Messages: []Message{user("Weather in Paris?")}, Tools: tools, AddGenerationPrompt: true})
	add("tools with system", Context{Messages: []Message{sys("You are a weather bot."), user("Weather in Paris?")}, Tools: tools, AddGenerationPrompt: true})
	add("tools empty list", Context{Messages: []Message{user("hi")}, Tools: []any{}, AddGenerationPrompt: true})
	add("tools call and response", Context{Messages: []Message{
		user("Weather in Paris and Tokyo?"),
		{Role: "assistant", Content: "", ToolCalls: []ToolCall{callWeather("Paris"), callWeather("東京")}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "call_1", Name: "get_weather"},
		{Role: "tool", Content: `{"temp": 18}`, ToolCallID: "call_2"},
		asst("Paris 21°C, Tokyo 18°C."),
	}, Tools: tools, AddGenerationPrompt: true})
	add("tools call with content", Context{Messages: []Message{user("q"), {Role: "assistant", Content: "Let me check.", ToolCalls: []ToolCall{callWeather("Lima")}}, tool("ok")}, Tools: tools})
	add("tools string arguments", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: `{"query": "go jinja", "top_k": 3}`}}}, tool("results")}, Tools: tools, AddGenerationPrompt: true})
	add("tools raw arguments", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query": "naïve \"quoted\" \\ back\nslash\ttab\u0001", "top_k": 3, "weights": [0.5, 2.25, -1, 3e-3], "flags": {"x": true, "y": null}, "nested": {"list": [[], {}]}}`)}}}, tool("done")}, Tools: tools})
	add("tools numeric arguments", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "calc", Arguments: Object{{"a", 1}, {"b", -2.5}, {"c", 1e21}, {"d", 123456789}, {"e", 0.1}}}}}}})
	add("tools integral float argument", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "calc", Arguments: json.RawMessage(`{"x": 1.0, "y": 2.50}`)}}}}})
	add("tools tiny float argument", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "calc", Arguments: Object{{"eps", 1.5e-7}}}}}}})
	add("tools numeric keys", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "m", Arguments: json.RawMessage(`{"b": 1, "10": 2, "2": 3}`)}}}}})
	add("tools three tool responses", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{callWeather("A"), callWeather("B"), callWeather("C")}}, tool("a"), tool("b"), tool("c")}, Tools: tools, AddGenerationPrompt: true})
	add("tools response first", Context{Messages: []Message{tool("orphan"), user("q")}, Tools: tools})
	add("tools user wraps tool_response", Context{Messages: []Message{user("real question"), asst("calling"), user("<tool_response>\n42\n</tool_response>"), asst("The answer is 42.")}, AddGenerationPrompt: true})
	add("tools only tool_response users", Context{Messages: []Message{user("<tool_response>x</tool_response>")}, AddGenerationPrompt: true})
	add("tools unicode description", Context{Messages: []Message{user("q")}, Tools: []any{Object{{"type", "function"}, {"function", Object{{"name", "翻訳"}, {"description", "日本語に翻訳する 🈂️\u2028line"}}}}}})
	add("tools no function key", Context{Messages: []Message{user("q"), {Role: "assistant", Extra: map[string]any{"tool_calls": []any{Object{{"name", "direct"}, {"arguments", Object{{"k", "v"}}}}}}}}})
	// System placement.
	add("system not first", Context{Messages: []Message{user("a"), sys("late system"), asst("b")}})
	add("two systems", Context{Messages: []Message{sys("s1"), sys("s2"), user("u")}})
	add("system only", Context{Messages: []Message{sys("alone")}, AddGenerationPrompt: true})
	add("no messages gen", Context{Messages: []Message{}, AddGenerationPrompt: true})
	// Content edge cases.
	edge := []string{
		"", " ", "\n", "\n\n", "  padded  ", "\nleading newline", "trailing newline\n", "\n\nboth\n\n", "\t tab \t",
		"{{ messages }}", "{% if true %}x{% endif %}", "{# comment #}", "%}\n{%- raw -%}", "{{- '-' -}}", "}}{{",
		"Unicode: 你好 مرحبا שלום नमस्ते 😀👍🏽 👩‍👩‍👧‍👦 é e\u0301", "zero\u200bwidth\ufeffbom", "line\u2028sep\u2029para",
		"\u0085nel at start", "nbsp at end\u00a0", "\u3000ideographic\u3000", "\ufeffbom edges\ufeff", "ctrl \u0001\u001f\u007f",
		"<|im_start|>fake<|im_end|>", "<|eot_id|><|start_header_id|>", "<tool_call>\n{\"name\": \"x\"}\n</tool_call>",
		"quotes ' \" ` and \\ backslash", "very " + strings.Repeat("long ", 200) + "content",
	}
	for i, e := range edge {
		add(fmt.Sprintf("edge user %d", i), Context{Messages: []Message{sys(e), user(e)}, AddGenerationPrompt: true})
		add(fmt.Sprintf("edge assistant %d", i), Context{Messages: []Message{user("q"), asst(e), user(e), asst("<think>" + e + "</think>" + e)}})
		add(fmt.Sprintf("edge reasoning %d", i), Context{Messages: []Message{user("q"), {Role: "assistant", Content: e, ReasoningContent: sp(e)}}})
		add(fmt.Sprintf("edge tool %d", i), Context{Messages: []Message{user("q"), {Role: "assistant", Content: e, ToolCalls: []ToolCall{{Name: e, Arguments: Object{{e, e}}}}}, tool(e)}, Tools: []any{Object{{"name", e}}}})
	}
	add("unicode roles content", Context{Messages: []Message{sys("Système: réponds en français."), user("Ça va ? 😀"), asst("Très bien ! 🇫🇷")}, AddGenerationPrompt: true})
	add("unicode think", Context{Messages: []Message{user("問題"), asst("<think>\n考える…\n</think>\n\n答え")}})
	add("other role", Context{Messages: []Message{{Role: "developer", Content: "dev note"}, user("u")}})
	return cs
}

// fragments build generated content.
var fragments = []string{
	"Hello", "world", "the answer is 42", "你好", "😀", "é", "e\u0301", "\n", "\n\n", " ", "  ", "\t",
	"<think>", "</think>", "<tool_response>", "</tool_response>", "{{", "}}", "{%", "%}", "{#", "#}",
	"'", "\"", "\\", "<|im_end|>", "<|eot_id|>", "-", "+", "~", "|", "ok.", "Let me think step by step.",
	"```python\nprint(1)\n```", "العربية", "\u00a0", "\u3000", "\u200b", "\u2028", "naïve café",
}

func genText(rng *rand.Rand, maxParts int) string {
	var b strings.Builder
	for range rng.IntN(maxParts + 1) {
		b.WriteString(fragments[rng.IntN(len(fragments))])
		if rng.IntN(3) == 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// genValue makes a JSON-like argument value.
func genValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(9); {
	case k == 0 && depth < 3:
		o := Object{}
		for i := range rng.IntN(4) {
			o = append(o, Field{fmt.Sprintf("k%d_%s", i, genText(rng, 1)), genValue(rng, depth+1)})
		}
		return o
	case k == 1 && depth < 3:
		var l []any
		for range rng.IntN(4) {
			l = append(l, genValue(rng, depth+1))
		}
		return l
	case k == 2:
		return rng.IntN(2000) - 1000
	case k == 3:
		return float64(rng.IntN(10000)) / 64 // exact binary fractions, some integral
	case k == 4:
		return rng.IntN(2) == 0
	case k == 5:
		return nil
	default:
		return genText(rng, 3)
	}
}

// generatedConversations are n random conversations from a seed.
func generatedConversations(n int, seed uint64) []namedConv {
	rng := rand.New(rand.NewPCG(seed, 99))
	var cs []namedConv
	for i := range n {
		cs = append(cs, namedConv{fmt.Sprintf("generated %d", i), genConversation(rng)})
	}
	return cs
}

// genConversation makes a conversation of one to four turns, with or
// without a system prompt, tools and enable_thinking.
func genConversation(rng *rand.Rand) Context {
	var msgs []Message
	if rng.IntN(2) == 0 {
		msgs = append(msgs, sys(genText(rng, 4)))
	}
	turns := 1 + rng.IntN(4)
	for range turns {
		u := genText(rng, 5)
		if rng.IntN(8) == 0 {
			u = "<tool_response>" + u + "</tool_response>"
		}
		msgs = append(msgs, user(u))
		if rng.IntN(5) == 0 && len(msgs) > 1 {
			continue // consecutive users
		}
		msgs = append(msgs, genAssistantTurn(rng)...)
	}
	if rng.IntN(3) == 0 && msgs[len(msgs)-1].Role == "assistant" {
		msgs = msgs[:len(msgs)-1]
	}
	ctx := Context{Messages: msgs, AddGenerationPrompt: rng.IntN(2) == 0}
	switch rng.IntN(3) {
	case 1:
		ctx.EnableThinking = bp(true)
	case 2:
		ctx.EnableThinking = bp(false)
	}
	switch rng.IntN(6) {
	case 0, 1:
		ctx.Tools = []any{weatherTool}
		if rng.IntN(2) == 0 {
			ctx.Tools = append(ctx.Tools, searchTool)
		}
	case 2:
		ctx.Tools = cohereTools // Command-R's
	}
	if rng.IntN(4) == 0 {
		ctx.Documents = genDocuments(rng)
		if rng.IntN(2) == 0 {
			ctx.Vars = map[string]any{"citation_mode": "accurate"}
		}
	}
	return ctx
}

// genDocuments makes up to three documents, for RAG templates.
func genDocuments(rng *rand.Rand) []any {
	var docs []any
	for i := range rng.IntN(4) {
		doc := Object{{"title", genText(rng, 2)}, {"text", genText(rng, 4)}}
		if i == 1 {
			doc = append(doc, Field{"score", genValue(rng, 2)})
		}
		docs = append(docs, doc)
	}
	return docs
}

// genAssistantTurn makes an assistant message, with reasoning in its
// content or in reasoning_content, and sometimes tool calls followed by
// tool responses.
func genAssistantTurn(rng *rand.Rand) []Message {
	m := Message{Role: "assistant"}
	switch rng.IntN(4) {
	case 0:
		m.Content = genText(rng, 5)
	case 1:
		m.Content = "<think>\n" + genText(rng, 4) + "\n</think>\n\n" + genText(rng, 4)
	case 2:
		m.Content = genText(rng, 4)
		m.ReasoningContent = sp(genText(rng, 4))
	case 3:
		m.Content = genText(rng, 2) + "</think>" + genText(rng, 3)
	}
	if rng.IntN(4) != 0 {
		return []Message{m}
	}
	for k := range 1 + rng.IntN(2) {
		m.ToolCalls = append(m.ToolCalls, genToolCall(rng, k))
	}
	if rng.IntN(5) == 0 {
		m.Extra = map[string]any{"content": nil} // DeepSeek-V3's calls
	}
	msgs := []Message{m}
	for k := range 1 + rng.IntN(2) {
		msgs = append(msgs, Message{Role: "tool", Content: genText(rng, 3), ToolCallID: callID(k)})
	}
	return msgs
}

// callID is the id of the k-th call of a message: nine characters, as
// Mistral's template requires.
func callID(k int) string { return fmt.Sprintf("call%05d", k) }

// genToolCall makes the k-th tool call of a message, its arguments a
// JSON string or an Object.
func genToolCall(rng *rand.Rand, k int) ToolCall {
	tc := ToolCall{ID: callID(k), Name: fmt.Sprintf("fn_%d", rng.IntN(3))}
	if rng.IntN(3) == 0 {
		b, _ := json.Marshal(map[string]any{"q": genText(rng, 2)})
		tc.Arguments = string(b)
		return tc
	}
	o := Object{}
	for j := range rng.IntN(3) {
		o = append(o, Field{fmt.Sprintf("arg%d", j), genValue(rng, 1)})
	}
	tc.Arguments = o
	return tc
}

// conversationCorpus is the whole reference corpus.
func conversationCorpus() []namedConv {
	return append(append(handConversations(), modelConversations()...), generatedConversations(400, 2026)...)
}
