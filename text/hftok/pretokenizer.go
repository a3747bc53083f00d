package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
)

// preStep is one pre-tokenizer: it appends the pieces of s to dst.
type preStep interface {
	split(dst []string, s string, offs [][2]int) ([]string, [][2]int)
}

// splitBehavior is what a Split does with the pattern's matches (HF's
// SplitDelimiterBehavior).
type splitBehavior int

const (
	behaviorRemoved splitBehavior = iota
	behaviorIsolated
	behaviorMergedWithPrevious
	behaviorMergedWithNext
	behaviorContiguous
)

var behaviors = map[string]splitBehavior{
	"Removed":            behaviorRemoved,
	"Isolated":           behaviorIsolated,
	"MergedWithPrevious": behaviorMergedWithPrevious,
	"MergedWithNext":     behaviorMergedWithNext,
	"Contiguous":         behaviorContiguous,
}

// splitStep is HF's Split pre-tokenizer.
type splitStep struct {
	literal  string  // for a String pattern
	match    matcher // for a Regex pattern
	behavior splitBehavior
	invert   bool
}

// matches appends the pattern's matches in s.
func (p *splitStep) matches(dst [][2]int, s string) [][2]int {
	if p.match != nil {
		return findAll(dst, s, p.match)
	}
	for i := 0; i <= len(s)-len(p.literal); {
		j := strings.Index(s[i:], p.literal)
		if j < 0 {
			break
		}
		dst = append(dst, [2]int{i + j, i + j + len(p.literal)})
		i += j + len(p.literal)
	}
	return dst
}

func (p *splitStep) split(dst []string, s string, offs [][2]int) ([]string, [][2]int) {
	offs = p.matches(offs[:0], s)
	if p.behavior == behaviorIsolated && !p.invert {
		// The hot path (Qwen, Llama-3): every match and every gap is a piece.
		prev := 0
		for _, m := range offs {
			if m[0] > prev {
				dst = append(dst, s[prev:m[0]])
			}
			dst = append(dst, s[m[0]:m[1]])
			prev = m[1]
		}
		if prev < len(s) {
			dst = append(dst, s[prev:])
		}
		return dst, offs
	}
	// General case, following HF's NormalizedString::split: list matches and
	// gaps as (span, isMatch), flip isMatch when inverted, then apply the
	// behavior.
	type span struct {
		start, end int
		match      bool
	}
	var spans []span
	prev := 0
	for _, m := range offs {
		if m[0] > prev {
			spans = append(spans, span{prev, m[0], p.invert})
		}
		spans = append(spans, span{m[0], m[1], !p.invert})
		prev = m[1]
	}
	if prev < len(s) {
		spans = append(spans, span{prev, len(s), p.invert})
	}
	var out []span
	switch p.behavior {
	case behaviorIsolated:
		out = spans
	case behaviorRemoved:
		for _, sp := range spans {
			if !sp.match {
				out = append(out, sp)
			}
		}
	case behaviorContiguous:
		prevMatch := false
		for k, sp := range spans {
			if k > 0 && sp.match == prevMatch {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for k, sp := range spans {
			if k > 0 && sp.match && !prevMatch {
				out[len(out)-1].end = sp.end
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for k := len(spans) - 1; k >= 0; k-- {
			sp := spans[k]
			if k < len(spans)-1 && sp.match && !prevMatch {
				out[len(out)-1].start = sp.start
			} else {
				out = append(out, sp)
			}
			prevMatch = sp.match
		}
		for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
			out[a], out[b] = out[b], out[a]
		}
	}
	for _, sp := range out {
		if sp.end > sp.start {
			dst = append(dst, s[sp.start:sp.end])
		}
	}
	return dst, offs
}

// byteLevelStep is HF's ByteLevel pre-tokenizer. Mapping the bytes to
// byte-level runes is left to the model, which works on raw bytes.
type byteLevelStep struct {
	addPrefixSpace bool
	useRegex       bool
}

func (b *byteLevelStep) split(dst []string, s string, offs [][2]int) ([]string, [][2]int) {
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !b.useRegex {
		return append(dst, s), offs
	}
	offs = findAll(offs[:0], s, matchGPT2)
	for _, m := range offs {
		dst = append(dst, s[m[0]:m[1]])
	}
	return dst, offs
}

// preTokenizer runs its steps in order, each on every piece of the previous.
type preTokenizer struct {
	steps []preStep
}

// typed is the "type" field every component has.
type typed struct {
	Type string `json:"type"`
}

// isNull reports whether a component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// parsePreTokenizer builds the pre-tokenizer. It must end in exactly one
// ByteLevel step: only byte-level BPE is supported.
func parsePreTokenizer(raw json.RawMessage) (*preTokenizer, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("pre_tokenizer is null: only byte-level BPE (a ByteLevel pre-tokenizer) is supported")
	}
	pt := &preTokenizer{}
	if err := pt.add(raw, "pre_tokenizer"); err != nil {
		return nil, err
	}
	for i, st := range pt.steps {
		if _, ok := st.(*byteLevelStep); ok && i != len(pt.steps)-1 {
			return nil, fmt.Errorf("pre_tokenizer: steps after ByteLevel are not supported")
		}
	}
	if _, ok := pt.steps[len(pt.steps)-1].(*byteLevelStep); !ok {
		return nil, fmt.Errorf("pre_tokenizer has no ByteLevel step: only byte-level BPE is supported")
	}
	return pt, nil
}

func (pt *preTokenizer) add(raw json.RawMessage, where string) error {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	switch t.Type {
	case "Sequence":
		var seq struct {
			PreTokenizers []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("%s (Sequence): %w", where, err)
		}
		for i, sub := range seq.PreTokenizers {
			if err := pt.add(sub, fmt.Sprintf("%s.pretokenizers[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case "ByteLevel":
		var bl struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &bl); err != nil {
			return fmt.Errorf("%s (ByteLevel): %w", where, err)
		}
		useRegex := bl.UseRegex == nil || *bl.UseRegex
		pt.steps = append(pt.steps, &byteLevelStep{addPrefixSpace: bl.AddPrefixSpace, useRegex: useRegex})
		return nil
	case "Split":
		var sp struct {
			Pattern struct {
				String *string `json:"String"`
				Regex  *string `json:"Regex"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(raw, &sp); err != nil {
			return fmt.Errorf("%s (Split): %w", where, err)
		}
		b, ok := behaviors[sp.Behavior]
		if !ok {
			return fmt.Errorf("%s (Split): unsupported behavior %q", where, sp.Behavior)
		}
		st := &splitStep{behavior: b, invert: sp.Invert}
		switch {
		case sp.Pattern.Regex != nil:
			m, ok := knownPatterns[*sp.Pattern.Regex]
			if !ok {
				return fmt.Errorf("%s (Split): unsupported regex pattern %q (supported: the GPT-2 ByteLevel, Llama-3 and Qwen2 patterns)", where, *sp.Pattern.Regex)
			}
			st.match = m
		case sp.Pattern.String != nil && *sp.Pattern.String != "":
			st.literal = *sp.Pattern.String
		default:
			return fmt.Errorf("%s (Split): pattern must be a non-empty String or a Regex", where)
		}
		pt.steps = append(pt.steps, st)
		return nil
	default:
		return fmt.Errorf("%s: unsupported pre-tokenizer type %q", where, t.Type)
	}
}

// scratch holds buffers reused across pre-tokenizations.
type scratch struct {
	a, b []string
	offs [][2]int
}

// pieces returns the pre-tokens of s, in buffers of sc that stay valid until
// the next call with sc.
func (pt *preTokenizer) pieces(sc *scratch, s string) []string {
	cur := append(sc.a[:0], s)
	other := sc.b
	for _, st := range pt.steps {
		next := other[:0]
		for _, p := range cur {
			if p == "" {
				continue
			}
			next, sc.offs = st.split(next, p, sc.offs)
		}
		other, cur = cur, next
	}
	sc.a, sc.b = cur, other
	return cur
}
