// Package gateway trains agent programs that drive their model through
// the OpenAI API, in any language, without changing them.
//
// The gateway serves the policy with server/openaiapi and records, for
// every request that names an episode (the X-Agentrl-Episode header, or
// metadata.agentrl_episode in the body), the exact prompt token ids it
// sampled after, the token ids it sampled and their log-probs. It hands
// the sampling policy to openaiapi wrapped in a recording policy.Policy,
// so that each sequence is seen on its own even when concurrent requests
// share one batched Sample call (policy.Request.Tag carries the episode).
//
// History matching: an agent sends its whole conversation with every
// request. When the prompt begins with the episode's recorded tokens (the
// previous prompt and the reply as sampled), the request extends them
// token-exactly; when the program re-rendered or trimmed its history so
// that it does not, the request starts a new segment, trained as a
// sequence of its own, and the mismatch is counted
// (gateway/history_mismatch).
//
// Episodes: a program claims a task (POST /v1/episodes/claim: an episode
// id, the environment seed and its first observation), plays it through
// the chat API, and reports its reward (POST /v1/episodes/{id}/reward) or
// its failure (POST /v1/episodes/{id}/fail). An episode that failed, that
// made more model requests than its deadline allows (Options.MaxRequests:
// deterministic in steps, not in wall time) or that was not finished when
// the step's time ran out is dropped and counted (gateway/dropped), never
// scored 0. Each task is handed out K times; its finished episodes form a
// group for group advantages.
//
// Run is the training mode: it runs the gateway, opens a step's tasks,
// waits for their episodes, trains the learner on them, and opens the
// next step's tasks only once the new weights serve (see Run for what a
// request made during an update gets). docs/gateway.md describes the
// protocol.
package gateway
