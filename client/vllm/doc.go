// Package vllm is a policy.Policy that talks to a vLLM server (or several)
// through its OpenAI-compatible HTTP API: token ids in, token ids and
// log-probabilities out, never re-tokenized text.
//
// # Endpoints
//
//   - Sample: POST /v1/completions with the prompt as token ids, every
//     sampling field sent explicitly (temperature 0 included: the server's
//     generation_config defaults never apply), max_tokens (never null,
//     which vLLM reads as 16), top_k -1 for "disabled", min_p 0,
//     repetition_penalty 1, no presence/frequency penalty, logprobs 0 (the
//     sampled token's log-prob only), return_token_ids,
//     skip_special_tokens false, add_special_tokens false, stop_token_ids
//     with ignore_eos true (see Stop tokens below),
//     include_stop_str_in_output. prompt_logprobs is never set on sampling
//     requests, because it turns off vLLM's prefix caching.
//   - Score: POST /v1/completions with prompt = prompt ids ++ continuation
//     ids (several sequences per request as a list of id lists),
//     max_tokens 1 and prompt_logprobs 0; the log-probs are read per choice
//     from choices[i].prompt_logprobs[j][str(id_j)].logprob, and the
//     returned prompt_token_ids must equal what was sent.
//   - RenderChat, Encode, Decode: POST /tokenize (chat form, so the
//     server's own chat template renders the conversation, with
//     add_generation_prompt and add_special_tokens false sent explicitly;
//     text form with add_special_tokens false, since vLLM's default for
//     text is true and would prepend BOS) and POST /detokenize.
//   - LoadLoRA, UnloadLoRA: POST /v1/load_lora_adapter and
//     /v1/unload_lora_adapter on every server; SetModel switches later
//     requests to an adapter, whose name Info reports as the policy version.
//
// # Decisions
//
// One HTTP request per sample (n = 1), sent concurrently. Requests are not
// grouped with n > 1: vLLM derives the seeds of the n children from the
// request seed, so a grouped sample would differ from the same request sent
// alone, breaking policy.Sampling.Seed's promise that a sample does not
// depend on its batch; the rollout engine's seeds are hashed per sample,
// not consecutive, so groups could not be formed anyway; and vLLM's prefix
// cache already shares the prefill of identical concurrent prompts.
// Options.Concurrency bounds the requests in flight per Client.
//
// Seeds are sent as the int64 with the same bits as the uint64
// policy.Sampling.Seed (vLLM accepts the whole int64 range), so no seed
// bit is lost.
//
// vLLM writes -9999 where a log-probability is -Inf (JSON has no
// infinity); any log-prob at or below -9999 is returned as math.Inf(-1), the
// value it stands for. A -9999 would not be safer: exp of a difference with
// it overflows just the same.
//
// Sampling.MaxTokens 0 means the room left in the context (MaxContext minus
// the prompt), and a larger MaxTokens is lowered to it, since vLLM rejects
// rather than truncates such requests (and reads a missing or null
// max_tokens as 16); with no room left the sample is empty with
// FinishLength, as policy/policytest does.
//
// Stop tokens: a sample ends exactly at Sampling.StopTokens (nil means
// Info().StopTokens). vLLM adds the model's end-of-sequence tokens (the
// tokenizer's eos_token_id and generation_config's eos_token_id) to every
// request's stop set unless ignore_eos is true (vllm/sampling_params.py,
// update_from_generation_config; vllm/v1/core/sched/utils.py, check_stop),
// so the client sends ignore_eos true with stop_token_ids: otherwise a
// sample asked to run on (StopTokens empty, or not holding the EOS) would
// end at the EOS anyway. The stop token New finds by rendering a probe
// conversation (see Options.StopTokens) is usually the EOS (<|im_end|> for
// Qwen); for a model whose generation_config lists several (Llama 3:
// <|eot_id|>, <|eom_id|>, <|end_of_text|>) set Options.StopTokens to all of
// them, since vLLM no longer stops at the others on its own. Stop tokens
// that the server adds itself, whatever the request (newer vLLM merges its
// default sampling parameters' stop_token_ids, e.g. gpt-oss's, into every
// request's), are beyond the client's reach.
//
// Retries, with exponential backoff and jitter, happen only on network
// errors (including a per-attempt timeout and a connection dropped while
// the body was read), on 429 and on 5xx other than 501 and 505; a
// Retry-After header is honoured (capped at five minutes). 4xx replies and
// well-delivered but malformed bodies are never retried. A retried sample
// yields exactly one result: only the response of the attempt that
// succeeded is read. Retry.Outage keeps retrying past the attempts, for a
// server that restarts: a training run waits minutes for a vLLM engine to
// come back rather than failing its step. Retrying LoadLoRA after a 5xx
// can meet "already loaded" on the second attempt; that error is reported,
// not hidden (EnsureLoRA, which restores an adapter a restarted server
// lost, counts it as done; IsModelMissing recognises the requests that
// named it).
//
// In Sample, a failure of one request (after its retries) is reported in
// that Sample's Err and the others are unaffected; the call itself fails
// only when ctx ends. Score returns one error for the call.
//
// With several base URLs each request goes to the server with the fewest
// requests in flight from this Client, ties broken round-robin; a server
// that just failed is avoided for the backoff delay while another is
// available. Adapters are loaded on every server.
//
// Retry warnings go to Options.Logger, slog.Default() unless set: a
// degraded server should not go unnoticed in a long run.
//
// Package vllmtest serves any policy.Policy over the same subset of the
// API, for tests and CI. It answers as vLLM does where a difference could
// hide a client bug (max_tokens defaults, the EOS added to the stop set,
// /tokenize's add_special_tokens defaults, the logprobs limits and shapes),
// but rejects unknown request fields with a 400 where vLLM accepts and
// ignores them (logging them, at debug level in recent versions): against a
// real server a misspelt field would silently have no effect, so the fake
// is strict on purpose. The client's tests also check every field it sends
// against the field names of vLLM's request models
// (TestRequestFieldsAreVLLMs), which catches a misspelling the fake would
// share.
//
// Decode goes through JSON, so token ids that decode to invalid UTF-8 (a
// byte-level token cut mid-character) come back with U+FFFD, as from any
// vLLM client.
package vllm
