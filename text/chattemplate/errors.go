package chattemplate

import "fmt"

// ErrorKind says what went wrong.
type ErrorKind int

const (
	// KindSyntax is a template that does not parse, including an
	// unknown filter or test (Jinja2 rejects those when it compiles).
	KindSyntax ErrorKind = iota + 1
	// KindRuntime is a failure while rendering: an undefined value used,
	// a type error, a forbidden operation.
	KindRuntime
	// KindRaised is the template calling raise_exception(message).
	KindRaised
	// KindBudget is a rendering stopped at one of its Limits (or by its
	// context): a value, the output or the work too large, calls nested
	// too deeply.
	KindBudget
)

// String names the kind.
func (k ErrorKind) String() string {
	switch k {
	case KindSyntax:
		return "syntax error"
	case KindRuntime:
		return "render error"
	case KindRaised:
		return "raise_exception"
	case KindBudget:
		return "budget exceeded"
	}
	return "error"
}

// Error is a template error. Error() reads
// "chattemplate: line N: message"; for raise_exception, Message is the
// template's own message.
type Error struct {
	Kind    ErrorKind
	Line    int // 1-based line of the template source; 0 if unknown
	Message string
	// cause is the context's error, for a rendering stopped by its
	// context.
	cause error
}

// Unwrap is the context's error (context.Canceled or
// context.DeadlineExceeded) for a rendering its context stopped, else
// nil.
func (e *Error) Unwrap() error { return e.cause }

// Error formats the error with its line.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("chattemplate: line %d: %s", e.Line, e.Message)
	}
	return "chattemplate: " + e.Message
}

func newError(kind ErrorKind, line int, format string, args ...any) *Error {
	return &Error{Kind: kind, Line: line, Message: fmt.Sprintf(format, args...)}
}
