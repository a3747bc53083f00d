package openaiapi

import "fmt"

// cost is what a request asks of the server, counted before any work
// starts (see Options.MaxRequestTokens and Options.MaxRequestLogprobs).
type cost struct {
	// tokens the model reads and writes, and the reply carries: each
	// choice's prompt and max_tokens.
	tokens int64
	// logprobs the reply carries: each reported position counts 1 plus
	// its alternatives, in every choice.
	logprobs int64
	// promptLogprobs is the part of logprobs that prompt_logprobs asks for.
	promptLogprobs int64
}

// positions returns the log-probabilities of n positions reported with k
// alternatives each: the token's own and at most k others, of which the
// vocabulary may hold fewer.
func (s *Server) positions(n, k int) int64 {
	if v := s.vocabSize(); v > 0 {
		k = min(k, v)
	}
	return int64(n) * int64(1+k)
}

// checkCost refuses a request that asks for more than the server's
// budgets, naming tokensParam or logprobsParam (and promptParam when
// prompt_logprobs is most of the log-probs) as what to lower.
func (s *Server) checkCost(c cost, tokensParam, logprobsParam string) error {
	if limit := int64(s.opts.MaxRequestTokens); c.tokens > limit {
		return badRequest(tokensParam, "this request asks for %d tokens (each choice's prompt and %s), over this server's limit of %d per request: lower %s, n or the number of prompts",
			c.tokens, tokensParam, limit, tokensParam)
	}
	if limit := int64(s.opts.MaxRequestLogprobs); c.logprobs > limit {
		param, parts := logprobsParam, ""
		if c.promptLogprobs > 0 {
			parts = fmt.Sprintf(" (%d for %s, %d for prompt_logprobs)", c.logprobs-c.promptLogprobs, logprobsParam, c.promptLogprobs)
			if c.promptLogprobs*2 > c.logprobs {
				param = "prompt_logprobs"
			}
		}
		return badRequest(param, "the reply would carry %d log-probabilities%s, each position reported counting 1 plus its alternatives in every choice, over this server's limit of %d per request: lower %s, n, the number of prompts or their length",
			c.logprobs, parts, limit, param)
	}
	return nil
}
