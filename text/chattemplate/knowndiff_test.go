package chattemplate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// knownDifference is one of the ways, listed in doc.go, in which
// @huggingface/jinja renders differently from Python Jinja2 (and so from
// this package). The reference tests fail on a difference that none of
// them explains, and on one that no longer shows.
type knownDifference struct {
	name string
	// constructs are the construct cases that show the difference: on
	// each, @huggingface/jinja fails if jsFails, and renders otherwise
	// (Python Jinja2 may fail).
	constructs []string
	jsFails    bool
	// undo, for a difference that the conversation corpus shows, removes
	// from a conversation's variables what makes it show, and reports
	// whether there was any.
	undo func(vars *dictV) bool
}

var knownDifferences = []knownDifference{
	{
		name:       "strip, lstrip and rstrip ignore their argument and strip all whitespace",
		constructs: []string{"string methods strip"},
		undo:       undoStripArgument,
	},
	{
		name: "trim strips JavaScript's whitespace",
		undo: undoTrimWhitespace,
	},
	{
		name: "numbers are JavaScript's: an integral float is an int, and 1.5e-07 is 1.5e-7",
		undo: undoJSNumbers,
	},
	{
		name: "object keys that are array indices come first",
		undo: undoJSKeyOrder,
	},
	{
		name:       "an attribute of an undefined value is undefined, not an error (messages[0].role without messages)",
		constructs: []string{"undefined attribute error"},
		undo:       undoNoMessages,
	},
	{
		name: "none, booleans, lists, tuples and dicts print as \"\", true, false and JSON",
		constructs: []string{
			"print none bool", "print list dict", "string quotes in repr", "repr escapes", "in operator", "and or not",
			"dict method before key", "undefined tests", "is not", "for loop variables", "namespace", "macro varargs kwargs",
			"filter sort", "filter unique", "filter items dictsort", "string methods affix", "dict methods",
		},
	},
	{
		name:       "a variable set in a for loop keeps its value in later iterations",
		constructs: []string{"loop scoping", "loop set does not carry"},
	},
	{
		name:       "arithmetic is JavaScript's: % keeps the dividend's sign, // by zero is Infinity, a str plus a number concatenates",
		constructs: []string{"arithmetic", "division by zero", "type error"},
	},
	{
		name:       "tojson of an undefined value is null",
		constructs: []string{"tojson undefined error"},
	},
	{
		name:       "capitalize keeps the case of the rest",
		constructs: []string{"filter case"},
	},
	{
		name:       "unique is case-sensitive",
		constructs: []string{"filter unique"},
	},
	{
		name:       "int ignores its base",
		constructs: []string{"filter int float"},
	},
	{
		name:       "join ignores its attribute",
		constructs: []string{"filter join"},
	},
	{
		name:       "startswith and endswith ignore their start and end",
		constructs: []string{"string methods affix"},
	},
	{
		name:       "strings are indexed by UTF-16 code unit",
		constructs: []string{"string indexing"},
	},
	{
		name:       "\\r\\n and \\r are not newlines",
		constructs: []string{"crlf newlines"},
	},
	{
		name:       "loop.depth is undefined",
		constructs: []string{"loop depth"},
	},
	{
		name:       "range has no size limit",
		constructs: []string{"range too big"},
	},
	{
		name:       "strftime_now knows only %Y %m %d %b %B %H %M and %%",
		constructs: []string{"strftime_now"},
	},
	{
		name: "syntax it lacks fails: one-item and empty tuples, numbers with _, 0x, 0o, 0b or an exponent, + whitespace control, raw, unknown escapes, test arguments without parentheses",
		constructs: []string{
			"print tuple", "float repr", "numbers", "plus keeps lstrip", "plus keeps trim", "raw", "raw whitespace",
			"unknown escape kept", "percent operator", "tojson numbers", "tojson tuple", "equality types", "value tests",
			"comparison tests",
		},
		jsFails: true,
	},
	{
		name:       "statements it lacks fail: with, block set with a filter",
		constructs: []string{"with", "block set filter"},
		jsFails:    true,
	},
	{
		name: "operations it lacks fail: arithmetic on booleans, < on strs, ~ with none or undefined, * on lists, non-str dict keys, None[0], printing, unpacking and iterating tuples, iterating strs and undefined",
		constructs: []string{
			"bool arithmetic", "comparisons", "chained comparison", "string ops", "concat undefined", "list ops",
			"for unpacking", "for over dict and string", "for else", "none attribute", "tojson keys", "set tuple",
		},
		jsFails: true,
	},
	{
		name: "filters and tests it lacks fail: attr count d escape first float format indent(str) list map(name) max min pprint reject round select string sum trim(chars) truncate wordcount",
		constructs: []string{
			"filter length count", "filter trim", "filter default", "filter first last", "filter list reverse", "filter map",
			"filter select reject", "filter round abs", "filter indent", "filter string safe escape", "filter sum min max",
			"filter wordcount truncate center", "filter format", "filter attr pprint", "type tests",
		},
		jsFails: true,
	},
	{
		name: "methods and functions it lacks fail: most str methods, list methods, loop.cycle, loop.changed, dict, joiner",
		constructs: []string{
			"string methods split", "string methods find", "string methods case", "string methods misc", "string predicates",
			"list methods", "loop cycle", "loop changed", "dict global", "joiner",
		},
		jsFails: true,
	},
}

// TestReferenceHuggingFaceJS checks that @huggingface/jinja renders the
// conversation corpus as Python Jinja2 does, except where known
// differences explain why not: each conversation on which the two differ
// must have what makes some of them show (undo finds it), and without
// it the two must agree. Each of those differences must still show, on
// some conversation without any other.
func TestReferenceHuggingFaceJS(t *testing.T) {
	node, python := needNode(t), needPython(t)
	referenceCorpus(t)
	if corpusRef.js == nil || corpusRef.py == nil {
		t.Fatal("reference renderings missing")
	}
	t.Logf("references: %s, %s", corpusRef.jsImpl, corpusRef.pyImpl)
	type undone struct {
		tmpl, conv string
		diffs      []string
	}
	var retries []undone
	in := refInput{Templates: map[string]string{}}
	alone := map[string]int{}
	for i, rt := range corpusRef.tmpls {
		in.Templates[rt.file.name] = rt.source
		differ := 0
		for j, c := range corpusRef.convs {
			js, py := corpusRef.js[i][j], corpusRef.py[i][j]
			if sameResult(js, py) {
				continue
			}
			differ++
			// The differences whose undo finds something in the
			// conversation, each undo on its own copy, then all of
			// them on vars.
			vars := contextDict(t, rt.tmpl, c.ctx)
			var diffs []string
			for _, d := range knownDifferences {
				if d.undo != nil && d.undo(contextDict(t, rt.tmpl, c.ctx)) {
					diffs = append(diffs, d.name)
					d.undo(vars)
				}
			}
			if len(diffs) == 0 {
				t.Errorf("%s, %s: @huggingface/jinja differs from Python Jinja2 %s, and no known difference explains it", rt.file.name, c.name, describeDiff(js, py))
				continue
			}
			if len(diffs) == 1 {
				alone[diffs[0]]++
			}
			retries = append(retries, undone{rt.file.name, c.name, diffs})
			in.Cases = append(in.Cases, refCase{Template: rt.file.name, Vars: valueJSON(t, vars)})
		}
		t.Logf("%s: @huggingface/jinja equals Python Jinja2 on %d of %d conversations; known differences explain the other %d", rt.file.name, len(corpusRef.convs)-differ, len(corpusRef.convs), differ)
	}
	if len(in.Cases) > 0 {
		js := runReference(t, node, "render.mjs", in)
		py := runReference(t, python, "render.py", in)
		for k, u := range retries {
			if !sameResult(js.Results[k], py.Results[k]) {
				t.Errorf("%s, %s: without what makes %q show, @huggingface/jinja still differs from Python Jinja2 %s", u.tmpl, u.conv, u.diffs, describeDiff(js.Results[k], py.Results[k]))
			}
		}
	}
	for _, d := range knownDifferences {
		if d.undo == nil {
			continue
		}
		if alone[d.name] == 0 {
			t.Errorf("%q: no conversation shows this difference alone any more", d.name)
		} else {
			t.Logf("%q: explains %d conversations alone", d.name, alone[d.name])
		}
	}
}

// TestReferenceConstructsHuggingFaceJS checks that @huggingface/jinja
// renders each construct case as Python Jinja2 does, unless it is listed
// under a known difference, and differently (failing or rendering as the
// difference says) if it is.
func TestReferenceConstructsHuggingFaceJS(t *testing.T) {
	in := constructInput()
	js := runReference(t, needNode(t), "render.mjs", in)
	py := runReference(t, needPython(t), "render.py", in)
	cases := map[string]bool{}
	same := 0
	for i, c := range constructCases {
		cases[c.name] = true
		ds := listedUnder(c.name)
		j, p := js.Results[i], py.Results[i]
		switch {
		case sameResult(j, p) && len(ds) > 0:
			t.Errorf("%s: @huggingface/jinja renders as Python Jinja2 (%s), but %q says it differs", c.name, describeResult(p), ds[0].name)
		case sameResult(j, p):
			same++
		case len(ds) == 0:
			t.Errorf("%s: %q: @huggingface/jinja differs from Python Jinja2, and no known difference lists it:\n    JS %s\nPython %s", c.name, c.src, describeResult(j), describeResult(p))
		}
		for _, d := range ds {
			if d.jsFails != (j.Text == nil) {
				t.Errorf("%s: %q says @huggingface/jinja fails: %v, but it gives %s", c.name, d.name, d.jsFails, describeResult(j))
			}
		}
	}
	for _, d := range knownDifferences {
		for _, name := range d.constructs {
			if !cases[name] {
				t.Errorf("%q lists %q, which is not a construct case", d.name, name)
			}
		}
	}
	t.Logf("%s renders %d of %d constructs as %s; known differences explain the other %d", js.Implementation, same, len(constructCases), py.Implementation, len(constructCases)-same)
}

// listedUnder returns the known differences that list construct name.
func listedUnder(name string) []knownDifference {
	var out []knownDifference
	for _, d := range knownDifferences {
		if slices.Contains(d.constructs, name) {
			out = append(out, d)
		}
	}
	return out
}

// isJSSpace is JavaScript's whitespace (its \s, which
// String.prototype.trim strips).
func isJSSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// undoStripArgument drops from the messages' strings the JavaScript
// whitespace other than "\n" in the runs of whitespace at their ends and
// beside tags such as <think>: there strip('\n') and its like keep it and
// @huggingface/jinja strips it.
func undoStripArgument(vars *dictV) bool {
	return mapMessageStrings(vars, func(s string) string {
		return dropInEdgeRuns(s, isJSSpace, func(r rune) bool { return r != '\n' }, true)
	})
}

// undoTrimWhitespace drops from the ends of the messages' strings the
// characters that are whitespace to one of Python and JavaScript only.
func undoTrimWhitespace(vars *dictV) bool {
	return mapMessageStrings(vars, func(s string) string {
		either := func(r rune) bool { return isPySpace(r) || isJSSpace(r) }
		one := func(r rune) bool { return isPySpace(r) != isJSSpace(r) }
		return dropInEdgeRuns(s, either, one, false)
	})
}

// dropInEdgeRuns drops the characters that drop selects from the runs of
// characters in run that touch an end of s, or, with tags, a "<" or ">".
func dropInEdgeRuns(s string, run, drop func(rune) bool, tags bool) string {
	rs := []rune(s)
	edge := func(i int) bool { return i < 0 || i >= len(rs) || tags && (rs[i] == '<' || rs[i] == '>') }
	var b strings.Builder
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && run(rs[j]) {
			j++
		}
		if j == i {
			b.WriteRune(rs[i])
			i++
			continue
		}
		for _, r := range rs[i:j] {
			if !(edge(i-1) || edge(j)) || !drop(r) {
				b.WriteRune(r)
			}
		}
		i = j
	}
	return b.String()
}

// mapMessageStrings replaces each string s in the messages by f(s) and
// reports whether any changed.
func mapMessageStrings(vars *dictV, f func(string) string) bool {
	msgs, _ := vars.get("messages")
	changed := false
	walkValues(msgs, func(v any) any {
		s, ok := v.(string)
		if !ok {
			return v
		}
		fs := f(s)
		changed = changed || fs != s
		return fs
	})
	return changed
}

// undoJSNumbers makes every float one that Python and JavaScript write
// alike: an int if it is integral, 0.5 if it is written with an exponent.
func undoJSNumbers(vars *dictV) bool {
	changed := false
	walkValues(vars, func(v any) any {
		f, ok := v.(float64)
		switch {
		case !ok:
			return v
		case f == math.Trunc(f) && math.Abs(f) < 1<<63:
			changed = true
			return int64(f)
		case math.Abs(f) < 1e-4 || math.Abs(f) >= 1e16:
			changed = true
			return 0.5
		}
		return v
	})
	return changed
}

// undoJSKeyOrder puts the keys of every dict in the order of a
// JavaScript object's: array indices first, in numeric order.
func undoJSKeyOrder(vars *dictV) bool {
	changed := false
	walkValues(vars, func(v any) any {
		d, ok := v.(*dictV)
		if !ok {
			return v
		}
		keys := slices.Clone(d.keys)
		slices.SortStableFunc(keys, func(a, b any) int {
			i, aIdx := arrayIndex(a)
			j, bIdx := arrayIndex(b)
			switch {
			case aIdx && bIdx:
				return cmp.Compare(i, j)
			case aIdx:
				return -1
			case bIdx:
				return 1
			}
			return 0
		})
		if slices.Equal(keys, d.keys) {
			return v
		}
		changed = true
		out := newDict()
		for _, k := range keys {
			val, _ := d.get(k)
			out.set(k, val)
		}
		return out
	})
	return changed
}

// arrayIndex reports whether k is a string that JavaScript takes for an
// array index, and its value.
func arrayIndex(k any) (uint64, bool) {
	s, ok := k.(string)
	if !ok || s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return n, err == nil && n < math.MaxUint32
}

// undoNoMessages gives a conversation without messages one, so that
// messages[0] is defined.
func undoNoMessages(vars *dictV) bool {
	msgs, _ := vars.get("messages")
	if l, ok := msgs.(*listV); !ok || len(l.items) > 0 {
		return false
	}
	m := newDict()
	m.set("role", "user")
	m.set("content", "")
	vars.set("messages", &listV{items: []any{m}})
	return true
}

// walkValues replaces each value inside v (the items of lists and the
// values of dicts, depth first) by f of it, and then v's own items.
func walkValues(v any, f func(any) any) {
	switch x := v.(type) {
	case *listV:
		for i, it := range x.items {
			walkValues(it, f)
			x.items[i] = f(it)
		}
	case *dictV:
		for i, it := range x.vals {
			walkValues(it, f)
			x.vals[i] = f(it)
		}
	}
}

// TestUndoHelpers checks dropInEdgeRuns and undoJSKeyOrder.
func TestUndoHelpers(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"  a  ", "a"},
		{"\n \u00a0x\n", "\nx\n"},
		{"<think>\n \n</think>\n\n  answer", "<think>\n\n</think>\n\nanswer"},
		{"a b", "a b"},
		{"\u0085a\ufeff", "\u0085a"},
	} {
		if got := dropInEdgeRuns(c.in, isJSSpace, func(r rune) bool { return r != '\n' }, true); got != c.want {
			t.Errorf("dropInEdgeRuns(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	d := newDict()
	for _, k := range []string{"b", "10", "2", "01"} {
		d.set(k, int64(1))
	}
	vars := newDict()
	vars.set("x", d)
	if !undoJSKeyOrder(vars) {
		t.Fatal("keys not reordered")
	}
	x, _ := vars.get("x")
	if got := fmt.Sprint(x.(*dictV).keys); got != "[2 10 b 01]" {
		t.Errorf("keys %s", got)
	}
}

// TestKnownDifferencesTable checks that each known difference is named
// once and shows somewhere: in constructs or in conversations.
func TestKnownDifferencesTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range knownDifferences {
		if seen[d.name] {
			t.Errorf("%q listed twice", d.name)
		}
		seen[d.name] = true
		if len(d.constructs) == 0 && d.undo == nil {
			t.Errorf("%q has neither constructs nor undo", d.name)
		}
	}
}
