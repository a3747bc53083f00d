package chattemplate

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Limits bound one rendering, so that no template, however hostile, can
// take much memory or time. A zero field takes its default. A rendering
// that would go past a limit stops with an *Error of KindBudget.
type Limits struct {
	// Alloc bounds the bytes of the values a rendering makes, in total
	// (default 64 MiB): the strings, lists and dicts of its operations,
	// filters, methods and globals, a string counting its bytes, a list
	// 16 bytes an item (32 for the strings, 24 for the ints it makes,
	// 80 for pairs) and a dict 64 bytes an entry, about what Go
	// allocates for them. An operation checks the size of its result
	// before it allocates it, so no one value is larger. The values the
	// template is given do not count.
	Alloc int64
	// Output bounds the bytes a rendering writes, in total (default 64
	// MiB): its output and the text of the macros, call blocks, filter
	// blocks and block sets it renders.
	Output int64
	// Work bounds the units of work of a rendering (default 10^9): each
	// statement, expression and loop iteration costs 100 units, and each
	// byte or item an operation reads or writes one unit (more for case
	// conversions: see the package documentation).
	Work int64
	// Calls bounds the nested calls of macros and functions (default
	// 200).
	Calls int
}

// The default limits.
const (
	defaultAlloc  = 64 << 20
	defaultOutput = 64 << 20
	defaultWork   = 1_000_000_000
	defaultCalls  = 200
)

// The costs of the budget: units of work and bytes of allocation.
const (
	// stepCost is the work of evaluating a statement or an expression,
	// and iterCost that of one iteration of a for loop (a scope and the
	// loop variable to set up).
	stepCost = 100
	iterCost = 300
	// caseCost is the work per byte of a case conversion (upper, lower,
	// capitalize), and caseRuneCost that per non-ASCII letter of one
	// done a character at a time (title, swapcase).
	caseCost     = 8
	caseRuneCost = 1000
	// wordCost is the work of a word of the title filter, stripCost of a
	// character that strip looks at, compareCost of a comparison of two
	// values (of two items of lists being compared), sortCost of a
	// comparison of a sort besides that (a sort moves its items about
	// as it compares them), writeCost of a write to a string being
	// built (besides its bytes), and entryCost of setting a dict entry
	// (besides its bytes).
	wordCost    = 20
	stripCost   = 4
	compareCost = 3
	sortCost    = 6
	writeCost   = 8
	entryCost   = 64
	// scopeCost is the work of looking a name up in one more scope,
	// past the scopesFree that a step's cost covers.
	scopeCost  = 10
	scopesFree = 8
	// itemBytes is the allocation of a list item (an interface value),
	// strItemBytes of one that holds a new str (its header too),
	// intItemBytes of one that holds an int, pairBytes of a (key, value)
	// tuple, and entryBytes of a dict entry (key, value and index).
	itemBytes    = 16
	strItemBytes = 32
	intItemBytes = 24
	pairBytes    = 80
	entryBytes   = 64
	// pollEvery is how often, in units of work, a rendering looks at its
	// context.
	pollEvery = 1 << 20
	// maxCompareDepth bounds the nesting that == and < compare, as
	// Python's recursion limit does.
	maxCompareDepth = 1000
	// maxMessageRepr bounds the reprs that error messages quote.
	maxMessageRepr = 200
)

// withDefaults is l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.Alloc <= 0 {
		l.Alloc = defaultAlloc
	}
	if l.Output <= 0 {
		l.Output = defaultOutput
	}
	if l.Work <= 0 {
		l.Work = defaultWork
	}
	if l.Calls <= 0 {
		l.Calls = defaultCalls
	}
	return l
}

// budget is what one rendering has used of its limits. Once a limit is
// passed, err holds the error and every further charge fails with it, so
// that code which cannot return an error (a comparison deep in a list)
// may just stop, and the rendering fails all the same. A nil *budget
// has no limits (for values outside a rendering).
type budget struct {
	lim   Limits
	work  int64 // units of work done
	alloc int64 // bytes of values made
	out   int64 // bytes written
	// next is the work at which spend must look closer: the limit, or
	// the next poll of ctx.
	next int64
	ctx  context.Context // nil: no deadline or cancellation
	err  *Error
}

func newBudget(ctx context.Context, lim Limits) *budget {
	b := &budget{lim: lim.withDefaults()}
	if ctx != nil && ctx.Done() != nil {
		b.ctx = ctx
	}
	b.next = b.lim.Work
	if b.ctx != nil {
		b.next = min(b.next, pollEvery)
	}
	return b
}

// fail records err as the rendering's error (the first one stays) and
// returns the recorded one.
func (b *budget) fail(err *Error) *Error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// failed is the budget's error, or nil.
func (b *budget) failed() error {
	if b == nil || b.err == nil {
		return nil
	}
	return b.err
}

func budgetErr(format string, args ...any) *Error {
	return newError(KindBudget, 0, format, args...)
}

// spend counts n units of work; false means the budget is spent (or
// the rendering's context done), with the error in b.err.
func (b *budget) spend(n int64) bool {
	if b == nil {
		return true
	}
	if b.err != nil {
		return false
	}
	b.work += n
	if b.work <= b.next {
		return true
	}
	return b.overWork()
}

// overWork is spend past b.next: the work limit, or time to poll ctx.
func (b *budget) overWork() bool {
	if b.work > b.lim.Work {
		b.fail(budgetErr("template took too much work, above the render's work budget of %d units", b.lim.Work))
		return false
	}
	if b.ctx != nil {
		if err := b.ctx.Err(); err != nil {
			e := b.fail(budgetErr("rendering stopped: %v", err))
			if e.cause == nil {
				e.cause = err
			}
			return false
		}
	}
	b.next = b.lim.Work
	if b.ctx != nil {
		b.next = min(b.next, b.work+pollEvery)
	}
	return true
}

// work counts the n units of work that an operation (what) is about to
// do, failing before it starts when they are more than are left.
func (b *budget) workFor(what string, n int64) error {
	if b == nil {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	if left := b.lim.Work - b.work; n > left {
		return b.fail(budgetErr("%s would take %d units of work, above the %d left of the render's work budget of %d", quoteOp(what), n, max(left, 0), b.lim.Work))
	}
	b.spend(n)
	return b.failed()
}

// spendErr is spend, with the budget's error.
func (b *budget) spendErr(n int64) error {
	b.spend(n)
	return b.failed()
}

// value describes a value an operation would make, for errors: a
// string of n bytes, a string being built (more: of at least items
// bytes), or a kind ("list", "dict") of items.
type value struct {
	kind  string // "" for a string
	items int64
	more  bool
}

func (v value) describe(bytes int64) string {
	switch {
	case v.kind != "":
		return fmt.Sprintf("a %s of %d items (%d bytes)", v.kind, v.items, bytes)
	case v.more:
		return fmt.Sprintf("a string of at least %d bytes", v.items)
	}
	return fmt.Sprintf("a string of %d bytes", bytes)
}

// take counts a value of n bytes that the operation what is about to
// make, and the work of writing it, failing before it is made when it
// does not fit the budget.
func (b *budget) take(what string, n int64, v value) error {
	if b == nil {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	if n > b.lim.Alloc {
		return b.fail(budgetErr("%s would make %s, above the render's budget of %d", quoteOp(what), v.describe(n), b.lim.Alloc))
	}
	if left := b.lim.Alloc - b.alloc; n > left {
		return b.fail(budgetErr("%s would make %s, above the %d bytes left of the render's budget of %d", quoteOp(what), v.describe(n), left, b.lim.Alloc))
	}
	b.alloc += n
	b.spend(n)
	return b.failed()
}

// fits checks, without counting it, that a string of n bytes that the
// operation what may make would fit what is left of the budget.
func (b *budget) fits(what string, n int64) error {
	if b == nil || n <= b.lim.Alloc-b.alloc {
		return b.failed()
	}
	return b.take(what, n, value{})
}

// takeStr counts a string of n bytes.
func (b *budget) takeStr(what string, n int64) error {
	return b.take(what, n, value{})
}

// takeItems counts a list (or dict: kind) of n items of size bytes each.
func (b *budget) takeItems(what, kind string, n, size int64) error {
	return b.take(what, mulSat(n, size), value{kind: kind, items: n})
}

// takeList counts a list of n items of itemBytes each.
func (b *budget) takeList(what string, n int64) error {
	return b.takeItems(what, "list", n, itemBytes)
}

// takeDict counts a dict of n entries, and the work of setting them.
func (b *budget) takeDict(what string, n int64) error {
	if err := b.takeItems(what, "dict", n, entryBytes); err != nil {
		return err
	}
	return b.spendErr(mulSat(n, entryCost))
}

// scratch counts the copies of s that a conversion of it (int, float)
// may make: two, and the work of a few passes.
func (b *budget) scratch(what, s string) error {
	if err := b.workFor(what, 4*int64(len(s))); err != nil {
		return err
	}
	return b.takeStr(what, 2*int64(len(s)))
}

// join is strings.Join(parts, sep) within the budget: the size of the
// result is checked before it is made.
func (b *budget) join(what string, parts []string, sep string) (string, error) {
	size := int64(0)
	for _, p := range parts {
		size = addSat(size, int64(len(p)))
	}
	if len(parts) > 1 {
		size = addSat(size, mulSat(int64(len(parts)-1), int64(len(sep))))
	}
	if err := b.takeStr(what, size); err != nil {
		return "", err
	}
	return strings.Join(parts, sep), nil
}

// copyDict counts copying d's entries into a new dict, their keys hashed
// again.
func (b *budget) copyDict(what string, d *dictV) error {
	if err := b.takeDict(what, int64(d.len())); err != nil {
		return err
	}
	return b.workFor(what, keysWork(d.keys))
}

// keysWork is the work of hashing keys: a str's bytes, 1 for others.
func keysWork(keys []any) int64 {
	n := int64(0)
	for _, k := range keys {
		n += keyWork(k)
	}
	return n
}

// keyWork is the work of hashing a key (or comparing it).
func keyWork(k any) int64 {
	if s, ok := k.(string); ok {
		return int64(len(s)) + 1
	}
	return 1
}

// quoteOp names an operation in a message: "ljust", "*".
func quoteOp(what string) string {
	if what == "" {
		return "an operation"
	}
	return `"` + what + `"`
}

// mulSat is a*b for a, b >= 0, saturating at the largest int64.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}

// addSat is a+b for a, b >= 0, saturating.
func addSat(a, b int64) int64 {
	if a > (1<<63-1)-b {
		return 1<<63 - 1
	}
	return a + b
}

// sbuf builds a string within a budget: every byte written counts one
// unit of work and one byte of the budget, checked before it is written,
// and the buffer grows no further than the budget allows (where
// strings.Builder would double it). Past the budget it stops writing,
// with the error in the budget. With a cap instead of a budget (for
// reprs in error messages) it stops at the cap and ends the string with
// "...".
type sbuf struct {
	b    *budget
	what string
	cap  int // > 0: truncate here
	buf  []byte
	done bool // stopped writing
}

// newSbuf is a builder within b for the operation what.
func newSbuf(b *budget, what string) *sbuf { return &sbuf{b: b, what: what} }

// room reports whether n more bytes may be written, counting them and
// growing the buffer for them.
func (w *sbuf) room(n int) bool {
	if w.done {
		return false
	}
	if w.cap > 0 && len(w.buf)+n > w.cap {
		w.done = true
		w.buf = append(w.buf, "..."...)
		return false
	}
	if b := w.b; b != nil {
		k := int64(n)
		if b.err == nil && k <= b.lim.Alloc-b.alloc && b.work+k+writeCost <= b.next {
			// The common case, inline: room in both budgets.
			b.alloc += k
			b.work += k + writeCost
		} else if b.take(w.what, k, value{more: true, items: int64(len(w.buf) + n)}) != nil || !b.spend(writeCost) {
			w.done = true
			return false
		}
	}
	if need := len(w.buf) + n; need > cap(w.buf) {
		c := max(2*cap(w.buf), need, 64)
		if w.b != nil {
			// The string can grow by what is left of the budget at most.
			c = min(c, need+int(w.b.lim.Alloc-w.b.alloc))
		}
		buf := make([]byte, len(w.buf), c)
		copy(buf, w.buf)
		w.buf = buf
	}
	return true
}

func (w *sbuf) WriteString(s string) {
	if w.room(len(s)) {
		w.buf = append(w.buf, s...)
	}
}

func (w *sbuf) Write(p []byte) {
	if w.room(len(p)) {
		w.buf = append(w.buf, p...)
	}
}

func (w *sbuf) writeByte(c byte) {
	if w.room(1) {
		w.buf = append(w.buf, c)
	}
}

func (w *sbuf) WriteRune(r rune) {
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.RuneLen(utf8.RuneError)
	}
	if w.room(n) {
		w.buf = utf8.AppendRune(w.buf, r)
	}
}

func (w *sbuf) Len() int { return len(w.buf) }

// String is the string built, sharing the buffer (as strings.Builder
// does): w must not be written to after.
func (w *sbuf) String() string {
	return unsafe.String(unsafe.SliceData(w.buf), len(w.buf))
}

// result is the string built, or the budget's error.
func (w *sbuf) result() (string, error) {
	if err := w.b.failed(); err != nil {
		return "", err
	}
	return w.String(), nil
}

// textBuf is the text a rendering writes: its output, or the text of a
// macro, call block, filter block or block set. It grows by doubling,
// but no further than the output budget allows (where strings.Builder
// would grow by a quarter at a time past a few kilobytes, and past the
// budget).
type textBuf struct{ buf []byte }

// write appends s, where room more bytes may follow it.
func (t *textBuf) write(s string, room int64) {
	if need := len(t.buf) + len(s); need > cap(t.buf) {
		c := max(2*cap(t.buf), need, 256)
		c = int(min(int64(c), int64(need)+room))
		buf := make([]byte, len(t.buf), c)
		copy(buf, t.buf)
		t.buf = buf
	}
	t.buf = append(t.buf, s...)
}

// String is the text written, sharing the buffer: t must not be
// written to after.
func (t *textBuf) String() string {
	return unsafe.String(unsafe.SliceData(t.buf), len(t.buf))
}
