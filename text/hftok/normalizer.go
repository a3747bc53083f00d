package hftok

import (
	"encoding/json"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// normalizer is a chain of Unicode normalization forms (possibly empty).
type normalizer []norm.Form

func (n normalizer) apply(s string) string {
	for _, f := range n {
		s = f.String(s)
	}
	return s
}

var normForms = map[string]norm.Form{
	"NFC":  norm.NFC,
	"NFD":  norm.NFD,
	"NFKC": norm.NFKC,
	"NFKD": norm.NFKD,
}

// parseNormalizer accepts null, NFC, NFD, NFKC, NFKD and Sequences of them.
func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	var n normalizer
	if isNull(raw) {
		return n, nil
	}
	err := n.add(raw, "normalizer")
	return n, err
}

func (n *normalizer) add(raw json.RawMessage, where string) error {
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if f, ok := normForms[t.Type]; ok {
		*n = append(*n, f)
		return nil
	}
	if t.Type != "Sequence" {
		return fmt.Errorf("%s: unsupported normalizer type %q (supported: NFC, NFD, NFKC, NFKD, Sequence)", where, t.Type)
	}
	var seq struct {
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &seq); err != nil {
		return fmt.Errorf("%s (Sequence): %w", where, err)
	}
	for i, sub := range seq.Normalizers {
		if err := n.add(sub, fmt.Sprintf("%s.normalizers[%d]", where, i)); err != nil {
			return err
		}
	}
	return nil
}
