package chattemplate

import "fmt"

// eval evaluates an expression; errors without a line get e's.
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
		return r.lookupName(e.name, s)
	case *listExpr:
		return r.evalList(e.items, false, s)
	case *tupleExpr:
		return r.evalList(e.items, true, s)
	case *dictExpr:
		return r.evalDict(e, s)
	case *attrExpr:
		return r.evalAttr(e, s)
	case *itemExpr:
		return r.evalItem(e, s)
	case *sliceExpr:
		return r.evalSlice(e, s)
	case *callExpr:
		return r.evalCall(e, s, nil)
	case *filterExpr:
		return r.evalFilter(e, s)
	case *testExpr:
		return r.evalTest(e, s)
	case *unaryExpr:
		return r.evalUnary(e, s)
	case *binExpr:
		return r.evalBinary(e, s)
	case *compareExpr:
		return r.evalCompare(e, s)
	case *condExpr:
		return r.evalCond(e, s)
	}
	return nil, fmt.Errorf("unknown expression %T", e)
}

// lookupName is a variable, else a global, else undefined. Looking
// through many scopes (loops and call blocks nested deep) costs work.
func (r *renderer) lookupName(name string, s *scope) (any, error) {
	v, ok, depth := s.lookup(name)
	if depth > scopesFree {
		if err := r.b.spendErr(scopeCost * int64(depth-scopesFree)); err != nil {
			return nil, err
		}
	}
	if ok {
		return v, nil
	}
	if v, ok := globals[name]; ok {
		return v, nil
	}
	return &undefV{msg: fmt.Sprintf("'%s' is undefined", name)}, nil
}

// evalList evaluates a list or tuple literal.
func (r *renderer) evalList(items []expr, tuple bool, s *scope) (any, error) {
	if err := r.b.takeList("[]", int64(len(items))); err != nil {
		return nil, err
	}
	l := &listV{items: make([]any, 0, len(items)), tuple: tuple}
	for _, x := range items {
		v, err := r.eval(x, s)
		if err != nil {
			return nil, err
		}
		l.items = append(l.items, v)
	}
	return l, nil
}

func (r *renderer) evalDict(e *dictExpr, s *scope) (any, error) {
	if err := r.b.takeDict("{}", int64(len(e.keys))); err != nil {
		return nil, err
	}
	d := newDict()
	for i := range e.keys {
		k, err := r.eval(e.keys[i], s)
		if err != nil {
			return nil, err
		}
		if err := r.b.spendErr(keyWork(k)); err != nil {
			return nil, err
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
}

func (r *renderer) evalAttr(e *attrExpr, s *scope) (any, error) {
	x, err := r.eval(e.x, s)
	if err != nil {
		return nil, err
	}
	return r.getAttr(x, e.name, e.line)
}

func (r *renderer) evalItem(e *itemExpr, s *scope) (any, error) {
	x, err := r.eval(e.x, s)
	if err != nil {
		return nil, err
	}
	k, err := r.eval(e.key, s)
	if err != nil {
		return nil, err
	}
	return r.getItem(x, k, e.line)
}

func (r *renderer) evalFilter(e *filterExpr, s *scope) (any, error) {
	var x any
	if e.x != nil {
		var err error
		if x, err = r.eval(e.x, s); err != nil {
			return nil, err
		}
	}
	return r.applyFilter(e, x, s)
}

func (r *renderer) evalTest(e *testExpr, s *scope) (any, error) {
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
}

func (r *renderer) evalUnary(e *unaryExpr, s *scope) (any, error) {
	x, err := r.eval(e.x, s)
	if err != nil {
		return nil, err
	}
	return r.unary(e.op, x, e.line)
}

// evalBinary evaluates an operator; "and" and "or" evaluate their right
// operand only when it decides the result.
func (r *renderer) evalBinary(e *binExpr, s *scope) (any, error) {
	l, err := r.eval(e.l, s)
	if err != nil {
		return nil, err
	}
	switch {
	case e.op == "and" && !truthy(l), e.op == "or" && truthy(l):
		return l, nil
	case e.op == "and", e.op == "or":
		return r.eval(e.r, s)
	}
	rv, err := r.eval(e.r, s)
	if err != nil {
		return nil, err
	}
	return r.binary(e.op, l, rv, e.line)
}

// evalCompare evaluates a chain of comparisons, as far as they hold.
func (r *renderer) evalCompare(e *compareExpr, s *scope) (any, error) {
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
		if err != nil || !ok {
			return false, err
		}
		l = rv
	}
	return true, nil
}

func (r *renderer) evalCond(e *condExpr, s *scope) (any, error) {
	c, err := r.eval(e.cond, s)
	if err != nil {
		return nil, err
	}
	switch {
	case truthy(c):
		return r.eval(e.yes, s)
	case e.no == nil:
		return &undefV{msg: "the inline if-expression evaluated to false and no else section was defined."}, nil
	}
	return r.eval(e.no, s)
}
