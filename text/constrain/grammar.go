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
	var open, mid, close, forbid string
	switch format {
	case "hermes":
		open, mid, close, forbid = "<tool_call>\n{\"name\": ", ", \"arguments\": ", "}\n</tool_call>", "</tool_call>"
	case "compact":
		open, mid, close, forbid = "<call>", " ", "</call>", "</call>"
	case "llama3_json":
		open, mid, close = "{\"name\": ", ", \"parameters\": ", "}"
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
	return NewGrammar(forbid, alts...)
}
