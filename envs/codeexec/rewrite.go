package codeexec

import (
	"fmt"

	"go.starlark.net/syntax"
)

// The rewriter routes every operation whose result can be larger than a
// constant through a guard builtin that charges the run's allocation
// budget (see guard.go). Starlark's interpreter evaluates arithmetic,
// attribute lookups and slices natively, with no hook a host can use, so the
// only place to intercept them is the syntax tree, before it is resolved and
// compiled:
//
//	x + y        ->  $add(x, y)        (every arithmetic binary operator)
//	-x, ~x       ->  $neg(x), $inv(x)
//	x.name       ->  $attr(x, "name")  (methods come back wrapped)
//	x[a:b:c]     ->  $slice(x[a:b:c])  (charged after the copy)
//	x op= y      ->  x op= $aug_op(x, y)
//
// Guard names start with '$', which the scanner never produces in an
// identifier, so a program can neither call nor shadow them. Comparisons,
// 'in', 'and', 'or' and 'not' allocate nothing and stay native.

// binaryGuards maps the arithmetic operators to their guard builtins.
var binaryGuards = map[syntax.Token]string{
	syntax.PLUS:       "$add",
	syntax.MINUS:      "$sub",
	syntax.STAR:       "$mul",
	syntax.SLASH:      "$div",
	syntax.SLASHSLASH: "$floordiv",
	syntax.PERCENT:    "$mod",
	syntax.AMP:        "$and",
	syntax.PIPE:       "$or",
	syntax.CIRCUMFLEX: "$xor",
	syntax.LTLT:       "$lsh",
	syntax.GTGT:       "$rsh",
}

// augOps maps each augmented assignment to its binary operator.
var augOps = map[syntax.Token]syntax.Token{
	syntax.PLUS_EQ:       syntax.PLUS,
	syntax.MINUS_EQ:      syntax.MINUS,
	syntax.STAR_EQ:       syntax.STAR,
	syntax.SLASH_EQ:      syntax.SLASH,
	syntax.SLASHSLASH_EQ: syntax.SLASHSLASH,
	syntax.PERCENT_EQ:    syntax.PERCENT,
	syntax.AMP_EQ:        syntax.AMP,
	syntax.PIPE_EQ:       syntax.PIPE,
	syntax.CIRCUMFLEX_EQ: syntax.CIRCUMFLEX,
	syntax.LTLT_EQ:       syntax.LTLT,
	syntax.GTGT_EQ:       syntax.GTGT,
}

// rewriteErr reports a construct the rewriter cannot guard.
type rewriteErr struct {
	pos syntax.Position
	msg string
}

func (e *rewriteErr) Error() string { return fmt.Sprintf("%s: %s", e.pos, e.msg) }

// rewriteFile guards every statement of f in place.
func rewriteFile(f *syntax.File) (err error) {
	defer func() {
		// The walkers report unsupported constructs by panicking with a
		// *rewriteErr, which keeps the many small recursive functions free
		// of error plumbing; any other panic is a bug and propagates.
		if r := recover(); r != nil {
			re, ok := r.(*rewriteErr)
			if !ok {
				panic(r)
			}
			err = re
		}
	}()
	rewriteStmts(f.Stmts)
	return nil
}

func rewriteStmts(stmts []syntax.Stmt) {
	for _, s := range stmts {
		rewriteStmt(s)
	}
}

func rewriteStmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		if op, ok := augOps[s.Op]; ok {
			// x op= y keeps its own semantics (list += extends in place);
			// only y is wrapped, by a guard that sees a copy of x. The
			// target's subexpressions are therefore evaluated twice, which
			// matters only if they have side effects (a[f()] += 1).
			lhs := cloneExpr(s.LHS)
			rewriteTarget(s.LHS)
			s.RHS = guardCall("$aug"+binaryGuards[op][1:], s.OpPos, rewriteExpr(lhs), rewriteExpr(s.RHS))
			return
		}
		rewriteTarget(s.LHS)
		s.RHS = rewriteExpr(s.RHS)
	case *syntax.DefStmt:
		rewriteParams(s.Params)
		rewriteStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rewriteExpr(s.X)
	case *syntax.ForStmt:
		rewriteTarget(s.Vars)
		s.X = rewriteExpr(s.X)
		rewriteStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rewriteExpr(s.Cond)
		rewriteStmts(s.Body)
	case *syntax.IfStmt:
		s.Cond = rewriteExpr(s.Cond)
		rewriteStmts(s.True)
		rewriteStmts(s.False)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rewriteExpr(s.Result)
		}
	case *syntax.BranchStmt, *syntax.LoadStmt:
		// Nothing to guard (load is rejected at run time: no loader).
	default:
		panic(&rewriteErr{syntax.Start(s), fmt.Sprintf("unsupported statement %T", s)})
	}
}

// rewriteParams guards default values, leaving the parameter names alone.
func rewriteParams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rewriteExpr(b.Y)
		}
	}
}

// rewriteTarget guards the expressions inside an assignment target while
// keeping the target itself assignable.
func rewriteTarget(e syntax.Expr) {
	switch e := e.(type) {
	case *syntax.Ident:
	case *syntax.IndexExpr:
		e.X = rewriteExpr(e.X)
		e.Y = rewriteExpr(e.Y)
	case *syntax.DotExpr:
		e.X = rewriteExpr(e.X)
	case *syntax.ParenExpr:
		rewriteTarget(e.X)
	case *syntax.TupleExpr:
		for _, x := range e.List {
			rewriteTarget(x)
		}
	case *syntax.ListExpr:
		for _, x := range e.List {
			rewriteTarget(x)
		}
	default:
		// Not a valid target; the resolver reports it.
	}
}

// guardCall builds the call guard(args...) positioned at pos, so that
// errors raised by the guard point at the operator in the user's source.
func guardCall(guard string, pos syntax.Position, args ...syntax.Expr) syntax.Expr {
	return &syntax.CallExpr{
		Fn:     &syntax.Ident{NamePos: pos, Name: guard},
		Lparen: pos,
		Args:   args,
		Rparen: pos,
	}
}

func rewriteExprs(es []syntax.Expr) {
	for i, e := range es {
		es[i] = rewriteExpr(e)
	}
}

func rewriteExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.BinaryExpr:
		e.X = rewriteExpr(e.X)
		e.Y = rewriteExpr(e.Y)
		if g, ok := binaryGuards[e.Op]; ok {
			return guardCall(g, e.OpPos, e.X, e.Y)
		}
		return e
	case *syntax.UnaryExpr:
		e.X = rewriteExpr(e.X)
		switch e.Op {
		case syntax.MINUS:
			return guardCall("$neg", e.OpPos, e.X)
		case syntax.TILDE:
			return guardCall("$inv", e.OpPos, e.X)
		}
		return e
	case *syntax.DotExpr:
		x := rewriteExpr(e.X)
		name := &syntax.Literal{Token: syntax.STRING, TokenPos: e.NamePos, Raw: fmt.Sprintf("%q", e.Name.Name), Value: e.Name.Name}
		return guardCall("$attr", e.Dot, x, name)
	case *syntax.SliceExpr:
		e.X = rewriteExpr(e.X)
		e.Lo = rewriteExpr(e.Lo)
		e.Hi = rewriteExpr(e.Hi)
		e.Step = rewriteExpr(e.Step)
		return guardCall("$slice", e.Lbrack, e)
	case *syntax.CallExpr:
		e.Fn = rewriteExpr(e.Fn)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rewriteExpr(b.Y) // keyword argument: keep the name
				continue
			}
			e.Args[i] = rewriteExpr(a)
		}
		return e
	case *syntax.Comprehension:
		e.Body = rewriteExpr(e.Body)
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				rewriteTarget(c.Vars)
				c.X = rewriteExpr(c.X)
			case *syntax.IfClause:
				c.Cond = rewriteExpr(c.Cond)
			}
		}
		return e
	case *syntax.CondExpr:
		e.Cond = rewriteExpr(e.Cond)
		e.True = rewriteExpr(e.True)
		e.False = rewriteExpr(e.False)
		return e
	case *syntax.DictExpr:
		for _, x := range e.List {
			entry := x.(*syntax.DictEntry)
			entry.Key = rewriteExpr(entry.Key)
			entry.Value = rewriteExpr(entry.Value)
		}
		return e
	case *syntax.DictEntry:
		e.Key = rewriteExpr(e.Key)
		e.Value = rewriteExpr(e.Value)
		return e
	case *syntax.IndexExpr:
		e.X = rewriteExpr(e.X)
		e.Y = rewriteExpr(e.Y)
		return e
	case *syntax.LambdaExpr:
		rewriteParams(e.Params)
		e.Body = rewriteExpr(e.Body)
		return e
	case *syntax.ListExpr:
		rewriteExprs(e.List)
		return e
	case *syntax.TupleExpr:
		rewriteExprs(e.List)
		return e
	case *syntax.ParenExpr:
		e.X = rewriteExpr(e.X)
		return e
	case *syntax.Ident, *syntax.Literal:
		return e
	}
	panic(&rewriteErr{syntax.Start(e), fmt.Sprintf("unsupported expression %T", e)})
}

// cloneExpr deep-copies an augmented-assignment target (an identifier, an
// index or attribute expression, or anything inside one) so that the copy
// can be resolved separately. Constructs that never appear in targets in
// practice are refused rather than copied.
func cloneExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.Ident:
		return &syntax.Ident{NamePos: e.NamePos, Name: e.Name}
	case *syntax.Literal:
		c := *e
		return &c
	case *syntax.IndexExpr:
		c := *e
		c.X, c.Y = cloneExpr(e.X), cloneExpr(e.Y)
		return &c
	case *syntax.DotExpr:
		c := *e
		c.X = cloneExpr(e.X)
		c.Name = cloneExpr(e.Name).(*syntax.Ident)
		return &c
	case *syntax.ParenExpr:
		c := *e
		c.X = cloneExpr(e.X)
		return &c
	case *syntax.BinaryExpr:
		c := *e
		c.X, c.Y = cloneExpr(e.X), cloneExpr(e.Y)
		return &c
	case *syntax.UnaryExpr:
		c := *e
		c.X = cloneExpr(e.X)
		return &c
	case *syntax.SliceExpr:
		c := *e
		c.X, c.Lo, c.Hi, c.Step = cloneExpr(e.X), cloneExpr(e.Lo), cloneExpr(e.Hi), cloneExpr(e.Step)
		return &c
	case *syntax.CallExpr:
		c := *e
		c.Fn = cloneExpr(e.Fn)
		c.Args = make([]syntax.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = cloneExpr(a)
		}
		return &c
	case *syntax.TupleExpr:
		c := *e
		c.List = make([]syntax.Expr, len(e.List))
		for i, a := range e.List {
			c.List[i] = cloneExpr(a)
		}
		return &c
	case *syntax.ListExpr:
		c := *e
		c.List = make([]syntax.Expr, len(e.List))
		for i, a := range e.List {
			c.List[i] = cloneExpr(a)
		}
		return &c
	}
	panic(&rewriteErr{syntax.Start(e), "augmented assignment target too complex; write it as x = x + y"})
}
