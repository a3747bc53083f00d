package codeexec

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The allocation guard.
//
// go.starlark.net bounds a single string, list or tuple repetition to 2^30
// elements (so "x" * 10000000000 fails) but nothing else: [0] * (1 << 29) would
// still ask Go for 8 GiB, a loop can double a string thirty times in a few
// dozen steps, and built-ins such as list(range(n)), str.replace and
// str.join allocate without executing a single counted step. Go cannot cap
// the memory of one goroutine, so the guard counts instead: every
// operation that can create a value larger than a constant (see rewrite.go
// for how they are intercepted, plus every universe built-in and every
// method) first estimates the bytes its result needs and fails if the run's
// budget cannot cover it, then charges the budget. Estimates are
// conservative: a run is charged for what it creates, not for what stays
// alive, so garbage counts too.
//
// What escapes the budget is bounded by the step limit instead: list,
// dict and tuple literals, comprehensions and list.append create O(1)
// values per executed step.

// errBudget is wrapped by every allocation-budget failure.
var errBudget = errors.New("allocation budget exceeded")

// maxIntBits caps the size of integers. Big-integer multiplication is
// superlinear and runs inside one uninterruptible step, so the byte budget
// alone would still allow single steps of seconds (x = x * x a few dozen
// times). No task needs more than a few thousand bits.
const maxIntBits = 1 << 16

// maxIntDigits caps int(string), whose conversion is also superlinear; it
// is Python's own default limit (sys.get_int_max_str_digits).
const maxIntDigits = 4300

var errIntTooLarge = fmt.Errorf("integer too large: results are limited to %d bits", maxIntBits)

// maxReprDepth is the deepest nesting of containers that str, repr, print
// and formatting accept. Deeper values are refused before Starlark's own
// recursive printer sees them.
const maxReprDepth = 100

// Per-element byte estimates: a slot in a list or tuple, and a slot plus
// a small new value (a one-character string, an enumerate pair).
const (
	slotBytes    = 16
	elementBytes = 32
	entryBytes   = 64
)

// budget is the allocation account of one run (loading the program, or
// one test call). It lives in the thread's locals.
type budget struct {
	limit, used int64
}

const budgetKey = "codeexec.budget"

func budgetOf(thread *starlark.Thread) *budget {
	b, _ := thread.Local(budgetKey).(*budget)
	if b == nil {
		// A thread without a budget is a programming error in this
		// package; failing closed keeps it from running unguarded.
		return &budget{}
	}
	return b
}

// remaining is how many bytes the run may still allocate.
func (b *budget) remaining() int64 { return b.limit - b.used }

// check fails if an operation estimated to need n bytes does not fit.
func (b *budget) check(n int64) error {
	if n > b.remaining() {
		return fmt.Errorf("%w: the program tried to allocate about %s, over the limit of %s per run",
			errBudget, formatBytes(satAdd(max(b.used, 0), n)), formatBytes(b.limit))
	}
	return nil
}

// charge records n allocated bytes, failing if that exceeds the budget.
func (b *budget) charge(n int64) error {
	if err := b.check(n); err != nil {
		b.used = b.limit + 1 // sticky: nothing else fits either
		return err
	}
	b.used += n
	return nil
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// satMul multiplies non-negative a and b, saturating at MaxInt64.
func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// intBytes is the size of a big integer's magnitude; small integers are
// not heap-allocated and cost nothing.
func intBytes(x starlark.Int) int64 {
	if v, ok := x.Int64(); ok {
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return 0
		}
		return 8
	}
	return int64(x.BigInt().BitLen()/8) + 16
}

// sizeOf is the shallow size of a value: its own storage, not that of the
// elements, which were charged when they were created.
func sizeOf(v starlark.Value) int64 {
	switch v := v.(type) {
	case starlark.String:
		return int64(len(v)) + 16
	case starlark.Bytes:
		return int64(len(v)) + 16
	case starlark.Int:
		return intBytes(v)
	case *starlark.List:
		return slotBytes*int64(v.Len()) + 32
	case starlark.Tuple:
		return slotBytes*int64(len(v)) + 32
	case *starlark.Dict:
		return entryBytes*int64(v.Len()) + 64
	case *starlark.Set:
		return entryBytes*int64(v.Len()) + 64
	}
	return 0 // scalars: bounded by the step count
}

// lenOf is the length of a sized value, 0 for others. A range counts as
// its length: materializing it is what the guarded built-ins would do.
func lenOf(v starlark.Value) int64 {
	if s, ok := v.(starlark.Sequence); ok {
		return int64(s.Len())
	}
	if s, ok := v.(starlark.Indexable); ok {
		return int64(s.Len())
	}
	if m, ok := v.(interface{ Len() int }); ok {
		return int64(m.Len())
	}
	return 0
}

// reprSize estimates the length of str(v) or repr(v), stopping as soon as
// the estimate passes limit. The walk visits each shared sub-value as often
// as the printer would, so a value built by repeated doubling
// (a = [a, a]) is caught by its printed size, not its memory; every visit
// adds at least one byte, so the walk itself is bounded by limit. deep
// reports containers nested more than maxReprDepth levels, which the
// printer (recursive, and quadratic in the depth of nested lists) must not
// see.
func reprSize(v starlark.Value, limit int64) (n int64, deep bool) {
	var walk func(v starlark.Value, depth int)
	walk = func(v starlark.Value, depth int) {
		if n > limit || deep {
			return
		}
		if depth > maxReprDepth {
			deep = true
			return
		}
		switch v := v.(type) {
		case starlark.String:
			n += int64(len(v)) + 2
		case starlark.Bytes:
			n += 4*int64(len(v)) + 3
		case starlark.Int:
			n += 2 + 3*intBytes(v)
		case starlark.Indexable: // lists, tuples, ranges
			if v.Type() == "range" {
				n += 40
				return
			}
			n += 2
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
				n += 2
				if n > limit || deep {
					return
				}
			}
		case starlark.IterableMapping: // dicts
			n += 2
			it := v.Iterate()
			defer it.Done()
			var k starlark.Value
			for it.Next(&k) {
				walk(k, depth+1)
				if val, found, _ := v.Get(k); found {
					walk(val, depth+1)
				}
				n += 4
				if n > limit || deep {
					return
				}
			}
		case starlark.Iterable: // sets
			n += 7
			it := v.Iterate()
			defer it.Done()
			var x starlark.Value
			for it.Next(&x) {
				walk(x, depth+1)
				n += 2
				if n > limit || deep {
					return
				}
			}
		default: // None, bools, floats, functions: short fixed texts
			n += 32
		}
	}
	walk(v, 0)
	return n, deep
}

var errTooDeep = fmt.Errorf("%w: a value nested more than %d levels deep cannot be printed", errBudget, maxReprDepth)

// reprTotal bounds the printed length of vs together, failing for values
// nested too deeply to print.
func reprTotal(limit int64, vs ...starlark.Value) (int64, error) {
	var total int64
	for _, v := range vs {
		n, deep := reprSize(v, limit-total)
		if deep {
			return 0, errTooDeep
		}
		total = satAdd(total, n)
		if total > limit {
			break
		}
	}
	return total, nil
}

// binaryEstimate bounds the size of x op y. Repetition and string
// formatting can grow without bound; every other operator's result is at
// most about as large as its operands.
func binaryEstimate(op syntax.Token, x, y starlark.Value, limit int64) (int64, error) {
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok && intResultBits(op, xi, yi) > maxIntBits {
			return 0, errIntTooLarge
		}
	}
	switch op {
	case syntax.STAR:
		return mulEstimate(x, y), nil
	case syntax.PERCENT:
		if s, ok := x.(starlark.String); ok {
			args := []starlark.Value{y}
			if t, ok := y.(starlark.Tuple); ok {
				args = t
			}
			return formatEstimate(string(s), args, limit)
		}
	case syntax.LTLT:
		return sizeOf(x) + 64, nil // Starlark caps shift counts at 511 bits
	}
	return sizeOf(x) + sizeOf(y), nil
}

// intBits is the bit length of |x|.
func intBits(x starlark.Int) int64 {
	if v, ok := x.Int64(); ok {
		if v < 0 {
			v = -v
		}
		return int64(bits.Len64(uint64(v)))
	}
	return int64(x.BigInt().BitLen())
}

// intResultBits bounds the bit length of x op y for integers.
func intResultBits(op syntax.Token, x, y starlark.Int) int64 {
	bx, by := intBits(x), intBits(y)
	switch op {
	case syntax.STAR:
		return bx + by
	case syntax.LTLT:
		if n, ok := y.Int64(); ok && n >= 0 && n < 1<<20 {
			return bx + n
		}
		return bx // Starlark rejects the shift count itself
	}
	return max(bx, by) + 1
}

func mulEstimate(x, y starlark.Value) int64 {
	if xi, ok := x.(starlark.Int); ok {
		if yi, ok := y.(starlark.Int); ok {
			return intBytes(xi) + intBytes(yi) + 16
		}
		x, y = y, x // n * seq
	}
	n, ok := y.(starlark.Int)
	if !ok {
		return sizeOf(x) + sizeOf(y)
	}
	k, ok := n.Int64()
	if !ok {
		return math.MaxInt64
	}
	if k <= 0 {
		return 0
	}
	unit := int64(1)
	switch x.(type) {
	case *starlark.List, starlark.Tuple:
		unit = slotBytes
	}
	return satMul(satMul(lenOf(x), unit), k)
}

// formatEstimate bounds the output of format % args or format.format(...):
// each conversion in the format can print the largest argument (named
// conversions and repeated {0} reuse arguments).
func formatEstimate(format string, args []starlark.Value, limit int64) (int64, error) {
	var biggest int64
	for _, a := range args {
		n, err := reprTotal(limit, a)
		if err != nil {
			return 0, err
		}
		biggest = max(biggest, n)
	}
	conversions := int64(strings.Count(format, "%") + strings.Count(format, "{"))
	return satAdd(int64(len(format)), satMul(conversions, biggest)), nil
}

// guardBinary is the guard of one arithmetic operator.
func guardBinary(name string, op syntax.Token) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		b := budgetOf(thread)
		est, err := binaryEstimate(op, x, y, b.remaining())
		if err != nil {
			return nil, err
		}
		if err := b.check(est); err != nil {
			return nil, err
		}
		z, err := starlark.Binary(op, x, y)
		if err != nil {
			return nil, err
		}
		return z, b.charge(max(est, sizeOf(z)))
	})
}

// guardAug is the guard of an augmented assignment x op= y: it charges the
// growth and returns y, which the native assignment then applies.
func guardAug(name string, op syntax.Token) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		x, y := args[0], args[1]
		b := budgetOf(thread)
		if _, isList := x.(*starlark.List); isList && op == syntax.PLUS {
			return y, b.charge(slotBytes * lenOf(y)) // list += extends in place
		}
		est, err := binaryEstimate(op, x, y, b.remaining())
		if err != nil {
			return nil, err
		}
		return y, b.charge(est)
	})
}

func guardUnary(name string, op syntax.Token) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		z, err := starlark.Unary(op, args[0])
		if err != nil {
			return nil, err
		}
		return z, budgetOf(thread).charge(sizeOf(z))
	})
}

// guardSlice charges the copy a slice made.
func guardSlice(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	return args[0], budgetOf(thread).charge(sizeOf(args[0]))
}

// guardAttr looks up x.name and wraps the methods that can allocate.
func guardAttr(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	x, name := args[0], string(args[1].(starlark.String))
	if h, ok := x.(starlark.HasAttrs); ok {
		v, err := h.Attr(name)
		if err != nil {
			return nil, err
		}
		if v != nil {
			return wrapMethod(v), nil
		}
	}
	return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
}

// cheapMethods allocate at most a constant amount per call, or nothing;
// they run unwrapped, which keeps inner loops (out.append(x)) fast.
var cheapMethods = map[string]bool{
	"append": true, "pop": true, "remove": true, "insert": true, "clear": true, "index": true,
	"get": true, "setdefault": true, "add": true, "discard": true, "count": true, "find": true,
	"rfind": true, "rindex": true, "startswith": true, "endswith": true, "isalpha": true,
	"isdigit": true, "isalnum": true, "islower": true, "isupper": true, "isspace": true,
	"istitle": true, "elems": true, "codepoints": true, "elem_ords": true, "codepoint_ords": true,
	"popitem": true, "issubset": true, "issuperset": true, "isdisjoint": true,
}

// wrapMethod guards a bound built-in method: it checks an estimate of the
// result before the call and charges the larger of the estimate and the
// result's size after it.
func wrapMethod(v starlark.Value) starlark.Value {
	m, ok := v.(*starlark.Builtin)
	if !ok || m.Receiver() == nil || cheapMethods[m.Name()] {
		return v
	}
	return starlark.NewBuiltin(m.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		b := budgetOf(thread)
		est, err := methodEstimate(m.Name(), m.Receiver(), args, kwargs, b)
		if err != nil {
			return nil, err
		}
		if err := b.check(est); err != nil {
			return nil, err
		}
		z, err := m.CallInternal(thread, args, kwargs)
		if err != nil {
			return nil, err
		}
		return z, b.charge(max(est, sizeOf(z)))
	})
}

// methodEstimate bounds the bytes a method call allocates.
func methodEstimate(name string, recv starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple, b *budget) (int64, error) {
	s, isString := recv.(starlark.String)
	switch {
	case isString && name == "join" && len(args) == 1:
		return joinEstimate(len(s), args[0], b.remaining()), nil
	case isString && name == "replace" && len(args) >= 2:
		old, ok1 := args[0].(starlark.String)
		repl, ok2 := args[1].(starlark.String)
		if !ok1 || !ok2 {
			return 0, nil // the method reports the type error
		}
		occ := int64(strings.Count(string(s), string(old)))
		if len(args) == 3 {
			if n, ok := args[2].(starlark.Int); ok {
				if k, ok := n.Int64(); ok && k >= 0 {
					occ = min(occ, k)
				}
			}
		}
		return satAdd(int64(len(s)), satMul(occ, int64(len(repl)))), nil
	case isString && name == "format":
		vals := append([]starlark.Value(nil), args...)
		for _, kv := range kwargs {
			vals = append(vals, kv[1])
		}
		return formatEstimate(string(s), vals, b.remaining())
	case isString && splitMethods[name]:
		// At most one new small string per character of the receiver.
		return elementBytes * (int64(len(s)) + 1), nil
	case isString:
		// upper, strip, removeprefix...: one string no longer than the
		// receiver.
		return int64(len(s)) + 16, nil
	case name == "extend" || name == "update":
		// In-place growth by the arguments; the receiver is not copied
		// (charging it would make extending a long list in a loop
		// quadratic).
		var est int64
		for _, a := range args {
			est = satAdd(est, entryBytes*lenOf(a))
		}
		for _, kv := range kwargs {
			est = satAdd(est, entryBytes*(1+lenOf(kv[1])))
		}
		return est, nil
	}
	// keys, values, items, union, ...: a copy of the receiver plus at most
	// the arguments.
	est := entryBytes * lenOf(recv)
	for _, a := range args {
		est = satAdd(est, entryBytes*lenOf(a))
	}
	return est, nil
}

// splitMethods are the string methods that return a list of pieces.
var splitMethods = map[string]bool{
	"split": true, "rsplit": true, "splitlines": true, "partition": true, "rpartition": true,
}

// joinEstimate sums the lengths of the strings sep.join would concatenate.
// Non-strings stop the walk: join itself will reject them.
func joinEstimate(sep int, iterable starlark.Value, limit int64) int64 {
	it, ok := iterable.(starlark.Iterable)
	if !ok {
		return 0
	}
	if lenOf(iterable) > limit {
		return lenOf(iterable)
	}
	iter := it.Iterate()
	defer iter.Done()
	var total int64
	var x starlark.Value
	for iter.Next(&x) {
		s, ok := x.(starlark.String)
		if !ok {
			break
		}
		total += int64(len(s)) + int64(sep)
		if total > limit {
			break
		}
	}
	return total + 16
}

// universeEstimates bound the allocation of the universe built-ins that
// can allocate in proportion to their arguments. Built-ins absent here
// (len, type, ord, ...) allocate a constant amount, or their result's
// size, which the wrapper charges.
var universeEstimates = map[string]func(b *budget, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error){
	"list":      elementsEstimate(slotBytes),
	"tuple":     elementsEstimate(slotBytes),
	"sorted":    elementsEstimate(elementBytes),
	"reversed":  elementsEstimate(slotBytes),
	"set":       elementsEstimate(entryBytes),
	"dict":      elementsEstimate(entryBytes),
	"enumerate": elementsEstimate(entryBytes),
	"zip":       elementsEstimate(entryBytes),
	// min, max, any and all allocate nothing, but a huge range would keep
	// them iterating inside Go where cancellation cannot reach them.
	"min": elementsEstimate(1),
	"max": elementsEstimate(1),
	"any": elementsEstimate(1),
	"all": elementsEstimate(1),
	"str": reprEstimate, "repr": reprEstimate, "print": reprEstimate, "fail": reprEstimate,
	"int": func(_ *budget, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) > 0 {
			if s, ok := args[0].(starlark.String); ok && len(s) > maxIntDigits {
				return 0, fmt.Errorf("int: string of %d characters is too long to convert (limit %d)", len(s), maxIntDigits)
			}
		}
		return 0, nil
	},
}

func elementsEstimate(unit int64) func(*budget, starlark.Tuple, []starlark.Tuple) (int64, error) {
	return func(_ *budget, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
		var n int64
		for _, a := range args {
			n = satAdd(n, satMul(unit, lenOf(a)))
		}
		for _, kv := range kwargs {
			n = satAdd(n, satMul(unit, 1+lenOf(kv[1])))
		}
		return n, nil
	}
}

func reprEstimate(b *budget, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	vals := append([]starlark.Value(nil), args...)
	for _, kv := range kwargs {
		vals = append(vals, kv[1])
	}
	return reprTotal(b.remaining(), vals...)
}

// guardUniverse wraps a universe built-in with the budget check.
func guardUniverse(orig *starlark.Builtin) *starlark.Builtin {
	estimate := universeEstimates[orig.Name()]
	return starlark.NewBuiltin(orig.Name(), func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		b := budgetOf(thread)
		var est int64
		if estimate != nil {
			var err error
			if est, err = estimate(b, args, kwargs); err != nil {
				return nil, err
			}
			if err := b.check(est); err != nil {
				return nil, err
			}
		}
		z, err := orig.CallInternal(thread, args, kwargs)
		if err != nil {
			return nil, err
		}
		return wrapMethod(z), b.charge(max(est, sizeOf(z)))
	})
}

// predeclared holds the guards and the guarded universe. It is built once:
// built-ins are immutable and keep their per-run state in the thread.
var predeclared = func() starlark.StringDict {
	d := starlark.StringDict{}
	for name, v := range starlark.Universe {
		if b, ok := v.(*starlark.Builtin); ok {
			d[name] = guardUniverse(b)
		}
	}
	for op, name := range binaryGuards {
		d[name] = guardBinary(name, op)
		aug := "$aug" + name[1:]
		d[aug] = guardAug(aug, op)
	}
	d["$neg"] = guardUnary("$neg", syntax.MINUS)
	d["$inv"] = guardUnary("$inv", syntax.TILDE)
	d["$attr"] = starlark.NewBuiltin("$attr", guardAttr)
	d["$slice"] = starlark.NewBuiltin("$slice", guardSlice)
	d.Freeze()
	return d
}()
