package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
)

// templatePiece is one piece of a single-sequence template: the sequence
// itself or the ids of a special token.
type templatePiece struct {
	sequence bool
	ids      []int
}

// postProcessor adds special tokens around a single sequence when asked to
// (HF's add_special_tokens); its steps run in order.
type postProcessor struct {
	steps [][]templatePiece
}

// apply returns ids as post-processed; without addSpecial, ids unchanged.
func (p *postProcessor) apply(ids []int, addSpecial bool) []int {
	if !addSpecial {
		return ids
	}
	for _, tpl := range p.steps {
		n := len(ids)
		for _, pc := range tpl {
			n += len(pc.ids)
		}
		out := make([]int, 0, n)
		for _, pc := range tpl {
			if pc.sequence {
				out = append(out, ids...)
			} else {
				out = append(out, pc.ids...)
			}
		}
		ids = out
	}
	return ids
}

// addedIDs returns the number of ids addSpecial adds.
func (p *postProcessor) addedIDs() int {
	n := 0
	for _, tpl := range p.steps {
		for _, pc := range tpl {
			n += len(pc.ids)
		}
	}
	return n
}

// parsePostProcessor accepts null, ByteLevel (ids unchanged),
// TemplateProcessing, RobertaProcessing, BertProcessing and Sequences of
// them.
func parsePostProcessor(raw json.RawMessage) (*postProcessor, error) {
	p := &postProcessor{}
	if isNull(raw) {
		return p, nil
	}
	return p, p.add(raw, "post_processor")
}

func (p *postProcessor) add(raw json.RawMessage, where string) error {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	switch t.Type {
	case "ByteLevel":
		return nil // it only trims offsets
	case "Sequence":
		var seq struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return fmt.Errorf("%s (Sequence): %w", where, err)
		}
		for i, sub := range seq.Processors {
			if err := p.add(sub, fmt.Sprintf("%s.processors[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case "RobertaProcessing", "BertProcessing":
		var rp struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &rp); err != nil {
			return fmt.Errorf("%s (%s): %w", where, t.Type, err)
		}
		cls, err := tokenPair(rp.Cls)
		if err != nil {
			return fmt.Errorf("%s (%s): cls: %w", where, t.Type, err)
		}
		sep, err := tokenPair(rp.Sep)
		if err != nil {
			return fmt.Errorf("%s (%s): sep: %w", where, t.Type, err)
		}
		p.steps = append(p.steps, []templatePiece{{ids: []int{cls}}, {sequence: true}, {ids: []int{sep}}})
		return nil
	case "TemplateProcessing":
		tpl, err := parseTemplate(raw)
		if err != nil {
			return fmt.Errorf("%s (TemplateProcessing): %w", where, err)
		}
		p.steps = append(p.steps, tpl)
		return nil
	default:
		return fmt.Errorf("%s: unsupported post-processor type %q", where, t.Type)
	}
}

// tokenPair reads a ["token", id] pair.
func tokenPair(raw []json.RawMessage) (int, error) {
	if len(raw) != 2 {
		return 0, fmt.Errorf("want [token, id]")
	}
	var id int
	if err := json.Unmarshal(raw[1], &id); err != nil {
		return 0, err
	}
	return id, nil
}

// parseTemplate reads the single-sequence template of a TemplateProcessing:
// pieces written {"SpecialToken": {"id": ...}} / {"Sequence": {"id": "A"}}
// or as strings "$A", "$A:0", "[CLS]", "[CLS]:1".
func parseTemplate(raw json.RawMessage) ([]templatePiece, error) {
	var tp struct {
		Single        []json.RawMessage `json:"single"`
		SpecialTokens map[string]struct {
			ID  string `json:"id"`
			IDs []int  `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &tp); err != nil {
		return nil, err
	}
	var out []templatePiece
	sequences := 0
	for i, pr := range tp.Single {
		var name string
		isSeq := false
		var s string
		if err := json.Unmarshal(pr, &s); err == nil {
			s, _, _ = strings.Cut(s, ":")
			if strings.HasPrefix(s, "$") {
				isSeq = true
				name = s[1:]
			} else {
				name = s
			}
		} else {
			var pc struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			}
			if err := json.Unmarshal(pr, &pc); err != nil {
				return nil, fmt.Errorf("single[%d]: %w", i, err)
			}
			switch {
			case pc.Sequence != nil:
				isSeq, name = true, pc.Sequence.ID
			case pc.SpecialToken != nil:
				name = pc.SpecialToken.ID
			default:
				return nil, fmt.Errorf("single[%d]: neither SpecialToken nor Sequence", i)
			}
		}
		if isSeq {
			if !isSequenceA(name) {
				return nil, fmt.Errorf("single[%d]: the single template refers to sequence %q", i, name)
			}
			sequences++
			out = append(out, templatePiece{sequence: true})
			continue
		}
		st, ok := tp.SpecialTokens[name]
		if !ok {
			return nil, fmt.Errorf("single[%d]: special token %q is missing from special_tokens", i, name)
		}
		out = append(out, templatePiece{ids: st.IDs})
	}
	if sequences != 1 {
		return nil, fmt.Errorf("the single template has %d sequences, want 1", sequences)
	}
	return out, nil
}

// isSequenceA reports whether a template's "$name" is the first sequence, as
// HF reads it: "$", "$A", "$a", or "$" and a type id.
func isSequenceA(name string) bool {
	if name == "" || name == "A" || name == "a" {
		return true
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
