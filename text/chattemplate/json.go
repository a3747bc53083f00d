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
// ensure_ascii=False, indent=None, separators=None, sort_keys=False).
func toJSON(v any, o jsonOptions) (string, error) {
	if !o.hasSeps {
		o.itemSep, o.keySep = ", ", ": "
		if o.hasIndent {
			o.itemSep = ","
		}
	}
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v any, o jsonOptions, depth int) error {
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
func (o jsonOptions) newline(b *strings.Builder, d int) {
	if o.hasIndent {
		b.WriteByte('\n')
		for range d {
			b.WriteString(o.indent)
		}
	}
}

func writeJSONList(b *strings.Builder, l *listV, o jsonOptions, depth int) error {
	if len(l.items) == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i, it := range l.items {
		if i > 0 {
			b.WriteString(o.itemSep)
		}
		o.newline(b, depth+1)
		if err := writeJSON(b, it, o, depth+1); err != nil {
			return err
		}
	}
	o.newline(b, depth)
	b.WriteByte(']')
	return nil
}

// jsonItem is a dict item with its key as JSON writes it.
type jsonItem struct {
	key    string
	rawKey any
	val    any
}

func writeJSONDict(b *strings.Builder, d *dictV, o jsonOptions, depth int) error {
	if d.len() == 0 {
		b.WriteString("{}")
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
		if err := sortJSONItems(items); err != nil {
			return err
		}
	}
	b.WriteByte('{')
	for i, it := range items {
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
	b.WriteByte('}')
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
func sortJSONItems(items []jsonItem) error {
	var cmpErr error
	sort.SliceStable(items, func(i, j int) bool {
		c, ok := pyCompare(items[i].rawKey, items[j].rawKey)
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
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			// Invalid UTF-8 (no Python string holds it): U+FFFD, as
			// encoding/json does.
			r = utf8.RuneError
		}
		i += n
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
	b.WriteByte('"')
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
