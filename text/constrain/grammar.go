package constrain

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentrl/agentrl/text/toolcall"
)

// Part is a piece of a Grammar's text: a fixed Text, or a JSON value of
// Value when Value is set.
type Part struct {
	Text  string
	Value *Value
}

// Grammar is a set of texts: each alternative a sequence of parts.
// Grammars are immutable and safe for concurrent use.
type Grammar struct {
	m      *machine
	starts []*stack
	minLen int
}

// NewGrammar returns the grammar of the texts that spell one of the
// alternatives. No string inside a value may contain forbid (when set).
func NewGrammar(forbid string, alternatives ...[]Part) (*Grammar, error) {
	g := &Grammar{m: newMachine(forbid)}
	for _, parts := range alternatives {
		var st *stack
		for i := len(parts) - 1; i >= 0; i-- {
			p := parts[i]
			switch {
			case p.Value != nil:
				if len(p.Value.alts) == 0 {
					return nil, fmt.Errorf("constrain: part %d: %w", i, ErrUnsatisfiable)
				}
				st = push(valFrame{v: p.Value}, st)
			case p.Text != "":
				st = push(litFrame{set: &litSet{s: []string{p.Text}}, hi: 1}, st)
			}
		}
		if st == nil {
			return nil, errors.New("constrain: an alternative of no text")
		}
		g.starts = append(g.starts, st)
	}
	if len(g.starts) == 0 {
		return nil, errors.New("constrain: a grammar without alternatives")
	}
	g.starts = dedupe(g.starts)
	g.minLen = minCost(g.starts)
	return g, nil
}

// JSON returns the grammar of the values of v.
func JSON(v *Value) (*Grammar, error) { return NewGrammar("", []Part{{Value: v}}) }

// MinLen is the length in bytes of the grammar's shortest text.
func (g *Grammar) MinLen() int { return g.minLen }

// Accepts reports whether text is one of the grammar's texts.
func (g *Grammar) Accepts(text []byte) bool {
	cs, ok := g.prefix(text)
	return ok && minCost(cs) == 0
}

// IsPrefix reports whether text begins one of the grammar's texts.
func (g *Grammar) IsPrefix(text []byte) bool {
	_, ok := g.prefix(text)
	return ok
}

// prefix feeds text from the start: the state after it, and whether every
// byte was accepted.
func (g *Grammar) prefix(text []byte) ([]*stack, bool) {
	cs := g.starts
	for _, b := range text {
		if cs = advance(g.m, cs, b); len(cs) == 0 {
			return nil, false
		}
	}
	return cs, true
}

// compactName is the name a compact call can carry.
var compactName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ToolCalls returns the grammar of one call of one of tools, written as
// format (a text/toolcall format) writes it, its arguments an object that
// the tool's parameter schema accepts (any object when it has none):
//
//   - hermes: <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>
//     (Qwen's template's spelling), no string holding "</tool_call>";
//   - compact: <call>NAME ARGS</call>, no string holding "</call>";
//   - llama3_json: {"name": "NAME", "parameters": ARGS}.
//
// Errors name the tool whose schema fails to compile or allows no object.
func ToolCalls(format string, tools []toolcall.Tool) (*Grammar, error) {
	return ToolCallsN(format, tools, 1)
}

// ToolCallsN is ToolCalls with one to maxCalls calls (no limit when
// maxCalls is 0 or less), each of any of the tools, separated as the
// format's parser reads them: a newline (hermes, compact) or "; "
// (llama3_json).
func ToolCallsN(format string, tools []toolcall.Tool, maxCalls int) (*Grammar, error) {
	var open, mid, close, forbid, sep string
	switch format {
	case "hermes":
		open, mid, close, forbid, sep = "<tool_call>\n{\"name\": ", ", \"arguments\": ", "}\n</tool_call>", "</tool_call>", "\n"
	case "compact":
		open, mid, close, forbid, sep = "<call>", " ", "</call>", "</call>", "\n"
	case "llama3_json":
		open, mid, close, sep = "{\"name\": ", ", \"parameters\": ", "}", "; "
	default:
		return nil, fmt.Errorf("constrain: unknown tool-call format %q (known: %s)", format, strings.Join(toolcall.Formats, ", "))
	}
	if len(tools) == 0 {
		return nil, errors.New("constrain: no tools to call")
	}
	var alts [][]Part
	for _, t := range tools {
		args := AnyObject()
		if len(t.Parameters) > 0 {
			v, err := Compile(t.Parameters, CompileOptions{Forbid: forbid})
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", t.Name, err)
			}
			if args, err = v.Objects(); err != nil {
				return nil, fmt.Errorf("tool %q: %w", t.Name, err)
			}
		}
		name := t.Name
		if format == "compact" {
			if !compactName.MatchString(name) {
				return nil, fmt.Errorf("tool %q: the compact format cannot write that name (letters, digits, _ . -, not starting with a digit)", t.Name)
			}
		} else {
			var err error
			if name, err = marshal(t.Name); err != nil {
				return nil, fmt.Errorf("tool %q: %v", t.Name, err)
			}
		}
		if forbid != "" && strings.Contains(name, forbid) {
			return nil, fmt.Errorf("tool %q: the name holds %q", t.Name, forbid)
		}
		alts = append(alts, []Part{{Text: open + name + mid}, {Value: args}, {Text: close}})
	}
	g, err := NewGrammar(forbid, alts...)
	if err != nil || maxCalls == 1 {
		return g, err
	}
	// The calls: a repeat frame over the alternatives, which the machine
	// copies onto itself after each call.
	r := &repeat{calls: g.starts, sep: &litSet{s: []string{sep}}, max: maxCalls}
	g.starts = []*stack{push(repFrame{r: r}, nil)}
	return g, nil
}

// repeat is a sequence of one to max calls (max <= 0: any number), each
// one of calls (stacks that end the call at nil), separated by sep.
type repeat struct {
	calls []*stack
	sep   *litSet
	max   int
}

// repFrame is a repeat after n calls.
type repFrame struct {
	r *repeat
	n int32
}

func (f repFrame) canEnd() bool { return f.n >= 1 }

func (f repFrame) rest() int {
	if f.n >= 1 {
		return 0
	}
	return minCost(f.r.calls)
}

func (f repFrame) feed(m *machine, b byte, below *stack, out []*stack) []*stack {
	if f.r.max > 0 && int(f.n) >= f.r.max {
		return out
	}
	after := push(repFrame{r: f.r, n: f.n + 1}, below)
	for _, c := range f.r.calls {
		st := rebase(c, after)
		if f.n >= 1 {
			st = push(litFrame{set: f.r.sep, hi: 1}, st)
		}
		out = step(m, st, b, out)
	}
	return out
}

// rebase copies the frames of st, which ends at nil, onto below.
func rebase(st *stack, below *stack) *stack {
	if st == nil {
		return below
	}
	return push(st.f, rebase(st.next, below))
}
