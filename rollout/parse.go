package rollout

import (
	"regexp"
	"strings"
)

// Parsed is an assistant reply taken apart.
type Parsed struct {
	// FormatOK reports whether the reply had the required
	// <think>…</think><answer>…</answer> shape (or <answer>…</answer>
	// without thinking).
	FormatOK bool
	// Think is the reasoning text, trimmed.
	Think string
	// Actions are the answer's actions, split on the separator, trimmed,
	// empty pieces dropped, at most the per-turn cap.
	Actions []string
	// Extra counts actions beyond the per-turn cap, which are ignored.
	Extra int
	// Rejected counts tool calls that made no action (an unknown tool,
	// arguments its schema refuses): invalid steps (Config.Tools).
	Rejected int
}

var (
	thinkAnswerRE = regexp.MustCompile(`(?s)<think>(.*?)</think>\s*<answer>(.*?)</answer>`)
	answerRE      = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)
	// specialStrings are removed from both parts, as the reference does, so a
	// stray tag or chat marker cannot leak into an action.
	specialStrings = strings.NewReplacer("<think>", "", "</think>", "", "<answer>", "", "</answer>", "",
		"<|im_start|>", "", "<|im_end|>", "", "<|end|>", "", "<|assistant|>", "", "<|user|>", "", "<|system|>", "")
)

// ParseReply parses reply, the assistant's full text including the opening
// <think> that the prompt supplied. sep separates actions (RAGEN: "||");
// maxActions caps the actions kept (<= 0: no cap).
func ParseReply(reply string, think bool, sep string, maxActions int) Parsed {
	var p Parsed
	var answer string
	if think {
		m := thinkAnswerRE.FindStringSubmatch(reply)
		if m == nil {
			return p
		}
		p.Think = strings.TrimSpace(specialStrings.Replace(m[1]))
		answer = m[2]
	} else {
		m := answerRE.FindStringSubmatch(reply)
		if m == nil {
			return p
		}
		answer = m[1]
	}
	p.FormatOK = true
	answer = specialStrings.Replace(answer)
	pieces := []string{answer}
	if sep != "" {
		pieces = strings.Split(answer, sep)
	}
	for _, a := range pieces {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if maxActions > 0 && len(p.Actions) == maxActions {
			p.Extra++
			continue
		}
		p.Actions = append(p.Actions, a)
	}
	return p
}

// mapAction maps an action to the environment's spelling, case-insensitively.
// With no vocabulary (free-form environments) the action passes unchanged.
func mapAction(action string, vocabulary []string) (string, bool) {
	if len(vocabulary) == 0 {
		return action, true
	}
	for _, v := range vocabulary {
		if strings.EqualFold(action, v) {
			return v, true
		}
	}
	return "", false
}
