package chattemplate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"time"
)

// Template is a parsed chat template. It is safe for concurrent use as
// long as its fields are not changed during a rendering.
type Template struct {
	body []node
	// Tokens are the tokenizer's special tokens, passed to the template
	// as bos_token, eos_token and so on (see FromConfig).
	Tokens SpecialTokens
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
	// Limits bound each rendering (zero fields: the defaults, 64 MiB of
	// values, 64 MiB of output, 10^9 units of work, 200 nested calls).
	Limits Limits
}

// Parse parses a Jinja chat template. Errors are *Error values naming the
// line.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			t, err = nil, newError(KindSyntax, 0, "internal error: %v", p)
		}
	}()
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	body, err := parseTemplate(toks)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// String describes the template, for debugging.
func (t *Template) String() string {
	return fmt.Sprintf("chattemplate.Template(%d nodes)", len(t.body))
}

// Execute renders the template with exactly the variables given (no
// special tokens, no defaults). Values may be nil, bool, integers,
// floats, strings, json.Number, json.RawMessage (decoded keeping key
// order), Object, Message, ToolCall, slices and arrays, maps with string
// keys (keys sorted), pointers to these, and other types that
// encoding/json can marshal (converted through JSON).
func (t *Template) Execute(vars map[string]any) (string, error) {
	return t.ExecuteContext(context.Background(), vars)
}

// ExecuteContext is Execute, stopping with an error of KindBudget that
// wraps ctx.Err() when ctx is done (looked at every million or so units
// of work): a deadline on a rendering, in addition to its Limits.
func (t *Template) ExecuteContext(ctx context.Context, vars map[string]any) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = "", newError(KindRuntime, 0, "internal error: %v", p)
		}
	}()
	converted := make(map[string]any, len(vars))
	for k, v := range vars {
		cv, err := toValue(v, 0)
		if err != nil {
			return "", fmt.Errorf("chattemplate: variable %s: %w", k, err)
		}
		converted[k] = cv
	}
	return t.execute(ctx, converted)
}

// execute renders with converted variables.
func (t *Template) execute(ctx context.Context, vars map[string]any) (string, error) {
	out, _, err := t.executeBudget(ctx, vars)
	return out, err
}

// executeBudget is execute, with what the rendering used of its budget.
func (t *Template) executeBudget(ctx context.Context, vars map[string]any) (string, *budget, error) {
	r := &renderer{now: t.Now, b: newBudget(ctx, t.Limits)}
	if r.now == nil {
		r.now = time.Now
	}
	root := newScope(nil)
	for k, v := range vars {
		root.vars[k] = v
	}
	var b textBuf
	err := r.exec(t.body, root, &b)
	if err == errBreak || err == errContinue {
		err = nil // Jinja2 rejects these outside loops when compiling; be lenient
	}
	if err == nil {
		err = r.b.failed() // a limit passed where no error could be returned
	}
	if err != nil {
		return "", r.b, err
	}
	return b.String(), r.b, nil
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

func (o Object) value(depth int) (any, error) {
	d := newDict()
	for _, f := range o {
		cv, err := toValue(f.Value, depth+1)
		if err != nil {
			return nil, err
		}
		d.set(f.Key, cv)
	}
	return d, nil
}

// toValue converts a Go value to a template value.
func toValue(v any, depth int) (any, error) {
	if depth > 200 {
		return nil, fmt.Errorf("value nested too deeply")
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool, string, int64, float64, *listV, *dictV, *nsV, *undefV, *funcV:
		return x, nil
	case int:
		return int64(x), nil
	case json.Number:
		return jsonNumber(x), nil
	case json.RawMessage:
		return decodeJSON(x)
	case Object:
		return x.value(depth)
	case Message:
		return x.value(depth)
	case *Message:
		if x == nil {
			return nil, nil
		}
		return x.value(depth)
	case ToolCall:
		return x.value(depth)
	case []any:
		l := &listV{items: make([]any, len(x))}
		for i, it := range x {
			cv, err := toValue(it, depth+1)
			if err != nil {
				return nil, err
			}
			l.items[i] = cv
		}
		return l, nil
	case map[string]any:
		return mapValue(x, depth)
	}
	return reflectValue(v, depth)
}

// mapValue converts a map, its keys sorted.
func mapValue(m map[string]any, depth int) (any, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := newDict()
	for _, k := range keys {
		cv, err := toValue(m[k], depth+1)
		if err != nil {
			return nil, err
		}
		d.set(k, cv)
	}
	return d, nil
}

// reflectValue converts the types toValue does not list by their kind,
// and the others through encoding/json.
func reflectValue(v any, depth int) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return toValue(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return &listV{}, nil
		}
		if rv.Kind() == reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
			return reflectList(rv, depth)
		}
		// []byte: through JSON (base64), as encoding/json does.
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := make(map[string]any, rv.Len())
			it := rv.MapRange()
			for it.Next() {
				m[it.Key().String()] = it.Value().Interface()
			}
			return toValue(m, depth+1)
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
		return rv.Float(), nil
	case reflect.Func, reflect.Chan, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
		return nil, fmt.Errorf("unsupported type %T", v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(data)
}

// reflectList converts a slice or an array.
func reflectList(rv reflect.Value, depth int) (any, error) {
	l := &listV{items: make([]any, rv.Len())}
	for i := range rv.Len() {
		cv, err := toValue(rv.Index(i).Interface(), depth+1)
		if err != nil {
			return nil, err
		}
		l.items[i] = cv
	}
	return l, nil
}

// uintValue is an int, or a float beyond int64 (where Python's int would
// go on).
func uintValue(u uint64) any {
	if u > math.MaxInt64 {
		return float64(u)
	}
	return int64(u)
}
