package chattemplate

import "strings"

// parser builds the syntax tree from tokens with Jinja2's grammar.
type parser struct {
	toks []token
	i    int
	// depth counts nested blocks and expressions, to fail cleanly on
	// absurdly deep input instead of exhausting the stack.
	depth int
}

const maxDepth = 500

func (p *parser) cur() token { return p.toks[p.i] }
func (p *parser) look() token {
	if p.i+1 < len(p.toks) {
		return p.toks[p.i+1]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) errf(line int, format string, args ...any) error {
	return newError(KindSyntax, line, format, args...)
}

// isOp reports whether the current token is the operator op.
func (p *parser) isOp(op string) bool {
	t := p.cur()
	return t.kind == tOp && t.val == op
}

// isName reports whether the current token is the name n.
func (p *parser) isName(n string) bool {
	t := p.cur()
	return t.kind == tName && t.val == n
}

func (p *parser) skipOp(op string) bool {
	if p.isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(n string) bool {
	if p.isName(n) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(op string) error {
	if !p.skipOp(op) {
		return p.errf(p.cur().line, "expected token '%s', got %s", op, p.cur())
	}
	return nil
}

func (p *parser) expectKind(k tokKind, what string) (token, error) {
	t := p.cur()
	if t.kind != k {
		return t, p.errf(t.line, "expected %s, got %s", what, t)
	}
	p.next()
	return t, nil
}

func (p *parser) expectBlockEnd() error {
	_, err := p.expectKind(tBlockEnd, "end of statement block")
	return err
}

func (p *parser) enter(line int) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errf(line, "template nested too deeply")
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// parseTemplate parses a whole token stream.
func parseTemplate(toks []token) ([]node, error) {
	p := &parser{toks: toks}
	body, end, err := p.subparse(nil)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errf(p.cur().line, "encountered unknown tag '%s'", end)
	}
	return body, nil
}

// subparse parses statements until a block tag whose name is in ends (the
// name is left current, after the block begin) or the end of the
// template. It returns the end tag found ("" at the end of the template).
func (p *parser) subparse(ends []string) ([]node, string, error) {
	var body []node
	for {
		t := p.cur()
		switch t.kind {
		case tEOF:
			if ends != nil {
				return nil, "", p.errf(t.line, "unexpected end of template, expected one of %s", quoteList(ends))
			}
			return body, "", nil
		case tText:
			p.next()
			body = append(body, textNode{t.val, t.line})
		case tVarBegin:
			p.next()
			e, err := p.parseTuple(false, true, nil, false)
			if err != nil {
				return nil, "", err
			}
			if _, err := p.expectKind(tVarEnd, "end of print statement"); err != nil {
				return nil, "", err
			}
			body = append(body, &outputNode{pos{t.line}, e})
		case tBlockBegin:
			p.next()
			name := p.cur()
			if name.kind != tName {
				return nil, "", p.errf(name.line, "tag name expected")
			}
			for _, e := range ends {
				if name.val == e {
					return body, e, nil
				}
			}
			n, err := p.parseStatement()
			if err != nil {
				return nil, "", err
			}
			if n != nil {
				body = append(body, n...)
			}
		default:
			return nil, "", p.errf(t.line, "unexpected %s", t)
		}
	}
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q, " or ")
}

// parseStatement parses the block tag whose name is current.
func (p *parser) parseStatement() ([]node, error) {
	t := p.cur()
	if err := p.enter(t.line); err != nil {
		return nil, err
	}
	defer p.leave()
	var n node
	var err error
	switch t.val {
	case "if":
		n, err = p.parseIf()
	case "for":
		n, err = p.parseFor()
	case "set":
		n, err = p.parseSet()
	case "macro":
		n, err = p.parseMacro()
	case "call":
		n, err = p.parseCallBlock()
	case "filter":
		n, err = p.parseFilterBlock()
	case "with":
		n, err = p.parseWith()
	case "break", "continue":
		p.next()
		n = &loopControlNode{pos{t.line}, t.val == "break"}
		err = p.expectBlockEnd()
	case "generation":
		// transformers' {% generation %} marks assistant text for
		// return_assistant_tokens_mask; it renders its body unchanged.
		p.next()
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		body, _, err := p.subparse([]string{"endgeneration"})
		if err != nil {
			return nil, err
		}
		p.next()
		return body, p.expectBlockEnd()
	default:
		return nil, p.errf(t.line, "encountered unknown tag '%s'", t.val)
	}
	if err != nil {
		return nil, err
	}
	return []node{n}, nil
}

// parseBody parses statements up to one of ends, consumes the end tag's
// name and returns it.
func (p *parser) parseBody(ends ...string) ([]node, string, error) {
	body, end, err := p.subparse(ends)
	if err != nil {
		return nil, "", err
	}
	p.next()
	return body, end, nil
}

func (p *parser) parseIf() (node, error) {
	t := p.next()
	cond, err := p.parseTuple(false, false, nil, false)
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	n := &ifNode{pos: pos{t.line}, cond: cond}
	body, end, err := p.parseBody("elif", "else", "endif")
	if err != nil {
		return nil, err
	}
	n.body = body
	switch end {
	case "elif":
		p.i-- // let parseIf read "elif" as its "if"
		elif, err := p.parseIf()
		if err != nil {
			return nil, err
		}
		n.elseBody = []node{elif}
		return n, nil
	case "else":
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if n.elseBody, _, err = p.parseBody("endif"); err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd()
}

func (p *parser) parseFor() (node, error) {
	t := p.next()
	target, err := p.parseAssignTarget(true, false, []string{"in"})
	if err != nil {
		return nil, err
	}
	if !p.skipName("in") {
		return nil, p.errf(p.cur().line, "expected 'in', got %s", p.cur())
	}
	iter, err := p.parseTuple(false, false, []string{"recursive"}, false)
	if err != nil {
		return nil, err
	}
	n := &forNode{pos: pos{t.line}, target: target, iter: iter}
	if p.skipName("if") {
		if n.filter, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.isName("recursive") {
		return nil, p.errf(p.cur().line, "recursive loops are not supported")
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, end, err := p.parseBody("endfor", "else")
	if err != nil {
		return nil, err
	}
	n.body = body
	if end == "else" {
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if n.elseBody, _, err = p.parseBody("endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd()
}

func (p *parser) parseSet() (node, error) {
	t := p.next()
	target, err := p.parseAssignTarget(true, true, nil)
	if err != nil {
		return nil, err
	}
	n := &setNode{pos: pos{t.line}, target: target}
	if p.skipOp("=") {
		if n.value, err = p.parseTuple(false, true, nil, false); err != nil {
			return nil, err
		}
		return n, p.expectBlockEnd()
	}
	if _, ok := target.(*nameExpr); !ok {
		return nil, p.errf(t.line, "a block set needs a single name")
	}
	if p.isOp("|") {
		if n.filter, err = p.parseFilterChain(); err != nil {
			return nil, err
		}
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if n.body, _, err = p.parseBody("endset"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

// parseFilterChain parses "|f(args)|g" with no operand (filter blocks,
// block sets); the result's innermost filter has a nil operand.
func (p *parser) parseFilterChain() (*filterExpr, error) {
	var f *filterExpr
	for p.isOp("|") {
		var x expr
		if f != nil {
			x = f
		}
		g, err := p.parseFilter(x)
		if err != nil {
			return nil, err
		}
		f = g
	}
	return f, nil
}

func (p *parser) parseMacro() (node, error) {
	t := p.next()
	name, err := p.expectKind(tName, "macro name")
	if err != nil {
		return nil, err
	}
	params, err := p.parseSignature()
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody("endmacro")
	if err != nil {
		return nil, err
	}
	return &macroNode{pos: pos{t.line}, name: name.val, params: params, body: body, reads: readsOf(body)}, p.expectBlockEnd()
}

func (p *parser) parseSignature() ([]param, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var params []param
	for !p.isOp(")") {
		if len(params) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		name, err := p.expectKind(tName, "parameter name")
		if err != nil {
			return nil, err
		}
		prm := param{name: name.val}
		if p.skipOp("=") {
			if prm.def, err = p.parseExpression(true); err != nil {
				return nil, err
			}
		}
		params = append(params, prm)
	}
	p.next()
	return params, nil
}

func (p *parser) parseCallBlock() (node, error) {
	t := p.next()
	var params []param
	if p.isOp("(") {
		var err error
		if params, err = p.parseSignature(); err != nil {
			return nil, err
		}
	}
	e, err := p.parseExpression(true)
	if err != nil {
		return nil, err
	}
	call, ok := e.(*callExpr)
	if !ok {
		return nil, p.errf(t.line, "expected call")
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody("endcall")
	if err != nil {
		return nil, err
	}
	caller := &macroNode{pos: pos{t.line}, name: "caller", params: params, body: body, isCaller: true, reads: readsOf(body)}
	return &callBlockNode{pos{t.line}, call, caller}, p.expectBlockEnd()
}

func (p *parser) parseFilterBlock() (node, error) {
	t := p.next()
	var f *filterExpr
	for {
		var x expr
		if f != nil {
			x = f
		}
		g, err := p.parseFilterAfterPipe(x)
		if err != nil {
			return nil, err
		}
		f = g
		if !p.skipOp("|") {
			break
		}
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	body, _, err := p.parseBody("endfilter")
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{pos{t.line}, f, body}, p.expectBlockEnd()
}

func (p *parser) parseWith() (node, error) {
	t := p.next()
	n := &withNode{pos: pos{t.line}}
	for !p.cur().isBlockEnd() {
		if len(n.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		target, err := p.parseAssignTarget(false, false, nil)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, target)
		n.values = append(n.values, v)
	}
	p.next()
	body, _, err := p.parseBody("endwith")
	if err != nil {
		return nil, err
	}
	n.body = body
	return n, p.expectBlockEnd()
}

func (t token) isBlockEnd() bool { return t.kind == tBlockEnd || t.kind == tEOF }

// parseAssignTarget parses a name, a tuple of names, or (withNamespace)
// name.attr.
func (p *parser) parseAssignTarget(withTuple, withNamespace bool, extraEnd []string) (expr, error) {
	t := p.cur()
	if withNamespace && t.kind == tName && p.look().kind == tOp && p.look().val == "." {
		p.next()
		p.next()
		attr, err := p.expectKind(tName, "attribute name")
		if err != nil {
			return nil, err
		}
		return &attrExpr{pos{t.line}, &nameExpr{pos{t.line}, t.val}, attr.val}, nil
	}
	var target expr
	var err error
	if withTuple {
		target, err = p.parseTuple(true, false, extraEnd, false)
	} else {
		target, err = p.parsePrimary()
	}
	if err != nil {
		return nil, err
	}
	if !assignable(target) {
		return nil, p.errf(t.line, "can't assign to %s", describe(target))
	}
	return target, nil
}

func assignable(e expr) bool {
	switch e := e.(type) {
	case *nameExpr:
		switch e.name {
		case "true", "false", "none", "True", "False", "None":
			return false
		}
		return true
	case *tupleExpr:
		for _, it := range e.items {
			if !assignable(it) {
				return false
			}
		}
		return true
	}
	return false
}

func describe(e expr) string {
	switch e.(type) {
	case *constExpr:
		return "a literal"
	case *tupleExpr:
		return "a tuple"
	case *listExpr:
		return "a list"
	case *dictExpr:
		return "a dict"
	case *callExpr:
		return "a call"
	}
	return "an expression"
}

// isTupleEnd reports whether the current token ends a tuple.
func (p *parser) isTupleEnd(extraEnd []string) bool {
	t := p.cur()
	switch t.kind {
	case tVarEnd, tBlockEnd, tEOF:
		return true
	case tOp:
		return t.val == ")"
	case tName:
		for _, e := range extraEnd {
			if t.val == e {
				return true
			}
		}
	}
	return false
}

// parseTuple parses an expression or a tuple of them without parentheses.
// simplified parses primaries only (assignment targets).
func (p *parser) parseTuple(simplified, withCondexpr bool, extraEnd []string, explicitParens bool) (expr, error) {
	line := p.cur().line
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		if p.isTupleEnd(extraEnd) {
			break
		}
		var e expr
		var err error
		if simplified {
			e, err = p.parsePrimary()
		} else {
			e, err = p.parseExpression(withCondexpr)
		}
		if err != nil {
			return nil, err
		}
		items = append(items, e)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicitParens {
			return nil, p.errf(p.cur().line, "expected an expression, got %s", p.cur())
		}
	}
	return &tupleExpr{pos{line}, items}, nil
}

func (p *parser) parseExpression(withCondexpr bool) (expr, error) {
	if err := p.enter(p.cur().line); err != nil {
		return nil, err
	}
	defer p.leave()
	if withCondexpr {
		return p.parseCondexpr()
	}
	return p.parseOr()
}

func (p *parser) parseCondexpr() (expr, error) {
	line := p.cur().line
	e, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	for p.skipName("if") {
		cond, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		var no expr
		if p.skipName("else") {
			if err := p.enter(line); err != nil {
				return nil, err
			}
			no, err = p.parseCondexpr()
			p.leave()
			if err != nil {
				return nil, err
			}
		}
		e = &condExpr{pos{line}, cond, e, no}
	}
	return e, nil
}

func (p *parser) parseOr() (expr, error) {
	line := p.cur().line
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.skipName("or") {
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{line}, "or", l, r}
	}
	return l, nil
}

func (p *parser) parseAnd() (expr, error) {
	line := p.cur().line
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.skipName("and") {
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{line}, "and", l, r}
	}
	return l, nil
}

func (p *parser) parseNot() (expr, error) {
	line := p.cur().line
	if p.skipName("not") {
		if err := p.enter(line); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{pos{line}, "not", x}, nil
	}
	return p.parseCompare()
}

func (p *parser) parseCompare() (expr, error) {
	line := p.cur().line
	first, err := p.parseMath1()
	if err != nil {
		return nil, err
	}
	var ops []string
	var rest []expr
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == ">" || t.val == "<=" || t.val == ">="):
			op = t.val
			p.next()
		case t.kind == tName && t.val == "in":
			op = "in"
			p.next()
		case t.kind == tName && t.val == "not" && p.look().kind == tName && p.look().val == "in":
			op = "notin"
			p.next()
			p.next()
		}
		if op == "" {
			break
		}
		r, err := p.parseMath1()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		rest = append(rest, r)
	}
	if len(ops) == 0 {
		return first, nil
	}
	return &compareExpr{pos{line}, first, ops, rest}, nil
}

func (p *parser) parseMath1() (expr, error) {
	line := p.cur().line
	l, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.next().val
		r, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{line}, op, l, r}
	}
	return l, nil
}

func (p *parser) parseConcat() (expr, error) {
	line := p.cur().line
	l, err := p.parseMath2()
	if err != nil {
		return nil, err
	}
	for p.skipOp("~") {
		r, err := p.parseMath2()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{line}, "~", l, r}
	}
	return l, nil
}

func (p *parser) parseMath2() (expr, error) {
	line := p.cur().line
	l, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		op := p.next().val
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{line}, op, l, r}
	}
	return l, nil
}

func (p *parser) parsePow() (expr, error) {
	line := p.cur().line
	l, err := p.parseUnary(true)
	if err != nil {
		return nil, err
	}
	for p.skipOp("**") {
		r, err := p.parseUnary(true)
		if err != nil {
			return nil, err
		}
		l = &binExpr{pos{line}, "**", l, r}
	}
	return l, nil
}

func (p *parser) parseUnary(withFilter bool) (expr, error) {
	t := p.cur()
	if err := p.enter(t.line); err != nil {
		return nil, err
	}
	defer p.leave()
	var e expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		p.next()
		x, err := p.parseUnary(false)
		if err != nil {
			return nil, err
		}
		e = &unaryExpr{pos{t.line}, t.val, x}
	} else if e, err = p.parsePrimary(); err != nil {
		return nil, err
	}
	if e, err = p.parsePostfix(e); err != nil {
		return nil, err
	}
	if withFilter {
		return p.parseFilterExpr(e)
	}
	return e, nil
}

func (p *parser) parsePrimary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{pos{t.line}, true}, nil
		case "false", "False":
			return &constExpr{pos{t.line}, false}, nil
		case "none", "None":
			return &constExpr{pos{t.line}, nil}, nil
		}
		return &nameExpr{pos{t.line}, t.val}, nil
	case tString:
		p.next()
		s := t.val
		for p.cur().kind == tString {
			s += p.next().val
		}
		return &constExpr{pos{t.line}, s}, nil
	case tInt:
		p.next()
		return &constExpr{pos{t.line}, t.ival}, nil
	case tFloat:
		p.next()
		return &constExpr{pos{t.line}, t.fval}, nil
	case tOp:
		switch t.val {
		case "(":
			p.next()
			e, err := p.parseTuple(false, true, nil, true)
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return e, nil
		case "[":
			return p.parseList()
		case "{":
			return p.parseDict()
		}
	}
	return nil, p.errf(t.line, "unexpected %s", t)
}

func (p *parser) parseList() (expr, error) {
	t := p.next()
	var items []expr
	for !p.isOp("]") {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	p.next()
	return &listExpr{pos{t.line}, items}, nil
}

func (p *parser) parseDict() (expr, error) {
	t := p.next()
	d := &dictExpr{pos: pos{t.line}}
	for !p.isOp("}") {
		if len(d.keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		d.keys = append(d.keys, k)
		d.vals = append(d.vals, v)
	}
	p.next()
	return d, nil
}

func (p *parser) parsePostfix(e expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			e, err = p.parseSubscript(e)
		case p.isOp("("):
			e, err = p.parseCall(e)
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseFilterExpr(e expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			var f *filterExpr
			f, err = p.parseFilter(e)
			e = f
		case p.isName("is"):
			e, err = p.parseTest(e)
		case p.isOp("("):
			e, err = p.parseCall(e)
		default:
			return e, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseSubscript(x expr) (expr, error) {
	t := p.next()
	if t.val == "." {
		a := p.cur()
		switch a.kind {
		case tName:
			p.next()
			return &attrExpr{pos{t.line}, x, a.val}, nil
		case tInt:
			p.next()
			return &itemExpr{pos{t.line}, x, &constExpr{pos{a.line}, a.ival}}, nil
		}
		return nil, p.errf(a.line, "expected name or number")
	}
	var keys []expr
	for !p.isOp("]") {
		if len(keys) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		k, err := p.parseSubscribed(x)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if err := p.expectOp("]"); err != nil {
		return nil, err
	}
	switch len(keys) {
	case 0:
		return nil, p.errf(t.line, "expected an expression, got ']'")
	case 1:
		if s, ok := keys[0].(*sliceExpr); ok {
			return s, nil
		}
		return &itemExpr{pos{t.line}, x, keys[0]}, nil
	}
	for _, k := range keys {
		if _, ok := k.(*sliceExpr); ok {
			return nil, p.errf(t.line, "slices in a tuple subscript are not supported")
		}
	}
	return &itemExpr{pos{t.line}, x, &tupleExpr{pos{t.line}, keys}}, nil
}

// parseSubscribed parses one subscript: an expression or a slice.
func (p *parser) parseSubscribed(x expr) (expr, error) {
	line := p.cur().line
	var lo expr
	if !p.isOp(":") {
		e, err := p.parseExpression(true)
		if err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return e, nil
		}
		lo = e
	}
	p.next() // ':'
	s := &sliceExpr{pos: pos{line}, x: x, lo: lo}
	var err error
	if !p.isOp(":") && !p.isOp("]") && !p.isOp(",") {
		if s.hi, err = p.parseExpression(true); err != nil {
			return nil, err
		}
	}
	if p.skipOp(":") {
		if !p.isOp("]") && !p.isOp(",") {
			if s.step, err = p.parseExpression(true); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// parseCall parses "(args)" after fn.
func (p *parser) parseCall(fn expr) (*callExpr, error) {
	t := p.next() // (
	c := &callExpr{pos: pos{t.line}, fn: fn}
	first := true
	for !p.isOp(")") {
		if !first {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		first = false
		switch {
		case p.isOp("*"):
			p.next()
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			c.star = e
		case p.isOp("**"):
			p.next()
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			c.dstar = e
		case p.cur().kind == tName && p.look().kind == tOp && p.look().val == "=":
			name := p.next().val
			p.next()
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			for _, k := range c.kwNames {
				if k == name {
					return nil, p.errf(t.line, "keyword argument repeated: %s", name)
				}
			}
			c.kwNames = append(c.kwNames, name)
			c.kwVals = append(c.kwVals, e)
		default:
			if len(c.kwNames) > 0 || c.dstar != nil {
				return nil, p.errf(p.cur().line, "invalid syntax for function call expression: positional argument follows keyword argument")
			}
			e, err := p.parseExpression(true)
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, e)
		}
	}
	p.next()
	return c, nil
}

// parseFilter parses "|name(args)" applied to x.
func (p *parser) parseFilter(x expr) (*filterExpr, error) {
	p.next() // |
	return p.parseFilterAfterPipe(x)
}

func (p *parser) parseFilterAfterPipe(x expr) (*filterExpr, error) {
	t, err := p.expectKind(tName, "filter name")
	if err != nil {
		return nil, err
	}
	name := t.val
	for p.isOp(".") && p.look().kind == tName {
		p.next()
		name += "." + p.next().val
	}
	if _, ok := filters[name]; !ok {
		return nil, newError(KindSyntax, t.line, "no filter named '%s'", name)
	}
	f := &filterExpr{pos: pos{t.line}, x: x, name: name}
	if p.isOp("(") {
		if f.call, err = p.parseCall(nil); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) parseTest(x expr) (expr, error) {
	p.next() // is
	negate := p.skipName("not")
	t, err := p.expectKind(tName, "test name")
	if err != nil {
		return nil, err
	}
	name := t.val
	for p.isOp(".") && p.look().kind == tName {
		p.next()
		name += "." + p.next().val
	}
	if _, ok := tests[name]; !ok {
		return nil, newError(KindSyntax, t.line, "no test named '%s'", name)
	}
	te := &testExpr{pos: pos{t.line}, x: x, name: name, negate: negate}
	c := p.cur()
	switch {
	case p.isOp("("):
		call, err := p.parseCall(nil)
		if err != nil {
			return nil, err
		}
		if len(call.kwNames) > 0 || call.star != nil || call.dstar != nil {
			return nil, p.errf(t.line, "test arguments must be positional")
		}
		te.args = call.args
	case c.kind == tName && c.val == "is":
		return nil, p.errf(c.line, "you cannot chain multiple tests with is")
	case startsTestArg(c):
		arg, err := p.parsePrimary()
		if err != nil {
			return nil, err
		}
		if arg, err = p.parsePostfix(arg); err != nil {
			return nil, err
		}
		te.args = []expr{arg}
	}
	return te, nil
}

// startsTestArg reports whether c starts the argument of a test written
// without parentheses ("x is divisibleby 3"), as Jinja2 decides.
func startsTestArg(c token) bool {
	switch c.kind {
	case tString, tInt, tFloat:
		return true
	case tName:
		return c.val != "else" && c.val != "or" && c.val != "and"
	case tOp:
		return c.val == "(" || c.val == "[" || c.val == "{"
	}
	return false
}
