// Package tinker speaks the Tinker API (Thinking Machines' training and
// sampling service, and the self-hosted servers of the same protocol such
// as SkyRL's): HTTP under /api/v1, every training call answered with a
// future that is long-polled through retrieve_future.
//
// wire.go holds the JSON request and response shapes, wire_proto.go their
// protobuf forms (the SDK's tinker_public schema, internal/tinkerpb); the
// offline server in server/tinkerapi uses the same types and conversions,
// so client and server cannot drift.
//
// # Dialects
//
// SDKs up to 0.24.1 speak JSON. From 0.25.0 forward and forward_backward
// go as protobuf (Content-Type application/x-protobuf) to forward_backward,
// a forward pass with forward_only set, zstd-compressed when the server's
// client/config sets proto_compress_fwdbwd; and the results of forward,
// forward_backward and asample are read as protobuf. This client asks for
// those results as "application/x-protobuf, application/json" and reads
// either. With Options.Wire WireAuto (the default) it sends protobuf
// forward bodies, and when a server refuses the first one unread (415 or
// 422: a server that predates protobuf) it sends that request again as
// JSON with the same seq_id, and JSON from then on; WireProto and
// WireJSON fix the dialect. WireDialect says which is in use.
//
// Prompt log-probs one fewer than the prompt's tokens, the first left out
// (SkyRL's JAX backend), are read as the full list with its leading null
// (SampleResponse.PromptLogprobsShifted says so).
//
// # Calls
//
// NewClient checks GET healthz, asks POST client/config and
// client/dynamic_config (ServerConfig, DynamicConfig; a 404 means the
// SDK's defaults), sets up the credential the server asks for (auth.go:
// the API key in X-API-Key, or exchanged for a JWT at POST auth/token when
// client/config sets pjwt_auth_enabled, with $TINKER_CREDENTIAL_CMD as
// Options.CredentialCmd where the SDK reads it), creates a session
// (create_session) and sends POST session_heartbeat every
// HeartbeatInterval until Close; a failed heartbeat is logged, never
// fatal. DetectEngine identifies the engine behind the server (engine.go). Client.CreateModel
// (create_model) returns a TrainingModel, whose ForwardBackward,
// OptimStep, SaveWeights, SaveWeightsForSampler and LoadWeights each
// submit one request and wait for its future; the Async forms return the
// Future so that calls can be pipelined:
//
//	fb, _ := m.ForwardBackwardAsync(ctx, batch)
//	step, _ := m.OptimStepAsync(ctx, tinker.DefaultAdam(1e-5))
//	out, _ := fb.Wait(ctx)
//	_, _ = step.Wait(ctx)
//
// TrainingModel.Unload (unload_model) frees the model on the server.
// Forward and ForwardBackward check the shapes of the tensors a result
// declares (TensorData.Len) against the data and the batch before
// returning it, so that a caller's Dense cannot be made to allocate
// without limit by a hostile or broken server.
// Client.Sample submits asample; Sampler wraps it as a policy.Policy.
// Every POST carries an X-Idempotency-Key that stays the same across the
// retries of one call, as the SDK's does.
//
// # Futures
//
// Future.Wait posts retrieve_future until a result comes. The server holds
// each poll until the result is ready or its own wait ends (SkyRL: 300 s),
// then answers HTTP 408 or a {"type": "try_again"} body; both mean "poll
// again" and count as neither failures nor retries, nor does a poll that
// reaches Options.PollTimeout. A result with an "error" field is a
// RequestFailedResponse, reported as an *APIError with its category; SkyRL
// reports the same failure as HTTP 400 on retrieve_future. HTTP 404 means
// the server does not know the request id, as after a restart of a server
// that keeps futures in memory (ErrUnknownRequest). A future unresolved
// after Options.FutureTimeout is ErrFutureTimeout, naming the request id.
//
// # Retries
//
// A call is retried, up to Options.MaxRetries times with exponential
// backoff (RetryBaseDelay doubling to RetryMaxDelay, less up to a quarter
// of jitter drawn from a seeded source), when an attempt fails in a way a
// later one may not: a network error, an attempt's RequestTimeout passing,
// HTTP 408, 429 (waiting at least the server's Retry-After or
// Retry-After-Ms, seconds or an HTTP date, capped at 60 s, as the SDK
// does), and 5xx other than 501 and 505. Other statuses, malformed
// replies and failed futures are not retried; neither is anything once
// the caller's context ends.
//
// Reads and requests whose result depends only on the request are retried
// freely: healthz, get_server_capabilities, get_info, create_session,
// retrieve_future, and asample (whose seed is part of the request). A
// sample request whose result the server lost (410 Gone) or that failed in
// the server's category is also submitted again.
//
// Training writes (create_model, forward, forward_backward, optim_step,
// save_weights, save_weights_for_sampler, load_weights) change the model,
// so sending one twice could apply it twice: a retried optim_step would be
// a second optimizer step. They are made safe to retry by their sequence
// numbers. Each TrainingModel numbers its requests as the SDK does, seq_id
// 1, 2, …, one number per logical call, taken once; create_model carries
// the session's model_seq_id 0, 1, …. A retry re-sends the byte-identical
// body, same seq_id included, and the protocol defines a request repeated
// with the same (model_id, seq_id) and payload as the original one: SkyRL
// answers it with the original future's request id without queueing it
// again, and the hosted service derives a model's id from (session_id,
// model_seq_id). So whether the first attempt was lost before or after the
// server applied it, the step is applied exactly once. A seq_id reused
// with a different payload is answered 409 Conflict, which is not retried
// (ErrSeqConflict): it means two different requests claimed one number.
// The counter never steps back, even when a call fails, because the
// server may have recorded the failed call's number.
//
// A model's submissions are sent one at a time, in seq_id order (the
// server orders a model's requests by seq_id), each completing, retries
// included, before the next is sent; waiting for results is not
// serialized. Where a server does not deduplicate a route (SkyRL
// deduplicates neither create_model nor save_weights,
// save_weights_for_sampler nor load_weights), a retry after a lost reply
// may create a second model, be refused as a duplicate checkpoint name
// (409 "already exists") or as a load that is not the model's first
// request (400). A save_weights whose retry meets the 409 checks that the
// checkpoint is there, of this model's base model and rank (weights_info
// on its tinker://<model>/weights/<name> path, waiting through 425), and
// returns its path; a save_weights_for_sampler saves the same weights
// again under name + "-r" (the first save's path cannot be asked for). A
// 409 on a first attempt, and the other errors, are returned, never
// hidden.
package tinker
