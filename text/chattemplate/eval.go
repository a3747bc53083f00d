package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// maxOutput bounds a rendering's size, and maxSteps the work it may do,
// so that no template can run away with memory or time.
const (
	maxOutput    = 64 << 20
	maxCallDepth = 200
)

// maxSteps bounds the statements and expressions one rendering
// evaluates (a variable so that the fuzz tests can lower it).
var maxSteps = 10_000_000

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

// scope is one level of variables.
type scope struct {
	vars   map[string]any
	parent *scope
}

func newScope(parent *scope) *scope { return &scope{vars: map[string]any{}, parent: parent} }

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

// renderer holds the state of one rendering.
type renderer struct {
	js        bool
	globals   map[string]any
	now       func() time.Time
	steps     int
	outLen    int
	callDepth int
}

// macroV is a macro bound to the scope it was defined in.
type macroV struct {
	n       *macroNode
	s       *scope
	varargs bool // the body reads varargs / kwargs / caller
	kwargs  bool
	caller  bool
}

func (r *renderer) rtErr(line int, format string, args ...any) error {
	return newError(KindRuntime, line, format, args...)
}

// wrap gives an error without a line the line of the node.
func wrap(err error, line int) error {
	if err == nil || err == errBreak || err == errContinue {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Line == 0 {
			e.Line = line
		}
		return e
	}
	return newError(KindRuntime, line, "%s", err.Error())
}

func (r *renderer) step(line int) error {
	r.steps++
	if r.steps > maxSteps {
		return r.rtErr(line, "template took too many steps")
	}
	return nil
}

func (r *renderer) write(w *strings.Builder, s string, line int) error {
	r.outLen += len(s)
	if r.outLen > maxOutput {
		return r.rtErr(line, "output larger than %d bytes", maxOutput)
	}
	w.WriteString(s)
	return nil
}

// str prints a value as the dialect does.
func (r *renderer) str(v any) string {
	if r.js {
		return jsStr(v)
	}
	return pyStr(v)
}

func (r *renderer) exec(body []node, s *scope, w *strings.Builder) error {
	for _, n := range body {
		if err := r.execNode(n, s, w); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) execNode(n node, s *scope, w *strings.Builder) error {
	if err := r.step(n.nodeLine()); err != nil {
		return err
	}
	switch n := n.(type) {
	case textNode:
		return r.write(w, n.text, 0)
	case *outputNode:
		v, err := r.eval(n.e, s)
		if err != nil {
			return err
		}
		return r.write(w, r.str(v), n.line)
	case *ifNode:
		c, err := r.eval(n.cond, s)
		if err != nil {
			return err
		}
		if truthy(c) {
			return r.exec(n.body, s, w)
		}
		return r.exec(n.elseBody, s, w)
	case *forNode:
		return r.execFor(n, s, w)
	case *setNode:
		return r.execSet(n, s)
	case *macroNode:
		s.vars[n.name] = r.newMacro(n, s)
		return nil
	case *callBlockNode:
		caller := r.newMacro(n.caller, s)
		v, err := r.evalCall(n.call, s, caller)
		if err != nil {
			return err
		}
		return r.write(w, r.str(v), n.line)
	case *filterBlockNode:
		var b strings.Builder
		if err := r.exec(n.body, newScope(s), &b); err != nil {
			return err
		}
		v, err := r.applyFilterChain(n.filter, b.String(), s)
		if err != nil {
			return err
		}
		return r.write(w, r.str(v), n.line)
	case *withNode:
		inner := newScope(s)
		for i, t := range n.targets {
			v, err := r.eval(n.values[i], s)
			if err != nil {
				return err
			}
			if err := r.assign(t, v, inner, n.line); err != nil {
				return err
			}
		}
		return r.exec(n.body, inner, w)
	case *loopControlNode:
		if n.brk {
			return errBreak
		}
		return errContinue
	}
	return fmt.Errorf("unknown node %T", n)
}

func (r *renderer) newMacro(n *macroNode, s *scope) *macroV {
	m := &macroV{n: n, s: s}
	walkNames(n.body, func(name string) {
		switch name {
		case "varargs":
			m.varargs = true
		case "kwargs":
			m.kwargs = true
		case "caller":
			m.caller = true
		}
	})
	return m
}

// iterate returns the items a for loop (or list()) visits.
func (r *renderer) iterate(v any, line int) ([]any, error) {
	switch v := v.(type) {
	case *listV:
		return v.items, nil
	case *dictV:
		return v.keys, nil
	case string:
		if r.js {
			return nil, r.rtErr(line, "Expected iterable or object type in for loop: got StringValue")
		}
		items := make([]any, 0, len(v))
		for _, c := range v {
			items = append(items, string(c))
		}
		return items, nil
	case *undefV:
		if r.js {
			return nil, r.rtErr(line, "Expected iterable or object type in for loop: got UndefinedValue")
		}
		if v.unsafe {
			return nil, r.rtErr(line, "%s", v.msg)
		}
		return nil, nil
	}
	return nil, r.rtErr(line, "'%s' object is not iterable", typeName(v))
}

func (r *renderer) execFor(n *forNode, s *scope, w *strings.Builder) error {
	iv, err := r.eval(n.iter, s)
	if err != nil {
		return err
	}
	items, err := r.iterate(iv, n.line)
	if err != nil {
		return err
	}
	if n.filter != nil {
		var kept []any
		for _, it := range items {
			fs := newScope(s)
			if err := r.assign(n.target, it, fs, n.line); err != nil {
				return err
			}
			c, err := r.eval(n.filter, fs)
			if err != nil {
				return err
			}
			if truthy(c) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	loop := &loopV{items: items}
	loopScope := newScope(s)
	iterated := false
	for i, it := range items {
		if err := r.step(n.line); err != nil {
			return err
		}
		loop.i = i
		is := loopScope
		if !r.js {
			is = newScope(loopScope) // Jinja2: assignments last one iteration
		}
		is.vars["loop"] = loop
		if err := r.assign(n.target, it, is, n.line); err != nil {
			return err
		}
		if !r.js {
			iterated = true
		}
		err := r.exec(n.body, is, w)
		if err == errBreak {
			break
		}
		if err == errContinue {
			continue
		}
		if err != nil {
			return err
		}
		iterated = true
	}
	if !iterated {
		return r.exec(n.elseBody, loopScope, w)
	}
	return nil
}

// assign binds target (a name or a tuple of names) to v in s.
func (r *renderer) assign(target expr, v any, s *scope, line int) error {
	switch t := target.(type) {
	case *nameExpr:
		s.vars[t.name] = v
		return nil
	case *tupleExpr:
		var items []any
		switch v := v.(type) {
		case *listV:
			items = v.items
		case *dictV:
			if r.js {
				return r.rtErr(line, "Cannot unpack non-iterable type: ObjectValue")
			}
			items = v.keys
		case string:
			if r.js {
				return r.rtErr(line, "Cannot unpack non-iterable type: StringValue")
			}
			for _, c := range v {
				items = append(items, string(c))
			}
		default:
			return r.rtErr(line, "cannot unpack non-iterable %s object", typeName(v))
		}
		if len(items) != len(t.items) {
			if len(items) < len(t.items) {
				return r.rtErr(line, "not enough values to unpack (expected %d, got %d)", len(t.items), len(items))
			}
			return r.rtErr(line, "too many values to unpack (expected %d)", len(t.items))
		}
		for i, it := range t.items {
			if err := r.assign(it, items[i], s, line); err != nil {
				return err
			}
		}
		return nil
	}
	return r.rtErr(line, "can't assign to this target")
}

func (r *renderer) execSet(n *setNode, s *scope) error {
	var v any
	if n.value != nil {
		var err error
		if v, err = r.eval(n.value, s); err != nil {
			return err
		}
	} else {
		var b strings.Builder
		if err := r.exec(n.body, newScope(s), &b); err != nil {
			return err
		}
		v = b.String()
		if n.filter != nil {
			var err error
			if v, err = r.applyFilterChain(n.filter, v, s); err != nil {
				return err
			}
		}
	}
	if a, ok := n.target.(*attrExpr); ok {
		obj, err := r.eval(a.x, s)
		if err != nil {
			return err
		}
		ns, ok := obj.(*nsV)
		if !ok {
			return r.rtErr(n.line, "cannot assign attribute on non-namespace object")
		}
		ns.d.set(a.name, v)
		return nil
	}
	return r.assign(n.target, v, s, n.line)
}

// walkNames calls f with every name an expression in body reads.
func walkNames(body []node, f func(string)) {
	var we func(e expr)
	var wn func(ns []node)
	we = func(e expr) {
		switch e := e.(type) {
		case nil:
		case *nameExpr:
			f(e.name)
		case *listExpr:
			for _, x := range e.items {
				we(x)
			}
		case *tupleExpr:
			for _, x := range e.items {
				we(x)
			}
		case *dictExpr:
			for i := range e.keys {
				we(e.keys[i])
				we(e.vals[i])
			}
		case *attrExpr:
			we(e.x)
		case *itemExpr:
			we(e.x)
			we(e.key)
		case *sliceExpr:
			we(e.x)
			we(e.lo)
			we(e.hi)
			we(e.step)
		case *callExpr:
			we(e.fn)
			for _, x := range e.args {
				we(x)
			}
			for _, x := range e.kwVals {
				we(x)
			}
			we(e.star)
			we(e.dstar)
		case *filterExpr:
			we(e.x)
			if e.call != nil {
				we(e.call)
			}
		case *testExpr:
			we(e.x)
			for _, x := range e.args {
				we(x)
			}
		case *unaryExpr:
			we(e.x)
		case *binExpr:
			we(e.l)
			we(e.r)
		case *compareExpr:
			we(e.first)
			for _, x := range e.rest {
				we(x)
			}
		case *condExpr:
			we(e.cond)
			we(e.yes)
			we(e.no)
		}
	}
	wn = func(ns []node) {
		for _, n := range ns {
			switch n := n.(type) {
			case *outputNode:
				we(n.e)
			case *ifNode:
				we(n.cond)
				wn(n.body)
				wn(n.elseBody)
			case *forNode:
				we(n.iter)
				we(n.filter)
				wn(n.body)
				wn(n.elseBody)
			case *setNode:
				we(n.value)
				if n.filter != nil {
					we(n.filter)
				}
				wn(n.body)
			case *callBlockNode:
				we(n.call)
			case *filterBlockNode:
				we(n.filter)
				wn(n.body)
			case *withNode:
				for _, v := range n.values {
					we(v)
				}
				wn(n.body)
			}
		}
	}
	wn(body)
}

// ---- expressions

func (r *renderer) eval(e expr, s *scope) (any, error) {
	v, err := r.eval1(e, s)
	if err != nil {
		return nil, wrap(err, e.exprLine())
	}
	return v, nil
}

func (r *renderer) eval1(e expr, s *scope) (any, error) {
	if err := r.step(e.exprLine()); err != nil {
		return nil, err
	}
	switch e := e.(type) {
	case *constExpr:
		return e.v, nil
	case *nameExpr:
		if v, ok := s.lookup(e.name); ok {
			return v, nil
		}
		if v, ok := r.globals[e.name]; ok {
			return v, nil
		}
		return &undefV{msg: fmt.Sprintf("'%s' is undefined", e.name)}, nil
	case *listExpr:
		l := &listV{items: make([]any, 0, len(e.items))}
		for _, x := range e.items {
			v, err := r.eval(x, s)
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, v)
		}
		return l, nil
	case *tupleExpr:
		l := &listV{items: make([]any, 0, len(e.items)), tuple: true}
		for _, x := range e.items {
			v, err := r.eval(x, s)
			if err != nil {
				return nil, err
			}
			l.items = append(l.items, v)
		}
		return l, nil
	case *dictExpr:
		d := newDict()
		for i := range e.keys {
			k, err := r.eval(e.keys[i], s)
			if err != nil {
				return nil, err
			}
			if r.js {
				if _, ok := k.(string); !ok {
					return nil, r.rtErr(e.line, "Object keys must be strings: got %s", typeName(k))
				}
			}
			v, err := r.eval(e.vals[i], s)
			if err != nil {
				return nil, err
			}
			if !d.set(k, v) {
				return nil, r.rtErr(e.line, "unhashable type: '%s'", typeName(k))
			}
		}
		return d, nil
	case *attrExpr:
		x, err := r.eval(e.x, s)
		if err != nil {
			return nil, err
		}
		return r.getAttr(x, e.name, e.line)
	case *itemExpr:
		x, err := r.eval(e.x, s)
		if err != nil {
			return nil, err
		}
		k, err := r.eval(e.key, s)
		if err != nil {
			return nil, err
		}
		return r.getItem(x, k, e.line)
	case *sliceExpr:
		return r.evalSlice(e, s)
	case *callExpr:
		return r.evalCall(e, s, nil)
	case *filterExpr:
		var x any
		if e.x != nil {
			var err error
			if x, err = r.eval(e.x, s); err != nil {
				return nil, err
			}
		}
		return r.applyFilter(e, x, s)
	case *testExpr:
		x, err := r.eval(e.x, s)
		if err != nil {
			return nil, err
		}
		args := make([]any, len(e.args))
		for i, a := range e.args {
			if args[i], err = r.eval(a, s); err != nil {
				return nil, err
			}
		}
		ok, err := tests[e.name](r, x, args)
		if err != nil {
			return nil, wrap(err, e.line)
		}
		return ok != e.negate, nil
	case *unaryExpr:
		x, err := r.eval(e.x, s)
		if err != nil {
			return nil, err
		}
		return r.unary(e.op, x, e.line)
	case *binExpr:
		l, err := r.eval(e.l, s)
		if err != nil {
			return nil, err
		}
		switch e.op {
		case "and":
			if !truthy(l) {
				return l, nil
			}
			return r.eval(e.r, s)
		case "or":
			if truthy(l) {
				return l, nil
			}
			return r.eval(e.r, s)
		}
		rv, err := r.eval(e.r, s)
		if err != nil {
			return nil, err
		}
		return r.binary(e.op, l, rv, e.line)
	case *compareExpr:
		l, err := r.eval(e.first, s)
		if err != nil {
			return nil, err
		}
		for i, op := range e.ops {
			rv, err := r.eval(e.rest[i], s)
			if err != nil {
				return nil, err
			}
			ok, err := r.compare(op, l, rv, e.line)
			if err != nil {
				return nil, err
			}
			if !ok {
				return false, nil
			}
			l = rv
		}
		return true, nil
	case *condExpr:
		c, err := r.eval(e.cond, s)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return r.eval(e.yes, s)
		}
		if e.no == nil {
			return &undefV{msg: "the inline if-expression evaluated to false and no else section was defined."}, nil
		}
		return r.eval(e.no, s)
	}
	return nil, fmt.Errorf("unknown expression %T", e)
}

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

func missingAttr(x any, name string) *undefV {
	return &undefV{msg: fmt.Sprintf("'%s' has no attribute '%s'", objectRepr(x), name)}
}

// getAttr is Jinja2's sandboxed x.name: a Python attribute (a method)
// first, then the item x[name]. HFJS looks up the item first.
func (r *renderer) getAttr(x any, name string, line int) (any, error) {
	if u, ok := x.(*undefV); ok {
		if r.js {
			return &undefV{msg: u.msg}, nil
		}
		return nil, undefErr(u, line)
	}
	if strings.HasPrefix(name, "_") && !r.js {
		if d, ok := x.(*dictV); ok && !strings.HasPrefix(name, "__") {
			if v, ok := d.get(name); ok {
				return v, nil
			}
		}
		return &undefV{msg: fmt.Sprintf("access to attribute '%s' of '%s' object is unsafe.", name, typeName(x)), unsafe: true}, nil
	}
	switch x := x.(type) {
	case *dictV:
		if r.js {
			if v, ok := x.get(name); ok {
				return v, nil
			}
			if m := dictMethod(r, x, name); m != nil {
				return m, nil
			}
			return &undefV{msg: "undefined"}, nil
		}
		if m := dictMethod(r, x, name); m != nil {
			return m, nil
		}
		if unsafeDictMethods[name] {
			return &undefV{msg: fmt.Sprintf("access to attribute '%s' of 'dict' object is unsafe.", name), unsafe: true}, nil
		}
		if v, ok := x.get(name); ok {
			return v, nil
		}
		return missingAttr(x, name), nil
	case *nsV:
		if v, ok := x.d.get(name); ok {
			return v, nil
		}
		return &undefV{msg: fmt.Sprintf("'Namespace' object has no attribute '%s'", name)}, nil
	case string:
		if r.js && name == "length" {
			return int64(runeLen(x, true)), nil
		}
		if m := strMethod(r, x, name); m != nil {
			return m, nil
		}
		return missingAttr(x, name), nil
	case *listV:
		if r.js && name == "length" {
			return int64(len(x.items)), nil
		}
		if m := listMethod(r, x, name); m != nil {
			return m, nil
		}
		if unsafeListMethods[name] && !x.tuple {
			return &undefV{msg: fmt.Sprintf("access to attribute '%s' of 'list' object is unsafe.", name), unsafe: true}, nil
		}
		return missingAttr(x, name), nil
	case *loopV:
		return r.loopAttr(x, name), nil
	case nil:
		if r.js {
			return &undefV{msg: "undefined"}, nil
		}
		return missingAttr(x, name), nil
	}
	return missingAttr(x, name), nil
}

// getItem is Jinja2's sandboxed x[key]: the item, else (for a string key)
// the attribute, else undefined.
func (r *renderer) getItem(x, key any, line int) (any, error) {
	if u, ok := x.(*undefV); ok {
		if r.js {
			return &undefV{msg: u.msg}, nil
		}
		return nil, undefErr(u, line)
	}
	if _, ok := key.(*undefV); ok && r.js {
		return nil, r.rtErr(line, "Cannot access property with non-string: got UndefinedValue")
	}
	switch xv := x.(type) {
	case *dictV:
		if v, ok := xv.get(key); ok {
			return v, nil
		}
	case *listV:
		if i, _, isFloat, ok := number(key); ok && !isFloat {
			if i < 0 {
				i += int64(len(xv.items))
			}
			if i >= 0 && i < int64(len(xv.items)) {
				return xv.items[i], nil
			}
			return &undefV{msg: fmt.Sprintf("'%s' has no element %s", objectRepr(x), pyRepr(key))}, nil
		}
	case string:
		if i, _, isFloat, ok := number(key); ok && !isFloat {
			n := int64(utf8.RuneCountInString(xv))
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				for _, c := range xv {
					if i == 0 {
						return string(c), nil
					}
					i--
				}
			}
			return &undefV{msg: fmt.Sprintf("'%s' has no element %s", objectRepr(x), pyRepr(key))}, nil
		}
	}
	if k, ok := key.(string); ok {
		return r.getAttr(x, k, line)
	}
	return &undefV{msg: fmt.Sprintf("'%s' has no element %s", objectRepr(x), pyRepr(key))}, nil
}

func (r *renderer) evalSlice(e *sliceExpr, s *scope) (any, error) {
	x, err := r.eval(e.x, s)
	if err != nil {
		return nil, err
	}
	if u, ok := x.(*undefV); ok {
		if r.js {
			return nil, r.rtErr(e.line, "Slice object must be an array or string")
		}
		return nil, undefErr(u, e.line)
	}
	var idx [3]*int64
	for i, p := range []expr{e.lo, e.hi, e.step} {
		if p == nil {
			continue
		}
		v, err := r.eval(p, s)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		n, _, isFloat, ok := number(v)
		if !ok || isFloat {
			if u, ok := v.(*undefV); ok && !r.js {
				return nil, undefErr(u, e.line)
			}
			return nil, r.rtErr(e.line, "slice indices must be integers or None")
		}
		idx[i] = &n
	}
	var n int
	switch x := x.(type) {
	case *listV:
		n = len(x.items)
	case string:
		n = utf8.RuneCountInString(x)
	default:
		if r.js {
			return nil, r.rtErr(e.line, "Slice object must be an array or string")
		}
		return &undefV{msg: fmt.Sprintf("'%s' object is not subscriptable", typeName(x))}, nil
	}
	picks, err := sliceIndices(n, idx[0], idx[1], idx[2])
	if err != nil {
		return nil, r.rtErr(e.line, "%s", err.Error())
	}
	switch x := x.(type) {
	case *listV:
		out := &listV{items: make([]any, len(picks)), tuple: x.tuple}
		for i, p := range picks {
			out.items[i] = x.items[p]
		}
		return out, nil
	case string:
		runes := []rune(x)
		var b strings.Builder
		for _, p := range picks {
			b.WriteRune(runes[p])
		}
		return b.String(), nil
	}
	return nil, nil
}

// sliceIndices is Python's slice.indices: the indices x[lo:hi:step]
// visits in a sequence of length n.
func sliceIndices(n int, lo, hi, step *int64) ([]int, error) {
	st := int64(1)
	if step != nil {
		st = *step
	}
	if st == 0 {
		return nil, errors.New("slice step cannot be zero")
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
	var out []int
	for i := start; (st > 0 && i < stop) || (st < 0 && i > stop); i += st {
		out = append(out, int(i))
	}
	return out, nil
}

// args evaluates call arguments.
func (r *renderer) args(c *callExpr, s *scope) ([]any, *dictV, error) {
	var pos []any
	for _, a := range c.args {
		v, err := r.eval(a, s)
		if err != nil {
			return nil, nil, err
		}
		pos = append(pos, v)
	}
	if c.star != nil {
		v, err := r.eval(c.star, s)
		if err != nil {
			return nil, nil, err
		}
		items, err := r.iterate(v, c.line)
		if err != nil {
			return nil, nil, err
		}
		pos = append(pos, items...)
	}
	var kw *dictV
	if len(c.kwNames) > 0 || c.dstar != nil {
		kw = newDict()
	}
	for i, k := range c.kwNames {
		v, err := r.eval(c.kwVals[i], s)
		if err != nil {
			return nil, nil, err
		}
		kw.set(k, v)
	}
	if c.dstar != nil {
		v, err := r.eval(c.dstar, s)
		if err != nil {
			return nil, nil, err
		}
		d, ok := v.(*dictV)
		if !ok {
			return nil, nil, r.rtErr(c.line, "argument after ** must be a mapping, not %s", typeName(v))
		}
		for i, k := range d.keys {
			ks, ok := k.(string)
			if !ok {
				return nil, nil, r.rtErr(c.line, "keywords must be strings")
			}
			if _, dup := kw.get(ks); dup {
				return nil, nil, r.rtErr(c.line, "got multiple values for keyword argument '%s'", ks)
			}
			kw.set(ks, d.vals[i])
		}
	}
	return pos, kw, nil
}

// evalCall calls a function or macro; caller is set for call blocks.
func (r *renderer) evalCall(c *callExpr, s *scope, caller *macroV) (any, error) {
	fn, err := r.eval(c.fn, s)
	if err != nil {
		return nil, err
	}
	args, kw, err := r.args(c, s)
	if err != nil {
		return nil, err
	}
	if caller != nil {
		if kw == nil {
			kw = newDict()
		}
		kw.set("caller", caller)
	}
	v, err := r.call(fn, args, kw, c.line)
	return v, wrap(err, c.line)
}

func (r *renderer) call(fn any, args []any, kw *dictV, line int) (any, error) {
	r.callDepth++
	defer func() { r.callDepth-- }()
	if r.callDepth > maxCallDepth {
		return nil, r.rtErr(line, "maximum recursion depth exceeded")
	}
	switch f := fn.(type) {
	case *funcV:
		return f.fn(r, args, kw)
	case *macroV:
		return r.callMacro(f, args, kw, line)
	case *undefV:
		return nil, undefErr(f, line)
	}
	return nil, r.rtErr(line, "'%s' object is not callable", typeName(fn))
}

func (r *renderer) callMacro(m *macroV, args []any, kw *dictV, line int) (any, error) {
	ms := newScope(m.s)
	name := m.n.name
	for i, p := range m.n.params {
		if i < len(args) {
			ms.vars[p.name] = args[i]
			if kw != nil {
				if _, dup := kw.get(p.name); dup {
					return nil, r.rtErr(line, "macro '%s' got multiple values for argument '%s'", name, p.name)
				}
			}
			continue
		}
		if kw != nil {
			if v, ok := kw.get(p.name); ok {
				ms.vars[p.name] = v
				continue
			}
		}
		if p.def != nil {
			v, err := r.eval(p.def, ms)
			if err != nil {
				return nil, err
			}
			ms.vars[p.name] = v
			continue
		}
		ms.vars[p.name] = &undefV{msg: fmt.Sprintf("parameter '%s' was not provided", p.name)}
	}
	extra := &listV{tuple: true}
	if len(args) > len(m.n.params) {
		if !m.varargs {
			return nil, r.rtErr(line, "macro '%s' takes not more than %d argument(s)", name, len(m.n.params))
		}
		extra.items = append(extra.items, args[len(m.n.params):]...)
	}
	if m.varargs {
		ms.vars["varargs"] = extra
	}
	rest := newDict()
	if kw != nil {
		for i, k := range kw.keys {
			ks := k.(string)
			known := false
			for _, p := range m.n.params {
				if p.name == ks {
					known = true
				}
			}
			if known {
				continue
			}
			if ks == "caller" && (m.caller || m.n.isCaller) {
				ms.vars["caller"] = kw.vals[i]
				continue
			}
			if !m.kwargs {
				return nil, r.rtErr(line, "macro '%s' takes no keyword argument '%s'", name, ks)
			}
			rest.set(ks, kw.vals[i])
		}
	}
	if m.kwargs {
		ms.vars["kwargs"] = rest
	}
	var b strings.Builder
	if err := r.exec(m.n.body, ms, &b); err != nil {
		if err == errBreak || err == errContinue {
			return nil, r.rtErr(line, "break or continue outside a loop")
		}
		return nil, err
	}
	return b.String(), nil
}

func (r *renderer) unary(op string, x any, line int) (any, error) {
	if op == "not" {
		return !truthy(x), nil
	}
	if u, ok := x.(*undefV); ok && !r.js {
		return nil, undefErr(u, line)
	}
	i, f, isFloat, ok := number(x)
	if !ok {
		return nil, r.rtErr(line, "bad operand type for unary %s: '%s'", op, typeName(x))
	}
	if op == "+" {
		if isFloat {
			return f, nil
		}
		return i, nil
	}
	if isFloat {
		return -f, nil
	}
	if i == math.MinInt64 {
		return nil, r.rtErr(line, "integer overflow")
	}
	return -i, nil
}

// compare evaluates one comparison of a chain.
func (r *renderer) compare(op string, a, b any, line int) (bool, error) {
	switch op {
	case "==":
		if r.js {
			return jsLooseEqual(a, b), nil
		}
		return pyEqual(a, b), nil
	case "!=":
		if r.js {
			return !jsLooseEqual(a, b), nil
		}
		return !pyEqual(a, b), nil
	case "in", "notin":
		in, err := r.contains(b, a, line)
		if err != nil {
			return false, err
		}
		return in == (op == "in"), nil
	}
	for _, v := range []any{a, b} {
		if u, ok := v.(*undefV); ok {
			return false, undefErr(u, line)
		}
	}
	c, ok := pyCompare(a, b)
	if !ok {
		return false, r.rtErr(line, "'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
	}
	if c == 2 {
		return false, nil // NaN
	}
	switch op {
	case "<":
		return c < 0, nil
	case ">":
		return c > 0, nil
	case "<=":
		return c <= 0, nil
	}
	return c >= 0, nil
}

// jsLooseEqual approximates @huggingface/jinja's ==, JavaScript's loose
// equality of the values.
func jsLooseEqual(a, b any) bool {
	_, aU := a.(*undefV)
	_, bU := b.(*undefV)
	if (a == nil || aU) && (b == nil || bU) {
		return true
	}
	if a == nil || aU || b == nil || bU {
		return false
	}
	_, af, _, aNum := number(a)
	_, bf, _, bNum := number(b)
	as, aStr := a.(string)
	bs, bStr := b.(string)
	switch {
	case aNum && bNum:
		return af == bf
	case aStr && bStr:
		return as == bs
	case aNum && bStr:
		return jsToNumber(bs) == af
	case aStr && bNum:
		return jsToNumber(as) == bf
	}
	return a == b
}

func jsToNumber(s string) float64 {
	s = strings.TrimFunc(s, isJSSpace)
	if s == "" {
		return 0
	}
	var f float64
	if _, err := fmt.Sscan(s, &f); err != nil {
		return math.NaN()
	}
	return f
}

// contains is Python's "x in container".
func (r *renderer) contains(container, x any, line int) (bool, error) {
	switch c := container.(type) {
	case string:
		xs, ok := x.(string)
		if !ok {
			if u, isU := x.(*undefV); isU && !r.js {
				return false, undefErr(u, line)
			}
			if r.js {
				return false, r.rtErr(line, "Unknown operator \"in\" between %s and StringValue", typeName(x))
			}
			return false, r.rtErr(line, "'in <string>' requires string as left operand, not %s", typeName(x))
		}
		return strings.Contains(c, xs), nil
	case *listV:
		for _, it := range c.items {
			if r.js && jsLooseEqual(it, x) || !r.js && pyEqual(it, x) {
				return true, nil
			}
		}
		return false, nil
	case *dictV:
		_, ok := c.get(x)
		if !ok {
			if _, hashable := hashKey(x); !hashable {
				return false, r.rtErr(line, "unhashable type: '%s'", typeName(x))
			}
		}
		return ok, nil
	case *undefV:
		if c.unsafe {
			return false, undefErr(c, line)
		}
		return false, nil
	}
	return false, r.rtErr(line, "argument of type '%s' is not iterable", typeName(container))
}

// binary evaluates an arithmetic or concatenation operator.
func (r *renderer) binary(op string, a, b any, line int) (any, error) {
	if op == "~" {
		if r.js {
			for _, v := range []any{a, b} {
				if _, ok := v.(*undefV); ok {
					return nil, r.rtErr(line, "Cannot perform operation ~ on undefined values")
				}
				if v == nil {
					return nil, r.rtErr(line, "Cannot perform operation on null values")
				}
			}
		}
		as, bs := r.str(a), r.str(b)
		if len(as)+len(bs) > maxOutput {
			return nil, r.rtErr(line, "string longer than %d bytes", maxOutput)
		}
		return as + bs, nil
	}
	for _, v := range []any{a, b} {
		if u, ok := v.(*undefV); ok {
			if r.js {
				return nil, r.rtErr(line, "Cannot perform operation %s on undefined values", op)
			}
			return nil, undefErr(u, line)
		}
	}
	if r.js && (a == nil || b == nil) {
		return nil, r.rtErr(line, "Cannot perform operation on null values")
	}
	ai, af, aFloat, aNum := number(a)
	bi, bf, bFloat, bNum := number(b)
	if aNum && bNum {
		return r.arith(op, ai, af, aFloat, bi, bf, bFloat, line)
	}
	unsupported := func() (any, error) {
		if op == "+" {
			if _, ok := a.(string); ok {
				return nil, r.rtErr(line, "can only concatenate str (not \"%s\") to str", typeName(b))
			}
			if l, ok := a.(*listV); ok && !l.tuple {
				return nil, r.rtErr(line, "can only concatenate list (not \"%s\") to list", typeName(b))
			}
		}
		return nil, r.rtErr(line, "unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	}
	switch op {
	case "+":
		as, aStr := a.(string)
		bs, bStr := b.(string)
		if aStr && bStr {
			if len(as)+len(bs) > maxOutput {
				return nil, r.rtErr(line, "string longer than %d bytes", maxOutput)
			}
			return as + bs, nil
		}
		if r.js && (aStr || bStr) {
			return jsStr(a) + jsStr(b), nil
		}
		al, aList := a.(*listV)
		bl, bList := b.(*listV)
		if aList && bList && (al.tuple == bl.tuple || r.js) {
			out := &listV{items: make([]any, 0, len(al.items)+len(bl.items)), tuple: al.tuple && !r.js}
			out.items = append(append(out.items, al.items...), bl.items...)
			return out, nil
		}
	case "*":
		if r.js {
			break
		}
		seq, n := a, b
		if _, _, _, ok := number(a); ok {
			seq, n = b, a
		}
		cnt, _, isFloat, ok := number(n)
		if !ok || isFloat {
			break
		}
		if cnt < 0 {
			cnt = 0
		}
		switch sq := seq.(type) {
		case string:
			if int64(len(sq))*cnt > maxOutput {
				return nil, r.rtErr(line, "repeated string too long")
			}
			return strings.Repeat(sq, int(cnt)), nil
		case *listV:
			if int64(len(sq.items))*cnt > maxOutput {
				return nil, r.rtErr(line, "repeated list too long")
			}
			out := &listV{tuple: sq.tuple}
			for range cnt {
				out.items = append(out.items, sq.items...)
			}
			return out, nil
		}
	case "%":
		if sf, ok := a.(string); ok && !r.js {
			return pyPercentFormat(r, sf, b, line)
		}
	}
	return unsupported()
}

// arith is Python's (or, for HFJS, JavaScript's) arithmetic on numbers.
func (r *renderer) arith(op string, ai int64, af float64, aFloat bool, bi int64, bf float64, bFloat bool, line int) (any, error) {
	isFloat := aFloat || bFloat
	if r.js {
		ai, bi = int64(af), int64(bf)
	}
	switch op {
	case "+", "-", "*":
		if !isFloat {
			var res int64
			var overflow bool
			switch op {
			case "+":
				res = ai + bi
				overflow = (ai > 0 && bi > 0 && res < 0) || (ai < 0 && bi < 0 && res >= 0)
			case "-":
				res = ai - bi
				overflow = (ai >= 0 && bi < 0 && res < 0) || (ai < 0 && bi > 0 && res >= 0)
			case "*":
				res = ai * bi
				overflow = ai != 0 && (res/ai != bi || (ai == -1 && bi == math.MinInt64))
			}
			if overflow {
				if r.js {
					return map[string]float64{"+": af + bf, "-": af - bf, "*": af * bf}[op], nil
				}
				return nil, r.rtErr(line, "integer overflow")
			}
			return res, nil
		}
		switch op {
		case "+":
			return af + bf, nil
		case "-":
			return af - bf, nil
		}
		return af * bf, nil
	case "/":
		if bf == 0 && !r.js {
			return nil, r.rtErr(line, "division by zero")
		}
		return af / bf, nil
	case "//":
		if r.js {
			res := math.Floor(af / bf)
			if isFloat || math.IsInf(res, 0) || res != res {
				return res, nil
			}
			return int64(res), nil
		}
		if !isFloat {
			if bi == 0 {
				return nil, r.rtErr(line, "integer division or modulo by zero")
			}
			q := ai / bi
			if (ai%bi != 0) && ((ai < 0) != (bi < 0)) {
				q--
			}
			return q, nil
		}
		if bf == 0 {
			return nil, r.rtErr(line, "float floor division by zero")
		}
		return math.Floor(af / bf), nil
	case "%":
		if r.js {
			res := math.Mod(af, bf)
			if isFloat || res != res {
				return res, nil
			}
			return int64(res), nil
		}
		if !isFloat {
			if bi == 0 {
				return nil, r.rtErr(line, "integer division or modulo by zero")
			}
			m := ai % bi
			if m != 0 && (m < 0) != (bi < 0) {
				m += bi
			}
			return m, nil
		}
		if bf == 0 {
			return nil, r.rtErr(line, "float modulo")
		}
		m := math.Mod(af, bf)
		if m != 0 && (m < 0) != (bf < 0) {
			m += bf
		}
		return m, nil
	case "**":
		if !isFloat && bi >= 0 {
			res, base, e := int64(1), ai, bi
			for e > 0 {
				var ok bool
				if e&1 == 1 {
					if res, ok = mulInt(res, base); !ok {
						break
					}
				}
				e >>= 1
				if e > 0 {
					if base, ok = mulInt(base, base); !ok {
						break
					}
				}
			}
			if e > 0 {
				if r.js {
					return math.Pow(af, bf), nil
				}
				return nil, r.rtErr(line, "integer overflow")
			}
			return res, nil
		}
		if af == 0 && bf < 0 {
			return nil, r.rtErr(line, "0.0 cannot be raised to a negative power")
		}
		res := math.Pow(af, bf)
		if res != res && !r.js {
			return nil, r.rtErr(line, "complex results are not supported")
		}
		return res, nil
	}
	return nil, r.rtErr(line, "unknown operator %s", op)
}

// mulInt multiplies, reporting false on overflow.
func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}
