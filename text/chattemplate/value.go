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

// pyEqual is Python's == (counting its work in b, which may be nil).
// Past the budget, or past maxCompareDepth nested lists, it stops with
// false and the error in b.
func pyEqual(b *budget, x, y any) bool { return equalAt(b, x, y, 0) }

func equalAt(b *budget, x, y any, depth int) bool {
	if !b.spend(compareCost) {
		return false
	}
	ai, af, aFloat, aNum := number(x)
	bi, bf, bFloat, bNum := number(y)
	if aNum && bNum {
		if aFloat || bFloat {
			return af == bf
		}
		return ai == bi
	}
	switch a := x.(type) {
	case nil:
		return y == nil
	case string:
		bs, ok := y.(string)
		if !ok || len(a) != len(bs) {
			return false
		}
		return b.spend(int64(len(a))) && a == bs
	case *listV:
		// The same list is equal to itself, as Python finds its items
		// identical without comparing them.
		bl, ok := y.(*listV)
		return ok && (a == bl || tooDeep(b, depth) && listEqual(b, a, bl, depth))
	case *dictV:
		bd, ok := y.(*dictV)
		return ok && (a == bd || tooDeep(b, depth) && dictEqual(b, a, bd, depth))
	case *undefV:
		_, ok := y.(*undefV)
		return ok
	}
	return x == y
}

// tooDeep fails b, with Python's RecursionError, at a nesting of lists
// deeper than maxCompareDepth; it reports whether depth is allowed.
func tooDeep(b *budget, depth int) bool {
	if depth < maxCompareDepth {
		return true
	}
	if b != nil {
		b.fail(newError(KindRuntime, 0, "maximum recursion depth exceeded in comparison"))
	}
	return false
}

// listEqual is == on lists or tuples.
func listEqual(b *budget, x, y *listV, depth int) bool {
	if x.tuple != y.tuple || len(x.items) != len(y.items) {
		return false
	}
	for i := range x.items {
		if !equalAt(b, x.items[i], y.items[i], depth+1) {
			return false
		}
	}
	return true
}

// dictEqual is == on dicts: the same keys with equal values.
func dictEqual(b *budget, x, y *dictV, depth int) bool {
	if x.len() != y.len() {
		return false
	}
	for i, k := range x.keys {
		if !b.spend(keyWork(k)) {
			return false
		}
		v, ok := y.get(k)
		if !ok || !equalAt(b, x.vals[i], v, depth+1) {
			return false
		}
	}
	return true
}

// pyCompare orders x and y as Python's < does; ok is false when Python
// raises TypeError. It counts its work in b, as pyEqual does.
func pyCompare(b *budget, x, y any) (c int, ok bool) { return compareAt(b, x, y, 0) }

func compareAt(b *budget, x, y any, depth int) (c int, ok bool) {
	if !b.spend(compareCost) {
		return 0, true
	}
	ai, af, aFloat, aNum := number(x)
	bi, bf, bFloat, bNum := number(y)
	switch {
	case aNum && bNum && (aFloat || bFloat):
		return floatCompare(af, bf), true
	case aNum && bNum:
		return cmp.Compare(ai, bi), true
	}
	switch a := x.(type) {
	case string:
		bs, ok := y.(string)
		if !ok {
			return 0, false
		}
		b.spend(int64(min(len(a), len(bs))))
		return strings.Compare(a, bs), true
	case *listV:
		bl, ok := y.(*listV)
		if !ok || a.tuple != bl.tuple {
			return 0, false
		}
		if !tooDeep(b, depth) {
			return 0, true
		}
		return listCompare(b, a.items, bl.items, depth)
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
func listCompare(b *budget, x, y []any, depth int) (int, bool) {
	for i := 0; i < len(x) && i < len(y); i++ {
		if b.failed() != nil {
			return 0, true
		}
		if !equalAt(b, x[i], y[i], depth+1) {
			return compareAt(b, x[i], y[i], depth+1)
		}
	}
	return cmp.Compare(len(x), len(y)), true
}

// pyStr is Python's str(v) as Jinja2 prints it, without limits: for
// values that are not lists or dicts (use budget.str for any value).
func pyStr(v any) string {
	if s, ok := scalarStr(v); ok {
		return s
	}
	return pyRepr(v)
}

// scalarStr is Python's str(v) for the values whose str is v itself or
// short; ok is false for lists, dicts and the like.
func scalarStr(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "None", true
	case bool:
		if v {
			return "True", true
		}
		return "False", true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return pyFloat(v), true
	case string:
		return v, true
	case *undefV:
		return "", true
	}
	return "", false
}

// str is Python's str(v) within the budget, for the operation what.
func (b *budget) str(what string, v any) (string, error) {
	if s, ok := scalarStr(v); ok {
		return s, nil
	}
	return b.repr(what, v)
}

// repr is Python's repr(v) within the budget.
func (b *budget) repr(what string, v any) (string, error) {
	w := newSbuf(b, what)
	writeRepr(w, v, 0)
	return w.result()
}

// pyRepr is Python's repr(v), without limits (for tests and small
// values).
func pyRepr(v any) string {
	w := &sbuf{}
	writeRepr(w, v, 0)
	return w.String()
}

// shortRepr is Python's repr(v), cut short (with "...") past
// maxMessageRepr bytes, for error messages.
func shortRepr(v any) string {
	w := &sbuf{cap: maxMessageRepr}
	writeRepr(w, v, 0)
	return w.String()
}

// writeRepr writes repr(v); it stops when w does.
func writeRepr(w *sbuf, v any, depth int) {
	if depth > 200 {
		w.WriteString("...")
		return
	}
	switch v := v.(type) {
	case string:
		writeStrRepr(w, v)
	case *listV:
		open, close := "[", "]"
		if v.tuple {
			open, close = "(", ")"
		}
		w.WriteString(open)
		for i, it := range v.items {
			if w.done {
				return
			}
			if i > 0 {
				w.WriteString(", ")
			}
			writeRepr(w, it, depth+1)
		}
		if v.tuple && len(v.items) == 1 {
			w.writeByte(',')
		}
		w.WriteString(close)
	case *dictV:
		w.writeByte('{')
		writeReprItems(w, v, depth)
		w.writeByte('}')
	case *nsV:
		w.WriteString("<Namespace {")
		writeReprItems(w, v.d, depth)
		w.WriteString("}>")
	case *undefV:
		w.WriteString("Undefined")
	case *funcV:
		w.WriteString("<built-in function " + v.name + ">")
	case *macroV:
		w.WriteString("<Macro '" + v.n.name + "'>")
	case *loopV:
		w.WriteString("<LoopContext " + strconv.Itoa(v.i+1) + "/" + strconv.Itoa(len(v.items)) + ">")
	default:
		w.WriteString(pyStr(v))
	}
}

// writeReprItems writes the "key: value" items of a dict's repr.
func writeReprItems(w *sbuf, d *dictV, depth int) {
	for i, k := range d.keys {
		if w.done {
			return
		}
		if i > 0 {
			w.WriteString(", ")
		}
		writeRepr(w, k, depth+1)
		w.WriteString(": ")
		writeRepr(w, d.vals[i], depth+1)
	}
}

// writeStrRepr writes Python's repr of a str.
func writeStrRepr(w *sbuf, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	w.writeByte(q)
	for i := 0; i < len(s) && !w.done; {
		// Copy the run of characters that need no escape at once.
		if j := i + plainReprRun(s[i:], q); j > i {
			w.WriteString(s[i:j])
			i = j
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			// Not UTF-8: Python strings cannot hold it; show the byte as
			// surrogateescape would.
			w.WriteString(`\udc` + strconv.FormatInt(int64(s[i]), 16))
			i++
			continue
		}
		i += n
		switch {
		case r == rune(q) || r == '\\':
			w.writeByte('\\')
			w.WriteRune(r)
		case r == '\t':
			w.WriteString(`\t`)
		case r == '\n':
			w.WriteString(`\n`)
		case r == '\r':
			w.WriteString(`\r`)
		default:
			w.writeByte('\\')
			w.WriteString(backslashReplace(r))
		}
	}
	w.writeByte(q)
}

// plainReprRun is the length of the text at the start of s that the
// repr of a str in quotes q writes as it is: printable characters other
// than q and backslashes.
func plainReprRun(s string, q byte) int {
	j := 0
	for j < len(s) {
		if c := s[j]; c < utf8.RuneSelf {
			if c < ' ' || c >= 0x7f || c == q || c == '\\' {
				break
			}
			j++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[j:])
		if r == utf8.RuneError && n == 1 || !unicode.IsPrint(r) {
			break
		}
		j += n
	}
	return j
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
