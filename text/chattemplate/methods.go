package chattemplate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// methodCall is one call of a method of a str, dict or list: the object
// it is bound to, the name it was looked up by (for errors) and the
// arguments.
type methodCall[T any] struct {
	r    *renderer
	name string
	recv T
	args []any
	kw   *dictV
}

// bind matches the call's arguments to parameters (see bind).
func (c *methodCall[T]) bind(names []string, defs []any) ([]any, error) {
	return bind(c.name, c.args, c.kw, names, defs)
}

// methodFunc implements a method of the receiver type T.
type methodFunc[T any] func(c *methodCall[T]) (any, error)

type strCall = methodCall[string]

// bindMethod returns m bound to recv, as the attribute name of recv.
func bindMethod[T any](name string, recv T, m methodFunc[T]) *funcV {
	return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
		return m(&methodCall[T]{r: r, name: name, recv: recv, args: args, kw: kw})
	})
}

// strConv is a str method without arguments that maps the str to
// another within the budget.
func strConv(f func(b *budget, what, s string) (string, error)) methodFunc[string] {
	return func(c *strCall) (any, error) {
		if _, err := c.bind(nil, nil); err != nil {
			return nil, err
		}
		return f(c.r.b, c.name, c.recv)
	}
}

// strTest is a str method without arguments that tests each character.
func strTest(f func(string) bool) methodFunc[string] {
	return func(c *strCall) (any, error) {
		if _, err := c.bind(nil, nil); err != nil {
			return nil, err
		}
		if err := c.r.b.workFor(c.name, 4*int64(len(c.recv))); err != nil {
			return nil, err
		}
		return f(c.recv), nil
	}
}

// strMethods are the methods of str that templates may call.
var strMethods = map[string]methodFunc[string]{
	"capitalize":   strConv((*budget).capitalize),
	"center":       strPad,
	"count":        strCount,
	"endswith":     strEndswith,
	"find":         strFind,
	"index":        strIndex,
	"isalnum":      strTest(allRunes(func(c rune) bool { return unicode.IsLetter(c) || unicode.IsNumber(c) })),
	"isalpha":      strTest(allRunes(unicode.IsLetter)),
	"isascii":      strTest(isASCII),
	"isdecimal":    strTest(allRunes(unicode.IsDigit)),
	"isdigit":      strTest(allRunes(unicode.IsDigit)),
	"islower":      strTest(func(s string) bool { return caseTest(s, true) }),
	"isnumeric":    strTest(allRunes(unicode.IsDigit)),
	"isspace":      strTest(allRunes(isPySpace)),
	"isupper":      strTest(func(s string) bool { return caseTest(s, false) }),
	"join":         strJoin,
	"ljust":        strPad,
	"lower":        strConv((*budget).lower),
	"lstrip":       strLStrip,
	"partition":    strPartition,
	"removeprefix": strRemovePrefix,
	"removesuffix": strRemoveSuffix,
	"replace":      strReplace,
	"rfind":        strRFind,
	"rindex":       strRIndex,
	"rjust":        strPad,
	"rpartition":   strRPartition,
	"rsplit":       strRSplit,
	"rstrip":       strRStrip,
	"split":        strSplit,
	"splitlines":   strSplitlines,
	"startswith":   strStartswith,
	"strip":        strStrip,
	"swapcase":     strConv((*budget).swapcase),
	"title":        strConv((*budget).title),
	"upper":        strConv((*budget).upper),
	"zfill":        strZfill,
}

func strStrip(c *strCall) (any, error)  { return stripMethod(c, true, true) }
func strLStrip(c *strCall) (any, error) { return stripMethod(c, true, false) }
func strRStrip(c *strCall) (any, error) { return stripMethod(c, false, true) }

// stripMethod is strip(chars=None) at the left end, the right or both.
func stripMethod(c *strCall, left, right bool) (any, error) {
	a, err := c.bind([]string{"chars"}, []any{nil})
	if err != nil {
		return nil, err
	}
	return c.r.b.strip(c.recv, a[0], left, right)
}

func strStartswith(c *strCall) (any, error) { return affixMethod(c, strings.HasPrefix) }
func strEndswith(c *strCall) (any, error)   { return affixMethod(c, strings.HasSuffix) }

// affixMethod is startswith or endswith(affix, start=None, end=None),
// where affix is a str or a tuple of them.
func affixMethod(c *strCall, has func(s, affix string) bool) (any, error) {
	a, err := c.bind([]string{"prefix", "start", "end"}, []any{missing, nil, nil})
	if err != nil {
		return nil, err
	}
	if err := c.r.b.workFor(c.name, int64(len(c.recv))); err != nil {
		return nil, err
	}
	lo, hi, err := runeRange(c.recv, a[1], a[2])
	if err != nil {
		return nil, err
	}
	sub := c.recv[lo:hi]
	test := func(p any) (bool, error) {
		ps, ok := p.(string)
		if !ok {
			return false, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", c.name, typeName(p))
		}
		return has(sub, ps), nil
	}
	if l, ok := a[0].(*listV); ok && l.tuple {
		for _, p := range l.items {
			if ps, ok := p.(string); ok {
				if err := c.r.b.spendErr(1 + int64(min(len(ps), len(sub)))); err != nil {
					return nil, err
				}
			}
			if ok, err := test(p); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	return test(a[0])
}

func strFind(c *strCall) (any, error)   { return findMethod(c, strings.Index, false) }
func strRFind(c *strCall) (any, error)  { return findMethod(c, strings.LastIndex, false) }
func strIndex(c *strCall) (any, error)  { return findMethod(c, strings.Index, true) }
func strRIndex(c *strCall) (any, error) { return findMethod(c, strings.LastIndex, true) }

// findMethod is find, rfind, index or rindex(sub, start=None, end=None):
// the code point index of sub found by index, or -1 (find) or an error
// (index) when it is absent.
func findMethod(c *strCall, index func(s, sub string) int, raise bool) (any, error) {
	a, err := c.bind([]string{"sub", "start", "end"}, []any{missing, nil, nil})
	if err != nil {
		return nil, err
	}
	sub, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("must be str, not %s", typeName(a[0]))
	}
	if err := c.r.b.workFor(c.name, 2*int64(len(c.recv))); err != nil {
		return nil, err
	}
	lo, hi, err := runeRange(c.recv, a[1], a[2])
	if err != nil {
		return nil, err
	}
	i := index(c.recv[lo:hi], sub)
	switch {
	case i >= 0:
		return int64(utf8.RuneCountInString(c.recv[:lo+i])), nil
	case raise:
		return nil, fmt.Errorf("substring not found")
	}
	return int64(-1), nil
}

func strSplit(c *strCall) (any, error)  { return splitMethod(c, (*budget).split) }
func strRSplit(c *strCall) (any, error) { return splitMethod(c, (*budget).rsplit) }

// splitMethod is split or rsplit(sep=None, maxsplit=-1).
func splitMethod(c *strCall, split func(b *budget, what, s string, sep any, maxsplit int64) (*listV, error)) (any, error) {
	a, err := c.bind([]string{"sep", "maxsplit"}, []any{nil, int64(-1)})
	if err != nil {
		return nil, err
	}
	ms, _, isFloat, ok := number(a[1])
	if !ok || isFloat {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[1]))
	}
	return split(c.r.b, c.name, c.recv, a[0], ms)
}

// strSplitlines is splitlines(keepends=False).
func strSplitlines(c *strCall) (any, error) {
	a, err := c.bind([]string{"keepends"}, []any{false})
	if err != nil {
		return nil, err
	}
	return c.r.b.splitlines(c.name, c.recv, truthy(a[0]))
}

// strReplace is replace(old, new, count=-1).
func strReplace(c *strCall) (any, error) {
	a, err := c.bind([]string{"old", "new", "count"}, []any{missing, missing, int64(-1)})
	if err != nil {
		return nil, err
	}
	old, ok1 := a[0].(string)
	nw, ok2 := a[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("replace() argument must be str")
	}
	n := int64(-1)
	if a[2] != nil {
		var isFloat, ok bool
		if n, _, isFloat, ok = number(a[2]); !ok || isFloat {
			return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[2]))
		}
	}
	return c.r.b.replace(c.name, c.recv, old, nw, n)
}

// strCount is count(sub, start=None, end=None).
func strCount(c *strCall) (any, error) {
	a, err := c.bind([]string{"sub", "start", "end"}, []any{missing, nil, nil})
	if err != nil {
		return nil, err
	}
	sub, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("must be str, not %s", typeName(a[0]))
	}
	if err := c.r.b.workFor(c.name, 2*int64(len(c.recv))); err != nil {
		return nil, err
	}
	lo, hi, err := runeRange(c.recv, a[1], a[2])
	if err != nil {
		return nil, err
	}
	if sub == "" {
		return int64(utf8.RuneCountInString(c.recv[lo:hi]) + 1), nil
	}
	return int64(strings.Count(c.recv[lo:hi], sub)), nil
}

// strJoin is join(iterable): the items, which must be strs, joined by
// the receiver.
func strJoin(c *strCall) (any, error) {
	a, err := c.bind([]string{"iterable"}, []any{missing})
	if err != nil {
		return nil, err
	}
	items, err := c.r.b.seqItems(c.name, a[0])
	if err != nil {
		return nil, err
	}
	if err := c.r.b.takeList(c.name, int64(len(items))); err != nil {
		return nil, err
	}
	parts := make([]string, len(items))
	for i, it := range items {
		p, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
		}
		parts[i] = p
	}
	return c.r.b.join(c.name, parts, c.recv)
}

func strRemovePrefix(c *strCall) (any, error) { return removeMethod(c, strings.TrimPrefix) }
func strRemoveSuffix(c *strCall) (any, error) { return removeMethod(c, strings.TrimSuffix) }

// removeMethod is removeprefix or removesuffix(x).
func removeMethod(c *strCall, trim func(s, x string) string) (any, error) {
	a, err := c.bind([]string{"x"}, []any{missing})
	if err != nil {
		return nil, err
	}
	x, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("%s() argument must be str, not %s", c.name, typeName(a[0]))
	}
	if err := c.r.b.workFor(c.name, int64(len(x))); err != nil {
		return nil, err
	}
	return trim(c.recv, x), nil
}

func strPartition(c *strCall) (any, error)  { return partitionMethod(c, false) }
func strRPartition(c *strCall) (any, error) { return partitionMethod(c, true) }

// partitionMethod is partition or rpartition(sep): the 3-tuple of the
// text before the first (last) sep, sep, and the text after it.
func partitionMethod(c *strCall, last bool) (any, error) {
	a, err := c.bind([]string{"sep"}, []any{missing})
	if err != nil {
		return nil, err
	}
	s := c.recv
	sep, ok := a[0].(string)
	if !ok || sep == "" {
		return nil, fmt.Errorf("%s() needs a non-empty str separator", c.name)
	}
	if err := c.r.b.workFor(c.name, int64(len(s))); err != nil {
		return nil, err
	}
	i := strings.Index(s, sep)
	if last {
		i = strings.LastIndex(s, sep)
	}
	switch {
	case i >= 0:
		return &listV{items: []any{s[:i], sep, s[i+len(sep):]}, tuple: true}, nil
	case last:
		return &listV{items: []any{"", "", s}, tuple: true}, nil
	}
	return &listV{items: []any{s, "", ""}, tuple: true}, nil
}

// strPad is center, ljust or rjust(width, fillchar=' ').
func strPad(c *strCall) (any, error) {
	a, err := c.bind([]string{"width", "fillchar"}, []any{missing, " "})
	if err != nil {
		return nil, err
	}
	w, _, isFloat, ok := number(a[0])
	fill, fok := a[1].(string)
	if !ok || isFloat || !fok || utf8.RuneCountInString(fill) != 1 {
		return nil, fmt.Errorf("%s() takes an integer width and a one-character fill", c.name)
	}
	return c.r.b.pad(c.name, c.recv, w, fill, c.name)
}

// strZfill is zfill(width): zeros on the left, after any sign.
func strZfill(c *strCall) (any, error) {
	a, err := c.bind([]string{"width"}, []any{missing})
	if err != nil {
		return nil, err
	}
	w, _, isFloat, ok := number(a[0])
	if !ok || isFloat {
		return nil, fmt.Errorf("zfill() takes an integer")
	}
	s := c.recv
	if err := c.r.b.workFor(c.name, int64(len(s))); err != nil {
		return nil, err
	}
	n := int64(utf8.RuneCountInString(s))
	if w <= n {
		return s, nil
	}
	size := addSat(int64(len(s)), w-n)
	if err := c.r.b.takeStr(c.name, size); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Grow(int(size))
	if s != "" && (s[0] == '+' || s[0] == '-') {
		b.WriteByte(s[0])
		s = s[1:]
	}
	writeRepeat(&b, "0", w-n)
	b.WriteString(s)
	return b.String(), nil
}

// allRunes is a str predicate such as isdigit: s is not empty and pred
// holds for each of its characters.
func allRunes(pred func(rune) bool) func(string) bool {
	return func(s string) bool {
		if s == "" {
			return false
		}
		for _, c := range s {
			if !pred(c) {
				return false
			}
		}
		return true
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// dictMethods are the methods of dict that templates may call; the
// sandbox refuses unsafeDictMethods.
var dictMethods = map[string]methodFunc[*dictV]{
	"copy":   dictCopy,
	"get":    dictGet,
	"items":  dictItems,
	"keys":   dictList(func(d *dictV) []any { return d.keys }),
	"values": dictList(func(d *dictV) []any { return d.vals }),
}

// dictCopy is copy().
func dictCopy(c *methodCall[*dictV]) (any, error) {
	if _, err := c.bind(nil, nil); err != nil {
		return nil, err
	}
	if err := c.r.b.copyDict(c.name, c.recv); err != nil {
		return nil, err
	}
	return c.recv.copy(), nil
}

// dictItems is items().
func dictItems(c *methodCall[*dictV]) (any, error) {
	if _, err := c.bind(nil, nil); err != nil {
		return nil, err
	}
	return c.r.b.itemPairs(c.name, c.recv)
}

// dictList is keys() or values(): a list of what items gives.
func dictList(items func(d *dictV) []any) methodFunc[*dictV] {
	return func(c *methodCall[*dictV]) (any, error) {
		if _, err := c.bind(nil, nil); err != nil {
			return nil, err
		}
		l := items(c.recv)
		if err := c.r.b.takeList(c.name, int64(len(l))); err != nil {
			return nil, err
		}
		return &listV{items: append([]any(nil), l...)}, nil
	}
}

var unsafeDictMethods = map[string]bool{"clear": true, "pop": true, "popitem": true, "setdefault": true, "update": true}

// dictGet is get(key, default=None).
func dictGet(c *methodCall[*dictV]) (any, error) {
	a, err := c.bind([]string{"key", "default"}, []any{missing, nil})
	if err != nil {
		return nil, err
	}
	if err := c.r.b.workFor(c.name, keyWork(a[0])); err != nil {
		return nil, err
	}
	if v, ok := c.recv.get(a[0]); ok {
		return v, nil
	}
	if _, ok := hashKey(a[0]); !ok {
		return nil, fmt.Errorf("unhashable type: '%s'", typeName(a[0]))
	}
	return a[1], nil
}

// itemPairs is a dict's items as a list of (key, value) tuples, within
// the budget.
func (b *budget) itemPairs(what string, d *dictV) (*listV, error) {
	if err := b.takeItems(what, "list", int64(d.len()), pairBytes); err != nil {
		return nil, err
	}
	return itemPairs(d), nil
}

// itemPairs is a dict's items as a list of (key, value) tuples.
func itemPairs(d *dictV) *listV {
	l := &listV{items: make([]any, d.len())}
	for i, k := range d.keys {
		l.items[i] = &listV{items: []any{k, d.vals[i]}, tuple: true}
	}
	return l
}

// listMethods are the methods of list that templates may call; the
// sandbox refuses unsafeListMethods. Tuples have tupleMethods.
var listMethods = map[string]methodFunc[*listV]{
	"copy":  listCopy,
	"count": listCount,
	"index": listIndex,
}

var tupleMethods = map[string]methodFunc[*listV]{
	"count": listCount,
	"index": listIndex,
}

var unsafeListMethods = map[string]bool{"append": true, "extend": true, "insert": true, "pop": true, "remove": true, "reverse": true, "sort": true, "clear": true}

// listCopy is copy(), which takes any arguments.
func listCopy(c *methodCall[*listV]) (any, error) {
	if err := c.r.b.takeList(c.name, int64(len(c.recv.items))); err != nil {
		return nil, err
	}
	return &listV{items: append([]any(nil), c.recv.items...)}, nil
}

// listCount is count(x): how many items equal x.
func listCount(c *methodCall[*listV]) (any, error) {
	a, err := c.bind([]string{"x"}, []any{missing})
	if err != nil {
		return nil, err
	}
	n := int64(0)
	for _, it := range c.recv.items {
		if pyEqual(c.r.b, it, a[0]) {
			n++
		}
	}
	if err := c.r.b.failed(); err != nil {
		return nil, err
	}
	return n, nil
}

// listIndex is index(x): the index of the first item equal to x.
func listIndex(c *methodCall[*listV]) (any, error) {
	a, err := c.bind([]string{"x"}, []any{missing})
	if err != nil {
		return nil, err
	}
	for i, it := range c.recv.items {
		if pyEqual(c.r.b, it, a[0]) {
			return int64(i), nil
		}
		if err := c.r.b.failed(); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s is not in list", shortRepr(a[0]))
}

// loopAttrs are the attributes of the loop variable. Loops are never
// recursive, so depth is always 1.
var loopAttrs = map[string]func(l *loopV) any{
	"changed":   loopChanged,
	"cycle":     loopCycle,
	"depth":     func(*loopV) any { return int64(1) },
	"depth0":    func(*loopV) any { return int64(0) },
	"first":     func(l *loopV) any { return l.i == 0 },
	"index":     func(l *loopV) any { return int64(l.i + 1) },
	"index0":    func(l *loopV) any { return int64(l.i) },
	"last":      func(l *loopV) any { return l.i == len(l.items)-1 },
	"length":    func(l *loopV) any { return int64(len(l.items)) },
	"nextitem":  loopNextItem,
	"previtem":  loopPrevItem,
	"revindex":  func(l *loopV) any { return int64(len(l.items) - l.i) },
	"revindex0": func(l *loopV) any { return int64(len(l.items) - l.i - 1) },
}

// loopAttr is an attribute of the loop variable.
func loopAttr(l *loopV, name string) any {
	if f, ok := loopAttrs[name]; ok {
		return f(l)
	}
	return &undefV{msg: fmt.Sprintf("'jinja2.runtime.LoopContext object' has no attribute %s", shortRepr(name))}
}

func loopPrevItem(l *loopV) any {
	if l.i > 0 {
		return l.items[l.i-1]
	}
	return &undefV{msg: "there is no previous item"}
}

func loopNextItem(l *loopV) any {
	if l.i < len(l.items)-1 {
		return l.items[l.i+1]
	}
	return &undefV{msg: "there is no next item"}
}

// loopCycle is loop.cycle(*items): the item for this iteration.
func loopCycle(l *loopV) any {
	return method("cycle", func(r *renderer, args []any, kw *dictV) (any, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("no items for cycling given")
		}
		return args[l.i%len(args)], nil
	})
}

// loopChanged is loop.changed(*values): whether the values differ from
// those of the last call.
func loopChanged(l *loopV) any {
	return method("changed", func(r *renderer, args []any, kw *dictV) (any, error) {
		cur := &listV{items: args}
		same := l.hasAny && pyEqual(r.b, l.last, cur)
		if err := r.b.failed(); err != nil {
			return nil, err
		}
		if same {
			return false, nil
		}
		l.last, l.hasAny = cur, true
		return true, nil
	})
}
