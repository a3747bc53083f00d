package chattemplate

// Helpers that filters, tests, methods and globals share.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// missingT is the type of missing.
type missingT struct{}

// missing marks a parameter without a default.
var missing = missingT{}

// bind matches positional and keyword arguments to parameters as Python
// does; defs[i] is the default of names[i] (missing: required).
func bind(fname string, args []any, kw *dictV, names []string, defs []any) ([]any, error) {
	if len(args) > len(names) {
		return nil, fmt.Errorf("%s() takes at most %d arguments (%d given)", fname, len(names), len(args))
	}
	out := make([]any, len(names))
	copy(out, args)
	for i := len(args); i < len(names); i++ {
		out[i] = defs[i]
	}
	if kw != nil {
		for i, k := range kw.keys {
			ks, _ := k.(string)
			j := indexOf(names, ks)
			if j < 0 {
				return nil, fmt.Errorf("%s() got an unexpected keyword argument '%s'", fname, ks)
			}
			if j < len(args) {
				return nil, fmt.Errorf("%s() got multiple values for argument '%s'", fname, ks)
			}
			out[j] = kw.vals[i]
		}
	}
	for i, v := range out {
		if v == missing {
			return nil, fmt.Errorf("%s() missing required argument '%s'", fname, names[i])
		}
	}
	return out, nil
}

// indexOf is the index of the last name equal to s, or -1.
func indexOf(names []string, s string) int {
	for i := len(names) - 1; i >= 0; i-- {
		if names[i] == s {
			return i
		}
	}
	return -1
}

// seqItems returns the items of an iterable for the filter or method
// what (a string's characters, a dict's keys, nothing for undefined).
func (b *budget) seqItems(what string, v any) ([]any, error) {
	switch v := v.(type) {
	case *listV:
		return v.items, nil
	case *dictV:
		return v.keys, nil
	case string:
		return b.chars(what, v)
	case *undefV:
		if v.unsafe {
			return nil, undefErr(v, 0)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// lengthOf is Python's len(v), and 0 for undefined.
func (b *budget) lengthOf(v any) (any, error) {
	switch v := v.(type) {
	case string:
		if err := b.workFor("length", int64(len(v))); err != nil {
			return nil, err
		}
		return int64(utf8.RuneCountInString(v)), nil
	case *listV:
		return int64(len(v.items)), nil
	case *dictV:
		return int64(v.len()), nil
	case *undefV:
		return int64(0), nil
	}
	return int64(0), fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

// getAttrPath is Jinja2's attribute lookup for filters: "a.b.0".
func (r *renderer) getAttrPath(v any, path any) (any, error) {
	p, ok := path.(string)
	if !ok {
		return r.getItem(v, path, 0)
	}
	if err := r.b.workFor("attribute", int64(len(p))); err != nil {
		return nil, err
	}
	for part := range strings.SplitSeq(p, ".") {
		var key any = part
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			key = n
		}
		var err error
		if v, err = r.getItem(v, key, 0); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// sortKey lowercases strings for case-insensitive sorting (what: the
// filter).
func (b *budget) sortKey(what string, v any, caseSensitive bool) (any, error) {
	if s, ok := v.(string); ok && !caseSensitive {
		if err := b.workFor(what, caseCost*int64(len(s))); err != nil {
			return nil, err
		}
		if err := b.takeStr(what, int64(len(s))); err != nil {
			return nil, err
		}
		return strings.ToLower(s), nil
	}
	return v, nil
}

// sortKeyFunc is the key by which sort, min, max and unique (what)
// compare an item: its attribute attr (unless None), lower case unless
// caseSensitive.
func (r *renderer) sortKeyFunc(what string, attr any, caseSensitive bool) func(any) (any, error) {
	return func(it any) (any, error) {
		if attr != nil {
			x, err := r.getAttrPath(it, attr)
			if err != nil {
				return nil, err
			}
			it = x
		}
		return r.b.sortKey(what, it, caseSensitive)
	}
}

// sortValues sorts items by key stably, as Python's sorted does, within
// the budget.
func (b *budget) sortValues(what string, items []any, key func(any) (any, error), reverse bool) ([]any, error) {
	type kv struct{ k, v any }
	if err := b.takeItems(what, "list", int64(len(items)), 3*itemBytes); err != nil {
		return nil, err
	}
	ks := make([]kv, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		ks[i] = kv{k, it}
	}
	var cmpErr error
	slices.SortStableFunc(ks, func(p, q kv) int {
		x, y := p.k, q.k
		if reverse {
			x, y = y, x
		}
		b.spend(sortCost)
		c, ok := pyCompare(b, x, y)
		if !ok && cmpErr == nil {
			cmpErr = fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(x), typeName(y))
		}
		if c == 2 {
			return 0 // NaN: neither less nor greater
		}
		return c
	})
	if err := b.failed(); err != nil {
		return nil, err
	}
	if cmpErr != nil {
		return nil, cmpErr
	}
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = k.v
	}
	return out, nil
}
