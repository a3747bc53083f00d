package openaiapi

// TagHeader is the request header whose value the server copies into
// policy.Request.Tag of every sequence a chat or completion request
// samples: a recording policy (the gateway) learns which episode each
// sampled sequence belongs to despite batching.
const TagHeader = "X-Agentrl-Episode"
