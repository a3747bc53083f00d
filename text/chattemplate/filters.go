package chattemplate

import (
	"fmt"
	"math"
	"strings"
	"unicode"
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
		"abs":         unary("abs", filterAbs),
		"attr":        filterAttr,
		"capitalize":  strFilter("capitalize", pyCapitalize),
		"center":      filterCenter,
		"count":       unary("length", lengthOf),
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
		"length":      unary("length", lengthOf),
		"list":        unary("list", filterList),
		"lower":       strFilter("lower", pyLower),
		"map":         filterMap,
		"max":         minMax("max", 1),
		"min":         minMax("min", -1),
		"pprint":      unary("pprint", func(v any) (any, error) { return pyRepr(v), nil }),
		"reject":      selectFilter(false, false),
		"rejectattr":  selectFilter(false, true),
		"replace":     filterReplace,
		"reverse":     unary("reverse", filterReverse),
		"round":       filterRound,
		"safe":        unary("safe", func(v any) (any, error) { return v, nil }),
		"select":      selectFilter(true, false),
		"selectattr":  selectFilter(true, true),
		"sort":        filterSort,
		"string":      unary("string", func(v any) (any, error) { return pyStr(v), nil }),
		"sum":         filterSum,
		"title":       strFilter("title", jinjaTitle),
		"tojson":      filterTojson,
		"trim":        filterTrim,
		"truncate":    filterTruncate,
		"unique":      filterUnique,
		"upper":       strFilter("upper", pyUpper),
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
func unary(name string, f func(v any) (any, error)) filterFunc {
	return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		if _, err := bind(name, args, kw, nil, nil); err != nil {
			return nil, err
		}
		return f(v)
	}
}

// strFilter is a filter without arguments that maps v's str to another.
func strFilter(name string, f func(string) string) filterFunc {
	return unary(name, func(v any) (any, error) { return f(pyStr(v)), nil })
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
	return pad(pyStr(v), int(w), " ", "center"), nil
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
	items, err := sortValues(itemPairs(d).items, func(it any) (any, error) {
		return sortKey(it.(*listV).items[pos], truthy(a[0])), nil
	}, truthy(a[2]))
	if err != nil {
		return nil, err
	}
	return &listV{items: items}, nil
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// filterEscape is escape: v's str with HTML's special characters escaped.
func filterEscape(v any) (any, error) { return htmlEscaper.Replace(pyStr(v)), nil }

func filterFirst(v any) (any, error) {
	items, err := seqItems(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefV{msg: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func filterLast(v any) (any, error) {
	items, err := seqItems(v)
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
	return pyPercentFormat(pyStr(v), x)
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
	lines := pySplitlines(pyStr(v)+"\n", false)
	var b strings.Builder
	if truthy(a[1]) {
		b.WriteString(ind)
	}
	for i, ln := range lines {
		if i > 0 {
			b.WriteByte('\n')
			if ln != "" || truthy(a[2]) {
				b.WriteString(ind)
			}
		}
		b.WriteString(ln)
	}
	return b.String(), nil
}

// filterInt is int(default=0, base=10).
func filterInt(r *renderer, v any, args []any, kw *dictV) (any, error) {
	a, err := bind("int", args, kw, []string{"default", "base"}, []any{int64(0), int64(10)})
	if err != nil {
		return nil, err
	}
	base, _, _, _ := number(a[1])
	if i, ok := pyInt(v, base); ok {
		return i, nil
	}
	return a[0], nil
}

// filterItems is items: a dict's (key, value) pairs.
func filterItems(v any) (any, error) {
	switch x := v.(type) {
	case *undefV:
		return &listV{}, nil
	case *dictV:
		return itemPairs(x), nil
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
	sep, ok := a[0].(string)
	if !ok {
		sep = pyStr(a[0])
	}
	items, err := seqItems(v)
	if err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	for i, it := range items {
		if a[1] != nil {
			if it, err = r.getAttrPath(it, a[1]); err != nil {
				return nil, err
			}
		}
		parts[i] = pyStr(it)
	}
	return strings.Join(parts, sep), nil
}

func filterList(v any) (any, error) {
	items, err := seqItems(v)
	if err != nil {
		return nil, err
	}
	return &listV{items: append([]any(nil), items...)}, nil
}

// filterMap is map(attribute=..., default=...), each item's attribute,
// or map(name, *args, **kwargs), the filter name applied to each item.
func filterMap(r *renderer, v any, args []any, kw *dictV) (any, error) {
	items, err := seqItems(v)
	if err != nil {
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
		return nil, fmt.Errorf("no filter named %s", pyRepr(args[0]))
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
		items, err := seqItems(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return &undefV{msg: "No aggregated item, sequence was empty."}, nil
		}
		key := r.sortKeyFunc(a[1], truthy(a[0]))
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
			c, ok := pyCompare(k, bk)
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
		items, err := seqItems(v)
		if err != nil {
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
				return nil, fmt.Errorf("no test named %s", pyRepr(args[0]))
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
	return pyReplace(pyStr(v), pyStr(a[0]), pyStr(a[1]), n), nil
}

// filterReverse is reverse: a string reversed, or the items of v as a
// list in reverse order.
func filterReverse(v any) (any, error) {
	if s, ok := v.(string); ok {
		rs := []rune(s)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		return string(rs), nil
	}
	items, err := seqItems(v)
	if err != nil {
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
	items, err := seqItems(v)
	if err != nil {
		return nil, err
	}
	sorted, err := sortValues(items, r.sortKeyFunc(a[2], truthy(a[1])), truthy(a[0]))
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
	items, err := seqItems(v)
	if err != nil {
		return nil, err
	}
	acc := a[1]
	for _, it := range items {
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
	return toJSON(v, o)
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
	return pyStrip(pyStr(v), a[0], true, true)
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
	s := pyStr(v)
	n, _, _, _ := number(a[0])
	end := pyStr(a[2])
	lw, _, _, _ := number(a[3])
	rs := []rune(s)
	if int64(len([]rune(end))) > n {
		return nil, fmt.Errorf("expected length >= %d, got %d", len([]rune(end)), n)
	}
	if int64(len(rs)) <= n+lw {
		return s, nil
	}
	cut := string(rs[:n-int64(len([]rune(end)))])
	if truthy(a[1]) {
		return cut + end, nil
	}
	if i := strings.LastIndex(cut, " "); i >= 0 {
		cut = cut[:i]
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
	items, err := seqItems(v)
	if err != nil {
		return nil, err
	}
	key := r.sortKeyFunc(a[1], truthy(a[0]))
	out := &listV{}
	var seen []any
	for _, it := range items {
		k, err := key(it)
		if err != nil {
			return nil, err
		}
		if !containsEqual(seen, k) {
			seen = append(seen, k)
			out.items = append(out.items, it)
		}
	}
	return out, nil
}

// containsEqual reports whether an item of l equals x.
func containsEqual(l []any, x any) bool {
	for _, it := range l {
		if pyEqual(it, x) {
			return true
		}
	}
	return false
}

// filterWordcount is wordcount: the number of runs of word characters.
func filterWordcount(v any) (any, error) {
	n := int64(0)
	in := false
	for _, c := range pyStr(v) {
		w := c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.Is(unicode.Mn, c)
		if w && !in {
			n++
		}
		in = w
	}
	return n, nil
}
