package chattemplate

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

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

// lookup finds name in s or its parents; depth is how many scopes it
// looked in.
func (s *scope) lookup(name string) (v any, ok bool, depth int) {
	for ; s != nil; s = s.parent {
		depth++
		if v, ok := s.vars[name]; ok {
			return v, true, depth
		}
	}
	return nil, false, depth
}

// renderer holds the state of one rendering.
type renderer struct {
	now       func() time.Time
	b         *budget
	callDepth int
}

// macroV is a macro bound to the scope it was defined in.
type macroV struct {
	n *macroNode
	s *scope
	macroReads
}

// macroReads says whether a macro's body reads varargs, kwargs and
// caller.
type macroReads struct {
	varargs, kwargs, caller bool
}

// readsOf is what a macro's body reads.
func readsOf(body []node) macroReads {
	var m macroReads
	walkNames(body, func(name string) {
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

// step counts the work of a statement, an expression or a loop
// iteration.
func (r *renderer) step(line int) error {
	if !r.b.spend(stepCost) {
		return wrap(r.b.err, line)
	}
	return nil
}

// write writes s to the output (or a macro's or block's text), within
// the output budget.
func (r *renderer) write(w *textBuf, s string, line int) error {
	b := r.b
	if b.err != nil {
		return wrap(b.err, line)
	}
	if int64(len(s)) > b.lim.Output-b.out {
		return wrap(b.fail(budgetErr("output larger than the render's budget of %d bytes", b.lim.Output)), line)
	}
	b.out += int64(len(s))
	if !b.spend(int64(len(s))) {
		return wrap(b.err, line)
	}
	w.write(s, b.lim.Output-b.out)
	return nil
}

func (r *renderer) exec(body []node, s *scope, w *textBuf) error {
	for _, n := range body {
		if err := r.execNode(n, s, w); err != nil {
			return err
		}
	}
	return nil
}

func (r *renderer) execNode(n node, s *scope, w *textBuf) error {
	if err := r.step(n.nodeLine()); err != nil {
		return err
	}
	switch n := n.(type) {
	case textNode:
		return r.write(w, n.text, n.line)
	case *outputNode:
		return r.execOutput(n, s, w)
	case *ifNode:
		return r.execIf(n, s, w)
	case *forNode:
		return r.execFor(n, s, w)
	case *setNode:
		return r.execSet(n, s)
	case *macroNode:
		s.vars[n.name] = newMacro(n, s)
		return nil
	case *callBlockNode:
		return r.execCallBlock(n, s, w)
	case *filterBlockNode:
		return r.execFilterBlock(n, s, w)
	case *withNode:
		return r.execWith(n, s, w)
	case *loopControlNode:
		if n.brk {
			return errBreak
		}
		return errContinue
	}
	return fmt.Errorf("unknown node %T", n)
}

func (r *renderer) execOutput(n *outputNode, s *scope, w *textBuf) error {
	v, err := r.eval(n.e, s)
	if err != nil {
		return err
	}
	return r.writeValue(w, v, n.line)
}

// writeValue writes v's str.
func (r *renderer) writeValue(w *textBuf, v any, line int) error {
	str, err := r.b.str("print", v)
	if err != nil {
		return wrap(err, line)
	}
	return r.write(w, str, line)
}

func (r *renderer) execCallBlock(n *callBlockNode, s *scope, w *textBuf) error {
	v, err := r.evalCall(n.call, s, newMacro(n.caller, s))
	if err != nil {
		return err
	}
	return r.writeValue(w, v, n.line)
}

func (r *renderer) execFilterBlock(n *filterBlockNode, s *scope, w *textBuf) error {
	v, err := r.filterBlock(n.body, n.filter, s)
	if err != nil {
		return err
	}
	return r.writeValue(w, v, n.line)
}

func (r *renderer) execIf(n *ifNode, s *scope, w *textBuf) error {
	c, err := r.eval(n.cond, s)
	if err != nil {
		return err
	}
	if truthy(c) {
		return r.exec(n.body, s, w)
	}
	return r.exec(n.elseBody, s, w)
}

// filterBlock renders body and applies the filter chain f to the text,
// for filter blocks and block sets.
func (r *renderer) filterBlock(body []node, f *filterExpr, s *scope) (any, error) {
	var b textBuf
	if err := r.exec(body, newScope(s), &b); err != nil {
		return nil, err
	}
	if f == nil {
		return b.String(), nil
	}
	return r.applyFilterChain(f, b.String(), s)
}

func (r *renderer) execWith(n *withNode, s *scope, w *textBuf) error {
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
}

func newMacro(n *macroNode, s *scope) *macroV {
	return &macroV{n: n, s: s, macroReads: n.reads}
}

// iterate returns the items a for loop (or *args) visits.
func (r *renderer) iterate(v any, line int) ([]any, error) {
	switch v := v.(type) {
	case *listV:
		return v.items, nil
	case *dictV:
		return v.keys, nil
	case string:
		items, err := r.b.chars("for", v)
		return items, wrap(err, line)
	case *undefV:
		if v.unsafe {
			return nil, r.rtErr(line, "%s", v.msg)
		}
		return nil, nil
	}
	return nil, r.rtErr(line, "'%s' object is not iterable", typeName(v))
}

// asciiChars are the one-character strs of ASCII, ready as values, so
// that iterating an ASCII str allocates nothing for its characters.
var asciiChars = func() (t [utf8.RuneSelf]any) {
	for i := range t {
		t[i] = string(rune(i))
	}
	return t
}()

// chars are the characters of s, as strs, for the operation what.
func (b *budget) chars(what string, s string) ([]any, error) {
	if err := b.workFor(what, int64(len(s))); err != nil {
		return nil, err
	}
	n := int64(utf8.RuneCountInString(s))
	size := int64(itemBytes)
	if !isASCII(s) {
		size = strItemBytes + utf8.UTFMax
	}
	if err := b.takeItems(what, "list", n, size); err != nil {
		return nil, err
	}
	items := make([]any, 0, n)
	for _, c := range s {
		if c < utf8.RuneSelf {
			items = append(items, asciiChars[c])
		} else {
			items = append(items, string(c))
		}
	}
	return items, nil
}

func (r *renderer) execFor(n *forNode, s *scope, w *textBuf) error {
	iv, err := r.eval(n.iter, s)
	if err != nil {
		return err
	}
	items, err := r.iterate(iv, n.line)
	if err != nil {
		return err
	}
	if n.filter != nil {
		if items, err = r.loopFilter(n, items, s); err != nil {
			return err
		}
	}
	loop := &loopV{items: items}
	loopScope := newScope(s)
	for i, it := range items {
		if !r.b.spend(iterCost) {
			return wrap(r.b.err, n.line)
		}
		loop.i = i
		is := newScope(loopScope) // assignments last one iteration
		is.vars["loop"] = loop
		if err := r.assign(n.target, it, is, n.line); err != nil {
			return err
		}
		err := r.exec(n.body, is, w)
		if err == errBreak {
			break
		}
		if err != nil && err != errContinue {
			return err
		}
	}
	if len(items) == 0 {
		return r.exec(n.elseBody, loopScope, w)
	}
	return nil
}

// loopFilter keeps the items for which the "if" of a for loop holds.
func (r *renderer) loopFilter(n *forNode, items []any, s *scope) ([]any, error) {
	if err := r.b.takeList("for", int64(len(items))); err != nil {
		return nil, wrap(err, n.line)
	}
	var kept []any
	for _, it := range items {
		fs := newScope(s)
		if err := r.assign(n.target, it, fs, n.line); err != nil {
			return nil, err
		}
		c, err := r.eval(n.filter, fs)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

// assign binds target (a name or a tuple of names) to v in s.
func (r *renderer) assign(target expr, v any, s *scope, line int) error {
	switch t := target.(type) {
	case *nameExpr:
		s.vars[t.name] = v
		return nil
	case *tupleExpr:
		items, err := r.unpack(v, len(t.items), line)
		if err != nil {
			return err
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

// unpack returns the n items of v that a tuple assignment binds.
func (r *renderer) unpack(v any, n int, line int) ([]any, error) {
	var items []any
	var count int
	switch v := v.(type) {
	case *listV:
		items, count = v.items, len(v.items)
	case *dictV:
		items, count = v.keys, v.len()
	case string:
		if err := r.b.workFor("unpack", int64(len(v))); err != nil {
			return nil, wrap(err, line)
		}
		count = utf8.RuneCountInString(v)
	default:
		return nil, r.rtErr(line, "cannot unpack non-iterable %s object", typeName(v))
	}
	switch {
	case count < n:
		return nil, r.rtErr(line, "not enough values to unpack (expected %d, got %d)", n, count)
	case count > n:
		return nil, r.rtErr(line, "too many values to unpack (expected %d)", n)
	}
	if s, ok := v.(string); ok {
		var err error
		if items, err = r.b.chars("unpack", s); err != nil {
			return nil, wrap(err, line)
		}
	}
	return items, nil
}

func (r *renderer) execSet(n *setNode, s *scope) error {
	var v any
	var err error
	if n.value != nil {
		v, err = r.eval(n.value, s)
	} else {
		v, err = r.filterBlock(n.body, n.filter, s)
	}
	if err != nil {
		return err
	}
	a, ok := n.target.(*attrExpr)
	if !ok {
		return r.assign(n.target, v, s, n.line)
	}
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

// walkNames calls f with every name an expression in body reads (not
// descending into nested macros and call blocks).
func walkNames(body []node, f func(string)) {
	for _, n := range body {
		for _, e := range nodeExprs(n) {
			walkExpr(e, f)
		}
		for _, b := range nodeBodies(n) {
			walkNames(b, f)
		}
	}
}

// nodeExprs are the expressions of a statement that walkNames visits.
func nodeExprs(n node) []expr {
	switch n := n.(type) {
	case *outputNode:
		return []expr{n.e}
	case *ifNode:
		return []expr{n.cond}
	case *forNode:
		return []expr{n.iter, n.filter}
	case *setNode:
		if n.filter != nil {
			return []expr{n.value, n.filter}
		}
		return []expr{n.value}
	case *callBlockNode:
		return []expr{n.call}
	case *filterBlockNode:
		return []expr{n.filter}
	case *withNode:
		return n.values
	}
	return nil
}

// nodeBodies are the bodies of a statement that walkNames visits.
func nodeBodies(n node) [][]node {
	switch n := n.(type) {
	case *ifNode:
		return [][]node{n.body, n.elseBody}
	case *forNode:
		return [][]node{n.body, n.elseBody}
	case *setNode:
		return [][]node{n.body}
	case *filterBlockNode:
		return [][]node{n.body}
	case *withNode:
		return [][]node{n.body}
	}
	return nil
}

// walkExpr calls f with every name e reads.
func walkExpr(e expr, f func(string)) {
	if e == nil {
		return
	}
	if n, ok := e.(*nameExpr); ok {
		f(n.name)
	}
	for _, c := range subexprs(e) {
		walkExpr(c, f)
	}
}

// subexprs are the operands of an expression; some may be nil.
func subexprs(e expr) []expr {
	switch e := e.(type) {
	case *listExpr:
		return e.items
	case *tupleExpr:
		return e.items
	case *dictExpr:
		return append(append([]expr(nil), e.keys...), e.vals...)
	case *attrExpr:
		return []expr{e.x}
	case *itemExpr:
		return []expr{e.x, e.key}
	case *sliceExpr:
		return []expr{e.x, e.lo, e.hi, e.step}
	case *callExpr:
		return append(append([]expr{e.fn, e.star, e.dstar}, e.args...), e.kwVals...)
	case *filterExpr:
		if e.call != nil {
			return []expr{e.x, e.call}
		}
		return []expr{e.x}
	case *testExpr:
		return append([]expr{e.x}, e.args...)
	case *unaryExpr:
		return []expr{e.x}
	case *binExpr:
		return []expr{e.l, e.r}
	case *compareExpr:
		return append([]expr{e.first}, e.rest...)
	case *condExpr:
		return []expr{e.cond, e.yes, e.no}
	}
	return nil
}

// args evaluates call arguments.
func (r *renderer) args(c *callExpr, s *scope) ([]any, *dictV, error) {
	pos, err := r.positional(c, s)
	if err != nil {
		return nil, nil, err
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
		if err := r.starStarArgs(c, s, kw); err != nil {
			return nil, nil, err
		}
	}
	return pos, kw, nil
}

// positional evaluates the positional arguments of a call, *args
// included.
func (r *renderer) positional(c *callExpr, s *scope) ([]any, error) {
	var pos []any
	for _, a := range c.args {
		v, err := r.eval(a, s)
		if err != nil {
			return nil, err
		}
		pos = append(pos, v)
	}
	if c.star == nil {
		return pos, nil
	}
	v, err := r.eval(c.star, s)
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v, c.line)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeList("*", int64(len(pos)+len(items))); err != nil {
		return nil, wrap(err, c.line)
	}
	return append(pos, items...), nil
}

// starStarArgs adds the **kwargs of a call to kw.
func (r *renderer) starStarArgs(c *callExpr, s *scope, kw *dictV) error {
	v, err := r.eval(c.dstar, s)
	if err != nil {
		return err
	}
	d, ok := v.(*dictV)
	if !ok {
		return r.rtErr(c.line, "argument after ** must be a mapping, not %s", typeName(v))
	}
	if err := r.b.copyDict("**", d); err != nil {
		return wrap(err, c.line)
	}
	for i, k := range d.keys {
		ks, ok := k.(string)
		if !ok {
			return r.rtErr(c.line, "keywords must be strings")
		}
		if _, dup := kw.get(ks); dup {
			return r.rtErr(c.line, "got multiple values for keyword argument '%s'", ks)
		}
		kw.set(ks, d.vals[i])
	}
	return nil
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
	if r.callDepth > r.b.lim.Calls {
		return nil, wrap(r.b.fail(budgetErr("maximum recursion depth exceeded: more than the render's budget of %d nested calls", r.b.lim.Calls)), line)
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
	if err := r.bindParams(m, args, kw, ms, line); err != nil {
		return nil, err
	}
	if err := r.bindExtraArgs(m, args, kw, ms, line); err != nil {
		return nil, err
	}
	var b textBuf
	if err := r.exec(m.n.body, ms, &b); err != nil {
		if err == errBreak || err == errContinue {
			return nil, r.rtErr(line, "break or continue outside a loop")
		}
		return nil, err
	}
	return b.String(), nil
}

// bindParams sets a macro's parameters in ms: from the positional
// arguments, the keyword arguments, or their defaults.
func (r *renderer) bindParams(m *macroV, args []any, kw *dictV, ms *scope, line int) error {
	for i, p := range m.n.params {
		var kv any
		inKw := false
		if kw != nil {
			kv, inKw = kw.get(p.name)
		}
		switch {
		case i < len(args) && inKw:
			return r.rtErr(line, "macro '%s' got multiple values for argument '%s'", m.n.name, p.name)
		case i < len(args):
			ms.vars[p.name] = args[i]
		case inKw:
			ms.vars[p.name] = kv
		case p.def != nil:
			v, err := r.eval(p.def, ms)
			if err != nil {
				return err
			}
			ms.vars[p.name] = v
		default:
			ms.vars[p.name] = &undefV{msg: fmt.Sprintf("parameter '%s' was not provided", p.name)}
		}
	}
	return nil
}

// bindExtraArgs sets varargs, kwargs and caller in ms from the arguments
// that are not parameters, where the macro reads them.
func (r *renderer) bindExtraArgs(m *macroV, args []any, kw *dictV, ms *scope, line int) error {
	name, params := m.n.name, m.n.params
	extra := &listV{tuple: true}
	if len(args) > len(params) {
		if !m.varargs {
			return r.rtErr(line, "macro '%s' takes not more than %d argument(s)", name, len(params))
		}
		if err := r.b.takeList("varargs", int64(len(args)-len(params))); err != nil {
			return wrap(err, line)
		}
		extra.items = append(extra.items, args[len(params):]...)
	}
	if m.varargs {
		ms.vars["varargs"] = extra
	}
	rest := newDict()
	if kw != nil && m.kwargs {
		if err := r.b.copyDict("kwargs", kw); err != nil {
			return wrap(err, line)
		}
	}
	if kw != nil {
		for i, k := range kw.keys {
			ks := k.(string)
			switch {
			case isParam(params, ks):
			case ks == "caller" && (m.caller || m.n.isCaller):
				ms.vars["caller"] = kw.vals[i]
			case !m.kwargs:
				return r.rtErr(line, "macro '%s' takes no keyword argument '%s'", name, ks)
			default:
				rest.set(ks, kw.vals[i])
			}
		}
	}
	if m.kwargs {
		ms.vars["kwargs"] = rest
	}
	return nil
}

func isParam(params []param, name string) bool {
	for _, p := range params {
		if p.name == name {
			return true
		}
	}
	return false
}
