package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The verbs of the action grammar.
const (
	VerbSearch = "search"
	VerbAnswer = "answer"
	// verbFinish is RAGEN's name for answer (finish[text]), accepted as
	// the same action.
	verbFinish = "finish"
)

// MaxArgLen bounds a query or an answer, in bytes after whitespace is
// collapsed: the query is echoed in the next observation.
const MaxArgLen = 200

// Action is one parsed action.
type Action struct {
	Verb string // VerbSearch or VerbAnswer
	Arg  string // trimmed, inner whitespace collapsed to single spaces
}

// String is the canonical form of the action, which parses back to it.
func (a Action) String() string { return a.Verb + "[" + a.Arg + "]" }

// ParseAction reads one action: search[query] or answer[text] (finish[text]
// is RAGEN's spelling of answer), lower-case verb, nothing before or after
// it but surrounding whitespace. The argument may not be empty, contain
// brackets or control characters (a newline included), be invalid UTF-8
// or exceed MaxArgLen bytes. Anything else is not an action.
func ParseAction(s string) (Action, bool) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '[')
	if open < 0 || !strings.HasSuffix(s, "]") || !utf8.ValidString(s) {
		return Action{}, false
	}
	verb, arg := s[:open], s[open+1:len(s)-1]
	switch verb {
	case VerbSearch, VerbAnswer:
	case verbFinish:
		verb = VerbAnswer
	default:
		return Action{}, false
	}
	for _, r := range arg {
		if r == '[' || r == ']' || (unicode.IsControl(r) && r != '\t' && r != ' ') {
			return Action{}, false
		}
	}
	arg = strings.Join(strings.Fields(arg), " ")
	if arg == "" || len(arg) > MaxArgLen {
		return Action{}, false
	}
	return Action{Verb: verb, Arg: arg}, true
}
