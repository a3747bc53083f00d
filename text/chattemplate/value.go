package chattemplate

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Template values are Go values of these types:
//
//	nil        Python's None
//	bool
//	int64      Python's int (within 64 bits)
//	float64
//	string
//	*listV     list or tuple
//	*dictV     dict, keys in insertion order
//	*nsV       namespace()
//	*undefV    Jinja2's Undefined
//	*funcV     built-in functions and bound methods
//	*macroV    macros
//	*loopV     the loop variable

// listV is a list, or a tuple when tuple is set.
type listV struct {
	items []any
	tuple bool
}

// dictV is an insertion-ordered dict. Keys are strings, ints, floats,
// bools or None; equal numbers are one key, as in Python.
type dictV struct {
	keys []any
	vals []any
	idx  map[any]int
}

type nsV struct{ d *dictV }

// undefV is an undefined value: printing it gives "", testing it gives
// false, iterating it gives nothing, and anything else fails with msg.
type undefV struct {
	msg string
	// unsafe marks an attribute the sandbox forbids; using it fails with
	// a security error.
	unsafe bool
}

type funcV struct {
	name string
	fn   func(r *renderer, args []any, kw *dictV) (any, error)
}

type loopV struct {
	items  []any
	i      int
	last   any // for changed()
	hasAny bool
}

func newDict() *dictV { return &dictV{idx: map[any]int{}} }

// hashKey normalizes a dict key: equal numbers hash alike, as in Python.
func hashKey(k any) (any, bool) {
	switch k := k.(type) {
	case nil, string, int64:
		return k, true
	case bool:
		if k {
			return int64(1), true
		}
		return int64(0), true
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<63 {
			return int64(k), true
		}
		if k != k {
			return nil, false // NaN keys are never found; keep it simple
		}
		return k, true
	}
	return nil, false
}

func (d *dictV) get(k any) (any, bool) {
	h, ok := hashKey(k)
	if !ok {
		return nil, false
	}
	i, ok := d.idx[h]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// set inserts or replaces; it reports false for an unhashable key.
func (d *dictV) set(k, v any) bool {
	h, ok := hashKey(k)
	if !ok {
		return false
	}
	if i, ok := d.idx[h]; ok {
		d.vals[i] = v
		return true
	}
	d.idx[h] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return true
}

func (d *dictV) len() int { return len(d.keys) }

func (d *dictV) copy() *dictV {
	c := newDict()
	for i, k := range d.keys {
		c.set(k, d.vals[i])
	}
	return c
}

// typeName is Python's type name of v, for error messages.
func typeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case *listV:
		if v.tuple {
			return "tuple"
		}
		return "list"
	case *dictV:
		return "dict"
	case *nsV:
		return "Namespace"
	case *undefV:
		return "Undefined"
	case *funcV:
		return "builtin_function_or_method"
	case *macroV:
		return "Macro"
	case *loopV:
		return "LoopContext"
	}
	return "object"
}

// truthy is Python's bool(v).
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case int64:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case *listV:
		return len(v.items) > 0
	case *dictV:
		return v.len() > 0
	case *undefV:
		return false
	}
	return true
}

// number returns v as a number: ok is false when it is not one (bools are
// ints, as in Python).
func number(v any) (i int64, f float64, isFloat, ok bool) {
	switch v := v.(type) {
	case bool:
		if v {
			return 1, 1, false, true
		}
		return 0, 0, false, true
	case int64:
		return v, float64(v), false, true
	case float64:
		return 0, v, true, true
	}
	return 0, 0, false, false
}

// pyEqual is Python's ==.
func pyEqual(a, b any) bool {
	ai, af, aFloat, aNum := number(a)
	bi, bf, bFloat, bNum := number(b)
	if aNum && bNum {
		if aFloat || bFloat {
			return af == bf
		}
		return ai == bi
	}
	switch a := a.(type) {
	case nil:
		return b == nil
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case *listV:
		bl, ok := b.(*listV)
		return ok && listEqual(a, bl)
	case *dictV:
		bd, ok := b.(*dictV)
		return ok && dictEqual(a, bd)
	case *undefV:
		_, ok := b.(*undefV)
		return ok
	}
	return a == b
}

// listEqual is == on lists or tuples.
func listEqual(a, b *listV) bool {
	if a.tuple != b.tuple || len(a.items) != len(b.items) {
		return false
	}
	for i := range a.items {
		if !pyEqual(a.items[i], b.items[i]) {
			return false
		}
	}
	return true
}

// dictEqual is == on dicts: the same keys with equal values.
func dictEqual(a, b *dictV) bool {
	if a.len() != b.len() {
		return false
	}
	for i, k := range a.keys {
		v, ok := b.get(k)
		if !ok || !pyEqual(a.vals[i], v) {
			return false
		}
	}
	return true
}

// pyCompare orders a and b as Python's < does; ok is false when Python
// raises TypeError.
func pyCompare(a, b any) (c int, ok bool) {
	ai, af, aFloat, aNum := number(a)
	bi, bf, bFloat, bNum := number(b)
	switch {
	case aNum && bNum && (aFloat || bFloat):
		return floatCompare(af, bf), true
	case aNum && bNum:
		return cmp.Compare(ai, bi), true
	}
	switch a := a.(type) {
	case string:
		bs, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(a, bs), true
	case *listV:
		bl, ok := b.(*listV)
		if !ok || a.tuple != bl.tuple {
			return 0, false
		}
		return listCompare(a.items, bl.items)
	}
	return 0, false
}

// floatCompare is -1, 0 or 1, or 2 when a or b is NaN (every comparison
// is false).
func floatCompare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case a == b:
		return 0
	}
	return 2
}

// listCompare orders lists as Python does: by their first unequal items,
// else by length.
func listCompare(a, b []any) (int, bool) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if !pyEqual(a[i], b[i]) {
			return pyCompare(a[i], b[i])
		}
	}
	return cmp.Compare(len(a), len(b)), true
}

// pyStr is Python's str(v) as Jinja2 prints it.
func pyStr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return pyFloat(v)
	case string:
		return v
	case *undefV:
		return ""
	}
	return pyRepr(v)
}

// pyRepr is Python's repr(v).
func pyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > 200 {
		b.WriteString("...")
		return
	}
	switch v := v.(type) {
	case string:
		b.WriteString(pyStrRepr(v))
	case *listV:
		open, close := "[", "]"
		if v.tuple {
			open, close = "(", ")"
		}
		b.WriteString(open)
		for i, it := range v.items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, it, depth+1)
		}
		if v.tuple && len(v.items) == 1 {
			b.WriteByte(',')
		}
		b.WriteString(close)
	case *dictV:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k, depth+1)
			b.WriteString(": ")
			writeRepr(b, v.vals[i], depth+1)
		}
		b.WriteByte('}')
	case *nsV:
		b.WriteString("<Namespace {")
		for i, k := range v.d.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k, depth+1)
			b.WriteString(": ")
			writeRepr(b, v.d.vals[i], depth+1)
		}
		b.WriteString("}>")
	case *undefV:
		b.WriteString("Undefined")
	case *funcV:
		b.WriteString("<built-in function " + v.name + ">")
	case *macroV:
		b.WriteString("<Macro '" + v.n.name + "'>")
	case *loopV:
		b.WriteString("<LoopContext " + strconv.Itoa(v.i+1) + "/" + strconv.Itoa(len(v.items)) + ">")
	default:
		b.WriteString(pyStr(v))
	}
}

// pyStrRepr is Python's repr of a str.
func pyStrRepr(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			// Not UTF-8: Python strings cannot hold it; show the byte as
			// surrogateescape would.
			b.WriteString(`\udc` + strconv.FormatInt(int64(s[i]), 16))
			i++
			continue
		}
		i += n
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == ' ' || r < utf8.RuneSelf && r > ' ' && r < 0x7f:
			b.WriteRune(r)
		case r >= utf8.RuneSelf && unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			b.WriteByte('\\')
			b.WriteString(backslashReplace(r))
		}
	}
	b.WriteByte(q)
	return b.String()
}

// backslashReplace is Python's escape of r after the backslash: xNN,
// uNNNN or UNNNNNNNN.
func backslashReplace(r rune) string {
	hex := strconv.FormatInt(int64(r), 16)
	switch {
	case r < 0x100:
		return "x" + strings.Repeat("0", 2-len(hex)) + hex
	case r < 0x10000:
		return "u" + strings.Repeat("0", 4-len(hex)) + hex
	}
	return "U" + strings.Repeat("0", 8-len(hex)) + hex
}

// pyFloat is Python's repr of a float.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f != f:
		return "nan"
	}
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	// repr uses the shortest digits; exponent notation when the decimal
	// exponent is below -4 or at least 16.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	if x < -4 || x >= 16 {
		return mant + "e" + exp
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
