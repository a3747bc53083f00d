package hftok

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A model's vocabulary and merges are most of a tokenizer.json (tens of
// megabytes for the 256k-token vocabularies), and encoding/json's
// reflection makes reading them slow. jsonScanner reads the two shapes they
// have, {"token": id, ...} and ["a b", ...] or [["a", "b"], ...], directly;
// anything else (it reports false) goes to encoding/json, which then also
// reports what is wrong.
type jsonScanner struct {
	b   []byte
	pos int
}

func (s *jsonScanner) space() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) byte(c byte) bool {
	s.space()
	if s.pos < len(s.b) && s.b[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

func (s *jsonScanner) peek() byte {
	s.space()
	if s.pos < len(s.b) {
		return s.b[s.pos]
	}
	return 0
}

// str reads a JSON string.
func (s *jsonScanner) str() (string, bool) {
	if !s.byte('"') {
		return "", false
	}
	start := s.pos
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		if c == '"' {
			out := string(s.b[start:s.pos])
			s.pos++
			return out, true
		}
		if c == '\\' {
			return s.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
		s.pos++
	}
	return "", false
}

// escaped finishes a string with escapes that began at start, decoding as
// encoding/json does (an unpaired surrogate becomes U+FFFD).
func (s *jsonScanner) escaped(start int) (string, bool) {
	out := append([]byte(nil), s.b[start:s.pos]...)
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		switch {
		case c == '"':
			s.pos++
			if !utf8.Valid(out) {
				return "", false // encoding/json would replace the bytes; let it
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.b) {
			return "", false
		}
		e := s.b[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.pos+1 < len(s.b) && s.b[s.pos] == '\\' && s.b[s.pos+1] == 'u' {
					save := s.pos
					s.pos += 2
					var ok2 bool
					if r2, ok2 = s.hex4(); !ok2 {
						return "", false
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						continue
					}
					s.pos = save
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}

func (s *jsonScanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.pos:s.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.pos += 4
	return rune(v), true
}

// integer reads a non-negative JSON integer.
func (s *jsonScanner) integer() (int, bool) {
	s.space()
	start := s.pos
	for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
		s.pos++
	}
	if s.pos == start || s.pos-start > 10 {
		return 0, false
	}
	v, err := strconv.Atoi(string(s.b[start:s.pos]))
	return v, err == nil
}

func (s *jsonScanner) end() bool {
	s.space()
	return s.pos == len(s.b)
}

// scanVocab reads {"token": id, ...}.
func scanVocab(raw []byte) (map[string]int, bool) {
	s := &jsonScanner{b: raw}
	if !s.byte('{') {
		return nil, false
	}
	vocab := make(map[string]int, len(raw)/16)
	if s.byte('}') {
		return vocab, s.end()
	}
	for {
		k, ok := s.str()
		if !ok || !s.byte(':') {
			return nil, false
		}
		v, ok := s.integer()
		if !ok {
			return nil, false
		}
		vocab[k] = v // a repeated key keeps its last value, as in encoding/json
		if s.byte('}') {
			return vocab, s.end()
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

// scanMerges reads ["a b", ...] (lines, pairs false) or [["a", "b"], ...]
// (pairs true, each entry read as its two parts joined by a space, and
// parts holding the pairs).
func scanMerges(raw []byte) (lines []string, parts [][2]string, ok bool) {
	s := &jsonScanner{b: raw}
	if !s.byte('[') {
		return nil, nil, false
	}
	if s.byte(']') {
		return nil, nil, s.end()
	}
	pairs := s.peek() == '['
	for {
		if pairs {
			if !s.byte('[') {
				return nil, nil, false
			}
			a, ok1 := s.str()
			if !ok1 || !s.byte(',') {
				return nil, nil, false
			}
			b, ok2 := s.str()
			if !ok2 || !s.byte(']') {
				return nil, nil, false
			}
			parts = append(parts, [2]string{a, b})
		} else {
			l, ok1 := s.str()
			if !ok1 {
				return nil, nil, false
			}
			lines = append(lines, l)
		}
		if s.byte(']') {
			return lines, parts, s.end()
		}
		if !s.byte(',') {
			return nil, nil, false
		}
	}
}

// decodeVocab reads a vocabulary object, quickly when it can.
func decodeVocab(raw json.RawMessage) (map[string]int, error) {
	if v, ok := scanVocab(raw); ok {
		return v, nil
	}
	var v map[string]int
	err := json.Unmarshal(raw, &v)
	return v, err
}

// skipValue moves past one JSON value without decoding it; false when the
// text is not well formed there.
func (s *jsonScanner) skipValue() bool {
	s.space()
	if s.pos >= len(s.b) {
		return false
	}
	switch s.b[s.pos] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.pos < len(s.b) {
			switch c := s.b[s.pos]; c {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return true
				}
			}
			s.pos++
		}
		return false
	}
	start := s.pos
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.pos > start
		}
		s.pos++
	}
	return s.pos > start
}

func (s *jsonScanner) skipString() bool {
	s.pos++ // the opening quote
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case '\\':
			s.pos += 2
			continue
		case '"':
			s.pos++
			return true
		}
		s.pos++
	}
	return false
}

// objectFields returns the raw value of each key of a JSON object (slices
// of raw, not copies), or false when raw is not an object it can read;
// the values are left for their decoders, which check them.
func objectFields(raw []byte) (map[string]json.RawMessage, bool) {
	s := &jsonScanner{b: raw}
	if !s.byte('{') {
		return nil, false
	}
	fields := map[string]json.RawMessage{}
	if s.byte('}') {
		return fields, s.end()
	}
	for {
		k, ok := s.str()
		if !ok || !s.byte(':') {
			return nil, false
		}
		s.space()
		start := s.pos
		if !s.skipValue() {
			return nil, false
		}
		fields[k] = raw[start:s.pos]
		if s.byte('}') {
			return fields, s.end()
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}
