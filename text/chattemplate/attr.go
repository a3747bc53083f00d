package chattemplate

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// undefErr is the error of using an undefined value.
func undefErr(u *undefV, line int) error {
	return newError(KindRuntime, line, "%s", u.msg)
}

// objectRepr names an object in undefined-attribute messages, as Jinja2
// does.
func objectRepr(v any) string {
	if v == nil {
		return "None"
	}
	return typeName(v) + " object"
}

// missingAttr is Jinja2's undefined x.name (or x[name] for a str name):
// "'dict object' has no attribute 'name'", both parts Python reprs.
func missingAttr(x any, name string) *undefV {
	return &undefV{msg: fmt.Sprintf("%s has no attribute %s", pyRepr(objectRepr(x)), shortRepr(name))}
}

// unsafeAttr is an attribute the sandbox refuses.
func unsafeAttr(x any, name string) *undefV {
	return &undefV{msg: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", name, typeName(x)), unsafe: true}
}

// getAttr is Jinja2's sandboxed x.name: a Python attribute (a method)
// first, then the item x[name].
func (r *renderer) getAttr(x any, name string, line int) (any, error) {
	if u, ok := x.(*undefV); ok {
		return nil, undefErr(u, line)
	}
	if strings.HasPrefix(name, "_") {
		if d, ok := x.(*dictV); ok && !strings.HasPrefix(name, "__") {
			if v, ok := d.get(name); ok {
				return v, nil
			}
		}
		return unsafeAttr(x, name), nil
	}
	switch x := x.(type) {
	case *dictV:
		return dictAttr(x, name), nil
	case *nsV:
		if v, ok := x.d.get(name); ok {
			return v, nil
		}
		return &undefV{msg: fmt.Sprintf("'jinja2.utils.Namespace object' has no attribute %s", shortRepr(name))}, nil
	case string:
		if m, ok := strMethods[name]; ok {
			return bindMethod(name, x, m), nil
		}
	case *listV:
		return listAttr(x, name), nil
	case *loopV:
		return loopAttr(x, name), nil
	}
	return missingAttr(x, name), nil
}

// dictAttr is d.name: a method, else the item.
func dictAttr(d *dictV, name string) any {
	if m, ok := dictMethods[name]; ok {
		return bindMethod(name, d, m)
	}
	if unsafeDictMethods[name] {
		return unsafeAttr(d, name)
	}
	if v, ok := d.get(name); ok {
		return v
	}
	return missingAttr(d, name)
}

// listAttr is l.name, a method of a list or tuple.
func listAttr(l *listV, name string) any {
	methods := listMethods
	if l.tuple {
		methods = tupleMethods
	}
	if m, ok := methods[name]; ok {
		return bindMethod(name, l, m)
	}
	if unsafeListMethods[name] && !l.tuple {
		return unsafeAttr(l, name)
	}
	return missingAttr(l, name)
}

// getItem is Jinja2's sandboxed x[key]: the item, else (for a string key)
// the attribute, else undefined.
func (r *renderer) getItem(x, key any, line int) (any, error) {
	if u, ok := x.(*undefV); ok {
		return nil, undefErr(u, line)
	}
	noElement := func() (any, error) {
		// Jinja2 writes the object's type without quotes here.
		return &undefV{msg: fmt.Sprintf("%s has no element %s", objectRepr(x), shortRepr(key))}, nil
	}
	i, _, isFloat, isNum := number(key)
	isInt := isNum && !isFloat
	switch xv := x.(type) {
	case *dictV:
		if err := r.b.workFor("[]", keyWork(key)); err != nil {
			return nil, wrap(err, line)
		}
		if v, ok := xv.get(key); ok {
			return v, nil
		}
	case *listV:
		if isInt {
			if j, ok := seqIndex(i, len(xv.items)); ok {
				return xv.items[j], nil
			}
			return noElement()
		}
	case string:
		if isInt {
			if err := r.b.workFor("[]", int64(len(xv))); err != nil {
				return nil, wrap(err, line)
			}
			if j, ok := seqIndex(i, utf8.RuneCountInString(xv)); ok {
				c, _ := utf8.DecodeRuneInString(xv[runeOffset(xv, j):])
				return string(c), nil
			}
			return noElement()
		}
	}
	if k, ok := key.(string); ok {
		if err := r.b.workFor("[]", keyWork(k)); err != nil {
			return nil, wrap(err, line)
		}
		return r.getAttr(x, k, line)
	}
	return noElement()
}

// seqIndex is the index i (negative: from the end) in a sequence of n
// items, if it is within it.
func seqIndex(i int64, n int) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	return int(i), i >= 0 && i < int64(n)
}

func (r *renderer) evalSlice(e *sliceExpr, s *scope) (any, error) {
	x, err := r.eval(e.x, s)
	if err != nil {
		return nil, err
	}
	if u, ok := x.(*undefV); ok {
		return nil, undefErr(u, e.line)
	}
	idx, err := r.sliceBounds(e, s)
	if err != nil {
		return nil, err
	}
	var n int
	switch x := x.(type) {
	case *listV:
		n = len(x.items)
	case string:
		if err := r.b.workFor("slice", int64(len(x))); err != nil {
			return nil, wrap(err, e.line)
		}
		n = utf8.RuneCountInString(x)
	default:
		return &undefV{msg: fmt.Sprintf("'%s' object is not subscriptable", typeName(x))}, nil
	}
	sl, err := sliceIndices(n, idx[0], idx[1], idx[2])
	if err != nil {
		return nil, r.rtErr(e.line, "%s", err.Error())
	}
	v, err := r.b.slicePicks(x, sl)
	return v, wrap(err, e.line)
}

// sliceBounds evaluates the start, stop and step of a slice; nil where
// absent or None.
func (r *renderer) sliceBounds(e *sliceExpr, s *scope) ([3]*int64, error) {
	var idx [3]*int64
	for i, p := range []expr{e.lo, e.hi, e.step} {
		if p == nil {
			continue
		}
		v, err := r.eval(p, s)
		if err != nil {
			return idx, err
		}
		if v == nil {
			continue
		}
		n, _, isFloat, ok := number(v)
		if !ok || isFloat {
			if u, ok := v.(*undefV); ok {
				return idx, undefErr(u, e.line)
			}
			return idx, r.rtErr(e.line, "slice indices must be integers or None")
		}
		idx[i] = &n
	}
	return idx, nil
}

// slice is the items a slice visits: count of them, from start, step
// apart.
type slice struct{ start, step, count int64 }

// slicePicks is the list (tuple) or string of the items of x that sl
// visits, within the budget.
func (b *budget) slicePicks(x any, sl slice) (any, error) {
	if l, ok := x.(*listV); ok {
		if err := b.takeList("slice", sl.count); err != nil {
			return nil, err
		}
		out := &listV{items: make([]any, sl.count), tuple: l.tuple}
		for i := range sl.count {
			out.items[i] = l.items[sl.start+i*sl.step]
		}
		return out, nil
	}
	s := x.(string)
	if sl.count == 0 {
		return "", nil
	}
	if sl.step == 1 {
		lo := runeOffset(s, int(sl.start))
		hi := lo + runeOffset(s[lo:], int(sl.count))
		return s[lo:hi], nil
	}
	ascii := isASCII(s)
	var runes []rune
	if !ascii {
		if err := b.takeStr("slice", 4*int64(utf8.RuneCountInString(s))); err != nil {
			return nil, err
		}
		runes = []rune(s)
	}
	w := newSbuf(b, "slice")
	for i := range sl.count {
		if w.done {
			break
		}
		p := sl.start + i*sl.step
		if ascii {
			w.writeByte(s[p])
		} else {
			w.WriteRune(runes[p])
		}
	}
	return w.result()
}

// sliceIndices is Python's slice.indices: the indices x[lo:hi:step]
// visits in a sequence of length n.
func sliceIndices(n int, lo, hi, step *int64) (slice, error) {
	st := int64(1)
	if step != nil {
		st = *step
	}
	if st == 0 {
		return slice{}, errors.New("slice step cannot be zero")
	}
	ln := int64(n)
	clamp := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += ln
			if v < 0 {
				if st < 0 {
					return -1
				}
				return 0
			}
		} else if v >= ln {
			if st < 0 {
				return ln - 1
			}
			return ln
		}
		return v
	}
	var start, stop int64
	if st > 0 {
		start, stop = clamp(lo, 0), clamp(hi, ln)
	} else {
		start, stop = clamp(lo, ln-1), clamp(hi, -1)
	}
	// The count, in unsigned arithmetic: a step may be as large as an
	// int64 goes.
	var count uint64
	switch {
	case st > 0 && start < stop:
		count = (uint64(stop-start) + uint64(st) - 1) / uint64(st)
	case st < 0 && start > stop:
		m := uint64(-st) // -MinInt64 wraps to its magnitude as a uint64
		count = (uint64(start-stop) + m - 1) / m
	}
	return slice{start: start, step: st, count: int64(count)}, nil
}
