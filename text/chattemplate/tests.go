package chattemplate

import "fmt"

// testFunc implements a test ("x is name(args)").
type testFunc func(r *renderer, v any, args []any) (bool, error)

// tests are Jinja2's tests. They are set in init because the filter and
// test tests, and the select filters, look names up in these tables.
var tests map[string]testFunc

func init() {
	tests = map[string]testFunc{
		"!=":          compareTest("!="),
		"<":           compareTest("<"),
		"<=":          compareTest("<="),
		"==":          compareTest("=="),
		">":           compareTest(">"),
		">=":          compareTest(">="),
		"boolean":     is(isBool),
		"callable":    is(isCallable),
		"defined":     is(func(v any) bool { return !isUndefined(v) }),
		"divisibleby": withArg("divisibleby", testDivisibleBy),
		"eq":          compareTest("=="),
		"equalto":     compareTest("=="),
		"escaped":     is(func(any) bool { return false }),
		"even":        testEven,
		"false":       is(func(v any) bool { b, ok := v.(bool); return ok && !b }),
		"filter":      is(func(v any) bool { s, ok := v.(string); return ok && len(s) < 100 && filters[s] != nil }),
		"float":       is(func(v any) bool { _, ok := v.(float64); return ok }),
		"ge":          compareTest(">="),
		"greaterthan": compareTest(">"),
		"gt":          compareTest(">"),
		"in":          withArg("in", func(r *renderer, v, a any) (bool, error) { return r.contains(a, v, 0) }),
		"integer":     is(func(v any) bool { _, ok := v.(int64); return ok }),
		"iterable":    is(isIterable),
		"le":          compareTest("<="),
		"lessthan":    compareTest("<"),
		"lower":       strTestOf(func(s string) bool { return caseTest(s, true) }),
		"lt":          compareTest("<"),
		"mapping":     is(func(v any) bool { _, ok := v.(*dictV); return ok }),
		"ne":          compareTest("!="),
		"none":        is(func(v any) bool { return v == nil }),
		"number":      is(func(v any) bool { _, _, _, ok := number(v); return ok }),
		"odd":         testOdd,
		"sameas":      withArg("sameas", testSameAs),
		"sequence":    is(isIterable), // every iterable value is also a sequence
		"string":      is(func(v any) bool { _, ok := v.(string); return ok }),
		"test":        is(func(v any) bool { s, ok := v.(string); return ok && len(s) < 100 && tests[s] != nil }),
		"true":        is(func(v any) bool { b, ok := v.(bool); return ok && b }),
		"undefined":   is(isUndefined),
		"upper":       strTestOf(func(s string) bool { return caseTest(s, false) }),
	}
}

// is is a test without arguments.
func is(f func(v any) bool) testFunc {
	return func(r *renderer, v any, args []any) (bool, error) { return f(v), nil }
}

// strTestOf is a test without arguments of v's str.
func strTestOf(f func(s string) bool) testFunc {
	return func(r *renderer, v any, args []any) (bool, error) {
		s, err := r.b.str("test", v)
		if err != nil {
			return false, err
		}
		if err := r.b.workFor("test", 4*int64(len(s))); err != nil {
			return false, err
		}
		return f(s), nil
	}
}

// withArg is a test of one argument.
func withArg(name string, f func(r *renderer, v, a any) (bool, error)) testFunc {
	return func(r *renderer, v any, args []any) (bool, error) {
		if len(args) != 1 {
			return false, fmt.Errorf("test %s takes one argument", name)
		}
		return f(r, v, args[0])
	}
}

// compareTest is a comparison such as "x is gt 1".
func compareTest(op string) testFunc {
	return withArg(op, func(r *renderer, v, a any) (bool, error) { return r.compare(op, v, a, 0) })
}

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

func isUndefined(v any) bool {
	_, ok := v.(*undefV)
	return ok
}

// isCallable is the callable test; Jinja2's Undefined is callable (and
// fails when called).
func isCallable(v any) bool {
	switch v.(type) {
	case *funcV, *macroV, *undefV:
		return true
	}
	return false
}

func isIterable(v any) bool {
	switch v.(type) {
	case string, *listV, *dictV, *undefV:
		return true
	}
	return false
}

func testDivisibleBy(r *renderer, v, a any) (bool, error) {
	m, err := r.binary("%", v, a, 0)
	if err != nil {
		return false, err
	}
	return pyEqual(nil, m, int64(0)), nil
}

func testEven(r *renderer, v any, args []any) (bool, error) {
	i, err := intOperand(v)
	return i%2 == 0, err
}

func testOdd(r *renderer, v any, args []any) (bool, error) {
	i, err := intOperand(v)
	return i%2 != 0, err
}

// intOperand is v as an int for even and odd (a float truncated).
func intOperand(v any) (int64, error) {
	i, _, isFloat, ok := number(v)
	if ok && !isFloat {
		return i, nil
	}
	if f, ok := v.(float64); ok {
		return int64(f), nil
	}
	if u, ok := v.(*undefV); ok {
		return 0, undefErr(u, 0)
	}
	return 0, fmt.Errorf("unsupported operand type for %%: '%s'", typeName(v))
}

// testSameAs is Python's "is": the same object, or equal immutable
// values.
func testSameAs(r *renderer, v, a any) (bool, error) {
	if x, ok := v.(float64); ok {
		y, ok := a.(float64)
		return ok && x == y, nil
	}
	return v == a, nil
}
