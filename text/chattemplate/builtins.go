package chattemplate

// Helpers that filters, tests, methods and globals share.

import (
	"fmt"
	"sort"
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

// seqItems returns the items of an iterable for filters (a string's
// characters, a dict's keys, nothing for undefined).
func seqItems(v any) ([]any, error) {
	switch v := v.(type) {
	case *listV:
		return v.items, nil
	case *dictV:
		return v.keys, nil
	case string:
		return chars(v), nil
	case *undefV:
		if v.unsafe {
			return nil, undefErr(v, 0)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// lengthOf is Python's len(v), and 0 for undefined.
func lengthOf(v any) (any, error) {
	switch v := v.(type) {
	case string:
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
	for _, part := range strings.Split(p, ".") {
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

// sortKey lowercases strings for case-insensitive sorting.
func sortKey(v any, caseSensitive bool) any {
	if s, ok := v.(string); ok && !caseSensitive {
		return strings.ToLower(s)
	}
	return v
}

// sortKeyFunc is the key by which sort, min, max and unique compare an
// item: its attribute attr (unless None), lower case unless
// caseSensitive.
func (r *renderer) sortKeyFunc(attr any, caseSensitive bool) func(any) (any, error) {
	return func(it any) (any, error) {
		if attr != nil {
			x, err := r.getAttrPath(it, attr)
			if err != nil {
				return nil, err
			}
			it = x
		}
		return sortKey(it, caseSensitive), nil
	}
}

// sortValues sorts items by key stably, as Python's sorted does.
func sortValues(items []any, key func(any) (any, error), reverse bool) ([]any, error) {
	type kv struct{ k, v any }
	ks := make([]kv, len(items))
	for i, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		ks[i] = kv{k, it}
	}
	var cmpErr error
	sort.SliceStable(ks, func(i, j int) bool {
		a, b := ks[i].k, ks[j].k
		if reverse {
			a, b = b, a
		}
		c, ok := pyCompare(a, b)
		if !ok && cmpErr == nil {
			cmpErr = fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(a), typeName(b))
		}
		return c == -1
	})
	if cmpErr != nil {
		return nil, cmpErr
	}
	out := make([]any, len(ks))
	for i, k := range ks {
		out[i] = k.v
	}
	return out, nil
}
