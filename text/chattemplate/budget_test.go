package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostileCases are templates that would take gigabytes or hours without
// the render's budget, each with the error it must stop with (and the
// line, where it is not 1).
var hostileCases = []struct {
	name, src string
	err       string // in the message
	kind      ErrorKind
	line      int
}{
	// One operation asked for a huge value.
	{name: "ljust", src: "{{ ''.ljust(10**13) }}", err: `"ljust" would make a string of 10000000000000 bytes, above the render's budget of 67108864`},
	{name: "rjust 3e9", src: "{{ 'a'.rjust(3000000000) }}", err: `"rjust" would make a string of 3000000000 bytes`},
	{name: "center method", src: "{{ 'a'.center(10**12, '\u00e9') }}", err: `"center" would make a string of 1999999999999 bytes`},
	{name: "center filter", src: "{{ 'a'|center(10**12) }}", err: `"center" would make a string of 1000000000000 bytes`},
	{name: "zfill", src: "{{ '-1'.zfill(10**12) }}", err: `"zfill" would make a string of 1000000000000 bytes`},
	{name: "str * int", src: "{{ 'ab' * 10**13 }}", err: `"*" would make a string of 20000000000000 bytes`},
	{name: "str * overflow", src: "{{ 'ab' * 2**62 }}", err: `"*" would make a string of 9223372036854775807 bytes`},
	{name: "int * list", src: "{{ 10**9 * [1, 2] }}", err: `"*" would make a list of 2000000000 items (32000000000 bytes)`},
	{name: "empty list * huge", src: "{{ ([] * 10**18)|length }}", err: "", kind: 0},
	{name: "nested *", src: "{{ [[[[0] * 1000] * 1000] * 1000] * 1000 }}", err: `"print" would make a string of at least`},
	{name: "list +", src: "{% set l = range(100000)|list %}{% set ns = namespace(l=l) %}{% for i in range(1000) %}{% set ns.l = ns.l + l %}{% endfor %}", err: `"+" would make a list of`},
	{name: "str replace", src: "{{ ('a' * 1000000).replace('a', 'a' * 1000) }}", err: `"replace" would make a string of 1000000000 bytes`},
	{name: "replace empty old", src: "{{ ('a' * 1000000)|replace('', 'x' * 1000) }}", err: `"replace" would make a string of 1001001000 bytes`},
	{name: "join filter", src: "{{ (['x' * 1000000] * 1000)|join }}", err: `"join" would make a string of 1000000000 bytes`},
	{name: "join separator", src: "{{ range(100000)|join('x' * 100000) }}", err: `"join" would make a string of`},
	{name: "str join", src: "{{ ('x' * 100000).join(['a'] * 100000) }}", err: `"join" would make a string of`},
	{name: "% padding", src: "{{ '%999999s' * 1000 % (('x',) * 1000) }}", err: `"%" would make a string of at least`},
	{name: "% precision", src: "{{ '%.999999f' * 1000 % ((1.5,) * 1000) }}", err: `"%" would make a string of`},
	{name: "% huge precision", src: "{{ '%.99999999999f' % 1.5 }}", err: `"%" would make a string of 99999999999 bytes, above the render's budget of 67108864`},
	{name: "% huge width", src: "{{ '%99999999999d' % 1 }}", err: `"%" would make a string of at least`},
	{name: "format filter", src: "{{ ('%999999d' * 1000)|format(*range(1000)) }}", err: `"format" would make a string of at least`},
	{name: "indent", src: "{{ ('a\\n' * 1000000)|indent('x' * 1000) }}", err: `"indent" would make a string of`},
	{name: "indent first blank", src: "{{ ('\\n' * 10000000)|indent(1000, true, true) }}", err: `"indent" would make a string of`},
	{name: "truncate loop", src: "{% set s = 'x ' * 20000000 %}{% for i in range(100) %}{% set t = s|truncate(39000000, end='..') %}{% endfor %}", err: `"truncate" would make a string of`},
	{name: "tojson shared", src: "{% set a = ['x' * 1000] * 1000 %}{% set b = [a] * 1000 %}{{ b|tojson }}", err: `"tojson" would make a string of at least`},
	{name: "tojson indent", src: "{{ [[[[[1]]]]]|tojson(indent='x' * 10000000) }}", err: `"tojson" would make a string of at least`},
	{name: "string of shared", src: "{% set a = ['x' * 1000] * 1000 %}{{ ([a] * 1000)|string|length }}", err: `"string" would make a string of at least`},
	{name: "pprint of shared", src: "{% set a = ['x' * 1000] * 1000 %}{{ ([a] * 1000)|pprint|length }}", err: `"pprint" would make a string of at least`},
	{name: "~ of shared", src: "{% set a = ['x' * 1000] * 1000 %}{{ (([a] * 1000) ~ '')|length }}", err: `"~" would make a string of at least`},
	{name: "range to string", src: "{% set r = range(100000) %}{{ ([r] * 1000)|string|length }}", err: `"string" would make a string of at least`},
	{name: "range in a loop", src: "{% for i in range(100000) %}{% set r = range(100000) %}{% endfor %}", err: `"range" would make a list of 100000 items (2400000 bytes), above the`},
	{name: "strftime_now", src: "{{ strftime_now('%c' * 10000000) }}", err: `"strftime_now" would make a string of at least`},
	{name: "split", src: "{{ ('a,' * 30000000).split(',')|length }}", err: `"split" would make a list of 30000001 items`},
	{name: "rsplit", src: "{{ ('a,' * 30000000).rsplit(',', 10**9)|length }}", err: `"rsplit" would make a list of 30000001 items`},
	{name: "splitlines", src: "{{ ('\\n' * 30000000).splitlines()|length }}", err: `"splitlines" would make a list of 30000000 items`},
	{name: "iterate a str", src: "{% set s = 'x' * 60000000 %}{% for c in s %}{% endfor %}", err: `"for" would make a list of 60000000 items`},
	{name: "list of a str", src: "{% set s = 'x' * 60000000 %}{{ s|list|length }}", err: `"list" would make a list of 60000000 items`},
	{name: "unique of a str", src: "{% set s = 'x' * 60000000 %}{{ s|unique|length }}", err: `"unique" would make a list of 60000000 items`},
	{name: "slice with a step", src: "{% set s = '\u00e9' * 20000000 %}{{ s[::2]|length }}", err: `"slice" would make a string of 80000000 bytes`},
	{name: "upper grows", src: "{{ ('\u0390' * 15000000)|upper|length }}", err: `"upper" would make a string of at least`},
	{name: "dict copies", src: "{% set ns = namespace(d={}) %}{% for i in range(100000) %}{% set ns.d = dict(ns.d, **{i|string: i}) %}{% endfor %}", err: `"dict" would make a dict of`},
	{name: "namespace accumulation", src: "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'x' * 1000 %}{% endfor %}", err: `"~" would make a string of`},
	{name: "sum of lists", src: "{{ ([[0] * 1000] * 10000)|sum(start=[])|length }}", err: `"+" would make a list of`},
	{name: "output", src: "{% for i in range(100000) %}" + strings.Repeat("x", 1000) + "{% endfor %}", err: "output larger than the render's budget of 67108864 bytes"},
	{name: "string concatenation recursion", src: "{% macro m(s) %}{{ m(s ~ s) }}{% endmacro %}{{ m('x') }}", err: `"~" would make a string of`},

	// Work without allocation: the step limit alone would let these run
	// for minutes.
	{name: "copy loop", src: "{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{% set t = s ~ i %}{% endfor %}", err: `"~" would make a string of 60000001 bytes, above the`},
	{name: "read loop", src: "{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{% if 'y' in s %}{% endif %}{% endfor %}", err: "work budget of 1000000000"},
	{name: "== loop", src: "{% set s = 'x' * 30000000 %}{% set t = 'x' * 30000000 %}{% for i in range(100000) %}{% if s == t %}{% endif %}{% endfor %}", err: "work budget of 1000000000"},
	{name: "length loop", src: "{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{{ s|length }}{% endfor %}", err: "work budget of 1000000000"},
	{name: "count loop", src: "{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{{ s.count('y') }}{% endfor %}", err: "work budget of 1000000000"},
	{name: "index loop", src: "{% set s = '\u00e9' * 20000000 %}{% for i in range(100000) %}{{ s[-1] }}{% endfor %}", err: "work budget of 1000000000"},
	{name: "dict key hashing loop", src: "{% set s = 'x' * 60000000 %}{% set d = {} %}{% for i in range(100000) %}{{ d[s] }}{% endfor %}", err: "work budget of 1000000000"},
	{name: "strip loop", src: "{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{{ s.strip('x' * 1000)|length }}{% endfor %}", err: "work budget of 1000000000"},
	{name: "nested ==", src: "{% set a = [[[[0] * 1000] * 1000] * 1000] %}{% set b = [[[[0] * 1000] * 1000] * 1000] %}{{ a == b }}", err: "work budget of 1000000000"},
	{name: "unique", src: "{{ range(100000)|unique|length }}", err: "work budget of 1000000000"},
	{name: "sort", src: "{% set ns = namespace(l=[]) %}{% for i in range(300) %}{% set ns.l = ns.l + [[[0] * 1000] * 1000] %}{% endfor %}{{ ns.l|sort|length }}", err: "work budget of 1000000000"},
	{name: "steps", src: "{% set l = range(100000) %}{% for i in l %}{% for j in l %}{% endfor %}{% endfor %}", err: "template took too much work, above the render's work budget of 1000000000 units"},
	{name: "exponential macro", src: "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}", err: "work budget of 1000000000"},
	{name: "swapcase", src: "{% set s = '\u0434' * 30000000 %}{{ s.swapcase()|length }}", err: "work budget of 1000000000"},
	{name: "title loop", src: "{% set s = 'ab cd ' * 5000000 %}{% for i in range(100) %}{% set t = s|title %}{% endfor %}", err: `"title" would make a string of at least`},
	{name: "lower loop", src: "{% set s = 'X' * 60000000 %}{% for i in range(100) %}{{ s.lower()|length }}{% endfor %}", err: `"lower" would make a string of at least`},

	// Calls nested too deeply.
	{name: "macro recursion", src: "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}\n{{ m(0) }}", err: "maximum recursion depth exceeded: more than the render's budget of 200 nested calls", line: 1},
	{name: "caller recursion", src: "{% macro m() %}{% call m() %}{% endcall %}{{ caller }}{% endmacro %}{{ m() }}", err: "maximum recursion depth exceeded"},
	{name: "deep ==", src: "{% set ns = namespace(a=0, b=0) %}{% for i in range(5000) %}{% set ns.a = [ns.a] %}{% set ns.b = [ns.b] %}{% endfor %}{{ ns.a == ns.b }}", err: "maximum recursion depth exceeded in comparison", kind: KindRuntime},
}

// peakHeap samples the heap's size until stop is closed, and sends the
// largest it saw.
func peakHeap(stop <-chan struct{}, peak chan<- uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var max uint64
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > max {
			max = v
		}
		select {
		case <-stop:
			peak <- max
			return
		default:
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// measure renders src and reports its error, time, peak heap (sampled)
// and the bytes it allocated.
func measure(t *testing.T, src string) (elapsed time.Duration, peak, allocated uint64, err error) {
	t.Helper()
	tmpl, perr := Parse(src)
	if perr != nil {
		return 0, 0, 0, perr
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	stop, peaks := make(chan struct{}), make(chan uint64)
	go peakHeap(stop, peaks)
	start := time.Now()
	_, err = tmpl.Execute(nil)
	elapsed = time.Since(start)
	close(stop)
	peak = <-peaks
	runtime.ReadMemStats(&after)
	return elapsed, peak, after.TotalAlloc - before.TotalAlloc, err
}

const (
	// heapGoal is the memory limit the hostile renderings run under, so
	// that the collector reclaims their garbage (the buffers a string
	// outgrew) before the heap grows far past what is live.
	heapGoal = 256 << 20
	// maxPeakHeap bounds the heap of a hostile rendering: the default
	// limits (64 MiB of values, 64 MiB of output), the buffers that
	// build them, and garbage that a collector slowed down by a busy
	// machine has not yet reclaimed. Without the limits these templates
	// ask for gigabytes to terabytes.
	maxPeakHeap = 384 << 20
)

func TestHostileTemplates(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(heapGoal))
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			elapsed, peak, allocated, err := measure(t, c.src)
			t.Logf("%s: %v, peak heap %.1f MiB, allocated %.1f MiB: %v", c.name, elapsed.Round(time.Millisecond), float64(peak)/(1<<20), float64(allocated)/(1<<20), err)
			kind := c.kind
			if kind == 0 && c.err != "" {
				kind = KindBudget
			}
			switch {
			case c.err == "" && err != nil:
				t.Errorf("%q: %v", c.src, err)
			case c.err != "":
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%q: error %v, want one containing %q", c.src, err, c.err)
				}
				if !strings.Contains(e.Message, c.err) || e.Kind != kind {
					t.Errorf("%q: error %q (%v), want %v containing %q", c.src, e, e.Kind, kind, c.err)
				}
				if line := max(c.line, 1); e.Line != line {
					t.Errorf("%q: error %q on line %d, want %d", c.src, e, e.Line, line)
				}
			}
			if peak > maxPeakHeap {
				t.Errorf("%q: peak heap %d bytes, above %d", c.src, peak, maxPeakHeap)
			}
		})
	}
}

func TestBudgetErrorMessage(t *testing.T) {
	tmpl, err := Parse("{% set a = 1 %}\n\n{{ ''.ljust(10**13) }}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Execute(nil)
	want := `chattemplate: line 3: "ljust" would make a string of 10000000000000 bytes, above the render's budget of 67108864`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindBudget || e.Kind.String() != "budget exceeded" {
		t.Fatalf("got %#v", err)
	}
}

func TestLimits(t *testing.T) {
	for _, c := range []struct {
		src  string
		lim  Limits
		want string // "" means success
	}{
		{"{{ 'x' * 1000 }}", Limits{Alloc: 1000}, ""},
		{"{{ 'x' * 1001 }}", Limits{Alloc: 1000}, `"*" would make a string of 1001 bytes, above the render's budget of 1000`},
		{"{% set a = 'x' * 600 %}{{ 'y' * 600 }}", Limits{Alloc: 1000}, `"*" would make a string of 600 bytes, above the 400 bytes left of the render's budget of 1000`},
		{"{{ 'x' * 1000 }}", Limits{Output: 1000}, ""},
		{"{{ 'x' * 1000 }}!", Limits{Output: 1000}, "output larger than the render's budget of 1000 bytes"},
		{"{% for i in range(3) %}{% endfor %}", Limits{Work: 2000}, ""},
		{"{% for i in range(20) %}{% endfor %}", Limits{Work: 2000}, "work budget of 2000 units"},
		{"{% macro m(n) %}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(9) }}", Limits{Calls: 10}, ""},
		{"{% macro m(n) %}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(10) }}", Limits{Calls: 10}, "budget of 10 nested calls"},
		{"{{ 'x' * 100000000 }}", Limits{Alloc: 200 << 20, Output: 200 << 20}, ""},
	} {
		tmpl, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.Limits = c.lim
		_, err = tmpl.Execute(nil)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %+v: %v", c.src, c.lim, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %+v: got %v, want %q", c.src, c.lim, err, c.want)
		}
	}
}

func TestRenderDeadline(t *testing.T) {
	tmpl, err := Parse("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = tmpl.RenderContext(ctx, Context{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindBudget || !strings.Contains(e.Message, "rendering stopped: context deadline exceeded") {
		t.Fatalf("got %#v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped after %v", d)
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := tmpl.ExecuteContext(canceled, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// A context that is never done changes nothing.
	out, err := must(Parse("{{ 'a' ~ 1 }}")).ExecuteContext(context.Background(), nil)
	if out != "a1" || err != nil {
		t.Fatalf("got %q, %v", out, err)
	}
}

func must(t *Template, err error) *Template {
	if err != nil {
		panic(err)
	}
	return t
}

// TestBudgetConcurrent renders a template that hits its budget from
// several goroutines: each rendering has its own budget.
func TestBudgetConcurrent(t *testing.T) {
	tmpl := must(Parse("{% for i in range(1000) %}{{ 'x' * 1000 }}{% endfor %}"))
	tmpl.Limits = Limits{Alloc: 1 << 20}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = tmpl.Execute(nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("%v", err)
		}
	}
}

// TestBudgetKeepsResults checks that the budgeted operations give what
// Python gives on ordinary values.
func TestBudgetKeepsResults(t *testing.T) {
	for _, c := range budgetKeepCases {
		tmpl, err := Parse(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		tmpl.Now = func() time.Time { return fixedNow }
		got, err := tmpl.Execute(nil)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
		} else if got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

// TestReferenceBudgetKeepsResults renders budgetKeepCases with Python
// Jinja2, which must give their wants.
func TestReferenceBudgetKeepsResults(t *testing.T) {
	in := refInput{Templates: map[string]string{}, Now: fixedNow.Format("2006-01-02T15:04:05")}
	for i, c := range budgetKeepCases {
		name := fmt.Sprint(i)
		in.Templates[name] = c.src
		in.Cases = append(in.Cases, refCase{Template: name, Vars: json.RawMessage(`{}`)})
	}
	out := runReference(t, needPython(t), "render.py", in)
	for i, c := range budgetKeepCases {
		if py := out.Results[i]; py.Text == nil || *py.Text != c.want {
			t.Errorf("%q: Python gives %s, want %q", c.src, describeResult(py), c.want)
		}
	}
}

// budgetKeepCases are renderings of the operations that count their
// results against the budget, with Python Jinja2's results.
var budgetKeepCases = []struct{ src, want string }{
	{"{{ 'ab'.center(7, '*') }}|{{ 'ab'.ljust(4) }}|{{ 'ab'.rjust(4, '\u00e9') }}|{{ 'ab'|center(6) }}", "***ab**|ab  |\u00e9\u00e9ab|  ab  "},
	{"{{ '-42'.zfill(6) }}|{{ '+1'.zfill(1) }}|{{ 'x'.zfill(3) }}", "-00042|+1|00x"},
	{"{{ 'a-b-c'.replace('-', '+', 1) }}|{{ 'ab'.replace('', '.') }}|{{ 'ab'|replace('', '.', 2) }}|{{ ''.replace('', 'x') }}", "a+b-c|.a.b.|.a.b|x"},
	{"{{ 'a b  c'.split() }}{{ ' a b '.split(None, 1) }}{{ 'a,b,,c'.split(',', 2) }}{{ 'a b c'.rsplit(' ', 1) }}{{ ' a  b c '.rsplit(None, 1) }}{{ 'a,b,c'.rsplit(',', 5) }}{{ 'aaa'.rsplit('aa', 1) }}{{ 'aaa'.split('aa', 1) }}{{ 'x\\ny\\r\\nz'.splitlines(true) }}", "['a', 'b', 'c']['a', 'b ']['a', 'b', ',c']['a b', 'c'][' a  b', 'c']['a', 'b', 'c']['a', '']['', 'a']['x\\n', 'y\\r\\n', 'z']"},
	{"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\n\\nb'|indent('> ', true, true) }}|{{ ''|indent(2, true) }}|{{ 'x\\n'|indent(2, blank=true) }}", "a\n  b\n\n  c|> a\n> \n> b|  |x\n  "},
	{"{{ 'hello world foo'|truncate(9) }}|{{ 'hello world'|truncate(9, true, '!', 0) }}|{{ '\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9'|truncate(4, leeway=0) }}", "hello...|hello wo!|\u00e9..."},
	{"{{ 'abc'|reverse }}{{ '\u00e9t\u00e9'|reverse }}{{ 'abcdef'[::2] }}{{ '\u00e9t\u00e9s'[::-1] }}{{ 'abcdef'[4:1:-2] }}{{ '\u00e9t\u00e9'[1:] }}{{ 'abc'[-1] }}{{ '\u00e9t\u00e9'[2] }}", "cba\u00e9t\u00e9aces\u00e9t\u00e9ect\u00e9c\u00e9"},
	{"{{ [1, 2, 3, 4][::-2] }}{{ [1, 2, 3][5:] }}{{ (1, 2, 3)[1:] }}{{ [1, 2, 3][::9223372036854775807] }}{{ [1, 2, 3][::-9223372036854775807 - 1] }}", "[4, 2][](2, 3)[1][3]"},
	{"{{ 'Stra\u00dfe'|upper }}|{{ '\u0130I'|lower }}|{{ '\u03a3\u0391\u03a3'|lower }}|{{ 'hello wORLD'|capitalize }}|{{ 'hello-wORLD (x)'|title }}|{{ 'aBc \u00c9\u00e9 \u00df'.swapcase() }}|{{ \"they're bill's\".title() }}", "STRASSE|i\u0307i|\u03c3\u03b1\u03c2|Hello world|Hello-World (X)|AbC \u00e9\u00c9 SS|They'Re Bill'S"},
	{"{{ ['b', 'a']|join(', ') }}|{{ [1, none, 'x']|join }}|{{ '-'.join(['a', 'b']) }}|{{ [[1], {'a': 'b'}]|join('; ') }}", "b, a|1Nonex|a-b|[1]; {'a': 'b'}"},
	{"{{ '%5s|%-5s|%.1f' % ('x', 'y', 2.25) }}|{{ '%(a)s-%(b)d'|format(a='x', b=2) }}|{{ '%s' % [1, 'a'] }}", "    x|y    |2.2|x-2|[1, 'a']"},
	{"{{ '%05s|%-05d|%08.3f|%#010x|%+05d|% 05d|%05c|%05r|%.2s|%010.3e' % ('ab', 3, -3.14159, 255, 3, 3, 'a', 'a', 'abc', 12345.678) }}", "   ab|3    |-003.142|0x000000ff|+0003| 0003|    a|  'a'|ab|01.235e+04"},
	{"{{ '%#o|%#08o|%-#8x|%08g|%d|%x|%#X|%.3d|%+.3d|%5.3d|%-+6d|%e|%g|%g|%G|%.0g|%#.0f|%#g' % (8, 8, 255, -1e-07, -9223372036854775807 - 1, -255, 255, 5, -5, 5, 42, 0.0, 100000.0, 1000000.0, 1e-10, 123.0, 1.0, 1.5) }}", "0o10|0o000010|0xff    |-001e-07|-9223372036854775808|-ff|0XFF|005|-005|  005|+42   |0.000000e+00|100000|1e+06|1E-10|1e+02|1.|1.50000"},
	{"{{ '%f|%d|%i|%u|%c|%3c|%.1f|%.2f|%10.4f|%-10s|%5s|%s|%.3s|%d%%|%f|%g|%.15g|%e' % (-0.0, 3.9, true, -7, 65, 233, 2.25, 0.125, 3.14159265, 'h\u00e9llo', none, [1, 'a'], [1, 2], 50, 1e20, 1e16, 0.1, 123456789.0) }}", "-0.000000|3|1|-7|A|  \u00e9|2.2|0.12|    3.1416|h\u00e9llo     | None|[1, 'a']|[1,|50%|100000000000000000000.000000|1e+16|0.1|1.234568e+08"},
	{"{{ '%010f|%f|%+f|%E|%F|%-6f|' % ('inf'|float, 'nan'|float, 'inf'|float, '-inf'|float, 'nan'|float, '-inf'|float) }}{{ '%(a)5s|%(b)-3d|'|format(a='x', b=1) }}", "0000000inf|nan|+inf|-INF|NAN|-inf  |    x|1  |"},
	{"{{ '<a href=\"x\">&\\'</a>'|e }}|{{ strftime_now('%Y-%m-%d %%') }}", "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt;|2024-07-26 %"},
	{"{{ 'abc'|first }}{{ 'abc'|last }}{{ ''|first is undefined }}{{ 'h\u00e9'|list }}{{ 'abc'|length }}{{ 'ab'|unique|list }}", "acTrue['h', '\u00e9']3['a', 'b']"},
	{"{% set a = [1, [2, 3]] %}{{ a == a }}{{ a == [1, [2, 3]] }}{{ [1, 2] < [1, 3] }}{{ {'a': [1]} == {'a': [1]} }}{{ [1, 2] in [[1, 2]] }}", "TrueTrueTrueTrueTrue"},
	{"{{ {'b': 1, 'a': 2}|dictsort }}{{ ['B', 'a', 'C']|sort }}{{ ['b', 'A', 'a']|unique|list }}{{ [3, 1, 2]|max }}{{ {'a': 1}.items()|list }}", "[('a', 2), ('b', 1)]['a', 'B', 'C']['b', 'A']3[('a', 1)]"},
	{"{{ dict({'a': 1}, b=2) }}{{ namespace([('a', 1)], b=2).a }}{{ {'a': 1}.copy() }}{{ {'a': 1}.keys()|list }}{{ [1].copy() }}", "{'a': 1, 'b': 2}1{'a': 1}['a'][1]"},
	{"{{ '  x  '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\u00e9a\u00e9'.strip('\u00e9') }}|{{ '  y'|trim }}|{{ 'ab'.lstrip('a') }}{{ 'ab'.rstrip('b') }}", "x|a|a|y|ba"},
	{"{{ 'a' in 'cab' }}{{ 'abcb'.count('b') }}{{ 'h\u00e9llo'.find('l') }}{{ 'abc'.startswith(('x', 'a')) }}{{ 'abc'.endswith('bc', 1) }}{{ 'a=b'.partition('=') }}", "True22TrueTrue('a', '=', 'b')"},
	{"{{ [[1, 2]]|tojson }}{{ {'a': 'h\u00e9\\n'}|tojson(indent=2) }}{{ 'h\u00e9'|tojson(ensure_ascii=true) }}", "[[1, 2]]{\n  \"a\": \"h\u00e9\\n\"\n}\"h\\u00e9\""},
	{"{{ 'x\\'y'|pprint }}{{ 'a\\tb\u00e9\\x00'|pprint }}{{ ('a',)|string }}{{ 'caf\u00e9 ok'|wordcount }}", "\"x'y\"'a\\tb\u00e9\\x00'('a',)2"},
	{"{{ '3'|int + '2.5'|float }}{{ 'x'|int(7) }}{{ ' 1_0 '|int }}", "5.5710"},
	{"{% for a, b in ['xy', 'zw'] %}{{ b }}{{ a }}{% endfor %}{% for c in 'h\u00e9' %}[{{ c }}]{% endfor %}", "yxwz[h][\u00e9]"},
}

// TestReprInMessagesIsShort checks that error messages quote long values
// cut short.
func TestReprInMessagesIsShort(t *testing.T) {
	_, err := must(Parse("{{ [1].index('x' * 100000) }}")).Execute(nil)
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "...") {
		t.Fatalf("got %v", err)
	}
}

func ExampleLimits() {
	tmpl, _ := Parse("{{ 'x' * 2000 }}")
	tmpl.Limits = Limits{Alloc: 1000}
	_, err := tmpl.Execute(nil)
	fmt.Println(err)
	// Output: chattemplate: line 1: "*" would make a string of 2000 bytes, above the render's budget of 1000
}

// longConversation is a conversation of turns of size bytes each: a
// system prompt, then users and assistants (with reasoning) in turn.
func longConversation(turns, size int) Context {
	text := func(i int) string {
		return strings.ToValidUTF8(strings.Repeat(fmt.Sprintf("Turn %d: some words, \u00e9t\u00e9 \u4e2d\u6587, and more. ", i), size/20+1)[:size], "")
	}
	msgs := []Message{sys(text(0))}
	for i := 1; i < turns; i++ {
		if i%2 == 1 {
			msgs = append(msgs, user(text(i)))
		} else {
			m := asst(text(i))
			m.ReasoningContent = sp(text(i + 1))
			msgs = append(msgs, m)
		}
	}
	return Context{Messages: msgs, AddGenerationPrompt: true}
}

// TestRealTemplatesBudgetUse checks that the real chat templates use
// little of the default budget: on the reference conversations, and on
// a long one (200 turns of 10 kB).
func TestRealTemplatesBudgetUse(t *testing.T) {
	convs := append(conversationCorpus(), namedConv{"long", longConversation(200, 10000)})
	for _, rt := range loadRealTemplates(t) {
		var most [3]float64 // of the budgets: values, output, work
		rendered := 0
		for _, c := range convs {
			vars, err := rt.tmpl.contextVars(c.ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, b, err := rt.tmpl.executeBudget(context.Background(), vars)
			var e *Error
			if errors.As(err, &e) && e.Kind == KindBudget {
				t.Errorf("%s, %s: %v", rt.name, c.name, err)
			}
			if err != nil {
				continue
			}
			rendered++
			use := [3]float64{float64(b.alloc) / float64(b.lim.Alloc), float64(b.out) / float64(b.lim.Output), float64(b.work) / float64(b.lim.Work)}
			if c.name == "long" {
				t.Logf("%s, long conversation (%d kB): %.2f%% of the values budget, %.2f%% of the output, %.2f%% of the work", rt.name, 200*10, 100*use[0], 100*use[1], 100*use[2])
				for i, u := range use {
					if u > 0.25 {
						t.Errorf("%s, long conversation: %.1f%% of budget %d", rt.name, 100*u, i)
					}
				}
				continue
			}
			for i, u := range use {
				most[i] = max(most[i], u)
			}
		}
		t.Logf("%s: %d conversations rendered, at most %.3f%% of the values budget, %.3f%% of the output, %.3f%% of the work", rt.name, rendered, 100*most[0], 100*most[1], 100*most[2])
		for i, u := range most {
			if u > 0.01 {
				t.Errorf("%s: a reference conversation used %.2f%% of budget %d", rt.name, 100*u, i)
			}
		}
	}
}

// TestReverseKeepsSize checks that reverse keeps a byte that is not
// UTF-8 as it is, so that the string it makes has the size it counted.
func TestReverseKeepsSize(t *testing.T) {
	tmpl := must(Parse("{{ s|reverse }}"))
	tmpl.Limits = Limits{Alloc: 5}
	got, err := tmpl.Execute(map[string]any{"s": "a\xffb\u00e9"})
	if err != nil || got != "\u00e9b\xffa" {
		t.Fatalf("got %q, %v", got, err)
	}
	tmpl.Limits = Limits{Alloc: 4}
	if _, err := tmpl.Execute(map[string]any{"s": "a\xffb\u00e9"}); err == nil || !strings.Contains(err.Error(), `"reverse" would make a string of 5 bytes`) {
		t.Fatalf("got %v", err)
	}
}
