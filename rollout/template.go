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
// verbatim and only the new text is tokenized.
//
// It learns the template's pieces by rendering two probe conversations and
// taking differences, which works for any template that renders a
// conversation as the concatenation of its messages (agentrl's, Qwen's,
// Llama 3's). A template for which the probes disagree is reported as an
// error at engine start, not discovered mid-run.
type chatTemplate struct {
	p policy.Policy
	// assistantEnd are the ids the template writes after an assistant
	// message's content (e.g. <|end|>, or <|im_end|> "\n").
	assistantEnd []int
	// thinkOpen are the ids of "<think>", appended to every prompt as the
	// reference does, so that X (the prompt) ends with the opening tag.
	thinkOpen []int
	// thinkClose are the ids of "</think>".
	thinkClose []int
	// probe is the rendering of probeConversation, the base from which
	// userTurn takes its difference.
	probe []int
}

var probeConversation = []policy.Message{{Role: policy.RoleUser, Content: probeUser}, {Role: policy.RoleAssistant, Content: probeAssistant}}

const probeUser, probeAssistant = "probe question", "probe answer"

func newChatTemplate(ctx context.Context, p policy.Policy, think bool) (*chatTemplate, error) {
	t := &chatTemplate{p: p}
	genPrompt, err := p.RenderChat(ctx, probeConversation[:1], true)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	full, err := p.RenderChat(ctx, probeConversation, false)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	t.probe = full
	content, err := p.Encode(ctx, probeAssistant)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	head := append(slices.Clone(genPrompt), content...)
	if len(full) < len(head) || !slices.Equal(full[:len(head)], head) {
		return nil, fmt.Errorf("chat template: rendering is not concatenative (an assistant message is not its generation prompt followed by its content)")
	}
	t.assistantEnd = slices.Clone(full[len(head):])
	if think {
		if t.thinkOpen, err = p.Encode(ctx, "<think>"); err != nil {
			return nil, err
		}
		if t.thinkClose, err = p.Encode(ctx, "</think>"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// userTurn returns the ids that follow a finished assistant message to add a
// user message and the generation prompt: rendering [user, assistant, user]
// minus rendering [user, assistant].
func (t *chatTemplate) userTurn(ctx context.Context, content string) ([]int, error) {
	msgs := append(slices.Clone(probeConversation), policy.Message{Role: policy.RoleUser, Content: content})
	after, err := t.p.RenderChat(ctx, msgs, true)
	if err != nil {
		return nil, err
	}
	if len(after) < len(t.probe) || !slices.Equal(after[:len(t.probe)], t.probe) {
		return nil, fmt.Errorf("chat template: a user message does not extend the conversation")
	}
	return append(after[len(t.probe):], t.thinkOpen...), nil
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
