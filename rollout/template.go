package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/policy"
)

// chatTemplate extends a conversation's token ids one message at a time with
// the policy's own chat template, so that the ids the model sampled are kept
// verbatim and only the new messages are tokenized: turn k+1's prompt is
// turn k's prompt, the reply as sampled with the template's end of the
// assistant message, and the new user message rendered as a delta. The
// history is never rendered again.
//
// The delta comes from a canonical conversation H that ends with an
// assistant message: render(H + [user], with the generation prompt), cut
// after H's assistant content and its end marker. Templates treat earlier
// turns in ways a concatenation does not (Qwen3 drops the reasoning of
// assistant messages before the last user message, Llama-3 trims
// contents, Llama-3.1 writes a dated system header first); none of that
// touches what a new user message renders to after an assistant message's
// end, which is all the delta keeps. A template that does not render an
// assistant message's content verbatim followed by an end marker is
// reported at engine start, not discovered mid-run.
type chatTemplate struct {
	p policy.Policy
	// assistantEnd are the ids the template writes after an assistant
	// message's content (e.g. <|im_end|> "\n", <|eot_id|>).
	assistantEnd []int
	// thinkOpen are the ids of "<think>", appended to every prompt as the
	// reference does, so that X (the prompt) ends with the opening tag.
	thinkOpen []int
	// thinkClose are the ids of "</think>".
	thinkClose []int
	// content are the ids of the canonical assistant message's content.
	content []int
}

// canonical is the conversation H every delta is taken after.
var canonical = []policy.Message{{Role: policy.RoleUser, Content: probeUser}, {Role: policy.RoleAssistant, Content: probeAssistant}}

const probeUser, probeAssistant = "probe question", "probe answer"

func newChatTemplate(ctx context.Context, p policy.Policy, think bool) (*chatTemplate, error) {
	t := &chatTemplate{p: p}
	full, err := p.RenderChat(ctx, canonical, false)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	if t.content, err = p.Encode(ctx, probeAssistant); err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	at := lastIndex(full, t.content)
	if at < 0 {
		return nil, fmt.Errorf("chat template: an assistant message's content is not rendered verbatim (%q), so replies cannot be kept token for token", probeAssistant)
	}
	if t.assistantEnd, err = t.endMarker(ctx, full[at+len(t.content):]); err != nil {
		return nil, err
	}
	if think {
		if t.thinkOpen, err = p.Encode(ctx, "<think>"); err != nil {
			return nil, err
		}
		if t.thinkClose, err = p.Encode(ctx, "</think>"); err != nil {
			return nil, err
		}
	}
	// A delta must be found for an ordinary user message.
	if _, err := t.userTurn(ctx, "probe follow-up"); err != nil {
		return nil, err
	}
	return t, nil
}

// index returns the start of the first occurrence of sub in s, or -1.
func index(s, sub []int) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// endMarker finds what the template writes after an assistant message's
// content. alone is what follows the content when the message ends the
// conversation; most templates write the same before a next message
// (<|im_end|> "\n"). Some write more when it ends the conversation (Llama
// 3.0's always adds the next assistant header): the marker is then what
// both renderings share, up to the policy's last stop token in it.
func (t *chatTemplate) endMarker(ctx context.Context, alone []int) ([]int, error) {
	msgs := append(slices.Clone(canonical), policy.Message{Role: policy.RoleUser, Content: "probe follow-up"})
	after, err := t.p.RenderChat(ctx, msgs, true)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	at := index(after, t.content)
	if at < 0 {
		return nil, fmt.Errorf("chat template: an assistant message's content is not rendered verbatim (%q) before a user message", probeAssistant)
	}
	next := after[at+len(t.content):]
	if len(next) >= len(alone) && slices.Equal(next[:len(alone)], alone) {
		return slices.Clone(alone), nil
	}
	n := 0
	for n < len(alone) && n < len(next) && alone[n] == next[n] {
		n++
	}
	shared := alone[:n]
	stops := t.p.Info().StopTokens
	for i := len(shared) - 1; i >= 0; i-- {
		if slices.Contains(stops, shared[i]) {
			return slices.Clone(shared[:i+1]), nil
		}
	}
	return slices.Clone(shared), nil
}

// lastIndex returns the start of the last occurrence of sub in s, or -1.
func lastIndex(s, sub []int) int {
	for i := len(s) - len(sub); i >= 0; i-- {
		if slices.Equal(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// userTurn returns the ids that follow a finished assistant message to add a
// user message and the generation prompt (and "<think>" in think mode):
// the rendering of H + [user] after H's assistant content and end marker.
func (t *chatTemplate) userTurn(ctx context.Context, content string) ([]int, error) {
	msgs := append(slices.Clone(canonical), policy.Message{Role: policy.RoleUser, Content: content})
	after, err := t.p.RenderChat(ctx, msgs, true)
	if err != nil {
		return nil, err
	}
	end := append(slices.Clone(t.content), t.assistantEnd...)
	at := index(after, end) // H's, not one inside the new message
	if at < 0 {
		return nil, fmt.Errorf("chat template: an assistant message followed by a user message does not end as it does alone (with %d end-of-message tokens), so the user message cannot be added as a delta", len(t.assistantEnd))
	}
	return append(slices.Clone(after[at+len(end):]), t.thinkOpen...), nil
}

// closeAssistant returns the ids to append after a sampled reply so that the
// conversation continues as the template would have rendered it: the rest
// of the assistant end marker when the reply stopped on its first token, or
// all of it when the reply was cut off.
func (t *chatTemplate) closeAssistant(reply []int) []int {
	if len(t.assistantEnd) > 0 && len(reply) > 0 && reply[len(reply)-1] == t.assistantEnd[0] {
		return t.assistantEnd[1:]
	}
	return t.assistantEnd
}

// thinkEnd returns the number of leading reply tokens that are reasoning:
// everything before the token that begins "</think>". text is the decoded
// reply. It is -1 when the reply has no "</think>".
func (t *chatTemplate) thinkEnd(ctx context.Context, reply []int, text string) (int, error) {
	if len(t.thinkClose) == 1 { // a special token: find it directly
		return slices.Index(reply, t.thinkClose[0]), nil
	}
	offset := strings.Index(text, "</think>")
	if offset < 0 {
		return -1, nil
	}
	// The tokenizer may merge "</think>" with neighbouring text, so search
	// for the longest prefix of tokens whose text stays before the tag.
	lo, hi := 0, len(reply)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		s, err := t.p.Decode(ctx, reply[:mid])
		if err != nil {
			return -1, err
		}
		if len(s) <= offset {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}
