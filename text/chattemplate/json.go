package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonOptions are tojson's arguments.
type jsonOptions struct {
	indent      string // "" with hasIndent false: no indentation
	hasIndent   bool
	itemSep     string // "" means the default
	keySep      string
	hasSeps     bool
	sortKeys    bool
	ensureASCII bool
}

// toJSON is transformers' tojson: Python's json.dumps(x,
// ensure_ascii=False, indent=None, separators=None, sort_keys=False),
// within the budget bud (nil: none).
func toJSON(bud *budget, v any, o jsonOptions) (string, error) {
	if !o.hasSeps {
		o.itemSep, o.keySep = ", ", ": "
		if o.hasIndent {
			o.itemSep = ","
		}
	}
	b := newSbuf(bud, "tojson")
	if err := writeJSON(b, v, o, 0); err != nil {
		return "", err
	}
	return b.result()
}

// writeJSON writes v as JSON; it stops when b does.
func writeJSON(b *sbuf, v any, o jsonOptions, depth int) error {
	if depth > 500 {
		return errors.New("maximum recursion depth exceeded while encoding a JSON object")
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(jsonFloat(v))
	case string:
		writeJSONString(b, v, o.ensureASCII)
	case *listV:
		return writeJSONList(b, v, o, depth)
	case *dictV:
		return writeJSONDict(b, v, o, depth)
	case *nsV:
		return errors.New("Object of type Namespace is not JSON serializable")
	case *undefV:
		return errors.New("Object of type Undefined is not JSON serializable")
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

// jsonFloat is a float as json.dumps writes it: its repr, or Infinity,
// -Infinity and NaN.
func jsonFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f != f:
		return "NaN"
	}
	return pyFloat(f)
}

// newline starts a line at depth d, when indenting.
func (o jsonOptions) newline(b *sbuf, d int) {
	if o.hasIndent {
		b.writeByte('\n')
		for range d {
			if b.done {
				return
			}
			b.WriteString(o.indent)
		}
	}
}

func writeJSONList(b *sbuf, l *listV, o jsonOptions, depth int) error {
	if len(l.items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.writeByte('[')
	for i, it := range l.items {
		if b.done {
			return nil
		}
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, depth+1)
		if err := writeJSON(b, it, o, depth+1); err != nil {
			return err
		}
	}
	o.newline(b, depth)
	b.writeByte(']')
	return nil
}

// jsonItem is a dict item with its key as JSON writes it.
type jsonItem struct {
	key    string
	rawKey any
	val    any
}

func writeJSONDict(b *sbuf, d *dictV, o jsonOptions, depth int) error {
	if d.len() == 0 {
		b.WriteString("{}")
		return nil
	}
	if !b.b.spend(int64(d.len())) {
		return nil
	}
	items := make([]jsonItem, 0, d.len())
	for i, k := range d.keys {
		ks, err := jsonKey(k)
		if err != nil {
			return err
		}
		items = append(items, jsonItem{ks, k, d.vals[i]})
	}
	if o.sortKeys {
		if err := sortJSONItems(b.b, items); err != nil {
			return err
		}
	}
	b.writeByte('{')
	for i, it := range items {
		if b.done {
			return nil
		}
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, depth+1)
		writeJSONString(b, it.key, o.ensureASCII)
		b.WriteString(o.keySep)
		if err := writeJSON(b, it.val, o, depth+1); err != nil {
			return err
		}
	}
	o.newline(b, depth)
	b.writeByte('}')
	return nil
}

// jsonKey is a dict key as json.dumps writes it.
func jsonKey(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		return jsonFloat(k), nil
	}
	return "", fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
}

// sortJSONItems sorts items by their keys, as sort_keys=True does.
func sortJSONItems(b *budget, items []jsonItem) error {
	var cmpErr error
	sort.SliceStable(items, func(i, j int) bool {
		b.spend(sortCost)
		c, ok := pyCompare(b, items[i].rawKey, items[j].rawKey)
		if !ok {
			cmpErr = fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(items[i].rawKey), typeName(items[j].rawKey))
		}
		return c < 0
	})
	return cmpErr
}

// writeJSONString writes s as json.dumps (and JSON.stringify) do: \" \\ \b
// \f \n \r \t, other control characters as \u00XX, and with ensureASCII
// everything outside ASCII's printable range as \uXXXX (surrogate pairs
// above U+FFFF).
func writeJSONString(b *sbuf, s string, ensureASCII bool) {
	b.writeByte('"')
	for i := 0; i < len(s) && !b.done; {
		if j := i + plainJSONRun(s[i:], ensureASCII); j > i {
			b.WriteString(s[i:j])
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		writeJSONRune(b, r, ensureASCII)
	}
	b.writeByte('"')
}

// plainJSONRun is the length of the text at the start of s that JSON
// writes as it is: valid UTF-8 without quotes, backslashes and control
// characters, and only printable ASCII with ensureASCII.
func plainJSONRun(s string, ensureASCII bool) int {
	j := 0
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || ensureASCII && c == 0x7f {
				break
			}
			j++
			continue
		}
		if ensureASCII {
			break
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		j += n
	}
	return j
}

// writeJSONRune writes a character that plainJSONRun leaves out: an
// escape, or U+FFFD for a byte that is not UTF-8 (no Python string holds
// one), as encoding/json does.
func writeJSONRune(b *sbuf, r rune, ensureASCII bool) {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		b.WriteString(`\u`)
		b.writeByte(hex[r>>12&0xf])
		b.writeByte(hex[r>>8&0xf])
		b.writeByte(hex[r>>4&0xf])
		b.writeByte(hex[r&0xf])
	}
	switch {
	case r == '"':
		b.WriteString(`\"`)
	case r == '\\':
		b.WriteString(`\\`)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\b':
		b.WriteString(`\b`)
	case r == '\f':
		b.WriteString(`\f`)
	case r < 0x20:
		u(r)
	case ensureASCII && r >= 0x7f:
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			u(r1)
			u(r2)
		} else {
			u(r)
		}
	default:
		b.WriteRune(r)
	}
}

// decodeJSON parses JSON into template values, keeping the order of
// object keys. Numbers without a fraction or exponent become ints (floats
// when they overflow int64), others floats, as Python's json.loads does.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("invalid JSON: data after the value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 1000 {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			l := &listV{}
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		case '{':
			d := newDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d, nil
		}
		return nil, fmt.Errorf("invalid JSON delimiter %v", t)
	case json.Number:
		return jsonNumber(t), nil
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("invalid JSON token %v", tok)
}

func jsonNumber(n json.Number) any {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
