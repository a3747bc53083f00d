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
	// js formats as @huggingface/jinja does (JavaScript numbers;
	// undefined as null, or as "undefined" with undefinedText).
	js            bool
	undefinedText bool
}

// toJSON is transformers' tojson: Python's json.dumps(x,
// ensure_ascii=False, indent=None, separators=None, sort_keys=False)
// (opts.js: @huggingface/jinja's toJSON).
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
	newline := func(d int) {
		if o.hasIndent {
			b.WriteByte('\n')
			for range d {
				b.WriteString(o.indent)
			}
		}
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		switch {
		case o.js && (math.IsInf(v, 0) || v != v):
			b.WriteString("null")
		case o.js:
			b.WriteString(jsNumber(v))
		case math.IsInf(v, 1):
			b.WriteString("Infinity")
		case math.IsInf(v, -1):
			b.WriteString("-Infinity")
		case v != v:
			b.WriteString("NaN")
		default:
			b.WriteString(pyFloat(v))
		}
	case string:
		writeJSONString(b, v, o.ensureASCII)
	case *listV:
		if len(v.items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			if err := writeJSON(b, it, o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte(']')
	case *dictV, *nsV:
		d, _ := v.(*dictV)
		if ns, ok := v.(*nsV); ok {
			if !o.js {
				return errors.New("Object of type Namespace is not JSON serializable")
			}
			d = ns.d
		}
		if d.len() == 0 {
			b.WriteString("{}")
			return nil
		}
		type kv struct {
			k string
			v any
			o any
		}
		items := make([]kv, 0, d.len())
		for i, k := range d.keys {
			var ks string
			switch k := k.(type) {
			case string:
				ks = k
			case nil:
				ks = "null"
			case bool:
				ks = strconv.FormatBool(k)
			case int64:
				ks = strconv.FormatInt(k, 10)
			case float64:
				ks = pyFloat(k)
				if math.IsInf(k, 0) || k != k {
					ks = map[bool]string{true: "Infinity", false: "-Infinity"}[k > 0]
					if k != k {
						ks = "NaN"
					}
				}
			default:
				return fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
			}
			items = append(items, kv{ks, d.vals[i], k})
		}
		if o.sortKeys {
			var cmpErr error
			sort.SliceStable(items, func(i, j int) bool {
				if o.js {
					return jsLocaleLess(items[i].k, items[j].k)
				}
				c, ok := pyCompare(items[i].o, items[j].o)
				if !ok {
					cmpErr = fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(items[i].o), typeName(items[j].o))
				}
				return c < 0
			})
			if cmpErr != nil {
				return cmpErr
			}
		}
		b.WriteByte('{')
		for i, it := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(depth + 1)
			writeJSONString(b, it.k, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(b, it.v, o, depth+1); err != nil {
				return err
			}
		}
		newline(depth)
		b.WriteByte('}')
	case *undefV:
		if o.js {
			if o.undefinedText {
				b.WriteString("undefined")
			} else {
				b.WriteString("null")
			}
			return nil
		}
		return errors.New("Object of type Undefined is not JSON serializable")
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

// jsLocaleLess approximates String.prototype.localeCompare for sorting
// keys: case-insensitive first, then lower case before upper.
func jsLocaleLess(a, b string) bool {
	la, lb := strings.ToLower(a), strings.ToLower(b)
	if la != lb {
		return la < lb
	}
	return a > b
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
			// Invalid UTF-8 (no Python or JavaScript string holds it):
			// U+FFFD, as encoding/json does.
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
