package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

func (r *renderer) unary(op string, x any, line int) (any, error) {
	if op == "not" {
		return !truthy(x), nil
	}
	if u, ok := x.(*undefV); ok {
		return nil, undefErr(u, line)
	}
	i, f, isFloat, ok := number(x)
	switch {
	case !ok:
		return nil, r.rtErr(line, "bad operand type for unary %s: '%s'", op, typeName(x))
	case op == "+" && isFloat:
		return f, nil
	case op == "+":
		return i, nil
	case isFloat:
		return -f, nil
	case i == math.MinInt64:
		return nil, r.rtErr(line, "integer overflow")
	}
	return -i, nil
}

// compare evaluates one comparison of a chain.
func (r *renderer) compare(op string, a, b any, line int) (bool, error) {
	switch op {
	case "==", "!=":
		eq := pyEqual(r.b, a, b)
		if err := r.b.failed(); err != nil {
			return false, wrap(err, line)
		}
		return eq == (op == "=="), nil
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
	c, ok := pyCompare(r.b, a, b)
	if err := r.b.failed(); err != nil {
		return false, wrap(err, line)
	}
	switch {
	case !ok:
		return false, r.rtErr(line, "'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
	case c == 2:
		return false, nil // NaN
	case op == "<":
		return c < 0, nil
	case op == ">":
		return c > 0, nil
	case op == "<=":
		return c <= 0, nil
	}
	return c >= 0, nil
}

// contains is Python's "x in container".
func (r *renderer) contains(container, x any, line int) (bool, error) {
	switch c := container.(type) {
	case string:
		xs, ok := x.(string)
		if !ok {
			if u, isU := x.(*undefV); isU {
				return false, undefErr(u, line)
			}
			return false, r.rtErr(line, "'in <string>' requires string as left operand, not %s", typeName(x))
		}
		if err := r.b.workFor("in", int64(len(c))+int64(len(xs))); err != nil {
			return false, wrap(err, line)
		}
		return strings.Contains(c, xs), nil
	case *listV:
		in := containsEqual(r.b, c.items, x)
		return in, wrap(r.b.failed(), line)
	case *dictV:
		if err := r.b.workFor("in", keyWork(x)); err != nil {
			return false, wrap(err, line)
		}
		_, ok := c.get(x)
		if _, hashable := hashKey(x); !ok && !hashable {
			return false, r.rtErr(line, "unhashable type: '%s'", typeName(x))
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
		v, err := r.tilde(a, b)
		return v, wrap(err, line)
	}
	for _, v := range []any{a, b} {
		if u, ok := v.(*undefV); ok {
			return nil, undefErr(u, line)
		}
	}
	if _, _, _, ok := number(a); ok {
		if _, _, _, ok := number(b); ok {
			v, err := arith(op, a, b)
			return v, wrap(err, line)
		}
	}
	var v any
	var err error
	switch op {
	case "+":
		v, err = concat(r.b, a, b)
	case "*":
		v, err = repeat(r.b, a, b)
	case "%":
		if f, ok := a.(string); ok {
			v, err = pyPercentFormat(r.b, "%", f, b)
		}
	}
	if v == nil && err == nil {
		err = unsupported(op, a, b)
	}
	return v, wrap(err, line)
}

// unsupported is the error of an operator on operands it does not take.
func unsupported(op string, a, b any) error {
	if op == "+" {
		if _, ok := a.(string); ok {
			return fmt.Errorf("can only concatenate str (not \"%s\") to str", typeName(b))
		}
		if l, ok := a.(*listV); ok && !l.tuple {
			return fmt.Errorf("can only concatenate list (not \"%s\") to list", typeName(b))
		}
	}
	return fmt.Errorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
}

// tilde is a ~ b: the strs of a and b joined, within the budget.
func (r *renderer) tilde(a, b any) (any, error) {
	as, err := r.b.str("~", a)
	if err != nil {
		return nil, err
	}
	bs, err := r.b.str("~", b)
	if err != nil {
		return nil, err
	}
	if err := r.b.takeStr("~", int64(len(as))+int64(len(bs))); err != nil {
		return nil, err
	}
	return as + bs, nil
}

// concat is a + b for two strs, two lists or two tuples, within the
// budget; nil for others.
func concat(bud *budget, a, b any) (any, error) {
	if as, ok := a.(string); ok {
		bs, ok := b.(string)
		if !ok {
			return nil, nil
		}
		if err := bud.takeStr("+", int64(len(as))+int64(len(bs))); err != nil {
			return nil, err
		}
		return as + bs, nil
	}
	al, aList := a.(*listV)
	bl, bList := b.(*listV)
	if !aList || !bList || al.tuple != bl.tuple {
		return nil, nil
	}
	if err := bud.takeList("+", int64(len(al.items))+int64(len(bl.items))); err != nil {
		return nil, err
	}
	out := &listV{items: make([]any, 0, len(al.items)+len(bl.items)), tuple: al.tuple}
	out.items = append(append(out.items, al.items...), bl.items...)
	return out, nil
}

// repeat is seq * n or n * seq for a str, list or tuple and an int,
// within the budget; nil for others.
func repeat(bud *budget, a, b any) (any, error) {
	seq, n := a, b
	if _, _, _, ok := number(a); ok {
		seq, n = b, a
	}
	cnt, _, isFloat, ok := number(n)
	if !ok || isFloat {
		return nil, nil
	}
	cnt = max(cnt, 0)
	switch sq := seq.(type) {
	case string:
		if err := bud.takeStr("*", mulSat(int64(len(sq)), cnt)); err != nil {
			return nil, err
		}
		return strings.Repeat(sq, int(cnt)), nil
	case *listV:
		if err := bud.takeList("*", mulSat(int64(len(sq.items)), cnt)); err != nil {
			return nil, err
		}
		out := &listV{items: make([]any, 0, len(sq.items)*int(cnt)), tuple: sq.tuple}
		if len(sq.items) == 0 {
			return out, nil
		}
		for range cnt {
			out.items = append(out.items, sq.items...)
		}
		return out, nil
	}
	return nil, nil
}

// arith is Python's arithmetic on two numbers (bools are ints).
func arith(op string, a, b any) (any, error) {
	ai, af, aFloat, _ := number(a)
	bi, bf, bFloat, _ := number(b)
	switch {
	case op == "/":
		if bf == 0 {
			return nil, errors.New("division by zero")
		}
		return af / bf, nil
	case aFloat || bFloat || op == "**" && bi < 0:
		return floatArith(op, af, bf)
	}
	return intArith(op, ai, bi)
}

// intArith is an operator on ints, which must not overflow.
func intArith(op string, a, b int64) (any, error) {
	var res int64
	ok := true
	switch op {
	case "+":
		res = a + b
		ok = !(a > 0 && b > 0 && res < 0) && !(a < 0 && b < 0 && res >= 0)
	case "-":
		res = a - b
		ok = !(a >= 0 && b < 0 && res < 0) && !(a < 0 && b > 0 && res >= 0)
	case "*":
		res, ok = mulInt(a, b)
	case "//", "%":
		return intDivMod(op, a, b)
	case "**":
		res, ok = powInt(a, b)
	default:
		return nil, fmt.Errorf("unknown operator %s", op)
	}
	if !ok {
		return nil, errors.New("integer overflow")
	}
	return res, nil
}

// intDivMod is a // b or a % b on ints, rounding towards negative
// infinity as Python does.
func intDivMod(op string, a, b int64) (any, error) {
	if b == 0 {
		return nil, errors.New("integer division or modulo by zero")
	}
	q, m := a/b, a%b
	if m != 0 && (m < 0) != (b < 0) {
		q--
		m += b
	}
	if op == "//" {
		return q, nil
	}
	return m, nil
}

// powInt is a ** b for b >= 0, reporting false on overflow.
func powInt(base, e int64) (int64, bool) {
	res := int64(1)
	for e > 0 {
		var ok bool
		if e&1 == 1 {
			if res, ok = mulInt(res, base); !ok {
				return 0, false
			}
		}
		e >>= 1
		if e > 0 {
			if base, ok = mulInt(base, base); !ok {
				return 0, false
			}
		}
	}
	return res, true
}

// floatArith is an operator on floats, as Python's float does it.
func floatArith(op string, a, b float64) (any, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "//":
		if b == 0 {
			return nil, errors.New("float floor division by zero")
		}
		return math.Floor(a / b), nil
	case "%":
		if b == 0 {
			return nil, errors.New("float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, nil
	case "**":
		return floatPow(a, b)
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

// floatPow is a ** b on floats, or on an int and a negative int.
func floatPow(a, b float64) (any, error) {
	if a == 0 && b < 0 {
		return nil, errors.New("0.0 cannot be raised to a negative power")
	}
	res := math.Pow(a, b)
	if res != res {
		return nil, errors.New("complex results are not supported")
	}
	return res, nil
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
