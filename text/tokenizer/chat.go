package tokenizer

import "fmt"

// Message roles accepted by the chat template.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // RoleSystem, RoleUser or RoleAssistant
	Content string
}

// RoleID returns the special token that starts a message of role, and an
// error for an unknown role.
func RoleID(role string) (int, error) {
	switch role {
	case RoleSystem:
		return SystemID, nil
	case RoleUser:
		return UserID, nil
	case RoleAssistant:
		return AssistantID, nil
	}
	return 0, fmt.Errorf("tokenizer: unknown message role %q (want %q, %q or %q)",
		role, RoleSystem, RoleUser, RoleAssistant)
}

// AppendMessage appends one rendered message, <|role|> content <|end|>, to
// dst. Content is encoded with Encode.
func (t *Tokenizer) AppendMessage(dst []int, m Message) ([]int, error) {
	rid, err := RoleID(m.Role)
	if err != nil {
		return dst, err
	}
	dst = append(dst, rid)
	dst = t.AppendEncode(dst, m.Content)
	return append(dst, EndID), nil
}

// Render renders a conversation with the chat template:
//
//	<|bos|> (<|role|> content <|end|>)* [<|assistant|>]
//
// The trailing <|assistant|>, written when addGenerationPrompt is true, is
// the prompt for the model's next reply, which it ends with <|end|>. An
// unknown role is an error.
func (t *Tokenizer) Render(messages []Message, addGenerationPrompt bool) ([]int, error) {
	ids := []int{BOSID}
	for i, m := range messages {
		var err error
		if ids, err = t.AppendMessage(ids, m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	if addGenerationPrompt {
		ids = append(ids, AssistantID)
	}
	return ids, nil
}

// Rendered is a conversation rendered for training by RenderTraining.
type Rendered struct {
	// IDs are the token ids, the same as Render(messages, false).
	IDs []int
	// AssistantMask has one entry per id: true on the content tokens of
	// assistant messages and on the <|end|> closing each of them, false on
	// everything else (bos, role tokens, system and user messages).
	AssistantMask []bool
	// Messages gives the content range of each message, in input order.
	Messages []MessageSpan
	// Think and Answer are the <think>…</think> and <answer>…</answer>
	// segments of assistant messages, in order (see TagSpans).
	Think, Answer []Span
}

// MessageSpan locates one message: IDs[Start] is its role token, its
// content is IDs[Start+1:End] and IDs[End] is its <|end|>.
type MessageSpan struct {
	Role       string
	Start, End int
}

// Content returns the range of the message's content tokens.
func (m MessageSpan) Content() (start, end int) { return m.Start + 1, m.End }

// Span locates one tagged segment (such as <think>…</think>) in a sequence
// of ids. ids[Start] is the opening tag. If Closed, ids[End-1] is the
// closing tag; otherwise the segment was cut off (by the end of the message
// or of the sequence) and End is where the closing tag would have gone.
type Span struct {
	// Message is the index of the message holding the segment: the number
	// of role tokens before Start, minus one (-1 for ids that hold no role
	// token, such as a bare generated reply).
	Message    int
	Start, End int
	Closed     bool
}

// Inner returns the range of the tokens between the tags.
func (s Span) Inner() (start, end int) {
	if s.Closed {
		return s.Start + 1, s.End - 1
	}
	return s.Start + 1, s.End
}

// TagSpans finds the segments opened by openID and closed by closeID
// (ThinkID and EndThinkID, or AnswerID and EndAnswerID) in any sequence of
// ids: a rendered conversation or the raw ids a model generated. A segment
// opens at an open tag when none is open, and ends at the next close tag,
// or, unclosed, at the next message boundary (<|end|>, a role token,
// <|bos|>, <|eos|>) or the end of ids. An open tag inside an open segment
// and a close tag outside one are ignored.
func TagSpans(ids []int, openID, closeID int) []Span {
	var spans []Span
	msg, start := -1, -1
	for i, id := range ids {
		switch {
		case id == openID:
			if start < 0 {
				start = i
			}
		case id == closeID:
			if start >= 0 {
				spans = append(spans, Span{Message: msg, Start: start, End: i + 1, Closed: true})
				start = -1
			}
		case id == EndID || id == BOSID || id == EOSID || id == SystemID || id == UserID || id == AssistantID:
			if start >= 0 {
				spans = append(spans, Span{Message: msg, Start: start, End: i})
				start = -1
			}
			if id == SystemID || id == UserID || id == AssistantID {
				msg++
			}
		}
	}
	if start >= 0 {
		spans = append(spans, Span{Message: msg, Start: start, End: len(ids)})
	}
	return spans
}

// RenderTraining renders messages like Render(messages, false) and returns
// the loss mask and the message, think and answer ranges with the ids.
func (t *Tokenizer) RenderTraining(messages []Message) (*Rendered, error) {
	r := &Rendered{
		IDs:      []int{BOSID},
		Messages: make([]MessageSpan, 0, len(messages)),
	}
	for i, m := range messages {
		start := len(r.IDs)
		var err error
		if r.IDs, err = t.AppendMessage(r.IDs, m); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		r.Messages = append(r.Messages, MessageSpan{Role: m.Role, Start: start, End: len(r.IDs) - 1})
	}
	r.AssistantMask = make([]bool, len(r.IDs))
	for _, m := range r.Messages {
		if m.Role != RoleAssistant {
			continue
		}
		for i := m.Start + 1; i <= m.End; i++ {
			r.AssistantMask[i] = true
		}
	}
	keep := func(spans []Span) []Span {
		out := spans[:0]
		for _, s := range spans {
			if s.Message >= 0 && r.Messages[s.Message].Role == RoleAssistant {
				out = append(out, s)
			}
		}
		return out
	}
	r.Think = keep(TagSpans(r.IDs, ThinkID, EndThinkID))
	r.Answer = keep(TagSpans(r.IDs, AnswerID, EndAnswerID))
	return r, nil
}
