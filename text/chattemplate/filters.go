package chattemplate

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// filterFunc implements a filter: v is the value filtered, args and kw
// the filter's arguments.
type filterFunc func(r *renderer, v any, args []any, kw *dictV) (any, error)

// filters are Jinja2's filters, with transformers' tojson. They are set
// in init because map, select and reject, and the filter test, look
// names up in these tables.
var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs":         unary("abs", func(_ *renderer, v any) (any, error) { return filterAbs(v) }),
		"attr":        filterAttr,
		"capitalize":  strFilter("capitalize", (*budget).capitalize),
		"center":      filterCenter,
		"count":       unary("length", func(r *renderer, v any) (any, error) { return r.b.lengthOf(v) }),
		"d":           filterDefault,
		"default":     filterDefault,
		"dictsort":    filterDictsort,
		"e":           unary("escape", filterEscape),
		"escape":      unary("escape", filterEscape),
		"first":       unary("first", filterFirst),
		"float":       filterFloat,
		"forceescape": unary("escape", filterEscape),
		"format":      filterFormat,
		"indent":      filterIndent,
		"int":         filterInt,
		"items":       unary("items", filterItems),
		"join":        filterJoin,
		"last":        unary("last", filterLast),
		"length":      unary("length", func(r *renderer, v any) (any, error) { return r.b.lengthOf(v) }),
		"list":        unary("list", filterList),
		"lower":       strFilter("lower", (*budget).lower),
		"map":         filterMap,
		"max":         minMax("max", 1),
		"min":         minMax("min", -1),
		"pprint":      unary("pprint", func(r *renderer, v any) (any, error) { return r.b.repr("pprint", v) }),
		"reject":      selectFilter(false, false),
		"rejectattr":  selectFilter(false, true),
		"replace":     filterReplace,
		"reverse":     unary("reverse", filterReverse),
		"round":       filterRound,
		"safe":        unary("safe", func(_ *renderer, v any) (any, error) { return v, nil }),
		"select":      selectFilter(true, false),
		"selectattr":  selectFilter(true, true),
		"sort":        filterSort,
		"string":      unary("string", func(r *renderer, v any) (any, error) { return r.b.str("string", v) }),
		"sum":         filterSum,
		"title":       strFilter("title", (*budget).jinjaTitle),
		"tojson":      filterTojson,
		"trim":        filterTrim,
		"truncate":    filterTruncate,
		"unique":      filterUnique,
		"upper":       strFilter("upper", (*budget).upper),
		"wordcount":   unary("wordcount", filterWordcount),
	}
}

// applyFilter evaluates f's arguments and applies it to x.
func (r *renderer) applyFilter(f *filterExpr, x any, s *scope) (any, error) {
	var args []any
	var kw *dictV
	if f.call != nil {
		var err error
		if args, kw, err = r.args(f.call, s); err != nil {
			return nil, err
		}
	}
	v, err := filters[f.name](r, x, args, kw)
	return v, wrap(err, f.line)
}

// applyFilterChain applies a filter chain without operand (filter blocks,
// block sets) to v.
func (r *renderer) applyFilterChain(f *filterExpr, v any, s *scope) (any, error) {
	in := v
	if f.x != nil {
		var err error
		if in, err = r.applyFilterChain(f.x.(*filterExpr), v, s); err != nil {
			return nil, err
		}
	}
	return r.applyFilter(f, in, s)
}

// unary is a filter without arguments.
func unary(name string, f func(r *renderer, v any) (any, error)) filterFunc {
	return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		if _, err := bind(name, args, kw, nil, nil); err != nil {
			return nil, err
		}
		return f(r, v)
	}
}

// strFilter is a filter without arguments that maps v's str to another
// within the budget.
func strFilter(name string, f func(b *budget, what, s string) (string, error)) filterFunc {
	return unary(name, func(r *renderer, v any) (any, error) {
		s, err := r.b.str(name, v)
		if err != nil {
			return nil, err
		}
		return f(r.b, name, s)
	})
}

func filterAbs(v any) (any, error) {
	i, f, isFloat, ok := number(v)
	switch {
	case !ok:
		return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
	case isFloat:
		return math.Abs(f), nil
	case i < 0:
		return -i, nil
	}
	return i, nil
}

// filterAttr is attr(name): Python's getattr, without the item lookup of
// x.name.
func filterAttr(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("attr", args, kw, []string{"name"}, []any{missing})
	if err != nil {
		return nil, err
	}
	name, ok := a[0].(string)
	if !ok {
		return &undefV{msg: "attribute name must be a string"}, nil
	}
	if err := r.b.workFor("attr", keyWork(name)); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *dictV:
		if m, ok := dictMethods[name]; ok {
			return bindMethod(name, x, m), nil
		}
		return missingAttr(x, name), nil
	case *listV, string, *nsV, *loopV:
		return r.getAttr(v, name, 0)
	}
	return missingAttr(v, name), nil
}

// filterCenter is center(width=80).
func filterCenter(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("center", args, kw, []string{"width"}, []any{int64(80)})
	if err != nil {
		return nil, err
	}
	w, _, _, ok := number(a[0])
	if !ok {
		return nil, fmt.Errorf("center() width must be an integer")
	}
	s, err := r.b.str("center", v)
	if err != nil {
		return nil, err
	}
	return r.b.pad("center", s, w, " ", "center")
}

// filterDefault is default(default_value="", boolean=False): the default
// for an undefined value (or, with boolean, a false one).
func filterDefault(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("default", args, kw, []string{"default_value", "boolean"}, []any{"", false})
	if err != nil {
		return nil, err
	}
	if _, ok := v.(*undefV); ok || truthy(a[1]) && !truthy(v) {
		return a[0], nil
	}
	return v, nil
}

// filterDictsort is dictsort(case_sensitive=False, by='key',
// reverse=False): a dict's (key, value) pairs, sorted.
func filterDictsort(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("dictsort", args, kw, []string{"case_sensitive", "by", "reverse"}, []any{false, "key", false})
	if err != nil {
		return nil, err
	}
	d, ok := v.(*dictV)
	if !ok {
		return nil, fmt.Errorf("can only dictsort a mapping")
	}
	pos := 0
	switch a[1] {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, fmt.Errorf("you can only sort by either 'key' or 'value'")
	}
	pairs, err := r.b.itemPairs("dictsort", d)
	if err != nil {
		return nil, err
	}
	items, err := r.b.sortValues("dictsort", pairs.items, func(it any) (any, error) {
		return r.b.sortKey("dictsort", it.(*listV).items[pos], truthy(a[0]))
	}, truthy(a[2]))
	if err != nil {
		return nil, err
	}
	return &listV{items: items}, nil
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// filterEscape is escape: v's str with HTML's special characters
// escaped.
func filterEscape(r *renderer, v any) (any, error) {
	s, err := r.b.str("escape", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.workFor("escape", int64(len(s))); err != nil {
		return nil, err
	}
	size := int64(len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&', '"', '\'':
			size += 4
		case '<', '>':
			size += 3
		}
	}
	if err := r.b.takeStr("escape", size); err != nil {
		return nil, err
	}
	return htmlEscaper.Replace(s), nil
}

func filterFirst(r *renderer, v any) (any, error) {
	if s, ok := v.(string); ok {
		// The first character, without making a list of them all.
		if c, n := utf8.DecodeRuneInString(s); n > 0 {
			return string(c), nil
		}
	}
	items, err := r.b.seqItems("first", v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefV{msg: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func filterLast(r *renderer, v any) (any, error) {
	if s, ok := v.(string); ok {
		if c, n := utf8.DecodeLastRuneInString(s); n > 0 {
			return string(c), nil
		}
	}
	items, err := r.b.seqItems("last", v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefV{msg: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

// filterFloat is float(default=0.0).
func filterFloat(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("float", args, kw, []string{"default"}, []any{0.0})
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		if err := r.b.scratch("float", x); err != nil {
			return nil, err
		}
		if f, ok := pyFloatParse(x); ok {
			return f, nil
		}
	case bool, int64, float64:
		f, _ := num(x)
		return f, nil
	}
	return a[0], nil
}

// filterFormat is format(*args, **kwargs): v % args, or v % kwargs.
func filterFormat(r *renderer, v any, args []any, kw *dictV) (any, error) {
	if len(args) > 0 && kw != nil && kw.len() > 0 {
		return nil, fmt.Errorf("can't handle positional and keyword arguments at the same time")
	}
	var x any = &listV{items: args, tuple: true}
	if kw != nil && kw.len() > 0 {
		x = kw
	}
	f, err := r.b.str("format", v)
	if err != nil {
		return nil, err
	}
	return pyPercentFormat(r.b, "format", f, x)
}

// filterIndent is indent(width=4, first=False, blank=False): the lines
// after the first (with first, all) indented by width spaces (or the
// width string), blank lines only with blank.
func filterIndent(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("indent", args, kw, []string{"width", "first", "blank"}, []any{int64(4), false, false})
	if err != nil {
		return nil, err
	}
	ind, ok := a[0].(string)
	if !ok {
		n, _, _, isNum := number(a[0])
		if !isNum {
			return nil, fmt.Errorf("indent width must be an int or a str")
		}
		ind = strings.Repeat(" ", int(max(0, min(n, 1000))))
	}
	s, err := r.b.str("indent", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.workFor("indent", 4*int64(len(s))); err != nil {
		return nil, err
	}
	// The size of the result is known (to a byte or so: line breaks
	// become "\n") before it is made.
	if err := r.b.takeStr("indent", int64(len(s))+1); err != nil {
		return nil, err
	}
	t := s + "\n"
	first, blank := truthy(a[1]), truthy(a[2])
	indented, i := int64(0), 0
	if first {
		indented++
	}
	eachLine(t, false, func(ln string) {
		if i > 0 && (ln != "" || blank) {
			indented++
		}
		i++
	})
	size := addSat(int64(len(t)), mulSat(indented, int64(len(ind))))
	if err := r.b.takeStr("indent", size); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Grow(int(size))
	if first {
		b.WriteString(ind)
	}
	i = 0
	eachLine(t, false, func(ln string) {
		if i > 0 {
			b.WriteByte('\n')
			if ln != "" || blank {
				b.WriteString(ind)
			}
		}
		b.WriteString(ln)
		i++
	})
	return b.String(), nil
}

// filterInt is int(default=0, base=10).
func filterInt(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("int", args, kw, []string{"default", "base"}, []any{int64(0), int64(10)})
	if err != nil {
		return nil, err
	}
	base, _, _, _ := number(a[1])
	if x, ok := v.(string); ok {
		if err := r.b.scratch("int", x); err != nil {
			return nil, err
		}
	}
	if i, ok := pyInt(v, base); ok {
		return i, nil
	}
	return a[0], nil
}

// filterItems is items: a dict's (key, value) pairs.
func filterItems(r *renderer, v any) (any, error) {
	switch x := v.(type) {
	case *undefV:
		return &listV{}, nil
	case *dictV:
		return r.b.itemPairs("items", x)
	}
	return nil, fmt.Errorf("can only get item pairs from a mapping")
}

// filterJoin is join(d="", attribute=None): the items' (or their
// attribute's) strs joined by d.
func filterJoin(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("join", args, kw, []string{"d", "attribute"}, []any{"", nil})
	if err != nil {
		return nil, err
	}
	sep, err := r.b.str("join", a[0])
	if err != nil {
		return nil, err
	}
	items, err := r.b.seqItems("join", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeItems("join", "list", int64(len(items)), itemBytes); err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	for i, it := range items {
		if a[1] != nil {
			if it, err = r.getAttrPath(it, a[1]); err != nil {
				return nil, err
			}
		}
		if parts[i], err = r.b.str("join", it); err != nil {
			return nil, err
		}
	}
	return r.b.join("join", parts, sep)
}

func filterList(r *renderer, v any) (any, error) {
	if s, ok := v.(string); ok {
		items, err := r.b.chars("list", s)
		return &listV{items: items}, err
	}
	items, err := r.b.seqItems("list", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeList("list", int64(len(items))); err != nil {
		return nil, err
	}
	return &listV{items: append([]any(nil), items...)}, nil
}

// filterMap is map(attribute=..., default=...), each item's attribute,
// or map(name, *args, **kwargs), the filter name applied to each item.
func filterMap(r *renderer, v any, args []any, kw *dictV) (any, error) {
	items, err := r.b.seqItems("map", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeList("map", int64(len(items))); err != nil {
		return nil, err
	}
	if kw != nil {
		if attr, ok := kw.get("attribute"); ok {
			return mapAttribute(r, items, attr, kw)
		}
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("map requires a filter argument")
	}
	name, ok := args[0].(string)
	f := filters[name]
	if !ok || f == nil {
		return nil, fmt.Errorf("no filter named %s", shortRepr(args[0]))
	}
	out := &listV{items: make([]any, 0, len(items))}
	for _, it := range items {
		x, err := f(r, it, args[1:], kw)
		if err != nil {
			return nil, err
		}
		out.items = append(out.items, x)
	}
	return out, nil
}

// mapAttribute is map(attribute=attr, default=...).
func mapAttribute(r *renderer, items []any, attr any, kw *dictV) (any, error) {
	dflt, hasDefault := kw.get("default")
	out := &listV{items: make([]any, 0, len(items))}
	for _, it := range items {
		x, err := r.getAttrPath(it, attr)
		if err != nil {
			return nil, err
		}
		if _, undef := x.(*undefV); undef && hasDefault {
			x = dflt
		}
		out.items = append(out.items, x)
	}
	return out, nil
}

// minMax is max (sign 1) or min (sign -1)(case_sensitive=False,
// attribute=None).
func minMax(name string, sign int) filterFunc {
	return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		a, err := bind(name, args, kw, []string{"case_sensitive", "attribute"}, []any{false, nil})
		if err != nil {
			return nil, err
		}
		items, err := r.b.seqItems(name, v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return &undefV{msg: "No aggregated item, sequence was empty."}, nil
		}
		key := r.sortKeyFunc(name, a[1], truthy(a[0]))
		best := items[0]
		bk, err := key(best)
		if err != nil {
			return nil, err
		}
		for _, it := range items[1:] {
			k, err := key(it)
			if err != nil {
				return nil, err
			}
			c, ok := pyCompare(r.b, k, bk)
			if err := r.b.failed(); err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("'<' not supported between instances of '%s' and '%s'", typeName(k), typeName(bk))
			}
			if c == sign {
				best, bk = it, k
			}
		}
		return best, nil
	}
}

// selectFilter is select and reject (keep true, false) and, with attr,
// selectattr and rejectattr: the items for which a test (or truth) holds
// of the item or its attribute.
func selectFilter(keep, attr bool) filterFunc {
	return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		items, err := r.b.seqItems("select", v)
		if err != nil {
			return nil, err
		}
		if err := r.b.takeList("select", int64(len(items))); err != nil {
			return nil, err
		}
		var attrName any
		if attr {
			if len(args) == 0 {
				return nil, fmt.Errorf("missing parameter for attribute name")
			}
			attrName, args = args[0], args[1:]
		}
		test := func(r *renderer, v any, args []any) (bool, error) { return truthy(v), nil }
		if len(args) > 0 {
			name, ok := args[0].(string)
			if test = tests[name]; !ok || test == nil {
				return nil, fmt.Errorf("no test named %s", shortRepr(args[0]))
			}
			args = args[1:]
		}
		out := &listV{}
		for _, it := range items {
			x := it
			if attr {
				if x, err = r.getAttrPath(it, attrName); err != nil {
					return nil, err
				}
			}
			ok, err := test(r, x, args)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out.items = append(out.items, it)
			}
		}
		return out, nil
	}
}

// filterReplace is replace(old, new, count=None).
func filterReplace(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("replace", args, kw, []string{"old", "new", "count"}, []any{missing, missing, nil})
	if err != nil {
		return nil, err
	}
	n := int64(-1)
	if a[2] != nil {
		n, _, _, _ = number(a[2])
	}
	var strs [3]string
	for i, x := range []any{v, a[0], a[1]} {
		if strs[i], err = r.b.str("replace", x); err != nil {
			return nil, err
		}
	}
	return r.b.replace("replace", strs[0], strs[1], strs[2], n)
}

// filterReverse is reverse: a string reversed, or the items of v as a
// list in reverse order.
func filterReverse(r *renderer, v any) (any, error) {
	if s, ok := v.(string); ok {
		if err := r.b.takeStr("reverse", int64(len(s))); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.Grow(len(s))
		for i := len(s); i > 0; {
			_, n := utf8.DecodeLastRuneInString(s[:i])
			b.WriteString(s[i-n : i]) // a byte that is not UTF-8 as it is: the size counted
			i -= n
		}
		return b.String(), nil
	}
	items, err := r.b.seqItems("reverse", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeList("reverse", int64(len(items))); err != nil {
		return nil, err
	}
	out := &listV{items: make([]any, len(items))}
	for i, it := range items {
		out.items[len(items)-1-i] = it
	}
	return out, nil
}

// filterRound is round(precision=0, method='common').
func filterRound(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("round", args, kw, []string{"precision", "method"}, []any{int64(0), "common"})
	if err != nil {
		return nil, err
	}
	f, ok := num(v)
	if !ok {
		return nil, fmt.Errorf("type %s doesn't define __round__ method", typeName(v))
	}
	p, _, _, _ := number(a[0])
	m, _ := a[1].(string)
	return roundFloat(f, p, m)
}

// filterSort is sort(reverse=False, case_sensitive=False,
// attribute=None).
func filterSort(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("sort", args, kw, []string{"reverse", "case_sensitive", "attribute"}, []any{false, false, nil})
	if err != nil {
		return nil, err
	}
	items, err := r.b.seqItems("sort", v)
	if err != nil {
		return nil, err
	}
	sorted, err := r.b.sortValues("sort", items, r.sortKeyFunc("sort", a[2], truthy(a[1])), truthy(a[0]))
	if err != nil {
		return nil, err
	}
	return &listV{items: sorted}, nil
}

// filterSum is sum(attribute=None, start=0).
func filterSum(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("sum", args, kw, []string{"attribute", "start"}, []any{nil, int64(0)})
	if err != nil {
		return nil, err
	}
	items, err := r.b.seqItems("sum", v)
	if err != nil {
		return nil, err
	}
	acc := a[1]
	for _, it := range items {
		if err := r.b.spendErr(1); err != nil {
			return nil, err
		}
		if a[0] != nil {
			if it, err = r.getAttrPath(it, a[0]); err != nil {
				return nil, err
			}
		}
		if acc, err = r.binary("+", acc, it, 0); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// filterTojson is transformers' tojson(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False).
func filterTojson(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("tojson", args, kw, []string{"ensure_ascii", "indent", "separators", "sort_keys"}, []any{false, nil, nil, false})
	if err != nil {
		return nil, err
	}
	o := jsonOptions{ensureASCII: truthy(a[0]), sortKeys: truthy(a[3])}
	switch ind := a[1].(type) {
	case nil:
	case string:
		o.indent, o.hasIndent = ind, true
	case int64, bool:
		n, _, _, _ := number(ind)
		o.indent, o.hasIndent = strings.Repeat(" ", int(max(0, min(n, 1000)))), true
	default:
		return nil, fmt.Errorf("indent must be an int, a str or None")
	}
	if a[2] != nil {
		if o.itemSep, o.keySep, err = separators(a[2]); err != nil {
			return nil, err
		}
		o.hasSeps = true
	}
	return toJSON(r.b, v, o)
}

// separators reads tojson's separators, a pair of strs.
func separators(v any) (item, key string, err error) {
	l, ok := v.(*listV)
	if !ok || len(l.items) != 2 {
		return "", "", fmt.Errorf("separators must be a pair of strings")
	}
	item, ok1 := l.items[0].(string)
	key, ok2 := l.items[1].(string)
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("separators must be a pair of strings")
	}
	return item, key, nil
}

// filterTrim is trim(chars=None): str.strip of v's str.
func filterTrim(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("trim", args, kw, []string{"chars"}, []any{nil})
	if err != nil {
		return nil, err
	}
	s, err := r.b.str("trim", v)
	if err != nil {
		return nil, err
	}
	return r.b.strip(s, a[0], true, true)
}

// filterTruncate is truncate(length=255, killwords=False, end='...',
// leeway=5): v's str cut to length characters, at a word boundary unless
// killwords, ending in end, unless it is at most leeway characters too
// long.
func filterTruncate(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("truncate", args, kw, []string{"length", "killwords", "end", "leeway"}, []any{int64(255), false, "...", int64(5)})
	if err != nil {
		return nil, err
	}
	s, err := r.b.str("truncate", v)
	if err != nil {
		return nil, err
	}
	end, err := r.b.str("truncate", a[2])
	if err != nil {
		return nil, err
	}
	n, _, _, _ := number(a[0])
	lw, _, _, _ := number(a[3])
	if err := r.b.workFor("truncate", int64(len(s)+len(end))); err != nil {
		return nil, err
	}
	endLen := int64(utf8.RuneCountInString(end))
	if endLen > n {
		return nil, fmt.Errorf("expected length >= %d, got %d", endLen, n)
	}
	if int64(utf8.RuneCountInString(s)) <= addSat(n, max(lw, 0)) && n+lw >= n {
		return s, nil
	}
	cut := s[:runeOffset(s, int(n-endLen))]
	if !truthy(a[1]) {
		if i := strings.LastIndex(cut, " "); i >= 0 {
			cut = cut[:i]
		}
	}
	if err := r.b.takeStr("truncate", int64(len(cut)+len(end))); err != nil {
		return nil, err
	}
	return cut + end, nil
}

// filterUnique is unique(case_sensitive=False, attribute=None): the
// items without those equal to an earlier one.
func filterUnique(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("unique", args, kw, []string{"case_sensitive", "attribute"}, []any{false, nil})
	if err != nil {
		return nil, err
	}
	items, err := r.b.seqItems("unique", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeItems("unique", "list", int64(len(items)), 2*itemBytes); err != nil {
		return nil, err
	}
	key := r.sortKeyFunc("unique", a[1], truthy(a[0]))
	out := &listV{}
	var seen []any
	for _, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		in := containsEqual(r.b, seen, k)
		if err := r.b.failed(); err != nil {
			return nil, err
		}
		if !in {
			seen = append(seen, k)
			out.items = append(out.items, it)
		}
	}
	return out, nil
}

// containsEqual reports whether an item of l equals x (counting the
// work in b).
func containsEqual(b *budget, l []any, x any) bool {
	for _, it := range l {
		if pyEqual(b, it, x) {
			return true
		}
		if b.failed() != nil {
			return false
		}
	}
	return false
}

// filterWordcount is wordcount: the number of runs of word characters.
func filterWordcount(r *renderer, v any) (any, error) {
	s, err := r.b.str("wordcount", v)
	if err != nil {
		return nil, err
	}
	if err := r.b.workFor("wordcount", 4*int64(len(s))); err != nil {
		return nil, err
	}
	n := int64(0)
	in := false
	for _, c := range s {
		w := c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.Is(unicode.Mn, c)
		if w && !in {
			n++
		}
		in = w
	}
	return n, nil
}
