// Package openaiapi serves any policy.Policy, typically the embedded native
// model (model/local), over the subset of vLLM's OpenAI-compatible HTTP
// API that agentrl and ordinary OpenAI clients use. It is what
// `trainer serve` runs, and client/vllm is its client: the rollout engine
// driven through vllm.Client and this server produces the same trajectories
// as with the policy in process.
//
// # Endpoints
//
//   - GET /health: 200 with an empty body.
//   - GET /v1/models: the served model, then each loaded LoRA adapter, as
//     vLLM's ModelCard: id, object "model", created, owned_by "vllm",
//     root (the served name for the base model, where vLLM writes the path
//     or Hugging Face id it loaded the model from; the lora_path as given
//     for an adapter), parent (null for the base model, its name for an
//     adapter), max_model_len (null for an adapter, as vLLM writes it)
//     and permission (one ModelPermission with vLLM's defaults).
//   - GET /v1/models/{id}: one of those cards (the OpenAI API's
//     models.retrieve, which vLLM lacks), or a 404.
//   - POST /v1/load_lora_adapter and POST /v1/unload_lora_adapter, only
//     with Options.AdapterDir (see LoRA adapters below).
//   - POST /v1/completions: prompt as a string, a list of strings, a list
//     of token ids or a list of such lists; n, seed, temperature, top_p,
//     top_k (-1 or 0 = off), min_p 0, repetition_penalty 1, presence and
//     frequency penalties 0, max_tokens (see Limits), stop (a string or a
//     list of strings), stop_token_ids, ignore_eos (see Stops),
//     logprobs 0..20,
//     prompt_logprobs 0..20, echo, return_token_ids, skip_special_tokens,
//     add_special_tokens, include_stop_str_in_output, stream with
//     stream_options (see Streaming below).
//   - POST /v1/chat/completions: messages rendered with the policy's chat
//     template (RenderChat); n, seed, temperature, top_p, top_k, min_p 0,
//     max_tokens or max_completion_tokens, stop, stop_token_ids,
//     ignore_eos, logprobs with top_logprobs 0..20, return_token_ids
//     (token_ids per choice, prompt_token_ids at the top level),
//     skip_special_tokens, include_stop_str_in_output,
//     add_generation_prompt, add_special_tokens (default false: the special
//     tokens of a text prompt, see Vocabulary, before the rendered
//     template), stream with stream_options; tools, tool_choice,
//     parallel_tool_calls and response_format (see Tools below).
//   - POST /tokenize, with vLLM's defaults: the text form (prompt) with
//     add_special_tokens (default true), or the chat form (messages) with
//     add_generation_prompt (default true) and add_special_tokens (default
//     false, as in chat requests); and POST /detokenize.
//
// Both sampling endpoints answer stream: true with server-sent events, as
// vLLM and OpenAI do: text/event-stream, one "data: {chunk}" event per
// chunk, "data: [DONE]" last. The chunks are sent once sampling has
// finished (see Streaming below).
//
// Every reply carries an X-Request-Id header: the request's own when it
// sent one, a fresh id otherwise (vLLM's --enable-request-id-headers; the
// OpenAI clients report it as the request id). Chat messages and chat
// logprobs carry "refusal": null, which OpenAI's published schema
// requires. Checked against that schema (openai/openai-openapi 2.3.0,
// with the conformance test's optional AGENTRL_OPENAI_OPENAPI), the
// replies validate except where vLLM's differ from it the same way: an
// error's code is the HTTP status as an integer (the schema says a string
// or null), and echo's first prompt position has null token_logprobs and
// top_logprobs entries (the schema says a number and an object).
//
// Unknown request fields are ignored, as vLLM does; a known field of the
// wrong type is a 400. Values that would change the sampling distribution
// or the reply and are not implemented (min_p other than 0, penalties,
// logit_bias, prompt_logprobs in chat) are rejected with
// 400 rather than ignored. Every error is an OpenAI-style
// body {"error": {"message", "type", "param", "code"}}, code being the HTTP
// status as vLLM writes it: 400 for a bad request, 401 for a missing or
// wrong API key (checked on /v1 routes only, as vLLM's --api-key), 404 for
// an unknown path or model, 405 for a wrong method, 413 for a body over
// Options.MaxRequestBytes, 500 when the policy fails.
//
// # Tools
//
// Chat requests take tools ([{"type": "function", "function": {name,
// description, parameters}}], names unique, parameters a JSON schema
// object), tool_choice ("none", "auto" (the default with tools),
// "required", or {"type": "function", "function": {"name"}} naming one of
// the tools), parallel_tool_calls (default true) and response_format
// ({"type": "text"}, {"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"name", "schema"}}); messages may hold an assistant's
// tool_calls and tool messages (tool_call_id, name). /tokenize's chat form
// takes tools too.
//
// The call format is Options.ToolCallParser (vLLM's --tool-call-parser:
// hermes, llama3_json, compact) or, when empty, the one the policy's chat
// template shows (policy.ToolRenderer). A template with tools renders them
// (RenderChatTools), as transformers' apply_chat_template(tools=...). A
// template without tools (the embedded model's) gets them described in
// the system message (toolcall.Describe, the compact format), an
// assistant's calls written in the format after its content, and each run
// of tool messages as one user message ("Result of NAME:\nCONTENT"), as
// the rollout engine offers tools to such a model.
//
// With tools and tool_choice auto or required, the reply is parsed into
// tool_calls (ids "chatcmpl-tool-..."), the text beside the calls being the
// content (null when there is none); with parallel_tool_calls false only
// the first call is kept. A reply whose calls do not parse is all content,
// with no calls, as vLLM's parsers return it. finish_reason is
// "tool_calls" when calls were made under auto, and under required when
// the sample stopped; a named function keeps "stop" (OpenAI's and vLLM's
// rule). tool_choice none renders the tools and parses nothing.
//
// tool_choice required guarantees one or more calls of the tools (one
// with parallel_tool_calls false), a named function one call of it, whose
// arguments the tool's schema accepts, by constrained decoding
// (text/constrain): the schema becomes an automaton over the call's text
// in the format, and each sampled token is
// masked to those that keep the text completable within max_tokens
// (which must leave room for the shortest call and a stop token, else a
// 400), on the policy's vocabulary, before temperature, top-k and top-p.
// response_format json_object and json_schema constrain the content the
// same way (to a JSON object, or a value of the schema; see text/constrain
// for the keywords enforced). This needs a policy that applies
// constraints (policy.ConstrainedSampler and the Vocabulary methods:
// model/local's, embedded or Hugging Face); with another it is a 400, as
// are a schema nothing satisfies, tool arguments that allow no object, a
// tool_choice that names no tool, and response_format combined with a
// forced call. The log-probs stay the policy's own (raw logits). A stop
// string of the request that cuts a forced call leaves its text as the
// content, stop_reason naming the stop string.
//
// Streamed, a reply with calls is cut as OpenAI and vLLM stream calls: the
// role (content ""), the content beside the calls when there is some, then
// per call a delta {"tool_calls": [{"index", "id", "type": "function",
// "function": {"name", "arguments": ""}}]} followed by deltas with pieces
// of its arguments (index and function.arguments only); the last chunk has
// the finish_reason and, since a call's tokens are not cut with its text,
// the choice's token ids and log-probs. The pieces concatenate to the
// unstreamed reply's.
//
// # Decisions
//
// Seeds: choice i (0-based) of a request with n > 1 samples with seed+i
// (wrapping, the request's int64 seed read as the uint64 with the same
// bits, as client/vllm sends it), the same for every prompt of a
// multi-prompt request; a request without a seed gets a random one. So an
// n = 1 request with seed s returns exactly policy.Sample with Seed s, and
// the choices of one n > 1 request are the n = 1 requests with seeds s,
// s+1, ... (vLLM derives the children's seeds otherwise).
//
// Batching: concurrent sampling requests are merged, up to
// Options.MaxBatch sequences, into one policy.Sample call, whose results are
// fanned back. A batch waits, at most Options.BatchWindow, only for
// requests that have already arrived and are still being read and checked;
// with none on the way it starts at once, so a lone client pays no delay.
// While Options.MaxConcurrentBatches calls are running (one by default, as
// the embedded policy runs one call at a time), new requests keep gathering
// for the next call. The embedded policy samples every request from its own
// seeded generator, so a request's tokens do not depend on its batch. A call
// is cancelled only when every request in it has been cancelled (the client
// disconnected). If a merged call fails as a whole, its requests are retried
// one by one, so a bad request does not fail its neighbours.
//
// Scoring: prompt_logprobs (and echo with logprobs) go through policy.Score,
// teacher-forcing each prompt from its first token, or through the policy's
// ScoreRanks(ctx, reqs []policy.ScoreRequest) ([][]float64, [][]int, error)
// when it has one (model/local's does), which gives Score's log-probs and
// each token's rank from the same forward passes. Entries carry logprob,
// decoded_token and rank, as said below. Log-probabilities follow
// policy's convention (raw logits, temperature 1); -Inf is written -9999,
// as vLLM does.
//
// Alternatives: logprobs, prompt_logprobs and top_logprobs above 0 (at most
// 20, vLLM's default --max-logprobs; more, or a negative value, is a 400
// naming the field) need a policy with the method TopLogprobs(ctx, reqs
// []policy.ScoreRequest, k int) ([][][]policy.TokenLogprob, error), the k
// most likely next tokens at each continuation position, most likely first,
// ties to the lower id (model/local's has it); with any other policy they
// are a 400. The server asks for them with one TopLogprobs call over the
// prompts and one over the tokens kept once sampling is done; the sampled
// token's own log-prob (token_logprobs, content[i].logprob) is still the
// sampler's.
//   - /v1/completions logprobs N: top_logprobs[i] maps the decoded text of
//     each of the N most likely tokens to its log-prob, plus the sampled
//     token when it is not among them (vLLM's N or N+1 entries). Tokens
//     whose text is the same (bytes of a partial UTF-8 character, written
//     U+FFFD) share a key, the more likely one's. With echo the prompt
//     positions get theirs too (the first is null), min(logprobs,
//     prompt_logprobs) of them when both are set, since vLLM's echo reads
//     them from the prompt's scores.
//   - /v1/completions prompt_logprobs N (N = logprobs by default with
//     echo): each prompt position holds the prompt token and the N most
//     likely tokens, keyed by id, each with logprob, decoded_token and
//     rank. A listed token's rank is its place in the list (the prompt
//     token's too when it is listed, as in vLLM). The prompt token's rank
//     when it is not listed (and with prompt_logprobs 0, every entry's) is
//     its rank in the whole distribution, as vLLM computes it from the
//     logits (vllm/v1/sample/ops/logprobs.py, batched_count_greater_than:
//     the number of tokens whose log-prob is at least the token's, so ties
//     count against it), from ScoreRanks; with a policy that has no
//     ScoreRanks it is left out, since the policy interface exposes no
//     logits.
//   - /v1/chat/completions top_logprobs N with logprobs true:
//     content[i].top_logprobs is a list of N {token, logprob, bytes}, most
//     likely first (OpenAI's shape). top_logprobs above 0 without logprobs
//     true is a 400; 0 is accepted, as vLLM does.
//
// Stops, as in vLLM (vllm/sampling_params.py, update_from_generation_config;
// vllm/v1/core/sched/utils.py, check_stop): generation ends at a token of
// stop_token_ids and, unless ignore_eos is true, at the model's
// end-of-sequence tokens, which are the policy's Info().StopTokens
// (model/local reads them as vLLM does: the tokenizer's eos_token and
// generation_config's eos_token_id). stop_token_ids are additional, never a
// replacement: client/vllm sends ignore_eos true to make them the whole stop
// set. finish_reason is "stop"; stop_reason is null when the first of
// Info().StopTokens (vLLM's primary EOS, which it checks before
// stop_token_ids) ended generation, and the token id when any other stop
// token did (vLLM merges generation_config's other EOS ids into
// stop_token_ids). The stop token is always in token_ids and in the
// log-probs; include_stop_str_in_output (default false) and
// skip_special_tokens (default true) shape only the text.
//
// Stop strings (stop.go): stop is a string or a list of any number of
// strings; empty ones are ignored and anything else is a 400. As in vLLM,
// generation ends at the first token whose output text (special tokens
// dropped when skip_special_tokens) contains one of them; the text is read
// as the tokens' bytes in a row (TokenBytes, or Decode of one token at a
// time). Of the stop strings that token completes, the one starting first
// wins, the first listed on a tie (vLLM takes the first listed). The reply
// text, decoded as usual, is cut just before the stop string (the first in
// it), or just after it with include_stop_str_in_output; should the decoder
// have rewritten the stop string away (cleaning up tokenization spaces),
// the tokens' bytes are cut instead. token_ids, the log-probs and
// usage.completion_tokens keep the tokens up to and including the one that
// completed it; finish_reason is "stop" and stop_reason the stop string. A
// stop token ends generation at its own step, before stop strings are
// looked for (as in vLLM): it wins when it comes first, and its own text
// never matches. The embedded policy cannot stop on text while it samples,
// so the server samples as without stop strings, up to max_tokens, and
// cuts afterwards. Each sequence has its own seeded generator, so the
// tokens kept are exactly those sampling would have stopped at.
//
// Limits: max_tokens defaults to 16 on /v1/completions when absent or null
// (the OpenAI and vLLM default; vLLM's normalize_null_max_tokens validator
// reads null as 16, where versions before it took the rest of the
// context), bounded by the room left, and to the rest of the context in
// chat (max_tokens or max_completion_tokens absent or null, as vLLM's
// get_max_tokens); Options.MaxTokensCap, when set, bounds it. A prompt
// that leaves no room in the context, or a max_tokens that exceeds the room
// or the cap, is a 400 (vLLM rejects, it does not truncate). n is at most Options.MaxN, and a request has at most 1024
// sequences (prompts × n). max_tokens 0 is accepted only with echo (the
// prompt is scored, nothing is generated). Two budgets bound a request's
// work and its reply, checked before any work: the tokens its choices
// read and write (Options.MaxRequestTokens) and the log-probabilities its
// reply carries, each reported position counting 1 plus its alternatives
// in every choice (Options.MaxRequestLogprobs); a request over either is
// a 400 that names the parameter to lower.
//
// LoRA adapters: as vLLM started with --enable-lora and
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (vllm/entrypoints/openai's
// serving_models.py and the lora api_router), POST /v1/load_lora_adapter
// {"lora_name", "lora_path", "load_inplace"} loads a PEFT adapter
// directory (or a directory holding one as adapter/ and no model, the
// trainer's LoRA checkpoints) and answers 200 with the plain text
// "Success: LoRA adapter 'NAME' added successfully."; both fields are
// required (400 "Both 'lora_name' and 'lora_path' must be provided."), a
// loaded name is vLLM's 400 ("... has already been loaded. If you want to
// load the adapter in place, set 'load_inplace' to True.") unless
// load_inplace is true, which replaces the adapter (it keeps its place in
// the list). Unlike vLLM, the base model's name cannot be an adapter's,
// and an adapter that does not load (unreadable, another base model's
// shapes, another rank than its tensors, unknown target modules,
// unsupported PEFT options) is a 400 naming the cause, not a 500. POST
// /v1/unload_lora_adapter {"lora_name", "lora_int_id"} (the id is
// ignored, as vLLM does) answers "Success: LoRA adapter 'NAME' removed
// successfully.", 400 without a name, and vLLM's 404 "The lora adapter
// 'NAME' cannot be found." for a name not loaded. Without
// Options.AdapterDir the two routes are 404, as in vLLM without the
// variable; they are under /v1, so Options.APIKey guards them.
//
// The request field model picks the weights on /v1/completions (sampling
// and prompt_logprobs) and /v1/chat/completions: the served name (or none)
// the base model, an adapter's name the adapter, any other name the 404
// above; replies carry the name asked for. /tokenize and /detokenize
// accept an adapter's name too.
// Tokenization, the chat template, the context and the stop tokens are the
// base policy's: adapters change only the weights. Each model has its own
// batcher, so requests for different models never share a policy.Sample
// call; the batchers share the Options.MaxConcurrentBatches slots (so by
// default one call runs at a time, whatever its model) and the arrivals a
// batch waits for (a batch may wait up to Options.BatchWindow for a request
// that turns out to be for another model). A request holds its model from
// its check to its reply: an adapter unloaded or replaced meanwhile
// finishes the requests already using it, and its batcher stops after the
// last.
//
// Confinement: the load route reads files on the server, so lora_path,
// absolute or relative to Options.AdapterDir, must resolve with
// filepath.EvalSymlinks (the root's own links resolved too) to a directory
// inside Options.AdapterDir, and so must the adapter/ directory and the
// adapter_config.json and adapter_model.safetensors it uses. Anything else,
// a missing path included, is the same 400 ("lora_path ... is not a
// directory inside this server's LoRA adapter directory"), which does not
// tell whether a path outside exists. Server.AddAdapter, the operator's
// load at start (`trainer serve -lora`, vLLM's --lora-modules), is not
// confined. Options.LoadAdapter builds an adapter's policy from its
// directory; `trainer serve` gives local.Policy.WithPEFT, which applies it
// (native.LoadPEFT) to a copy of the base model: one model copy per
// adapter, fine for the small models served here, and sampling exactly
// what `trainer serve -checkpoint ADAPTER_DIR` samples for the same seed.
// Unload adapters that are no longer used: nothing evicts them, and at
// most Options.MaxAdapters are loaded at once (a new name past it is a
// 400). An adapter is checked against the base model before the copy
// (native.CheckPEFT: its rank, its file's size), and one whose weights
// are not all finite does not load.
//
// Streaming: the embedded policy samples whole sequences in batches, so a
// streamed reply is the finished reply cut into the chunks a token-by-token
// stream would contain, all sent (each flushed) after sampling ends: the
// stream starts (200 and headers) once the request is checked, before it
// samples. Each choice has one chunk per generated token; its text delta is
// the token's bytes (none for a skipped special token), clipped where the
// text ends (an excluded stop token), and bytes that do not yet complete a
// UTF-8 character wait for a later chunk (that chunk's delta is ""), so a
// choice's deltas concatenate exactly to the text the same request gets
// unstreamed. (Should a token's bytes not be the text's next ones, with a
// decoder that rewrites text, that token's delta holds the rest of the text,
// and the following ones are empty.) finish_reason and stop_reason are null
// but in a choice's last chunk. /v1/completions chunks ({"object":
// "text_completion", choices [{index, text, logprobs, finish_reason,
// stop_reason}]}) carry, each, the logprobs of their tokens (text_offset
// continuing through the choice's text) and, with return_token_ids, their
// token_ids; a choice's first chunk also carries the echoed prompt (text,
// log-probs) with echo, its prompt_token_ids with return_token_ids and its
// prompt_logprobs. Chat chunks ({"object": "chat.completion.chunk", choices
// [{index, delta, logprobs, finish_reason, stop_reason}]}) start each choice
// with delta {"role": "assistant", "content": ""}, then one {"content": ...}
// per token with logprobs {"content": [its entry]} and token_ids; the
// stream's first chunk carries prompt_token_ids with return_token_ids. Steps
// interleave the choices: step j sends chunk j of every choice that has one.
// stream_options.include_usage adds "usage": null to every chunk and a last
// chunk with "choices": [] and the usage of the unstreamed reply;
// continuous_usage_stats (with include_usage) puts on every chunk its
// choice's usage so far (prompt tokens and tokens sent), as vLLM does.
// stream_options without stream: true is a 400. Errors found before the
// stream starts are the usual JSON replies; a failure after it started (the
// policy failing) is one event {"error": {...}} followed by [DONE].
//
// Vocabulary: when the policy has the methods VocabSize() int,
// IsSpecialToken(id int) bool and TokenBytes(id int) ([]byte, error)
// (model/local's does, with the agentrl tokenizer or a Hugging Face one),
// the server checks token ids against its vocabulary, knows the special
// tokens (skip_special_tokens) and reads each token's bytes from it.
// Otherwise ids are checked by the policy and tokens are decoded one by one
// with Decode. add_special_tokens on a text prompt prepends the policy's
// TextPrefix() []int when it has that method (model/local's: <|bos|> for
// the agentrl tokenizer; for a Hugging Face one what its post-processor
// adds, as vLLM does: <|begin_of_text|> for Llama 3, nothing for Qwen),
// and otherwise what the chat template writes for an empty conversation.
package openaiapi
