package chattemplate

import "fmt"

// globals are the functions templates may call by name: Jinja2's and
// transformers' (raise_exception, strftime_now).
var globals = map[string]any{
	"dict":            method("dict", globalDict),
	"joiner":          method("joiner", globalJoiner),
	"namespace":       method("namespace", globalNamespace),
	"raise_exception": method("raise_exception", globalRaiseException),
	"range":           method("range", globalRange),
	"strftime_now":    method("strftime_now", globalStrftimeNow),
}

// maxRange is the sandbox's MAX_RANGE, the most items range may give.
const maxRange = 100000

// method is a built-in function or a bound method.
func method(name string, fn func(r *renderer, args []any, kw *dictV) (any, error)) *funcV {
	return &funcV{name: name, fn: fn}
}

// globalNamespace is namespace(mapping or pairs, **kwargs): an object
// whose attributes a template may set.
func globalNamespace(r *renderer, args []any, kw *dictV) (any, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("namespace expected at most 1 argument, got %d", len(args))
	}
	d := newDict()
	if len(args) == 1 {
		var err error
		if d, err = dictFromPairs(r.b, args[0]); err != nil {
			return nil, err
		}
	}
	if err := setKeywords(r.b, "namespace", d, kw); err != nil {
		return nil, err
	}
	return &nsV{d: d}, nil
}

// dictFromPairs is a copy of a dict, or a dict of a list of key/value
// pairs, within the budget.
func dictFromPairs(b *budget, v any) (*dictV, error) {
	switch a := v.(type) {
	case *dictV:
		if err := b.copyDict("namespace", a); err != nil {
			return nil, err
		}
		return a.copy(), nil
	case *listV:
		if err := b.takeDict("namespace", int64(len(a.items))); err != nil {
			return nil, err
		}
		d := newDict()
		for _, it := range a.items {
			p, ok := it.(*listV)
			if !ok || len(p.items) != 2 {
				return nil, fmt.Errorf("namespace expected an iterable of key/value pairs")
			}
			if err := b.spendErr(keyWork(p.items[0])); err != nil {
				return nil, err
			}
			if !d.set(p.items[0], p.items[1]) {
				return nil, fmt.Errorf("unhashable type: '%s'", typeName(p.items[0]))
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// setKeywords sets kw's keys in d, within the budget.
func setKeywords(b *budget, what string, d, kw *dictV) error {
	if kw == nil {
		return nil
	}
	if err := b.copyDict(what, kw); err != nil {
		return err
	}
	for i, k := range kw.keys {
		d.set(k, kw.vals[i])
	}
	return nil
}

// globalDict is dict(mapping, **kwargs).
func globalDict(r *renderer, args []any, kw *dictV) (any, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("dict expected at most 1 argument, got %d", len(args))
	}
	d := newDict()
	if len(args) == 1 {
		src, ok := args[0].(*dictV)
		if !ok {
			return nil, fmt.Errorf("dict() argument must be a mapping")
		}
		if err := r.b.copyDict("dict", src); err != nil {
			return nil, err
		}
		d = src.copy()
	}
	if err := setKeywords(r.b, "dict", d, kw); err != nil {
		return nil, err
	}
	return d, nil
}

// globalJoiner is joiner(sep=', '): a function that gives "" when first
// called and sep after.
func globalJoiner(r *renderer, args []any, kw *dictV) (any, error) {
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
}

// globalRaiseException is transformers' raise_exception(message).
func globalRaiseException(r *renderer, args []any, kw *dictV) (any, error) {
	msg := ""
	if len(args) > 0 {
		var err error
		if msg, err = r.b.str("raise_exception", args[0]); err != nil {
			return nil, err
		}
	}
	return nil, &Error{Kind: KindRaised, Message: msg}
}

// globalStrftimeNow is transformers' strftime_now(format): the time now
// (Template.Now) formatted.
func globalStrftimeNow(r *renderer, args []any, kw *dictV) (any, error) {
	a, err := bind("strftime_now", args, kw, []string{"format"}, []any{missing})
	if err != nil {
		return nil, err
	}
	f, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("strftime() argument 1 must be str, not %s", typeName(a[0]))
	}
	return strftime(r.b, r.now(), f)
}

// globalRange is range(stop) or range(start, stop, step=1), as a list of
// at most maxRange ints.
func globalRange(r *renderer, args []any, kw *dictV) (any, error) {
	if kw != nil && kw.len() > 0 {
		return nil, fmt.Errorf("range() takes no keyword arguments")
	}
	start, stop, step, err := rangeArgs(args)
	if err != nil {
		return nil, err
	}
	count := int64(0)
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange || count < 0 {
		// The sandbox's OverflowError, its capital and full stop included.
		return nil, newError(KindRuntime, 0, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	if err := r.b.takeItems("range", "list", count, intItemBytes); err != nil {
		return nil, err
	}
	l := &listV{items: make([]any, 0, count)}
	for i := range count {
		l.items = append(l.items, start+i*step)
	}
	return l, nil
}

// rangeArgs reads range's 1 to 3 int arguments.
func rangeArgs(args []any) (start, stop, step int64, err error) {
	var n [3]int64
	for i, a := range args {
		v, _, isFloat, ok := number(a)
		if !ok || isFloat || i > 2 {
			return 0, 0, 0, fmt.Errorf("range() takes 1 to 3 integer arguments")
		}
		n[i] = v
	}
	switch len(args) {
	case 0:
		return 0, 0, 0, fmt.Errorf("range expected at least 1 argument, got 0")
	case 1:
		start, stop, step = 0, n[0], 1
	case 2:
		start, stop, step = n[0], n[1], 1
	default:
		start, stop, step = n[0], n[1], n[2]
	}
	if step == 0 {
		return 0, 0, 0, fmt.Errorf("range() arg 3 must not be zero")
	}
	return start, stop, step, nil
}
