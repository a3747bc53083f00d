package chattemplate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

type (
	filterFunc func(r *renderer, v any, args []any, kw *dictV) (any, error)
	testFunc   func(r *renderer, v any, args []any) (bool, error)
)

// missing marks an argument without a default.
type missingT struct{}

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
			j := -1
			for n, name := range names {
				if name == ks {
					j = n
				}
			}
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

// seqItems returns the items of an iterable for filters (a string's
// characters, a dict's keys, nothing for undefined).
func (r *renderer) seqItems(v any) ([]any, error) {
	switch v := v.(type) {
	case *listV:
		return v.items, nil
	case *dictV:
		return v.keys, nil
	case string:
		out := make([]any, 0, len(v))
		for _, c := range v {
			out = append(out, string(c))
		}
		return out, nil
	case *undefV:
		if v.unsafe {
			return nil, undefErr(v, 0)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

func lengthOf(r *renderer, v any) (int64, error) {
	switch v := v.(type) {
	case string:
		return int64(runeLen(v, r.js)), nil
	case *listV:
		return int64(len(v.items)), nil
	case *dictV:
		return int64(v.len()), nil
	case *nsV:
		if r.js {
			return 0, fmt.Errorf("cannot apply filter \"length\" to type: NamespaceValue")
		}
	case *undefV:
		if r.js {
			return 0, fmt.Errorf("cannot apply filter \"length\" to type: UndefinedValue")
		}
		return 0, nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(v))
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

func sortValues(r *renderer, items []any, key func(any) (any, error), reverse bool) ([]any, error) {
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

var upperCaser = cases.Upper(language.Und)
var lowerCaser = cases.Lower(language.Und)

func pyUpper(s string) string { return upperCaser.String(s) }
func pyLower(s string) string { return lowerCaser.String(s) }

// pyCapitalize is str.capitalize: the first character in title case, the
// rest lower.
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToTitle(r)) + pyLower(s[n:])
}

// jinjaTitle is Jinja2's title filter: each word (split at runs of
// whitespace, "-", "(", "{", "[" and "<") gets its first character upper
// and the rest lower.
func jinjaTitle(s string) string {
	var b strings.Builder
	isSep := func(r rune) bool { return isPySpace(r) || strings.ContainsRune("-({[<", r) }
	word := true
	start := 0
	flush := func(end int) {
		if start < end {
			w := s[start:end]
			r, n := utf8.DecodeRuneInString(w)
			b.WriteString(pyUpper(string(r)) + pyLower(w[n:]))
		}
	}
	for i, c := range s {
		if isSep(c) {
			if word {
				flush(i)
				word = false
				start = i
			}
		} else if !word {
			b.WriteString(s[start:i])
			word = true
			start = i
		}
	}
	if word {
		flush(len(s))
	} else {
		b.WriteString(s[start:])
	}
	return b.String()
}

// pyTitle is str.title.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, c := range s {
		cased := unicode.IsUpper(c) || unicode.IsLower(c) || unicode.IsTitle(c)
		switch {
		case cased && !prevCased:
			b.WriteString(string(unicode.ToTitle(c)))
		case cased:
			b.WriteString(pyLower(string(c)))
		default:
			b.WriteRune(c)
		}
		prevCased = cased
	}
	return b.String()
}

// pyStrip is str.strip/lstrip/rstrip; chars nil strips whitespace.
func pyStrip(s string, chars any, left, right bool) (string, error) {
	var cut func(rune) bool
	switch c := chars.(type) {
	case nil:
		cut = isPySpace
	case string:
		cut = func(r rune) bool { return strings.ContainsRune(c, r) }
	default:
		return "", fmt.Errorf("strip arg must be None or str")
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

// jsTrim is String.prototype.trim / trimStart / trimEnd.
func jsTrim(s string, left, right bool) string {
	if left {
		s = strings.TrimLeftFunc(s, isJSSpace)
	}
	if right {
		s = strings.TrimRightFunc(s, isJSSpace)
	}
	return s
}

// pySplit is str.split(sep, maxsplit).
func pySplit(s string, sep any, maxsplit int64) ([]string, error) {
	switch sp := sep.(type) {
	case nil:
		var out []string
		i := 0
		for {
			for i < len(s) {
				r, n := utf8.DecodeRuneInString(s[i:])
				if !isPySpace(r) {
					break
				}
				i += n
			}
			if i >= len(s) {
				return out, nil
			}
			if maxsplit >= 0 && int64(len(out)) >= maxsplit {
				return append(out, s[i:]), nil
			}
			j := i
			for j < len(s) {
				r, n := utf8.DecodeRuneInString(s[j:])
				if isPySpace(r) {
					break
				}
				j += n
			}
			out = append(out, s[i:j])
			i = j
		}
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		n := -1
		if maxsplit >= 0 {
			n = int(maxsplit) + 1
		}
		return strings.SplitN(s, sp, n), nil
	}
	return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
}

// pyRSplit is str.rsplit(sep, maxsplit).
func pyRSplit(s string, sep any, maxsplit int64) ([]string, error) {
	if maxsplit < 0 {
		return pySplit(s, sep, maxsplit)
	}
	switch sp := sep.(type) {
	case nil:
		var out []string
		j := len(s)
		for {
			for j > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:j])
				if !isPySpace(r) {
					break
				}
				j -= n
			}
			if j == 0 {
				break
			}
			if int64(len(out)) >= maxsplit {
				out = append(out, s[:j])
				break
			}
			i := j
			for i > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:i])
				if isPySpace(r) {
					break
				}
				i -= n
			}
			out = append(out, s[i:j])
			j = i
		}
		reverseStrings(out)
		return out, nil
	case string:
		if sp == "" {
			return nil, fmt.Errorf("empty separator")
		}
		var out []string
		for int64(len(out)) < maxsplit {
			i := strings.LastIndex(s, sp)
			if i < 0 {
				break
			}
			out = append(out, s[i+len(sp):])
			s = s[:i]
		}
		out = append(out, s)
		reverseStrings(out)
		return out, nil
	}
	return nil, fmt.Errorf("must be str or None, not %s", typeName(sep))
}

func reverseStrings(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// pySplitlines is str.splitlines(keepends).
func pySplitlines(s string, keep bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end := i + n
			if r == '\r' && end < len(s) && s[end] == '\n' {
				end++
			}
			if keep {
				out = append(out, s[start:end])
			} else {
				out = append(out, s[start:i])
			}
			start = end
			i = end
			continue
		}
		i += n
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func strList(ss []string) *listV {
	l := &listV{items: make([]any, len(ss))}
	for i, s := range ss {
		l.items[i] = s
	}
	return l
}

// pyReplace is str.replace(old, new, count).
func pyReplace(s, old, new string, count int64) string {
	if count < 0 {
		count = -1
	}
	if old == "" {
		// Python inserts new before every character and at the end.
		var b strings.Builder
		n := int64(0)
		for _, c := range s {
			if count >= 0 && n >= count {
				b.WriteRune(c)
				continue
			}
			b.WriteString(new)
			b.WriteRune(c)
			n++
		}
		if count < 0 || n < count {
			b.WriteString(new)
		}
		if s == "" && count != 0 {
			return new
		}
		return b.String()
	}
	return strings.Replace(s, old, new, int(count))
}

// runeIndex converts Python's start/end arguments to byte offsets.
func runeRange(s string, start, end any) (int, int, error) {
	n := utf8.RuneCountInString(s)
	conv := func(v any, def int) (int, error) {
		if v == nil || v == missing {
			return def, nil
		}
		i, _, isFloat, ok := number(v)
		if !ok || isFloat {
			return 0, fmt.Errorf("slice indices must be integers or None")
		}
		if i < 0 {
			i += int64(n)
			if i < 0 {
				i = 0
			}
		}
		if i > int64(n) {
			i = int64(n)
		}
		return int(i), nil
	}
	a, err := conv(start, 0)
	if err != nil {
		return 0, 0, err
	}
	b, err := conv(end, n)
	if err != nil {
		return 0, 0, err
	}
	return runeOffset(s, a), runeOffset(s, max(a, b)), nil
}

func runeOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

func method(name string, fn func(r *renderer, args []any, kw *dictV) (any, error)) *funcV {
	return &funcV{name: name, fn: fn}
}

// strMethod returns the bound str method name, or nil.
func strMethod(r *renderer, s string, name string) *funcV {
	simple := func(f func(string) any) *funcV {
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			if _, err := bind(name, args, kw, nil, nil); err != nil {
				return nil, err
			}
			return f(s), nil
		})
	}
	strip := func(left, right bool) *funcV {
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			if r.js {
				// @huggingface/jinja ignores the argument and strips
				// whitespace.
				return jsTrim(s, left, right), nil
			}
			a, err := bind(name, args, kw, []string{"chars"}, []any{nil})
			if err != nil {
				return nil, err
			}
			return pyStrip(s, a[0], left, right)
		})
	}
	affix := func(end bool) *funcV {
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"prefix", "start", "end"}, []any{missing, nil, nil})
			if err != nil {
				return nil, err
			}
			if r.js {
				a[1], a[2] = nil, nil // @huggingface/jinja ignores start and end
			}
			lo, hi, err := runeRange(s, a[1], a[2])
			if err != nil {
				return nil, err
			}
			sub := s[lo:hi]
			test := func(p any) (bool, error) {
				ps, ok := p.(string)
				if !ok {
					return false, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(p))
				}
				if end {
					return strings.HasSuffix(sub, ps), nil
				}
				return strings.HasPrefix(sub, ps), nil
			}
			if l, ok := a[0].(*listV); ok && (l.tuple || r.js) {
				for _, p := range l.items {
					if ok, err := test(p); err != nil || ok {
						return ok, err
					}
				}
				return false, nil
			}
			return test(a[0])
		})
	}
	find := func(rev, raise bool) *funcV {
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"sub", "start", "end"}, []any{missing, nil, nil})
			if err != nil {
				return nil, err
			}
			sub, ok := a[0].(string)
			if !ok {
				return nil, fmt.Errorf("must be str, not %s", typeName(a[0]))
			}
			lo, hi, err := runeRange(s, a[1], a[2])
			if err != nil {
				return nil, err
			}
			var i int
			if rev {
				i = strings.LastIndex(s[lo:hi], sub)
			} else {
				i = strings.Index(s[lo:hi], sub)
			}
			if i < 0 {
				if raise {
					return nil, fmt.Errorf("substring not found")
				}
				return int64(-1), nil
			}
			return int64(utf8.RuneCountInString(s[:lo+i])), nil
		})
	}
	isAll := func(pred func(rune) bool) *funcV {
		return simple(func(s string) any {
			if s == "" {
				return false
			}
			for _, c := range s {
				if !pred(c) {
					return false
				}
			}
			return true
		})
	}
	switch name {
	case "upper":
		return simple(func(s string) any { return pyUpper(s) })
	case "lower":
		return simple(func(s string) any { return pyLower(s) })
	case "capitalize":
		if r.js {
			return simple(func(s string) any {
				if s == "" {
					return s
				}
				c, n := utf8.DecodeRuneInString(s)
				return pyUpper(string(c)) + s[n:]
			})
		}
		return simple(func(s string) any { return pyCapitalize(s) })
	case "title":
		if r.js {
			return simple(func(s string) any { return jsTitle(s) })
		}
		return simple(func(s string) any { return pyTitle(s) })
	case "swapcase":
		return simple(func(s string) any {
			var b strings.Builder
			for _, c := range s {
				switch {
				case unicode.IsUpper(c):
					b.WriteString(pyLower(string(c)))
				case unicode.IsLower(c):
					b.WriteString(pyUpper(string(c)))
				default:
					b.WriteRune(c)
				}
			}
			return b.String()
		})
	case "strip":
		return strip(true, true)
	case "lstrip":
		return strip(true, false)
	case "rstrip":
		return strip(false, true)
	case "startswith":
		return affix(false)
	case "endswith":
		return affix(true)
	case "find":
		return find(false, false)
	case "rfind":
		return find(true, false)
	case "index":
		return find(false, true)
	case "rindex":
		return find(true, true)
	case "split", "rsplit":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"sep", "maxsplit"}, []any{nil, int64(-1)})
			if err != nil {
				return nil, err
			}
			ms, _, isFloat, ok := number(a[1])
			if !ok || isFloat {
				return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[1]))
			}
			var parts []string
			if name == "split" {
				parts, err = pySplit(s, a[0], ms)
			} else {
				parts, err = pyRSplit(s, a[0], ms)
			}
			if err != nil {
				return nil, err
			}
			return strList(parts), nil
		})
	case "splitlines":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"keepends"}, []any{false})
			if err != nil {
				return nil, err
			}
			return strList(pySplitlines(s, truthy(a[0]))), nil
		})
	case "replace":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"old", "new", "count"}, []any{missing, missing, int64(-1)})
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
			return pyReplace(s, old, nw, n), nil
		})
	case "count":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"sub", "start", "end"}, []any{missing, nil, nil})
			if err != nil {
				return nil, err
			}
			sub, ok := a[0].(string)
			if !ok {
				return nil, fmt.Errorf("must be str, not %s", typeName(a[0]))
			}
			lo, hi, err := runeRange(s, a[1], a[2])
			if err != nil {
				return nil, err
			}
			if sub == "" {
				return int64(utf8.RuneCountInString(s[lo:hi]) + 1), nil
			}
			return int64(strings.Count(s[lo:hi], sub)), nil
		})
	case "join":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"iterable"}, []any{missing})
			if err != nil {
				return nil, err
			}
			items, err := r.seqItems(a[0])
			if err != nil {
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
			return strings.Join(parts, s), nil
		})
	case "removeprefix", "removesuffix":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"x"}, []any{missing})
			if err != nil {
				return nil, err
			}
			x, ok := a[0].(string)
			if !ok {
				return nil, fmt.Errorf("%s() argument must be str, not %s", name, typeName(a[0]))
			}
			if name == "removeprefix" {
				return strings.TrimPrefix(s, x), nil
			}
			return strings.TrimSuffix(s, x), nil
		})
	case "partition", "rpartition":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"sep"}, []any{missing})
			if err != nil {
				return nil, err
			}
			sep, ok := a[0].(string)
			if !ok || sep == "" {
				return nil, fmt.Errorf("%s() needs a non-empty str separator", name)
			}
			var i int
			if name == "partition" {
				i = strings.Index(s, sep)
			} else {
				i = strings.LastIndex(s, sep)
			}
			if i < 0 {
				if name == "partition" {
					return &listV{items: []any{s, "", ""}, tuple: true}, nil
				}
				return &listV{items: []any{"", "", s}, tuple: true}, nil
			}
			return &listV{items: []any{s[:i], sep, s[i+len(sep):]}, tuple: true}, nil
		})
	case "center", "ljust", "rjust":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"width", "fillchar"}, []any{missing, " "})
			if err != nil {
				return nil, err
			}
			w, _, isFloat, ok := number(a[0])
			fill, fok := a[1].(string)
			if !ok || isFloat || !fok || utf8.RuneCountInString(fill) != 1 {
				return nil, fmt.Errorf("%s() takes an integer width and a one-character fill", name)
			}
			return pad(s, int(w), fill, name), nil
		})
	case "zfill":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"width"}, []any{missing})
			if err != nil {
				return nil, err
			}
			w, _, isFloat, ok := number(a[0])
			if !ok || isFloat {
				return nil, fmt.Errorf("zfill() takes an integer")
			}
			n := utf8.RuneCountInString(s)
			if int(w) <= n {
				return s, nil
			}
			sign := ""
			if s != "" && (s[0] == '+' || s[0] == '-') {
				sign, s = s[:1], s[1:]
			}
			return sign + strings.Repeat("0", int(w)-n) + s, nil
		})
	case "isdigit", "isdecimal", "isnumeric":
		return isAll(unicode.IsDigit)
	case "isalpha":
		return isAll(unicode.IsLetter)
	case "isalnum":
		return isAll(func(c rune) bool { return unicode.IsLetter(c) || unicode.IsNumber(c) })
	case "isspace":
		return isAll(isPySpace)
	case "isascii":
		return simple(func(s string) any {
			for i := 0; i < len(s); i++ {
				if s[i] >= 0x80 {
					return false
				}
			}
			return true
		})
	case "islower", "isupper":
		return simple(func(s string) any { return caseTest(s, name == "islower") })
	}
	return nil
}

// caseTest is str.islower (lower true) or str.isupper: at least one cased
// character and none of the other case.
func caseTest(s string, lower bool) bool {
	cased := false
	for _, c := range s {
		if unicode.IsUpper(c) || unicode.IsTitle(c) {
			if lower {
				return false
			}
			cased = true
		} else if unicode.IsLower(c) {
			if !lower {
				return false
			}
			cased = true
		}
	}
	return cased
}

// jsTitle is @huggingface/jinja's title: /\b\w/g upper-cased.
func jsTitle(s string) string {
	var b strings.Builder
	prevWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		w := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if w && !prevWord && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		b.WriteByte(c)
		prevWord = w
	}
	return b.String()
}

func pad(s string, w int, fill, how string) string {
	n := utf8.RuneCountInString(s)
	if w <= n {
		return s
	}
	total := w - n
	left := 0
	switch how {
	case "center":
		left = total / 2
		if total%2 == 1 && w%2 == 1 {
			left++
		}
	case "rjust":
		left = total
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, total-left)
}

var unsafeDictMethods = map[string]bool{"clear": true, "pop": true, "popitem": true, "setdefault": true, "update": true}
var unsafeListMethods = map[string]bool{"append": true, "extend": true, "insert": true, "pop": true, "remove": true, "reverse": true, "sort": true, "clear": true}

func itemPairs(d *dictV) *listV {
	l := &listV{items: make([]any, d.len())}
	for i, k := range d.keys {
		l.items[i] = &listV{items: []any{k, d.vals[i]}, tuple: true}
	}
	return l
}

// dictMethod returns the bound dict method name, or nil.
func dictMethod(r *renderer, d *dictV, name string) *funcV {
	noArgs := func(f func() any) *funcV {
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			if _, err := bind(name, args, kw, nil, nil); err != nil && !r.js {
				return nil, err
			}
			return f(), nil
		})
	}
	switch name {
	case "get":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"key", "default"}, []any{missing, nil})
			if err != nil {
				return nil, err
			}
			if v, ok := d.get(a[0]); ok {
				return v, nil
			}
			if _, ok := hashKey(a[0]); !ok && !r.js {
				return nil, fmt.Errorf("unhashable type: '%s'", typeName(a[0]))
			}
			return a[1], nil
		})
	case "items":
		return noArgs(func() any { return itemPairs(d) })
	case "keys":
		return noArgs(func() any { return &listV{items: append([]any(nil), d.keys...)} })
	case "values":
		return noArgs(func() any { return &listV{items: append([]any(nil), d.vals...)} })
	case "copy":
		if r.js {
			return nil
		}
		return noArgs(func() any { return d.copy() })
	}
	return nil
}

// listMethod returns the bound list method name, or nil.
func listMethod(r *renderer, l *listV, name string) *funcV {
	if r.js {
		return nil
	}
	switch name {
	case "count":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"x"}, []any{missing})
			if err != nil {
				return nil, err
			}
			n := int64(0)
			for _, it := range l.items {
				if pyEqual(it, a[0]) {
					n++
				}
			}
			return n, nil
		})
	case "index":
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			a, err := bind(name, args, kw, []string{"x"}, []any{missing})
			if err != nil {
				return nil, err
			}
			for i, it := range l.items {
				if pyEqual(it, a[0]) {
					return int64(i), nil
				}
			}
			return nil, fmt.Errorf("%s is not in list", pyRepr(a[0]))
		})
	case "copy":
		if l.tuple {
			return nil
		}
		return method(name, func(r *renderer, args []any, kw *dictV) (any, error) {
			return &listV{items: append([]any(nil), l.items...)}, nil
		})
	}
	return nil
}

// loopAttr is an attribute of the loop variable.
func (r *renderer) loopAttr(l *loopV, name string) any {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.i + 1)
	case "index0":
		return int64(l.i)
	case "revindex":
		return int64(n - l.i)
	case "revindex0":
		return int64(n - l.i - 1)
	case "first":
		return l.i == 0
	case "last":
		return l.i == n-1
	case "length":
		return int64(n)
	case "depth", "depth0":
		// Only recursive loops, which are not supported, go deeper.
		if !r.js {
			if name == "depth" {
				return int64(1)
			}
			return int64(0)
		}
	case "previtem":
		if l.i > 0 {
			return l.items[l.i-1]
		}
		return &undefV{msg: "there is no previous item"}
	case "nextitem":
		if l.i < n-1 {
			return l.items[l.i+1]
		}
		return &undefV{msg: "there is no next item"}
	case "cycle":
		if r.js {
			break
		}
		return method("cycle", func(r *renderer, args []any, kw *dictV) (any, error) {
			if len(args) == 0 {
				return nil, fmt.Errorf("no items for cycling given")
			}
			return args[l.i%len(args)], nil
		})
	case "changed":
		if r.js {
			break
		}
		return method("changed", func(r *renderer, args []any, kw *dictV) (any, error) {
			cur := &listV{items: args}
			if l.hasAny && pyEqual(l.last, cur) {
				return false, nil
			}
			l.last, l.hasAny = cur, true
			return true, nil
		})
	}
	return &undefV{msg: fmt.Sprintf("'LoopContext' object has no attribute '%s'", name)}
}

// ---- filters

func num(v any) (float64, bool) {
	_, f, _, ok := number(v)
	return f, ok
}

// pyInt converts as Jinja2's int filter does.
func pyInt(v any, base int64) (int64, bool) {
	switch v := v.(type) {
	case string:
		s := strings.TrimFunc(v, isPySpace)
		t := strings.ReplaceAll(s, "_", "")
		if base == 10 || base == 0 {
			if i, err := strconv.ParseInt(t, 10, 64); err == nil && validUnderscores(s) {
				return i, true
			}
		} else if i, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(t), "0x"), "0b"), int(base), 64); err == nil {
			return i, true
		}
		if f, ok := pyFloatParse(v); ok && !math.IsInf(f, 0) && f == f {
			return int64(f), true
		}
		return 0, false
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case int64:
		return v, true
	case float64:
		if math.IsInf(v, 0) || v != v {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}

func validUnderscores(s string) bool {
	return !strings.HasPrefix(s, "_") && !strings.HasSuffix(s, "_") && !strings.Contains(s, "__")
}

// pyFloatParse is Python's float(str).
func pyFloatParse(s string) (float64, bool) {
	s = strings.TrimFunc(s, isPySpace)
	if !validUnderscores(s) {
		return 0, false
	}
	t := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	switch strings.TrimLeft(t, "+-") {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if strings.ContainsAny(t, "xp") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// roundFloat is Jinja2's round filter.
func roundFloat(v float64, precision int64, how string) (float64, error) {
	switch how {
	case "common":
		if precision == 0 {
			return math.RoundToEven(v), nil
		}
		if math.IsInf(v, 0) || v != v {
			return v, nil
		}
		if precision > 0 {
			f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', int(min(precision, 400)), 64), 64)
			return f, nil
		}
		p := math.Pow(10, float64(-precision))
		return math.RoundToEven(v/p) * p, nil
	case "floor", "ceil":
		p := math.Pow(10, float64(precision))
		if how == "floor" {
			return math.Floor(v*p) / p, nil
		}
		return math.Ceil(v*p) / p, nil
	}
	return 0, fmt.Errorf("method must be common, ceil or floor")
}

// tojsonFilter is transformers' tojson(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), or @huggingface/jinja's.
func tojsonFilter(r *renderer, v any, args []any, kw *dictV) (any, error) {
	o := jsonOptions{js: r.js}
	var a []any
	if r.js {
		// Only keyword arguments count.
		a = []any{false, nil, nil, false}
		if kw != nil {
			for i, name := range []string{"ensure_ascii", "indent", "separators", "sort_keys"} {
				if x, ok := kw.get(name); ok {
					a[i] = x
				}
			}
		}
	} else {
		var err error
		if a, err = bind("tojson", args, kw, []string{"ensure_ascii", "indent", "separators", "sort_keys"}, []any{false, nil, nil, false}); err != nil {
			return nil, err
		}
	}
	o.ensureASCII = truthy(a[0])
	switch ind := a[1].(type) {
	case nil:
	case string:
		if r.js {
			return nil, fmt.Errorf("if set, indent must be a number")
		}
		o.indent, o.hasIndent = ind, true
	case int64, bool:
		n, _, _, _ := number(ind)
		if r.js && n == 0 {
			break
		}
		o.indent, o.hasIndent = strings.Repeat(" ", int(max(0, min(n, 1000)))), true
	default:
		return nil, fmt.Errorf("indent must be an int, a str or None")
	}
	if a[2] != nil {
		l, ok := a[2].(*listV)
		if !ok || len(l.items) != 2 {
			return nil, fmt.Errorf("separators must be a pair of strings")
		}
		s1, ok1 := l.items[0].(string)
		s2, ok2 := l.items[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("separators must be a pair of strings")
		}
		o.itemSep, o.keySep, o.hasSeps = s1, s2, true
	}
	o.sortKeys = truthy(a[3])
	return toJSON(v, o)
}

var filters map[string]filterFunc

func init() {
	one := func(name string, f func(r *renderer, v any) (any, error)) filterFunc {
		return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			if _, err := bind(name, args, kw, nil, nil); err != nil {
				return nil, err
			}
			return f(r, v)
		}
	}
	strFilter := func(name string, f func(string) string) filterFunc {
		return one(name, func(r *renderer, v any) (any, error) { return f(r.str(v)), nil })
	}
	length := one("length", func(r *renderer, v any) (any, error) { return lengthOf(r, v) })
	def := func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		a, err := bind("default", args, kw, []string{"default_value", "boolean"}, []any{"", false})
		if err != nil {
			return nil, err
		}
		if _, ok := v.(*undefV); ok || truthy(a[1]) && !truthy(v) {
			return a[0], nil
		}
		return v, nil
	}
	escape := one("escape", func(r *renderer, v any) (any, error) {
		s := r.str(v)
		s = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
		return s, nil
	})
	filters = map[string]filterFunc{
		"abs": one("abs", func(r *renderer, v any) (any, error) {
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
		}),
		"attr": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("attr", args, kw, []string{"name"}, []any{missing})
			if err != nil {
				return nil, err
			}
			name, ok := a[0].(string)
			if !ok {
				return &undefV{msg: "attribute name must be a string"}, nil
			}
			// Python's getattr only: no item lookup.
			switch x := v.(type) {
			case *dictV:
				if m := dictMethod(r, x, name); m != nil {
					return m, nil
				}
				return missingAttr(x, name), nil
			case *listV, string, *nsV, *loopV:
				return r.getAttr(v, name, 0)
			}
			return missingAttr(v, name), nil
		},
		"capitalize": one("capitalize", func(r *renderer, v any) (any, error) {
			if r.js {
				s := r.str(v)
				if s == "" {
					return s, nil
				}
				c, n := utf8.DecodeRuneInString(s)
				return pyUpper(string(c)) + s[n:], nil
			}
			return pyCapitalize(r.str(v)), nil
		}),
		"center": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("center", args, kw, []string{"width"}, []any{int64(80)})
			if err != nil {
				return nil, err
			}
			w, _, _, ok := number(a[0])
			if !ok {
				return nil, fmt.Errorf("center() width must be an integer")
			}
			return pad(r.str(v), int(w), " ", "center"), nil
		},
		"count":   length,
		"default": def,
		"d":       def,
		"dictsort": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
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
			items, err := sortValues(r, itemPairs(d).items, func(it any) (any, error) {
				return sortKey(it.(*listV).items[pos], truthy(a[0])), nil
			}, truthy(a[2]))
			if err != nil {
				return nil, err
			}
			return &listV{items: items}, nil
		},
		"escape":      escape,
		"e":           escape,
		"forceescape": escape,
		"first": one("first", func(r *renderer, v any) (any, error) {
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return &undefV{msg: "No first item, sequence was empty."}, nil
			}
			return items[0], nil
		}),
		"last": one("last", func(r *renderer, v any) (any, error) {
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return &undefV{msg: "No last item, sequence was empty."}, nil
			}
			return items[len(items)-1], nil
		}),
		"float": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("float", args, kw, []string{"default"}, []any{0.0})
			if err != nil {
				return nil, err
			}
			switch x := v.(type) {
			case string:
				if r.js {
					if f, ok := jsParseNumber(x, false); ok {
						return f, nil
					}
					return a[0], nil
				}
				if f, ok := pyFloatParse(x); ok {
					return f, nil
				}
			case bool, int64, float64:
				f, _ := num(x)
				return f, nil
			}
			return a[0], nil
		},
		"format": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			if len(args) > 0 && kw != nil && kw.len() > 0 {
				return nil, fmt.Errorf("can't handle positional and keyword arguments at the same time")
			}
			var x any = &listV{items: args, tuple: true}
			if kw != nil && kw.len() > 0 {
				x = kw
			}
			return pyPercentFormat(r, r.str(v), x, 0)
		},
		"indent": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("indent", args, kw, []string{"width", "first", "blank"}, []any{int64(4), false, false})
			if err != nil {
				return nil, err
			}
			var ind string
			switch w := a[0].(type) {
			case string:
				ind = w
			default:
				n, _, _, ok := number(w)
				if !ok {
					return nil, fmt.Errorf("indent width must be an int or a str")
				}
				ind = strings.Repeat(" ", int(max(0, min(n, 1000))))
			}
			s := r.str(v)
			var lines []string
			if r.js {
				lines = strings.Split(s, "\n")
			} else {
				lines = pySplitlines(s+"\n", false)
			}
			var out string
			if truthy(a[2]) && !r.js {
				out = strings.Join(lines, "\n"+ind)
			} else {
				for i, ln := range lines {
					if i > 0 {
						out += "\n"
						if ln != "" || truthy(a[2]) {
							out += ind
						}
					}
					out += ln
				}
			}
			if truthy(a[1]) {
				out = ind + out
			}
			return out, nil
		},
		"int": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("int", args, kw, []string{"default", "base"}, []any{int64(0), int64(10)})
			if err != nil {
				return nil, err
			}
			if r.js {
				if s, ok := v.(string); ok {
					f, ok := jsParseNumber(s, true)
					if !ok {
						return a[0], nil
					}
					return floatValue(f, true), nil
				}
			}
			base, _, _, _ := number(a[1])
			if i, ok := pyInt(v, base); ok {
				return i, nil
			}
			return a[0], nil
		},
		"items": one("items", func(r *renderer, v any) (any, error) {
			switch x := v.(type) {
			case *undefV:
				return &listV{}, nil
			case *dictV:
				return itemPairs(x), nil
			}
			return nil, fmt.Errorf("can only get item pairs from a mapping")
		}),
		"join": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("join", args, kw, []string{"d", "attribute"}, []any{"", nil})
			if err != nil {
				return nil, err
			}
			sep, ok := a[0].(string)
			if !ok {
				sep = r.str(a[0])
			}
			items, err := r.seqItems(v)
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
				parts[i] = r.str(it)
			}
			return strings.Join(parts, sep), nil
		},
		"length": length,
		"list": one("list", func(r *renderer, v any) (any, error) {
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			return &listV{items: append([]any(nil), items...)}, nil
		}),
		"lower": strFilter("lower", pyLower),
		"map": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			out := &listV{items: make([]any, 0, len(items))}
			if kw != nil {
				if attr, ok := kw.get("attribute"); ok {
					dflt, hasDefault := kw.get("default")
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
			}
			if len(args) == 0 {
				return nil, fmt.Errorf("map requires a filter argument")
			}
			name, ok := args[0].(string)
			f := filters[name]
			if !ok || f == nil {
				return nil, fmt.Errorf("no filter named %s", pyRepr(args[0]))
			}
			for _, it := range items {
				x, err := f(r, it, args[1:], kw)
				if err != nil {
					return nil, err
				}
				out.items = append(out.items, x)
			}
			return out, nil
		},
		"max":        minMax("max", 1),
		"min":        minMax("min", -1),
		"pprint":     one("pprint", func(r *renderer, v any) (any, error) { return pyRepr(v), nil }),
		"reject":     selectFilter(false, false),
		"rejectattr": selectFilter(false, true),
		"replace": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("replace", args, kw, []string{"old", "new", "count"}, []any{missing, missing, nil})
			if err != nil {
				return nil, err
			}
			n := int64(-1)
			if a[2] != nil {
				n, _, _, _ = number(a[2])
			}
			return pyReplace(r.str(v), r.str(a[0]), r.str(a[1]), n), nil
		},
		"reverse": one("reverse", func(r *renderer, v any) (any, error) {
			if s, ok := v.(string); ok {
				rs := []rune(s)
				for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
					rs[i], rs[j] = rs[j], rs[i]
				}
				return string(rs), nil
			}
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			out := &listV{items: make([]any, len(items))}
			for i, it := range items {
				out.items[len(items)-1-i] = it
			}
			return out, nil
		}),
		"round": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
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
		},
		"safe":       one("safe", func(r *renderer, v any) (any, error) { return v, nil }),
		"select":     selectFilter(true, false),
		"selectattr": selectFilter(true, true),
		"sort": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("sort", args, kw, []string{"reverse", "case_sensitive", "attribute"}, []any{false, false, nil})
			if err != nil {
				return nil, err
			}
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			sorted, err := sortValues(r, items, func(it any) (any, error) {
				if a[2] != nil {
					x, err := r.getAttrPath(it, a[2])
					if err != nil {
						return nil, err
					}
					it = x
				}
				return sortKey(it, truthy(a[1])), nil
			}, truthy(a[0]))
			if err != nil {
				return nil, err
			}
			return &listV{items: sorted}, nil
		},
		"string": one("string", func(r *renderer, v any) (any, error) { return r.str(v), nil }),
		"sum": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("sum", args, kw, []string{"attribute", "start"}, []any{nil, int64(0)})
			if err != nil {
				return nil, err
			}
			items, err := r.seqItems(v)
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
		},
		"title":  strFilter("title", jinjaTitle),
		"tojson": tojsonFilter,
		"trim": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			if r.js {
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("cannot apply filter \"trim\" to type: %s", typeName(v))
				}
				return jsTrim(s, true, true), nil
			}
			a, err := bind("trim", args, kw, []string{"chars"}, []any{nil})
			if err != nil {
				return nil, err
			}
			return pyStrip(r.str(v), a[0], true, true)
		},
		"truncate": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("truncate", args, kw, []string{"length", "killwords", "end", "leeway"}, []any{int64(255), false, "...", int64(5)})
			if err != nil {
				return nil, err
			}
			s := r.str(v)
			n, _, _, _ := number(a[0])
			end := r.str(a[2])
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
		},
		"unique": func(r *renderer, v any, args []any, kw *dictV) (any, error) {
			a, err := bind("unique", args, kw, []string{"case_sensitive", "attribute"}, []any{false, nil})
			if err != nil {
				return nil, err
			}
			items, err := r.seqItems(v)
			if err != nil {
				return nil, err
			}
			out := &listV{}
			var seen []any
			for _, it := range items {
				k := it
				if a[1] != nil {
					if k, err = r.getAttrPath(it, a[1]); err != nil {
						return nil, err
					}
				}
				k = sortKey(k, truthy(a[0]) || r.js)
				dup := false
				for _, s := range seen {
					if pyEqual(s, k) {
						dup = true
						break
					}
				}
				if !dup {
					seen = append(seen, k)
					out.items = append(out.items, it)
				}
			}
			return out, nil
		},
		"upper": strFilter("upper", pyUpper),
		"wordcount": one("wordcount", func(r *renderer, v any) (any, error) {
			n := int64(0)
			in := false
			for _, c := range r.str(v) {
				w := c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.Is(unicode.Mn, c)
				if w && !in {
					n++
				}
				in = w
			}
			return n, nil
		}),
	}
}

func minMax(name string, sign int) filterFunc {
	return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		a, err := bind(name, args, kw, []string{"case_sensitive", "attribute"}, []any{false, nil})
		if err != nil {
			return nil, err
		}
		items, err := r.seqItems(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return &undefV{msg: "No aggregated item, sequence was empty."}, nil
		}
		key := func(it any) (any, error) {
			if a[1] != nil {
				x, err := r.getAttrPath(it, a[1])
				if err != nil {
					return nil, err
				}
				it = x
			}
			return sortKey(it, truthy(a[0])), nil
		}
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

// selectFilter is select, reject, selectattr and rejectattr.
func selectFilter(keep, attr bool) filterFunc {
	return func(r *renderer, v any, args []any, kw *dictV) (any, error) {
		items, err := r.seqItems(v)
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
		var test testFunc
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
			var ok bool
			if test == nil {
				ok = truthy(x)
			} else if ok, err = test(r, x, args); err != nil {
				return nil, err
			}
			if ok == keep {
				out.items = append(out.items, it)
			}
		}
		return out, nil
	}
}

// pyPercentFormat is Python's "fmt % args" for the common conversions
// (%s %r %d %i %f %e %g %x %o %c %%, flags, width, precision; mapping
// keys with a dict argument).
func pyPercentFormat(r *renderer, f string, arg any, line int) (any, error) {
	var vals []any
	var mapping *dictV
	switch a := arg.(type) {
	case *listV:
		if a.tuple {
			vals = a.items
		} else {
			vals = []any{a}
		}
	case *dictV:
		mapping = a
		vals = []any{a}
	default:
		vals = []any{a}
	}
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(f) {
			return nil, fmt.Errorf("incomplete format")
		}
		var val any
		hasVal := false
		if f[i] == '(' {
			j := strings.IndexByte(f[i:], ')')
			if j < 0 || mapping == nil {
				return nil, fmt.Errorf("format requires a mapping")
			}
			v, ok := mapping.get(f[i+1 : i+j])
			if !ok {
				return nil, fmt.Errorf("KeyError: %s", pyRepr(f[i+1:i+j]))
			}
			val, hasVal = v, true
			i += j + 1
		}
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		flags := f[start:i]
		start = i
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			i++
		}
		width := f[start:i]
		prec := ""
		if i < len(f) && f[i] == '.' {
			i++
			start = i
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i++
			}
			prec = "." + f[start:i]
			if prec == "." {
				prec = ".0"
			}
		}
		if i >= len(f) {
			return nil, fmt.Errorf("incomplete format")
		}
		conv := f[i]
		if conv == '%' {
			b.WriteByte('%')
			continue
		}
		if !hasVal {
			if next >= len(vals) {
				return nil, fmt.Errorf("not enough arguments for format string")
			}
			val = vals[next]
			next++
		}
		spec := "%" + flags + width + prec
		switch conv {
		case 's':
			b.WriteString(fmt.Sprintf(strings.ReplaceAll(spec, "#", "")+"s", r.str(val)))
		case 'r', 'a':
			b.WriteString(fmt.Sprintf(strings.ReplaceAll(spec, "#", "")+"s", pyRepr(val)))
		case 'd', 'i', 'u':
			iv, fv, isFloat, ok := number(val)
			if !ok {
				return nil, fmt.Errorf("%%%c format: a real number is required, not %s", conv, typeName(val))
			}
			if isFloat {
				iv = int64(fv)
			}
			b.WriteString(fmt.Sprintf(spec+"d", iv))
		case 'x', 'X', 'o':
			iv, _, isFloat, ok := number(val)
			if !ok || isFloat {
				return nil, fmt.Errorf("%%%c format: an integer is required, not %s", conv, typeName(val))
			}
			b.WriteString(fmt.Sprintf(spec+string(conv), iv))
		case 'f', 'F', 'e', 'E', 'g', 'G':
			fv, ok := num(val)
			if !ok {
				return nil, fmt.Errorf("must be real number, not %s", typeName(val))
			}
			if prec == "" {
				spec += ".6"
			}
			b.WriteString(fmt.Sprintf(spec+string(conv), fv))
		case 'c':
			switch x := val.(type) {
			case string:
				b.WriteString(x)
			default:
				iv, _, _, _ := number(x)
				b.WriteRune(rune(iv))
			}
		default:
			return nil, fmt.Errorf("unsupported format character '%c'", conv)
		}
	}
	if mapping == nil && next < len(vals) {
		return nil, fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// ---- tests

var tests map[string]testFunc

func init() {
	is := func(f func(v any) bool) testFunc {
		return func(r *renderer, v any, args []any) (bool, error) { return f(v), nil }
	}
	arg := func(name string, f func(r *renderer, v, a any) (bool, error)) testFunc {
		return func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("test %s takes one argument", name)
			}
			return f(r, v, args[0])
		}
	}
	cmp := func(op string) testFunc {
		return arg(op, func(r *renderer, v, a any) (bool, error) { return r.compare(op, v, a, 0) })
	}
	intOf := func(name string, v any) (int64, error) {
		i, _, isFloat, ok := number(v)
		if !ok || isFloat {
			if f, ok := v.(float64); ok {
				return int64(f), nil
			}
			if u, ok := v.(*undefV); ok {
				return 0, undefErr(u, 0)
			}
			return 0, fmt.Errorf("unsupported operand type for %s: '%s'", name, typeName(v))
		}
		return i, nil
	}
	tests = map[string]testFunc{
		"boolean":  is(func(v any) bool { _, ok := v.(bool); return ok }),
		"callable": is(func(v any) bool { _, f := v.(*funcV); _, m := v.(*macroV); _, u := v.(*undefV); return f || m || u }),
		"defined":  is(func(v any) bool { _, u := v.(*undefV); return !u }),
		"undefined": is(func(v any) bool {
			_, u := v.(*undefV)
			return u
		}),
		"divisibleby": arg("divisibleby", func(r *renderer, v, a any) (bool, error) {
			m, err := r.binary("%", v, a, 0)
			if err != nil {
				return false, err
			}
			return pyEqual(m, int64(0)), nil
		}),
		"eq":          cmp("=="),
		"equalto":     cmp("=="),
		"==":          cmp("=="),
		"ne":          cmp("!="),
		"!=":          cmp("!="),
		"lt":          cmp("<"),
		"lessthan":    cmp("<"),
		"<":           cmp("<"),
		"le":          cmp("<="),
		"<=":          cmp("<="),
		"gt":          cmp(">"),
		"greaterthan": cmp(">"),
		">":           cmp(">"),
		"ge":          cmp(">="),
		">=":          cmp(">="),
		"escaped":     is(func(v any) bool { return false }),
		"even": func(r *renderer, v any, args []any) (bool, error) {
			i, err := intOf("%", v)
			return i%2 == 0, err
		},
		"odd": func(r *renderer, v any, args []any) (bool, error) {
			i, err := intOf("%", v)
			return i%2 != 0, err
		},
		"false": is(func(v any) bool { b, ok := v.(bool); return ok && !b }),
		"true":  is(func(v any) bool { b, ok := v.(bool); return ok && b }),
		"filter": is(func(v any) bool {
			s, ok := v.(string)
			_, known := filters[s]
			return ok && known
		}),
		"test": is(func(v any) bool {
			s, ok := v.(string)
			_, known := tests[s]
			return ok && known
		}),
		"float":   is(func(v any) bool { _, ok := v.(float64); return ok }),
		"integer": is(func(v any) bool { _, ok := v.(int64); return ok }),
		"number": is(func(v any) bool {
			_, _, _, ok := number(v)
			return ok
		}),
		"in": arg("in", func(r *renderer, v, a any) (bool, error) { return r.contains(a, v, 0) }),
		"iterable": func(r *renderer, v any, args []any) (bool, error) {
			switch v.(type) {
			case string, *listV:
				return true, nil
			case *dictV, *undefV:
				return !r.js, nil
			}
			return false, nil
		},
		"lower": func(r *renderer, v any, args []any) (bool, error) {
			if r.js {
				s, ok := v.(string)
				return ok && s == pyLower(s), nil
			}
			return caseTest(r.str(v), true), nil
		},
		"upper": func(r *renderer, v any, args []any) (bool, error) {
			if r.js {
				s, ok := v.(string)
				return ok && s == pyUpper(s), nil
			}
			return caseTest(r.str(v), false), nil
		},
		"mapping": is(func(v any) bool { _, ok := v.(*dictV); return ok }),
		"none":    is(func(v any) bool { return v == nil }),
		"sameas": arg("sameas", func(r *renderer, v, a any) (bool, error) {
			switch x := v.(type) {
			case *listV, *dictV, *nsV, *funcV, *macroV, *loopV, *undefV:
				return v == a, nil
			case float64:
				y, ok := a.(float64)
				return ok && x == y, nil
			}
			return v == a, nil
		}),
		"sequence": func(r *renderer, v any, args []any) (bool, error) {
			switch v.(type) {
			case string, *listV, *dictV:
				return true, nil
			case *undefV:
				return !r.js, nil
			}
			return false, nil
		},
		"string": is(func(v any) bool { _, ok := v.(string); return ok }),
	}
}

// jsParseNumber is JavaScript's parseInt(s, 10) (integer) or parseFloat:
// the longest numeric prefix after leading whitespace.
func jsParseNumber(s string, integer bool) (float64, bool) {
	s = strings.TrimLeftFunc(s, isJSSpace)
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if !integer && strings.HasPrefix(s[i:], "Infinity") {
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	n := digits()
	if !integer {
		if i < len(s) && s[i] == '.' {
			i++
			n += digits()
		}
		if n > 0 && i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			j := i
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '-') {
				i++
			}
			if digits() == 0 {
				i = j
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	f, _ := strconv.ParseFloat(strings.TrimSuffix(s[:i], "."), 64)
	if integer {
		f = math.Trunc(f)
	}
	return f, true
}
