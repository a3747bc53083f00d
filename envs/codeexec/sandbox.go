package codeexec

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Limits bound what one submission may do. The zero value is not useful;
// take them from a Config with Config.Limits.
type Limits struct {
	// MaxSteps is the Starlark step budget of loading the program and of
	// each test call.
	MaxSteps uint64
	// Timeout bounds the wall-clock time of a whole evaluation.
	Timeout time.Duration
	// MaxAllocBytes is the allocation budget of loading the program and of
	// each test call (see guard.go).
	MaxAllocBytes int64
	// MaxOutputBytes caps the captured print output of an evaluation.
	MaxOutputBytes int
	// MaxCallDepth caps the nesting of Starlark calls.
	MaxCallDepth int
	// AllowWhile and AllowRecursion enable the Starlark dialect options.
	AllowWhile, AllowRecursion bool
	// MaxSourceBytes is the largest program accepted.
	MaxSourceBytes int
}

// Limits returns the sandbox limits the configuration sets.
func (c *Config) Limits() Limits {
	return Limits{
		MaxSteps:       c.MaxSteps,
		Timeout:        time.Duration(c.TimeoutSeconds * float64(time.Second)),
		MaxAllocBytes:  c.MaxAllocBytes,
		MaxOutputBytes: c.MaxOutputBytes,
		MaxCallDepth:   c.MaxCallDepth,
		AllowWhile:     c.AllowWhile,
		AllowRecursion: c.AllowRecursion,
		MaxSourceBytes: c.MaxSourceBytes,
	}
}

// Sandbox runs untrusted Starlark programs against test cases.
//
// Containment, per run (loading the program, and each test call):
//   - Hermetic: the program sees only the Starlark universe (guarded, see
//     guard.go); load fails, print goes to a bounded buffer, and module
//     globals are frozen after loading so that tests cannot share state.
//   - Time: a step budget (Thread.SetMaxExecutionSteps) per run and a
//     wall-clock timeout per evaluation, enforced by a timer that cancels
//     the running thread. A single built-in call is not interruptible, so
//     the timeout fires when it returns; the allocation budget bounds how
//     much work such a call is given.
//   - Memory: the allocation budget (guard.go) plus the step budget for
//     the constant-size values each step can create.
//   - Stack: calls nest at most MaxCallDepth deep (checked every
//     depthCheckSteps steps, so the limit may be passed by a few frames),
//     source is capped at MaxSourceBytes and bracket nesting at
//     maxNesting, which bounds the parser's recursion.
//   - Panics in the interpreter or a built-in are recovered and reported as
//     errors of the test that caused them.
//
// Not contained, or only approximately:
//   - The budget counts estimated result sizes, not Go's real allocations;
//     transient garbage inside a built-in (a growing byte slice) makes the
//     real figure a small multiple of the budget (tests measure under 8x
//     per call, with the heap peaking within 8 budgets of its baseline).
//     That peak assumes a collector that keeps up: on a loaded machine
//     the garbage of earlier runs stayed in the heap more than 100 MiB
//     deep at the default budget, until a memory limit (GOMEMLIMIT, or
//     debug.SetMemoryLimit) made the collector reach it sooner.
//   - One built-in call runs to completion: sorting or comparing large
//     values, or printing a 100,000-deep tuple into an error message,
//     delays the timeout by that call's duration (tens of milliseconds at
//     the default budget).
//   - Error messages may embed a value's repr (a missing dict key); such a
//     message is built once, then truncated in the feedback.
//   - Evaluation runs on the caller's goroutine: the sandbox bounds work,
//     it does not isolate a Go runtime fault (none is known to be
//     reachable from Starlark with these guards).
//
// A Sandbox is safe for concurrent use.
type Sandbox struct {
	limits Limits
	opts   syntax.FileOptions
}

// NewSandbox returns a sandbox enforcing l.
func NewSandbox(l Limits) *Sandbox {
	return &Sandbox{
		limits: l,
		opts: syntax.FileOptions{
			Set:             true,
			While:           l.AllowWhile,
			TopLevelControl: true,
			GlobalReassign:  true,
			Recursion:       l.AllowRecursion,
		},
	}
}

// TestResult is the outcome of one test call.
type TestResult struct {
	// Passed reports whether the call returned the expected value.
	Passed bool
	// Got is the repr of the returned value ("" if the call failed).
	Got string
	// Err describes why the call failed ("" if it returned).
	Err string
	// Timeout reports that the step budget or the wall clock ran out.
	Timeout bool
}

// Report is the outcome of evaluating one program.
type Report struct {
	// CompileError is set when the program could not be loaded (syntax
	// error, resolution error, error at top level, missing function); no
	// test ran then.
	CompileError string
	// Results has one entry per test, in order, unless CompileError is set.
	Results []TestResult
	// Passed counts the passed tests.
	Passed int
	// Timeout reports that some run hit the step budget or the wall clock.
	Timeout bool
	// Output is the captured print output, at most MaxOutputBytes.
	Output string
}

// maxNesting bounds bracket nesting in the source. The parser, resolver,
// compiler and rewriter all recurse on nested expressions; this keeps them
// far from Go's stack limit (a fatal, unrecoverable error).
const maxNesting = 100

// depthCheckSteps is how often (in steps) the call depth is checked. A
// call costs several steps, so the depth can overshoot by a few frames.
const depthCheckSteps = 64

// Cancellation reasons, recognised in error messages.
const (
	reasonSteps    = "step limit exceeded"
	reasonDepth    = "maximum call depth exceeded"
	reasonDeadline = "time limit exceeded"
)

// run is the shared state of one evaluation: the wall-clock watchdog and
// the print buffer.
type run struct {
	limits  Limits
	expired atomic.Bool
	mu      sync.Mutex
	current *starlark.Thread
	out     strings.Builder
	outFull bool
}

// newThread makes the fresh thread of one run and registers it with the
// watchdog.
func (r *run) newThread(name string) *starlark.Thread {
	l := r.limits
	t := &starlark.Thread{Name: name}
	t.SetLocal(budgetKey, &budget{limit: l.MaxAllocBytes})
	t.Print = func(_ *starlark.Thread, msg string) { r.print(msg) }
	// The step limit is applied in slices of depthCheckSteps so that the
	// call depth is inspected regularly; only the last slice cancels.
	t.SetMaxExecutionSteps(min(depthCheckSteps, l.MaxSteps))
	t.OnMaxSteps = func(t *starlark.Thread) {
		switch {
		case t.ExecutionSteps() >= l.MaxSteps:
			t.Cancel(reasonSteps)
		case t.CallStackDepth() > l.MaxCallDepth+1: // +1: the toplevel frame
			t.Cancel(reasonDepth)
		default:
			t.SetMaxExecutionSteps(min(t.ExecutionSteps()+depthCheckSteps, l.MaxSteps))
		}
	}
	r.mu.Lock()
	r.current = t
	r.mu.Unlock()
	if r.expired.Load() {
		t.Cancel(reasonDeadline)
	}
	return t
}

func (r *run) expire() {
	r.expired.Store(true)
	r.mu.Lock()
	if r.current != nil {
		r.current.Cancel(reasonDeadline)
	}
	r.mu.Unlock()
}

func (r *run) print(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outFull {
		return
	}
	room := r.limits.MaxOutputBytes - r.out.Len()
	if len(msg)+1 > room {
		r.out.WriteString(truncate(msg, max(room-4, 0)))
		r.out.WriteString("\n…")
		r.outFull = true
		return
	}
	r.out.WriteString(msg)
	r.out.WriteByte('\n')
}

// Evaluate loads src, looks up the function fn and calls it on every test.
// It never panics and returns within about the configured timeout plus the
// duration of one built-in call.
func (s *Sandbox) Evaluate(src, fn string, tests []TestCase) Report {
	r := &run{limits: s.limits}
	timer := time.AfterFunc(s.limits.Timeout, r.expire)
	defer timer.Stop()

	rep := Report{}
	callable, err := s.load(r, src, fn)
	if err != nil {
		rep.CompileError = err.Error()
		rep.Timeout = isTimeout(rep.CompileError)
		rep.Output = r.output()
		return rep
	}
	rep.Results = make([]TestResult, len(tests))
	for i, tc := range tests {
		res := s.runTest(r, callable, tc)
		rep.Results[i] = res
		if res.Passed {
			rep.Passed++
		}
		rep.Timeout = rep.Timeout || res.Timeout
	}
	rep.Output = r.output()
	return rep
}

func (r *run) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// load parses, guards, compiles and executes src and returns its function
// fn. Every error is a message for the agent.
func (s *Sandbox) load(r *run, src, fn string) (_ starlark.Callable, err error) {
	if len(src) > s.limits.MaxSourceBytes {
		return nil, fmt.Errorf("program too long: %d bytes, the limit is %d", len(src), s.limits.MaxSourceBytes)
	}
	if d := bracketDepth(src); d > maxNesting {
		return nil, fmt.Errorf("brackets nested %d deep; the limit is %d", d, maxNesting)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error while loading the program: %v", p)
		}
	}()
	f, err := s.opts.Parse("solution.star", src, 0)
	if err != nil {
		return nil, fmt.Errorf("syntax error: %s", cleanMessage(err.Error()))
	}
	if err := rewriteFile(f); err != nil {
		return nil, fmt.Errorf("syntax error: %s", cleanMessage(err.Error()))
	}
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return nil, fmt.Errorf("error: %s", cleanMessage(err.Error()))
	}
	thread := r.newThread("load")
	globals, err := prog.Init(thread, predeclared)
	if err != nil {
		return nil, fmt.Errorf("error while loading the program: %s", describeError(err))
	}
	globals.Freeze()
	v, ok := globals[fn]
	if !ok {
		var defined []string
		for name, g := range globals {
			if _, isFn := g.(*starlark.Function); isFn {
				defined = append(defined, name)
			}
		}
		sort.Strings(defined)
		msg := fmt.Sprintf("the program does not define a function named %s", fn)
		if len(defined) > 0 {
			msg += " (it defines " + strings.Join(defined, ", ") + ")"
		}
		return nil, errors.New(msg)
	}
	c, ok := v.(*starlark.Function)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a function", fn, v.Type())
	}
	return c, nil
}

// runTest calls fn on one test case in a fresh thread.
func (s *Sandbox) runTest(r *run, fn starlark.Callable, tc TestCase) (res TestResult) {
	thread := r.newThread("test")
	defer func() {
		if p := recover(); p != nil {
			res = TestResult{Err: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	args := make(starlark.Tuple, len(tc.Args))
	for i, a := range tc.Args {
		args[i] = toStarlark(a)
	}
	got, err := starlark.Call(thread, fn, args, nil)
	if err != nil {
		msg := describeError(err)
		return TestResult{Err: msg, Timeout: isTimeout(msg)}
	}
	want := toStarlark(tc.Want)
	passed, err := strictEqual(got, want)
	res = TestResult{Passed: passed, Got: reprBounded(got, maxShownValue)}
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

// maxShownValue caps the length of a value shown in feedback.
const maxShownValue = 200

// reprBounded renders v like repr, refusing values too large or deep to
// print cheaply.
func reprBounded(v starlark.Value, limit int) string {
	n, deep := reprSize(v, int64(4*limit))
	if deep || n > int64(4*limit) {
		return fmt.Sprintf("<a %s too large to show>", v.Type())
	}
	return truncate(v.String(), limit)
}

// strictEqual compares a returned value with an expected one. Types must
// match exactly (3.0 is not 3, a tuple is not a list, True is not 1), which
// is what the specifications ask for; the recursion follows want, whose
// shape is known and shallow, so a hostile got cannot make it deep.
func strictEqual(got, want starlark.Value) (bool, error) {
	if got.Type() != want.Type() {
		return false, nil
	}
	if wl, ok := want.(*starlark.List); ok {
		gl := got.(*starlark.List)
		if gl.Len() != wl.Len() {
			return false, nil
		}
		for i := range wl.Len() {
			if ok, err := strictEqual(gl.Index(i), wl.Index(i)); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return starlark.Equal(got, want)
}

// describeError turns an evaluation error into a message for the agent:
// the innermost line of the program and what went wrong there.
func describeError(err error) string {
	var ee *starlark.EvalError
	if !errors.As(err, &ee) {
		return cleanMessage(err.Error())
	}
	msg := ee.Msg
	if _, reason, ok := strings.Cut(msg, "Starlark computation cancelled: "); ok {
		msg = reason
	}
	// Report the innermost frame inside the program.
	for i := len(ee.CallStack) - 1; i >= 0; i-- {
		fr := ee.CallStack[i]
		if fr.Pos.Filename() == "solution.star" {
			return fmt.Sprintf("line %d, in %s: %s", fr.Pos.Line, fr.Name, cleanMessage(msg))
		}
	}
	return cleanMessage(msg)
}

// cleanMessage hides the guard builtins' names, which the agent never
// wrote, and drops the file name from positions.
func cleanMessage(msg string) string {
	msg = strings.ReplaceAll(msg, "solution.star:", "line ")
	for _, g := range binaryGuards {
		msg = strings.ReplaceAll(msg, g+": ", "")
	}
	return msg
}

func isTimeout(msg string) bool {
	return strings.Contains(msg, reasonSteps) || strings.Contains(msg, reasonDeadline)
}

// bracketDepth is the deepest nesting of (), [] and {} in src, ignoring
// brackets inside string literals only approximately (it is a guard, not
// a parser: a false alarm needs a hundred unclosed brackets in strings).
func bracketDepth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth = max(depth-1, 0)
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		}
	}
	return deepest
}

// truncate shortens s to at most n bytes plus an ellipsis, cutting at a
// UTF-8 boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
