package hftok

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer is one of HF's normalizers. Offsets are not tracked: the ids
// do not depend on them.
type normalizer interface {
	normalize(s string) string
}

// normalizerSeq runs its normalizers in order (HF's Sequence).
type normalizerSeq []normalizer

func (n normalizerSeq) normalize(s string) string {
	for _, x := range n {
		s = x.normalize(s)
	}
	return s
}

// unicodeForm is NFC, NFD, NFKC or NFKD.
type unicodeForm struct{ form norm.Form }

func (u unicodeForm) normalize(s string) string {
	if u.form.IsNormalString(s) {
		return s
	}
	return u.form.String(s)
}

// lowercase is HF's Lowercase: every character by its full lowercase
// mapping, without context (Rust's char::to_lowercase), so İ becomes "i̇"
// and a final Σ stays σ.
type lowercase struct{}

func (lowercase) normalize(s string) string { return lowerRust(s) }

func lowerRust(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == 'İ' { // the only unconditional multi-character lowercase mapping
			b.WriteString("i\u0307")
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// isWhiteSpace is Rust's char::is_whitespace: the White_Space property.
func isWhiteSpace(r rune) bool { return unicode.IsSpace(r) }

// strip is HF's Strip normalizer: White_Space at either end.
type strip struct{ left, right bool }

func (st strip) normalize(s string) string {
	if st.left {
		s = strings.TrimLeftFunc(s, isWhiteSpace)
	}
	if st.right {
		s = strings.TrimRightFunc(s, isWhiteSpace)
	}
	return s
}

// stripAccents is HF's StripAccents: it drops every combining mark
// (general category M); it is meant to follow NFD or NFKD.
type stripAccents struct{}

func (stripAccents) normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s)
}

// prepend is HF's Prepend: the string goes before any non-empty text.
type prepend struct{ s string }

func (p prepend) normalize(s string) string {
	if s == "" {
		return s
	}
	return p.s + s
}

// replace is HF's Replace (a normalizer and a decoder): every match of the
// pattern becomes content.
type replace struct {
	pat     *pattern
	content string
}

func (r replace) normalize(s string) string { return r.pat.replaceAll(s, r.content) }

// nmt is HF's Nmt normalizer (SentencePiece's NMT rules): drops some
// control characters and maps the other spaces and controls to a space.
type nmt struct{}

func (nmt) normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x1 && r <= 0x8, r == 0xB, r >= 0xE && r <= 0x1F, r == 0x7F, r == 0x8F, r == 0x9F:
			return -1
		case r == 0x9, r == 0xA, r == 0xC, r == 0xD, r == 0x1680, r >= 0x200B && r <= 0x200F,
			r == 0x2028, r == 0x2029, r == 0x2581, r == 0xFEFF, r == 0xFFFD:
			return ' '
		}
		return r
	}, s)
}

// byteLevelNorm is HF's ByteLevel normalizer: the text spelled with the
// byte-level alphabet.
type byteLevelNorm struct{}

func (byteLevelNorm) normalize(s string) string { return byteLevelEncode(s) }

// bertNormalizer is HF's BertNormalizer.
type bertNormalizer struct {
	cleanText, chineseChars, stripAccents, lowercase bool
}

// isOther is Rust's unicode_categories is_other: Cc, Cf, Cn, Co or Cs.
func isOther(r rune) bool {
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isChineseChar is the CJK test of BERT's tokenizer.
func isChineseChar(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

func (b bertNormalizer) normalize(s string) string {
	if b.cleanText {
		s = strings.Map(func(r rune) rune {
			switch {
			case r == '\t' || r == '\n' || r == '\r':
				return ' '
			case r == 0 || r == 0xFFFD || isOther(r):
				return -1
			case isWhiteSpace(r):
				return ' '
			}
			return r
		}, s)
	}
	if b.chineseChars {
		var sb strings.Builder
		for _, r := range s {
			if isChineseChar(r) {
				sb.WriteByte(' ')
				sb.WriteRune(r)
				sb.WriteByte(' ')
			} else {
				sb.WriteRune(r)
			}
		}
		s = sb.String()
	}
	if b.stripAccents {
		s = strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, norm.NFD.String(s))
	}
	if b.lowercase {
		s = lowerRust(s)
	}
	return s
}

// parseNormalizer builds the normalizer of tokenizer.json (nil for null).
func parseNormalizer(raw json.RawMessage, where string) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	at := fmt.Sprintf("%s (%s)", where, t.Type)
	switch t.Type {
	case "NFC":
		return unicodeForm{norm.NFC}, nil
	case "NFD":
		return unicodeForm{norm.NFD}, nil
	case "NFKC":
		return unicodeForm{norm.NFKC}, nil
	case "NFKD":
		return unicodeForm{norm.NFKD}, nil
	case "Lowercase":
		return lowercase{}, nil
	case "StripAccents":
		return stripAccents{}, nil
	case "Nmt":
		return nmt{}, nil
	case "ByteLevel":
		return byteLevelNorm{}, nil
	case "Strip":
		var st struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		return strip{st.Left, st.Right}, nil
	case "Prepend":
		var p struct {
			Prepend *string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil || p.Prepend == nil {
			return nil, fmt.Errorf("%s: want a prepend string (%v)", at, err)
		}
		return prepend{*p.Prepend}, nil
	case "Replace":
		var r struct {
			Pattern patternJSON `json:"pattern"`
			Content *string     `json:"content"`
		}
		if err := json.Unmarshal(raw, &r); err != nil || r.Content == nil {
			return nil, fmt.Errorf("%s: want a pattern and a content string (%v)", at, err)
		}
		pat, err := r.Pattern.compile()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		return replace{pat, *r.Content}, nil
	case "BertNormalizer":
		b := struct {
			CleanText    *bool `json:"clean_text"`
			ChineseChars *bool `json:"handle_chinese_chars"`
			StripAccents *bool `json:"strip_accents"`
			Lowercase    *bool `json:"lowercase"`
		}{}
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		orTrue := func(p *bool) bool { return p == nil || *p }
		bn := bertNormalizer{cleanText: orTrue(b.CleanText), chineseChars: orTrue(b.ChineseChars), lowercase: orTrue(b.Lowercase)}
		bn.stripAccents = bn.lowercase
		if b.StripAccents != nil {
			bn.stripAccents = *b.StripAccents
		}
		return bn, nil
	case "Sequence":
		var seq struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &seq); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		var out normalizerSeq
		for i, sub := range seq.Normalizers {
			n, err := parseNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", where, i))
			if err != nil {
				return nil, err
			}
			if n != nil {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			return nil, nil
		}
		if len(out) == 1 {
			return out[0], nil
		}
		return out, nil
	case "Precompiled":
		return nil, fmt.Errorf("%s: the Precompiled normalizer (a SentencePiece charsmap) is not supported", at)
	default:
		return nil, fmt.Errorf("%s: unsupported normalizer type %q", where, t.Type)
	}
}
