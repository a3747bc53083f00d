package chattemplate

// modelConversations exercise what the family's other templates do with
// tools, tool calls, tool results, content parts and their keyword
// arguments (the reference corpus renders each with every template, so
// they also show how the other templates fail on them): Llama 3.1's
// single tool call, ipython results, custom_tools, tools_in_user_message
// and date_string; Mistral's nine-character call ids, tool_calls and
// tool_results roles; DeepSeek-V3's calls in messages without content
// and with JSON-string arguments; Gemma 3's lists of content parts;
// Command-R's tools with parameter_definitions and its documents and
// citation_mode.
func modelConversations() []namedConv {
	var cs []namedConv
	add := func(name string, ctx Context) { cs = append(cs, namedConv{name, ctx}) }
	tools := []any{weatherTool, searchTool}
	noContent := map[string]any{"content": nil}
	call := func(id, city string) ToolCall {
		return ToolCall{ID: id, Name: "get_weather", Arguments: Object{{"city", city}, {"unit", "celsius"}}}
	}

	// Llama 3.1: one call per message, results as ipython.
	single := []Message{
		sys("You are a weather bot."), user("Weather in Paris?"),
		{Role: "assistant", ToolCalls: []ToolCall{call("call_1", "Paris")}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "call_1"},
		asst("It is 21°C in Paris."),
	}
	add("tools single call", Context{Messages: single, Tools: tools, AddGenerationPrompt: true})
	add("tools single call no system", Context{Messages: single[1:], Tools: tools})
	add("tools in system message", Context{Messages: single, Tools: tools, AddGenerationPrompt: true, Vars: map[string]any{"tools_in_user_message": false}})
	add("tools custom_tools", Context{Messages: single[1:], AddGenerationPrompt: true, Vars: map[string]any{"custom_tools": tools}})
	add("tools date_string", Context{Messages: single[:2], Tools: tools, AddGenerationPrompt: true, Vars: map[string]any{"date_string": "01 Jan 2025"}})
	add("date_string without tools", Context{Messages: single[:2], Vars: map[string]any{"date_string": "29 Feb 2024"}})
	add("tools without user message", Context{Messages: []Message{sys("alone")}, Tools: tools, AddGenerationPrompt: true})
	add("tools ipython role", Context{Messages: []Message{
		user("Weather in Oslo?"), {Role: "assistant", ToolCalls: []ToolCall{call("call_1", "Oslo")}},
		{Role: "ipython", Content: "cold"}, asst("Cold."),
	}, Tools: tools})
	add("tools result mapping", Context{Messages: []Message{
		user("Weather in Oslo?"), {Role: "assistant", ToolCalls: []ToolCall{call("call_1", "Oslo")}},
		{Role: "tool", Extra: map[string]any{"content": Object{{"temp", -3}, {"sky", "clear"}}}},
	}, Tools: tools, AddGenerationPrompt: true})
	add("tools result list", Context{Messages: []Message{
		user("q"), {Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: Object{{"query", "x"}}}}},
		{Role: "tool", Extra: map[string]any{"content": []any{"first", 2, nil}}},
	}, AddGenerationPrompt: true})

	// Mistral: calls and results carry nine-character ids.
	mistral := []Message{
		sys("Be brief."), user("Weather in Paris and Rome?"),
		{Role: "assistant", ToolCalls: []ToolCall{call("abcDEF123", "Paris"), call("xyz789GHI", "Rome")}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "abcDEF123", Name: "get_weather"},
		{Role: "tool", Content: "18", ToolCallID: "xyz789GHI", Name: "get_weather"},
		asst("Paris 21°C, Rome 18°C."), user("Thanks!"),
	}
	add("tools nine-character ids", Context{Messages: mistral, Tools: tools, AddGenerationPrompt: true})
	add("tools nine-character ids no tools", Context{Messages: mistral[1:]})
	add("tools call id too short", Context{Messages: []Message{user("q"), {Role: "assistant", ToolCalls: []ToolCall{call("abc", "Lima")}}}, Tools: tools})
	add("tools result id too long", Context{Messages: []Message{
		user("q"), {Role: "assistant", ToolCalls: []ToolCall{call("abcDEF123", "Lima")}},
		{Role: "tool", Content: "warm", ToolCallID: "abcDEF1234"},
	}, Tools: tools})
	add("tools roles tool_calls and tool_results", Context{Messages: []Message{
		user("q"),
		{Role: "tool_calls", Extra: map[string]any{"content": []any{Object{{"id", "abcDEF123"}, {"function", Object{{"name", "f"}, {"arguments", Object{{"k", "v"}}}}}}}}},
		{Role: "tool_results", Content: "ok", ToolCallID: "abcDEF123"},
		user("next"),
	}})
	add("tools result content dict", Context{Messages: []Message{
		user("q"), {Role: "assistant", ToolCalls: []ToolCall{call("abcDEF123", "Lima")}},
		{Role: "tool", Extra: map[string]any{"content": Object{{"content", "nested result"}}}, ToolCallID: "abcDEF123"},
	}})
	add("tools function with return", Context{Messages: []Message{user("q")}, Tools: []any{Object{{"type", "function"}, {"function", Object{
		{"name", "add"}, {"description", "Adds."}, {"parameters", Object{{"type", "object"}, {"properties", Object{{"a", Object{{"type", "number"}}}}}}},
		{"return", Object{{"type", "number"}}}, {"strict", true},
	}}}}})
	add("tools same user message twice", Context{Messages: []Message{user("same"), asst("a"), user("same")}, Tools: tools, AddGenerationPrompt: true})

	// DeepSeek-V3: calls in assistant messages whose content is None,
	// arguments as JSON strings.
	dcall := func(id, args string) ToolCall { return ToolCall{ID: id, Name: "get_weather", Arguments: args} }
	add("tools content none", Context{Messages: []Message{
		sys("s1"), sys("s2"), user("Weather in Paris and Rome?"),
		{Role: "assistant", Extra: noContent, ToolCalls: []ToolCall{dcall("call_1", `{"city": "Paris"}`), dcall("call_2", `{"city": "Rome"}`)}},
		tool(`{"temp": 21}`), tool(`{"temp": 18}`), asst("Paris 21°C, Rome 18°C."),
		user("And Oslo?"), {Role: "assistant", Extra: noContent, ToolCalls: []ToolCall{dcall("call_3", `{"city": "Oslo"}`)}}, tool("-3"),
	}, Tools: tools, AddGenerationPrompt: true})
	add("tools content none single call", Context{Messages: []Message{
		user("Weather in Paris?"), {Role: "assistant", Extra: noContent, ToolCalls: []ToolCall{dcall("call_1", `{"city": "Paris"}`)}},
		tool("21"), asst("21°C."),
	}, AddGenerationPrompt: true})
	add("tools content none object arguments", Context{Messages: []Message{
		user("Weather in Paris?"), {Role: "assistant", Extra: noContent, ToolCalls: []ToolCall{call("call_1", "Paris")}}, tool("21"),
	}})
	add("assistant content none", Context{Messages: []Message{user("q"), {Role: "assistant", Extra: noContent}}})
	add("user content none", Context{Messages: []Message{{Role: "user", Extra: noContent}}, AddGenerationPrompt: true})

	// Gemma 3: content as a list of parts.
	parts := func(ps ...any) map[string]any { return map[string]any{"content": ps} }
	text := func(s string) Object { return Object{{"type", "text"}, {"text", s}} }
	add("content parts", Context{Messages: []Message{
		{Role: "system", Extra: parts(text("  You describe pictures.  "))},
		{Role: "user", Extra: parts(Object{{"type", "image"}, {"url", "cat.png"}}, text(" What is this? "))},
		asst("A cat."), {Role: "user", Extra: parts(text("And "), text("this?"), Object{{"type", "image"}})},
	}, AddGenerationPrompt: true})
	add("content parts no system", Context{Messages: []Message{{Role: "user", Extra: parts(text("hi"))}}})
	add("content number", Context{Messages: []Message{{Role: "user", Extra: map[string]any{"content": 42}}}})

	// Command-R: tools with parameter_definitions, documents.
	add("cohere tools", Context{Messages: []Message{sys("You answer with sources."), user("  What's new in Go 1.26?  "), asst(" Let me search. "), user("ok")}, Tools: cohereTools, AddGenerationPrompt: true})
	add("cohere tools no system", Context{Messages: []Message{user("Who won?")}, Tools: cohereTools})
	add("cohere tools system later", Context{Messages: []Message{user("a"), sys(" note "), asst("b")}, Tools: cohereTools[1:], AddGenerationPrompt: true})
	docs := []any{
		Object{{"title", "Tall penguins"}, {"text", "Emperor penguins are the tallest."}},
		Object{{"title", "Penguin habitats"}, {"text", "Emperor penguins only live in Antarctica."}, {"year", 2024}, {"score", 0.5}},
	}
	add("documents", Context{Messages: []Message{user("What's the tallest penguin?")}, Documents: docs, AddGenerationPrompt: true})
	add("documents accurate", Context{Messages: []Message{sys("Cite."), user("Where do they live?")}, Documents: docs, AddGenerationPrompt: true, Vars: map[string]any{"citation_mode": "accurate"}})
	add("documents fast", Context{Messages: []Message{user("q"), asst("a"), user("q2")}, Documents: docs[:1], Vars: map[string]any{"citation_mode": "fast"}})
	add("documents empty", Context{Messages: []Message{user("q")}, Documents: []any{}, AddGenerationPrompt: true})
	add("documents strings", Context{Messages: []Message{user("q")}, Documents: []any{"plain text"}, AddGenerationPrompt: true})
	return cs
}

// cohereTools are tools in Command-R's format.
var cohereTools = []any{
	Object{{"name", "internet_search"}, {"description", "Returns a list of relevant document snippets for a textual query retrieved from the internet"}, {"parameter_definitions", Object{
		{"query", Object{{"description", "Query to search the internet with"}, {"type", "str"}, {"required", true}}},
		{"top_k", Object{{"description", "How many results"}, {"type", "int"}, {"required", false}}},
	}}},
	Object{{"name", "directly_answer"}, {"description", "Calls a standard (un-augmented) AI chatbot to generate a response given the conversation history"}, {"parameter_definitions", Object{}}},
}
