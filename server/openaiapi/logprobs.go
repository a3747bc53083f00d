package openaiapi

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentrl/agentrl/policy"
)

// maxTopLogprobs is the most alternatives a request may ask for per
// position (logprobs, prompt_logprobs, top_logprobs): vLLM's default
// --max-logprobs.
const maxTopLogprobs = 20

// topLogprobsPolicy is implemented by policies that report the most likely
// tokens at each position of a continuation, such as model/local's: for
// request i and position t, the k most likely next tokens after
// Prompt+Continuation[:t], most likely first, with log-probs under the
// convention of Score.
type topLogprobsPolicy interface {
	TopLogprobs(ctx context.Context, reqs []policy.ScoreRequest, k int) ([][][]policy.TokenLogprob, error)
}

// checkTopN checks the number of alternatives per position that the field
// param asks for.
func (s *Server) checkTopN(param string, n int) error {
	switch {
	case n < 0 || n > maxTopLogprobs:
		return badRequest(param, "%s must be between 0 and %d, got %d", param, maxTopLogprobs, n)
	case n > 0 && s.top == nil:
		return badRequest(param, "%s %d is not supported: the served policy does not report its most likely tokens (it has no TopLogprobs method), so only %s 0 is", param, n, param)
	}
	return nil
}

// topLogprobs returns pol's k most likely tokens at every continuation
// position of reqs (nil for a request without continuation), in one
// TopLogprobs call. pol is the served model's: the base policy's or an
// adapter's.
func (s *Server) topLogprobs(ctx context.Context, pol policy.Policy, reqs []policy.ScoreRequest, k int) ([][][]policy.TokenLogprob, error) {
	out := make([][][]policy.TokenLogprob, len(reqs))
	var sub []policy.ScoreRequest
	var idx []int
	for i, r := range reqs {
		if len(r.Continuation) > 0 {
			sub = append(sub, r)
			idx = append(idx, i)
		}
	}
	if len(sub) == 0 || k == 0 {
		return out, nil
	}
	tp, ok := pol.(topLogprobsPolicy)
	if !ok {
		return nil, fmt.Errorf("the served model %T reports no most likely tokens (it has no TopLogprobs method)", pol)
	}
	res, err := tp.TopLogprobs(ctx, sub, k)
	if err != nil {
		return nil, err
	}
	if len(res) != len(sub) {
		return nil, fmt.Errorf("policy returned top log-probs for %d requests of %d", len(res), len(sub))
	}
	for n, i := range idx {
		if len(res[n]) != len(sub[n].Continuation) {
			return nil, fmt.Errorf("policy returned top log-probs at %d positions for %d tokens", len(res[n]), len(sub[n].Continuation))
		}
		for t := range res[n] {
			if len(res[n][t]) > k {
				res[n][t] = res[n][t][:k]
			}
		}
		out[i] = res[n]
	}
	return out, nil
}

// topDict is a completion's top_logprobs entry at a position that holds
// token id (text tok, log-prob lp): the decoded text of each of top mapped
// to its log-prob, plus the token itself when it is not among them (vLLM's
// N or N+1 entries). The token's own value is lp (the sampler's, for a
// generated token). Keys are written as a JSON encoder writes them, so two
// tokens whose text is the same invalid UTF-8 share one key, the more
// likely one's.
func (s *Server) topDict(ctx context.Context, top []policy.TokenLogprob, id int, tok string, lp float64) (map[string]float64, error) {
	out := make(map[string]float64, len(top)+1)
	if len(top) > 0 {
		ids := make([]int, len(top))
		for r, e := range top {
			ids[r] = e.Token
		}
		bs, err := s.tokenBytes(ctx, ids)
		if err != nil {
			return nil, err
		}
		for r, e := range top {
			v := e.LogProb
			if e.Token == id {
				v = lp
			}
			if k := jsonKey(bs[r]); !has(out, k) {
				out[k] = wireLogProb(v)
			}
		}
	}
	if k := jsonKey([]byte(tok)); !has(out, k) {
		out[k] = wireLogProb(lp)
	}
	return out, nil
}

func has(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

// jsonKey returns b as a string with each byte that is not part of valid
// UTF-8 replaced by U+FFFD, as encoding/json writes it.
func jsonKey(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// chatTopLogprob is an entry of a chat logprob's top_logprobs.
type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// chatTops returns the top_logprobs list of a chat position: top, most
// likely first.
func (s *Server) chatTops(ctx context.Context, top []policy.TokenLogprob) ([]any, error) {
	out := make([]any, len(top))
	ids := make([]int, len(top))
	for r, e := range top {
		ids[r] = e.Token
	}
	bs, err := s.tokenBytes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for r, e := range top {
		out[r] = chatTopLogprob{Token: string(bs[r]), Logprob: wireLogProb(e.LogProb), Bytes: byteInts(bs[r])}
	}
	return out, nil
}

func byteInts(b []byte) []int {
	out := make([]int, len(b))
	for i, x := range b {
		out[i] = int(x)
	}
	return out
}
