package chattemplate

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Dialect selects whose semantics a template follows where Hugging Face's
// two renderers differ.
type Dialect int

const (
	// Jinja2 renders as transformers' apply_chat_template does: Python
	// Jinja2 in an ImmutableSandboxedEnvironment with trim_blocks and
	// lstrip_blocks, the loopcontrols extension, transformers' tojson,
	// raise_exception and strftime_now, and its {% generation %} tag.
	Jinja2 Dialect = iota
	// HFJS renders as @huggingface/jinja (the JavaScript port, version
	// 0.5.11) does, including where it differs from Python: strip,
	// lstrip and rstrip ignore their argument and strip JavaScript
	// whitespace, as does trim; numbers are JavaScript numbers (an
	// integral float is an int; tojson writes 1e-7, not 1e-07); none,
	// booleans, lists and dicts print as null→"", true, and JSON;
	// attributes of undefined values are undefined rather than errors;
	// and whitespace control works on the source text as its regular
	// expressions do. It exists to compare with that renderer and for
	// programs that must agree with it.
	HFJS
)

// String returns "Jinja2" or "HFJS".
func (d Dialect) String() string {
	if d == HFJS {
		return "HFJS"
	}
	return "Jinja2"
}

// Template is a parsed chat template. It is safe for concurrent use as
// long as its fields are not changed during a rendering.
type Template struct {
	body    []node
	dialect Dialect
	// Tokens are the tokenizer's special tokens, passed to the template
	// as bos_token, eos_token and so on (see FromConfig).
	Tokens SpecialTokens
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
}

// Parse parses a Jinja chat template for the Jinja2 dialect. Errors are
// *Error values naming the line.
func Parse(src string) (*Template, error) { return ParseDialect(src, Jinja2) }

// ParseDialect parses a template for dialect d.
func ParseDialect(src string, d Dialect) (t *Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, newError(KindSyntax, 0, "internal error: %v", p)
		}
	}()
	toks, err := tokenize(src, d)
	if err != nil {
		return nil, err
	}
	body, err := parseTemplate(toks)
	if err != nil {
		return nil, err
	}
	return &Template{body: body, dialect: d}, nil
}

// String describes the template, for debugging.
func (t *Template) String() string {
	return fmt.Sprintf("chattemplate.Template(%s, %d nodes)", t.dialect, len(t.body))
}

// Dialect returns the dialect the template was parsed for.
func (t *Template) Dialect() Dialect { return t.dialect }

// Execute renders the template with exactly the variables given (no
// special tokens, no defaults). Values may be nil, bool, integers,
// floats, strings, json.Number, json.RawMessage (decoded keeping key
// order), Object, Message, ToolCall, slices and arrays, maps with string
// keys (keys sorted), pointers to these, and other types that
// encoding/json can marshal (converted through JSON).
func (t *Template) Execute(vars map[string]any) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", newError(KindRuntime, 0, "internal error: %v", p)
		}
	}()
	js := t.dialect == HFJS
	converted := make(map[string]any, len(vars))
	for k, v := range vars {
		cv, err := toValue(v, js, 0)
		if err != nil {
			return "", fmt.Errorf("chattemplate: variable %s: %w", k, err)
		}
		converted[k] = cv
	}
	return t.execute(converted)
}

// execute renders with converted variables.
func (t *Template) execute(vars map[string]any) (string, error) {
	r := &renderer{js: t.dialect == HFJS, now: t.Now}
	if r.now == nil {
		r.now = time.Now
	}
	r.globals = builtinGlobals(r)
	root := newScope(nil)
	for k, v := range vars {
		root.vars[k] = v
	}
	var b strings.Builder
	err := r.exec(t.body, root, &b)
	if err == errBreak || err == errContinue {
		err = nil // Jinja2 rejects these outside loops when compiling; be lenient
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// builtinGlobals are the functions templates may call.
func builtinGlobals(r *renderer) map[string]any {
	g := map[string]any{
		"namespace": method("namespace", func(r *renderer, args []any, kw *dictV) (any, error) {
			d := newDict()
			if len(args) > 1 {
				return nil, fmt.Errorf("namespace expected at most 1 argument, got %d", len(args))
			}
			if len(args) == 1 {
				switch a := args[0].(type) {
				case *dictV:
					d = a.copy()
				case *listV:
					for _, it := range a.items {
						p, ok := it.(*listV)
						if !ok || len(p.items) != 2 {
							return nil, fmt.Errorf("namespace expected an iterable of key/value pairs")
						}
						if !d.set(p.items[0], p.items[1]) {
							return nil, fmt.Errorf("unhashable type: '%s'", typeName(p.items[0]))
						}
					}
				default:
					return nil, fmt.Errorf("'%s' object is not iterable", typeName(a))
				}
			}
			if kw != nil {
				for i, k := range kw.keys {
					d.set(k, kw.vals[i])
				}
			}
			return &nsV{d: d}, nil
		}),
		"raise_exception": method("raise_exception", func(r *renderer, args []any, kw *dictV) (any, error) {
			msg := ""
			if len(args) > 0 {
				msg = r.str(args[0])
			}
			return nil, &Error{Kind: KindRaised, Message: msg}
		}),
		"strftime_now": method("strftime_now", func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind("strftime_now", args, kw, []string{"format"}, []any{missing})
			if err != nil {
				return nil, err
			}
			f, ok := a[0].(string)
			if !ok {
				return nil, fmt.Errorf("strftime() argument 1 must be str, not %s", typeName(a[0]))
			}
			return strftime(r.now(), f, r.js), nil
		}),
		"range": method("range", func(r *renderer, args []any, kw *dictV) (any, error) {
			if kw != nil && kw.len() > 0 {
				return nil, fmt.Errorf("range() takes no keyword arguments")
			}
			var n [3]int64
			for i, a := range args {
				v, _, isFloat, ok := number(a)
				if !ok || isFloat || i > 2 {
					return nil, fmt.Errorf("range() takes 1 to 3 integer arguments")
				}
				n[i] = v
			}
			start, stop, step := int64(0), int64(0), int64(1)
			switch len(args) {
			case 1:
				stop = n[0]
			case 2:
				start, stop = n[0], n[1]
			case 3:
				start, stop, step = n[0], n[1], n[2]
			default:
				return nil, fmt.Errorf("range expected at least 1 argument, got 0")
			}
			if step == 0 {
				return nil, fmt.Errorf("range() arg 3 must not be zero")
			}
			count := int64(0)
			if step > 0 && stop > start {
				count = (stop - start + step - 1) / step
			} else if step < 0 && start > stop {
				count = (start - stop - step - 1) / -step
			}
			if count > 100000 || count < 0 {
				return nil, fmt.Errorf("range too big: the sandbox blocks ranges larger than MAX_RANGE (100000)")
			}
			l := &listV{items: make([]any, 0, count)}
			for i := range count {
				l.items = append(l.items, start+i*step)
			}
			return l, nil
		}),
	}
	if !r.js {
		g["dict"] = method("dict", func(r *renderer, args []any, kw *dictV) (any, error) {
			d := newDict()
			if len(args) > 1 {
				return nil, fmt.Errorf("dict expected at most 1 argument, got %d", len(args))
			}
			if len(args) == 1 {
				src, ok := args[0].(*dictV)
				if !ok {
					return nil, fmt.Errorf("dict() argument must be a mapping")
				}
				d = src.copy()
			}
			if kw != nil {
				for i, k := range kw.keys {
					d.set(k, kw.vals[i])
				}
			}
			return d, nil
		})
		g["joiner"] = method("joiner", func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind("joiner", args, kw, []string{"sep"}, []any{", "})
			if err != nil {
				return nil, err
			}
			used := false
			return method("joiner", func(r *renderer, args []any, kw *dictV) (any, error) {
				if !used {
					used = true
					return "", nil
				}
				return a[0], nil
			}), nil
		})
	}
	return g
}

// Object is a JSON-like object whose keys keep their order, for tool
// definitions and arguments written in Go (a Go map has no order, so maps
// are passed with their keys sorted). json.RawMessage also keeps order.
type Object []Field

// Field is one key and value of an Object.
type Field struct {
	Key   string
	Value any
}

// toValue converts a Go value to a template value.
func toValue(v any, js bool, depth int) (any, error) {
	if depth > 200 {
		return nil, fmt.Errorf("value nested too deeply")
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool, string:
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint:
		return uintValue(uint64(x)), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		return uintValue(x), nil
	case float32:
		return floatValue(float64(x), js), nil
	case float64:
		return floatValue(x, js), nil
	case json.Number:
		return jsNormalize(jsonNumber(x), js), nil
	case json.RawMessage:
		d, err := decodeJSON(x)
		if err != nil {
			return nil, err
		}
		return jsNormalize(d, js), nil
	case Object:
		d := newDict()
		for _, f := range x {
			cv, err := toValue(f.Value, js, depth+1)
			if err != nil {
				return nil, err
			}
			d.set(f.Key, cv)
		}
		return jsOrder(d, js), nil
	case Message:
		return x.value(js, depth)
	case *Message:
		if x == nil {
			return nil, nil
		}
		return x.value(js, depth)
	case ToolCall:
		return x.value(js, depth)
	case []any:
		l := &listV{items: make([]any, len(x))}
		for i, it := range x {
			cv, err := toValue(it, js, depth+1)
			if err != nil {
				return nil, err
			}
			l.items[i] = cv
		}
		return l, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := newDict()
		for _, k := range keys {
			cv, err := toValue(x[k], js, depth+1)
			if err != nil {
				return nil, err
			}
			d.set(k, cv)
		}
		return jsOrder(d, js), nil
	case *listV, *dictV, *nsV, *undefV, *funcV:
		return x, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return toValue(rv.Elem().Interface(), js, depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return &listV{}, nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 && rv.Kind() == reflect.Slice {
			break // []byte: through JSON (base64), as encoding/json does
		}
		l := &listV{items: make([]any, rv.Len())}
		for i := range rv.Len() {
			cv, err := toValue(rv.Index(i).Interface(), js, depth+1)
			if err != nil {
				return nil, err
			}
			l.items[i] = cv
		}
		return l, nil
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := make(map[string]any, rv.Len())
			it := rv.MapRange()
			for it.Next() {
				m[it.Key().String()] = it.Value().Interface()
			}
			return toValue(m, js, depth+1)
		}
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintValue(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return floatValue(rv.Float(), js), nil
	case reflect.Func, reflect.Chan, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return nil, fmt.Errorf("unsupported type %T", v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	return jsNormalize(d, js), nil
}

func uintValue(u uint64) any {
	if u > math.MaxInt64 {
		return float64(u)
	}
	return int64(u)
}

// floatValue keeps a float, except that JavaScript has no integral floats.
func floatValue(f float64, js bool) any {
	if js && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return int64(f)
	}
	return f
}

// jsNormalize makes decoded JSON look as it does to JavaScript: integral
// floats are ints, and object keys that are array indices come first.
func jsNormalize(v any, js bool) any {
	if !js {
		return v
	}
	switch x := v.(type) {
	case float64:
		return floatValue(x, true)
	case *listV:
		for i, it := range x.items {
			x.items[i] = jsNormalize(it, true)
		}
	case *dictV:
		for i, it := range x.vals {
			x.vals[i] = jsNormalize(it, true)
		}
		return jsOrder(x, true)
	}
	return v
}

// jsOrder reorders a dict's keys as a JavaScript object orders its
// properties: array-index keys ascending first, then the others in
// insertion order.
func jsOrder(d *dictV, js bool) *dictV {
	if !js {
		return d
	}
	var idx, other []int
	for i, k := range d.keys {
		if s, ok := k.(string); ok && isArrayIndex(s) {
			idx = append(idx, i)
		} else {
			other = append(other, i)
		}
	}
	if len(idx) == 0 {
		return d
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, _ := strconv.ParseUint(d.keys[idx[a]].(string), 10, 32)
		y, _ := strconv.ParseUint(d.keys[idx[b]].(string), 10, 32)
		return x < y
	})
	out := newDict()
	for _, i := range append(idx, other...) {
		out.set(d.keys[i], d.vals[i])
	}
	return out
}

func isArrayIndex(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return err == nil && n < math.MaxUint32
}
