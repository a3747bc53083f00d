package chattemplate

// The syntax tree. Every node records its source line for error messages.

// node is a statement: text, output, or a control structure.
type node interface{ nodeLine() int }

// expr is an expression.
type expr interface{ exprLine() int }

type pos struct{ line int }

func (p pos) nodeLine() int { return p.line }
func (p pos) exprLine() int { return p.line }

type (
	textNode struct {
		text string
		line int // where the text starts
	}
	outputNode struct {
		pos
		e expr
	}
	ifNode struct {
		pos
		cond     expr
		body     []node
		elseBody []node // an elif is an ifNode alone in elseBody
	}
	forNode struct {
		pos
		target   expr // nameExpr or tupleExpr of names
		iter     expr
		filter   expr // "for x in y if filter"; nil when absent
		body     []node
		elseBody []node
	}
	setNode struct {
		pos
		target expr // nameExpr, tupleExpr of names, or attrExpr on a name
		value  expr // nil for a block set
		body   []node
		filter *filterExpr // block set filter; its operand is nil
	}
	macroNode struct {
		pos
		name     string
		params   []param
		body     []node
		isCaller bool
		// reads says which of varargs, kwargs and caller the body reads
		// (found once, when parsing).
		reads macroReads
	}
	callBlockNode struct {
		pos
		call   *callExpr
		caller *macroNode
	}
	filterBlockNode struct {
		pos
		filter *filterExpr // operand is nil
		body   []node
	}
	withNode struct {
		pos
		targets []expr
		values  []expr
		body    []node
	}
	loopControlNode struct {
		pos
		brk bool
	}
)

func (n textNode) nodeLine() int { return n.line }

// param is a macro parameter with an optional default.
type param struct {
	name string
	def  expr
}

type (
	constExpr struct {
		pos
		v any
	}
	nameExpr struct {
		pos
		name string
	}
	listExpr struct {
		pos
		items []expr
	}
	tupleExpr struct {
		pos
		items []expr
	}
	dictExpr struct {
		pos
		keys, vals []expr
	}
	attrExpr struct { // x.name
		pos
		x    expr
		name string
	}
	itemExpr struct { // x[key]
		pos
		x, key expr
	}
	sliceExpr struct { // x[lo:hi:step]; nil parts are absent
		pos
		x, lo, hi, step expr
	}
	callExpr struct {
		pos
		fn      expr
		args    []expr
		kwNames []string
		kwVals  []expr
		star    expr // *args
		dstar   expr // **kwargs
	}
	filterExpr struct {
		pos
		x    expr // nil in filter blocks and block sets
		name string
		call *callExpr // arguments (fn unused); nil when none
	}
	testExpr struct {
		pos
		x      expr
		name   string
		args   []expr
		negate bool
	}
	unaryExpr struct {
		pos
		op string // "not", "-", "+"
		x  expr
	}
	binExpr struct {
		pos
		op   string // + - * / // % ** ~ and or
		l, r expr
	}
	compareExpr struct { // chained: x op1 y op2 z
		pos
		first expr
		ops   []string // == != < > <= >= in notin
		rest  []expr
	}
	condExpr struct {
		pos
		cond, yes, no expr // no is nil when absent
	}
)
