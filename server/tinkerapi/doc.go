// Package tinkerapi serves the Tinker API (Thinking Machines' training
// and sampling service; SkyRL's self-hosted server speaks the same
// protocol) offline, on the CPU, for one base policy of model/local: the
// embedded Go transformer (model/native) or a Hugging Face directory
// loaded by model/local. A client sends token ids and per-token loss
// inputs; the server runs forward, backward, the optimizer and sampling.
// `trainer serve` mounts it under /api/v1 beside the OpenAI-compatible
// server of server/openaiapi, for the same checkpoint. The request and
// response bodies are the types of client/tinker, shared with its client,
// in JSON or in the SDK 0.25.0's protobuf (client/tinker's wire_proto.go).
//
// # Protocol
//
// Every route lives under /api/v1. GET healthz and get_server_capabilities
// (the served model and its context length, and "engine": "agentrl", by
// which clients tell this server); POST create_session,
// session_heartbeat, create_sampling_session (exactly one of base_model
// and model_path), get_info, weights_info (425 while the checkpoint is
// being written), client/config, client/dynamic_config and telemetry
// (accepted and dropped), and GET samplers/{id}, answer at once. The work
// routes (create_model, forward, forward_backward, optim_step,
// save_weights, save_weights_for_sampler, load_weights, asample) answer a
// future, {request_id, status "pending"}, whose result POST retrieve_future
// returns: the request is held until the result is ready, for up to
// Options.RetrieveWait (300 s by default), then answered 408 so that the
// client asks again. A request that failed has the result {"error",
// "category"}, category "user" for a bad request and "server" otherwise.
// Refused requests get FastAPI's {"detail": …} with 400 (malformed or
// invalid: a sequence longer than the context, too many data), 404
// (unknown session, model, sampling session, checkpoint or request), 409
// (a seq_id reused for another request, a checkpoint name taken), 413 (a
// body over its limit, compressed or once decompressed), 415 (a body of
// another media type or encoding than the route reads), 422 (a protobuf
// body that is not the SDK's message, a compressed body that is not zstd)
// or 429 (a limit of the server's state reached; see Limits).
// Unknown routes are 404 and wrong methods 405. With Options.APIKey set,
// every route but healthz needs the key, as the SDK's X-API-Key header or
// as "Authorization: Bearer KEY".
//
// The requests of one model run one at a time, in seq_id order (requests
// without a seq_id in arrival order). A request re-sent with a seq_id
// already seen and the same payload is a retry: it gets the original
// request id and runs once; a different payload with that seq_id is a 409.
// A payload is compared in its JSON form, whichever dialect carried it.
//
// # Dialects
//
// forward and forward_backward read JSON bodies and, as SDK 0.25.0 sends
// them, protobuf ones (Content-Type application/x-protobuf; forward_backward
// with forward_only set is a forward pass), plain or zstd-compressed
// (Content-Encoding zstd, decompressed to at most the route's body limit).
// retrieve_future answers the result of forward, forward_backward and
// asample as protobuf to a request whose Accept names
// application/x-protobuf, as JSON otherwise; other results and failures
// are always JSON. client/config sets proto_write_fwdbwd and
// fwd_via_fwdbwd (SDKs 0.22.3 to 0.24.1 then send protobuf too),
// proto_compress_fwdbwd with Options.CompressForward, and
// use_pyqwest_transport false; client/dynamic_config sets
// refresh_interval_sec. With Options.JSONOnly the server speaks the JSON
// dialect alone, as it did before protobuf: protobuf and compressed
// bodies get 415, results are JSON, client/config names no protobuf flag.
//
// # Training
//
// create_model copies the base weights. lora_config.rank > 0 trains LoRA
// adapters (native.EnableLoRA) on the attention projections q, k, v, o
// (train_attn) and the MLP's gate, up and down (train_mlp), seeded by
// lora_config.seed (server-chosen when absent). Two extensions of this
// server: lora_config.alpha sets the adapters' scale alpha/rank (default
// 32, DefaultLoRAAlpha), and rank 0 trains every weight of the model (full
// fine-tuning; the train_* flags do not apply), with which a run of
// `trainer train` on the embedded model matches its in-process learner.
// A base policy that has adapters of its own is trained with them merged
// into its weights. The adapters never train the
// unembedding: train_unembed, which the SDK sends true by default, is
// accepted, logged once and reported false by get_info.
//
// A datum is model_input x_0 … x_{T-1} with loss_fn_inputs of length T,
// target_tokens[t] the token position t predicts. The model scores the
// sequence it reads, x followed by target_tokens[T-1], so target_tokens
// must be the input shifted by one (anything else is a user error), and T+1
// must fit in the context. The losses are cross_entropy (weights; default
// 1), importance_sampling and ppo (advantages and the sampler's logprobs;
// ppo's loss_fn_config clip_low_threshold and clip_high_threshold, default
// 0.8 and 1.2), summed over tokens and data as train.go spells out; each
// datum's outputs are "logprobs" and "elementwise_loss", the metrics
// "loss:sum". forward computes them without a gradient; forward_backward
// adds its gradient to the model's, which accumulates until optim_step.
// optim_step clips the global gradient norm to grad_clip_norm when it is
// positive, applies AdamW with the request's learning rate, betas, eps and
// weight decay, and clears the gradient: the very steps of the in-process
// learner (train/inprocess/learner.go). A non-finite gradient is cleared
// without an update, and the metrics say so (skipped:sum 1).
//
// unload_model frees a model, after the requests already queued for it:
// its weights and optimizer state go, later requests are 404, saved
// weights stay.
//
// # Weights
//
// save_weights_for_sampler snapshots the weights, for asample, at
// tinker://<model_id>/sampler_weights/<name>; save_weights saves them with
// the optimizer state (and its step count) at tinker://<model_id>/weights/<name>,
// for load_weights (optimizer true by default) into a model set up alike
// (the same rank, alpha and targets; full weights only into rank 0). Both
// are written atomically under Options.Dir/<model_id>/<kind>/<name>: full
// weights as a native checkpoint, adapters as a PEFT adapter directory
// tied to the base weights by their hash, with the optimizer state beside
// either. Model ids carry a random part, so another server on the same
// directory (after a restart, which loses only the requests in flight and
// the unsaved state of the models) loads the saved paths and samples them.
//
// # Sampling
//
// asample samples the base policy (base_model), saved sampler weights
// (model_path) or a sampling session's, with model/local's Sample, so a
// result equals in-process sampling of the same weights with the same
// seeds: sample i of num_samples uses seed+i (the request's seed, or a
// server-chosen one). Log-probabilities are the model's own at
// temperature 1, as model/local reports them. Sampling stops at the
// request's stop token ids if it gives any, else at the model's own stop
// tokens (stop_reason "stop", the token included), at a stop string (the
// sample cut after the token that completes it), or at max_tokens or the
// end of the context (stop_reason "length"). prompt_logprobs gives one
// entry per prompt token, the first null; topk_prompt_logprobs k > 0 the k
// most likely tokens at each prompt position. Requests that arrive
// together are sampled in one call per set of weights.
//
// # Limits
//
// Everything a client can make the server hold is bounded, so that no
// request, or stream of requests, exhausts its memory or disk (each bound
// an Options field):
//
//   - Tensors: a TensorData's declared shape is checked against its data,
//     and against the datum's tokens, before it is expanded.
//   - Bodies: forward and forward_backward take at most MaxRequestTokens
//     tokens (16 × max(MaxForwardTokens, context) by default) and a body
//     of 128 bytes a token, compressed or once decompressed (the zstd
//     decoder's memory is held to that limit too); asample a body sized to
//     a prompt of the model's context; other routes 1 MiB; all within
//     MaxRequestBytes. At most 2 forward bodies are read and decoded at
//     once (then 429). Decoding a protobuf body allocates in proportion to
//     its bytes: every value comes from them, and declared shapes are
//     checked, not expanded.
//   - Results: at most MaxFutures (4096) held, pending or not yet
//     retrieved, of at most MaxFutureBytes (256 MiB) together, a pending
//     request counted at the most its result can take; past either, 429
//     until clients retrieve theirs. A retrieved result is freed 30 s
//     later (sooner under pressure), an unretrieved one after FutureTTL
//     (10 minutes).
//   - Work: MaxModels models (4; unload_model frees one), MaxQueuedRequests
//     requests queued per model (64), MaxQueuedSamples sequences queued
//     for the sampler (8 × MaxSampleBatch); past them, 429.
//   - Disk: with DiskQuota, saves that would pass it fail as user errors.
//   - State: 1024 sessions, 4096 sampling sessions and 4096 seq_ids per
//     model are remembered, the oldest forgotten first (a seq_id at or
//     below one forgotten is a 409).
//
// # Not supported
//
// Image and audio chunks (a user error), training the unembedding
// (train_unembed), loss functions beyond the three above, checkpoint
// listing and download, the JWT exchange (pjwt_auth_enabled is false: the
// key is checked as it comes).
package tinkerapi
