package openaiapi

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/policy"
)

// Stop strings, as vLLM applies them: generation ends at the first token
// whose output text (skip_special_tokens applied, as for the reply text)
// contains one of the stop strings. The embedded policy cannot stop on text
// while it samples, so the server samples as without stop strings and cuts
// afterwards: each sequence has its own seeded generator, so the tokens
// before the cut are the ones sampling would have stopped at.

// parseStop reads the stop field: absent or null (no stop strings), a
// string, or a list of strings, any number of them. Empty strings are
// dropped; anything else is a 400.
func parseStop(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := badRequest("stop", "stop must be a string or a list of strings, got %s", raw)
	if raw[0] == '"' {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, bad
		}
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, bad
	}
	var out []string
	for i, e := range list {
		var one string
		if e = bytes.TrimSpace(e); len(e) == 0 || e[0] != '"' || json.Unmarshal(e, &one) != nil {
			return nil, badRequest("stop", "stop must be a string or a list of strings: element %d is %s", i, e)
		}
		if one != "" {
			out = append(out, one)
		}
	}
	return out, nil
}

// output is a sample as a choice reports it, once the stop rules are
// applied: the tokens kept and their log-probs, the reply text, the finish
// reason and the stop reason (a stop_token_ids id, a stop string, or nil).
type output struct {
	tokens     []int
	logprobs   []float64
	text       string
	finish     string
	stopReason any
}

// finishSample applies the stop rules to smp. A stop token that ended
// generation keeps it, as today: token_ids and the log-probs hold it, the
// text holds its text only with includeStop. Otherwise, when a stop string
// appears in the text, the sample is cut at the token that completed it:
// the tokens after it are dropped, the text ends just before the stop
// string (just after it with includeStop), the finish reason is "stop" and
// the stop reason the stop string.
func (s *Server) finishSample(ctx context.Context, smp policy.Sample, sp *sampling, skipSpecial, includeStop bool) (output, error) {
	out := output{tokens: smp.Tokens, logprobs: smp.LogProbs, finish: smp.Finish}
	stopped := smp.Finish == policy.FinishStop && len(smp.Tokens) > 0
	if len(sp.strs) > 0 {
		m, ok, err := s.matchStop(ctx, smp.Tokens, stopped, skipSpecial, sp.strs)
		if err != nil {
			return out, err
		}
		if ok {
			out.tokens = smp.Tokens[:m.keep]
			out.logprobs = smp.LogProbs[:min(m.keep, len(smp.LogProbs))]
			out.finish = policy.FinishStop
			text, err := s.decodeText(ctx, out.tokens, false, skipSpecial, true)
			if err != nil {
				return out, err
			}
			at, stop := earliestStop(text, sp.strs)
			if at < 0 {
				// The decoder changed the text the bytes spelled (e.g. it
				// cleans up tokenization spaces): cut the bytes instead.
				text, at, stop = string(m.text), m.start, m.stop
			}
			if includeStop {
				at += len(stop)
			}
			out.text, out.stopReason = text[:at], stop
			return out, nil
		}
	}
	if stopped {
		if last := smp.Tokens[len(smp.Tokens)-1]; sp.reason[last] {
			out.stopReason = last
		}
	}
	text, err := s.decodeText(ctx, smp.Tokens, stopped, skipSpecial, includeStop)
	if err != nil {
		return out, err
	}
	out.text = text
	return out, nil
}

// stopMatch is where a stop string ends a sample.
type stopMatch struct {
	keep  int    // tokens kept: up to and including the one completing the stop string
	stop  string // the stop string
	start int    // its byte offset in text
	text  []byte // the text of the kept tokens, their bytes concatenated
}

// matchStop finds the first token of ids whose output text contains one of
// stops, the text being the tokens' bytes (tokenBytes) concatenated, with
// special tokens left out when skipSpecial. Of the stop strings that token
// completes, the one that starts first wins (the first listed on a tie).
// When stopped, the final token is a stop token and is not looked at: a
// stop token ends generation at its own step, before any stop string (as
// in vLLM).
func (s *Server) matchStop(ctx context.Context, ids []int, stopped, skipSpecial bool, stops []string) (stopMatch, bool, error) {
	n := len(ids)
	if stopped {
		n--
	}
	bs, err := s.tokenBytes(ctx, ids[:n])
	if err != nil {
		return stopMatch{}, false, err
	}
	var text []byte
	ends := make([]int, n) // ends[t]: the length of the text through token t
	for t, b := range bs {
		if !skipSpecial || !s.isSpecial(ids[t]) {
			text = append(text, b...)
		}
		ends[t] = len(text)
	}
	best := stopMatch{keep: -1}
	for _, stop := range stops {
		at := bytes.Index(text, []byte(stop))
		if at < 0 {
			continue
		}
		// The first token whose text reaches the end of the occurrence.
		t, _ := slices.BinarySearch(ends, at+len(stop))
		if best.keep < 0 || t+1 < best.keep || t+1 == best.keep && at < best.start {
			best = stopMatch{keep: t + 1, stop: stop, start: at}
		}
	}
	if best.keep < 0 {
		return best, false, nil
	}
	best.text = text[:ends[best.keep-1]]
	return best, true, nil
}

// earliestStop returns the byte offset of the first occurrence of any of
// stops in text and that stop string (the first listed on a tie), or -1.
func earliestStop(text string, stops []string) (int, string) {
	at, which := -1, ""
	for _, stop := range stops {
		if i := strings.Index(text, stop); i >= 0 && (at < 0 || i < at) {
			at, which = i, stop
		}
	}
	return at, which
}
