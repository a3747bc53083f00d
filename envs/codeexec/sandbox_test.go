package codeexec

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"go.starlark.net/starlark"
)

// hostileEnv returns an environment on a sum_multiples task, a family
// whose tests are plain integer lists.
func hostileEnv(t *testing.T, mutate func(*Config)) *Env {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Tasks = []string{"sum_multiples"}
	cfg.Families = []string{"list"}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reset(3); err != nil {
		t.Fatal(err)
	}
	return e
}

// maxHostileWall bounds the wall time of any hostile submission: the 2 s
// timeout plus slack for a slow, shared machine.
const maxHostileWall = 4 * time.Second

// submit runs one program and checks the universal guarantees: no panic,
// bounded time, a valid scored step with zero reward, and feedback that
// contains wantMsg.
func submit(t *testing.T, e *Env, src, wantMsg string) hostileResult {
	t.Helper()
	start := time.Now()
	res, err := e.Step(src)
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	if wall > maxHostileWall {
		t.Errorf("step took %v, want under %v", wall, maxHostileWall)
	}
	if !res.Info.ActionValid {
		t.Errorf("hostile program was an invalid step, want a scored failure")
	}
	if res.Reward != 0 || res.Info.Success {
		t.Errorf("reward %v success %v, want 0 and false", res.Reward, res.Info.Success)
	}
	if !strings.Contains(res.Observation, wantMsg) {
		t.Errorf("observation lacks %q:\n%s", wantMsg, res.Observation)
	}
	return hostileResult{res.Observation, res.Info.Metrics, wall}
}

// hostileResult keeps what the hostile tests inspect after submit.
type hostileResult struct {
	obs     string
	metrics map[string]float64
	wall    time.Duration
}

func TestHostileInfiniteForLoop(t *testing.T) {
	e := hostileEnv(t, nil)
	r := submit(t, e, "def sum_multiples(xs):\n    n = 0\n    for i in range(1000000000000):\n        n += i\n    return n\n", "step limit exceeded")
	if r.metrics["timeout"] != 1 {
		t.Errorf("timeout metric = %v, want 1", r.metrics["timeout"])
	}
}

func TestHostileWhileTrue(t *testing.T) {
	e := hostileEnv(t, nil)
	submit(t, e, "def sum_multiples(xs):\n    while True:\n        pass\n", "step limit exceeded")
}

func TestHostileWhileDisabled(t *testing.T) {
	e := hostileEnv(t, func(c *Config) { c.AllowWhile = false })
	r := submit(t, e, "def sum_multiples(xs):\n    while True:\n        pass\n", "could not be loaded")
	if r.metrics["compile_error"] != 1 {
		t.Errorf("compile_error = %v, want 1", r.metrics["compile_error"])
	}
}

func TestHostileTopLevelLoop(t *testing.T) {
	e := hostileEnv(t, nil)
	submit(t, e, "for i in range(1000000000):\n    pass\ndef sum_multiples(xs):\n    return 0\n", "step limit exceeded")
}

// TestHostileWallClock uses a step budget too large to matter, so that
// only the wall-clock timeout can stop the loop.
func TestHostileWallClock(t *testing.T) {
	e := hostileEnv(t, func(c *Config) { c.MaxSteps = 1_000_000_000; c.TimeoutSeconds = 0.3 })
	r := submit(t, e, "def sum_multiples(xs):\n    while True:\n        pass\n", "time limit exceeded")
	if r.wall > 2*time.Second {
		t.Errorf("wall-clock timeout of 0.3 s took %v", r.wall)
	}
}

func TestHostileDeepRecursion(t *testing.T) {
	e := hostileEnv(t, nil)
	submit(t, e, "def sum_multiples(xs):\n    return sum_multiples(xs + [1])\n", "maximum call depth exceeded")
}

func TestHostileMutualRecursion(t *testing.T) {
	e := hostileEnv(t, nil)
	submit(t, e, "def a(n):\n    return b(n + 1)\ndef b(n):\n    return a(n + 1)\ndef sum_multiples(xs):\n    return a(0)\n", "maximum call depth exceeded")
}

func TestHostileRecursionDisabled(t *testing.T) {
	e := hostileEnv(t, func(c *Config) { c.AllowRecursion = false })
	submit(t, e, "def sum_multiples(xs):\n    return sum_multiples(xs)\n", "called recursively")
}

// TestHostileAllocations covers the allocation patterns that
// go.starlark.net's own limits miss (and one they catch).
func TestHostileAllocations(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"repeat beyond starlark's limit", `return len("x" * 10000000000)`, "allocation budget exceeded"},
		{"string repeat", `return len("x" * (1 << 29))`, "allocation budget exceeded"},
		{"list repeat", `return len([0] * (1 << 28))`, "allocation budget exceeded"},
		{"string doubling", "s = \"x\"\n    for i in range(64):\n        s = s + s\n    return len(s)", "allocation budget exceeded"},
		{"list doubling in place", "a = [0]\n    for i in range(64):\n        a += a\n    return len(a)", "allocation budget exceeded"},
		{"list(range)", `return len(list(range(1000000000)))`, "allocation budget exceeded"},
		{"max(range)", `return max(range(1000000000000))`, "allocation budget exceeded"},
		{"replace explosion", "s = \"x\" * 100000\n    return len(s.replace(\"x\", s))", "allocation budget exceeded"},
		{"join explosion", "s = \"x\" * 1000000\n    return len(\"\".join([s] * 1000))", "allocation budget exceeded"},
		{"repr of shared structure", "a = [1]\n    for i in range(60):\n        a = [a, a]\n    return len(str(a))", "allocation budget exceeded"},
		{"bigint squaring", "x = 3\n    for i in range(64):\n        x = x * x\n    return x % 7", "integer too large"},
		{"bigint shifting", "x = 3\n    for i in range(100000):\n        x = x << 500\n    return x % 7", "integer too large"},
		{"int of long string", `return int("9" * 100000)`, "too long to convert"},
		{"retained copies", "s = \"y\" * 1000000\n    keep = []\n    for i in range(100000):\n        keep.append(s[::-1])\n    return 0", "allocation budget exceeded"},
		{"format explosion", "s = \"z\" * 1000000\n    return len((\"{0}\" * 1000).format(s))", "allocation budget exceeded"},
		{"percent explosion", "s = \"z\" * 1000000\n    return len((\"%s\" * 1000) % tuple([s] * 1000))", "allocation budget exceeded"},
		{"deep nesting print", "a = []\n    for i in range(100000):\n        a = [a]\n    return len(str(a))", "nested more than"},
		{"split explosion", "s = \"a \" * 10000000\n    return len(s.split())", "allocation budget exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			budget := uint64(DefaultConfig().MaxAllocBytes)
			// HeapAlloc counts the garbage of earlier runs until the
			// collector reaches it. On a loaded machine (go test runs
			// packages side by side) the collector fell behind by more
			// than 100 MiB here, with nothing of it reachable. A memory
			// limit makes it keep up, as GOMEMLIMIT does in a deployment;
			// what is left to measure is what the sandbox lets a
			// submission hold and churn.
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(runtimeMemory() + 4*budget)))
			stop := make(chan struct{})
			peak := make(chan uint64)
			go samplePeakHeap(stop, peak)
			e := hostileEnv(t, nil)
			submit(t, e, "def sum_multiples(xs):\n    "+c.body+"\n", c.want)
			close(stop)
			peakHeap := <-peak
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			// Both figures are process-wide; the tests of this package do
			// not run in parallel, so they measure this submission. Each
			// test call may allocate a small multiple of the budget
			// (transient garbage included) and hold about one budget.
			perTest := (after.TotalAlloc - before.TotalAlloc) / uint64(len(e.Task().Tests))
			if perTest > 8*budget {
				t.Errorf("submission allocated %d MiB per test", perTest>>20)
			}
			t.Logf("allocated %d MiB per test; heap peaked at %d MiB (baseline %d MiB)", perTest>>20, peakHeap>>20, before.HeapAlloc>>20)
			if peakHeap > before.HeapAlloc+8*budget {
				t.Errorf("heap peaked at %d MiB (baseline %d MiB)", peakHeap>>20, before.HeapAlloc>>20)
			}
		})
	}
}

// runtimeMemory is the memory the Go runtime holds from the OS, as its
// memory limit counts it.
func runtimeMemory() uint64 {
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64() - m[1].Value.Uint64()
}

// samplePeakHeap reports the largest HeapAlloc seen until stop closes.
func samplePeakHeap(stop <-chan struct{}, peak chan<- uint64) {
	var m runtime.MemStats
	var highest uint64
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		runtime.ReadMemStats(&m)
		highest = max(highest, m.HeapAlloc)
		select {
		case <-stop:
			peak <- highest
			return
		case <-tick.C:
		}
	}
}

func TestHostileErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"syntax error", "def sum_multiples(xs)\n    return 0\n", "syntax error"},
		{"python power operator", "def sum_multiples(xs):\n    return 2 ** 3\n", "syntax error"},
		{"wrong function name", "def sum_multiple(xs):\n    return 0\n", "does not define a function named sum_multiples (it defines sum_multiple)"},
		{"not a function", "sum_multiples = 3\n", "not a function"},
		{"undefined name", "def sum_multiples(xs):\n    return total\n", "undefined: total"},
		{"division by zero", "def sum_multiples(xs):\n    return len(xs) // 0\n", "division by zero"},
		{"index error", "def sum_multiples(xs):\n    return xs[100]\n", "out of range"},
		{"load", "load(\"os\", \"system\")\ndef sum_multiples(xs):\n    return 0\n", "load"},
		{"fail", "def sum_multiples(xs):\n    fail(\"boom\")\n", "boom"},
		{"string iteration", "def sum_multiples(xs):\n    for c in \"abc\":\n        pass\n    return 0\n", "not iterable"},
		{"frozen global", "cache = []\ndef sum_multiples(xs):\n    cache.append(1)\n    return 0\n", "frozen"},
		{"deep brackets", "def sum_multiples(xs):\n    return " + strings.Repeat("(", 500) + "0" + strings.Repeat(")", 500) + "\n", "nested"},
		{"too long", "def sum_multiples(xs):\n    return 0\n" + strings.Repeat("# padding\n", 5000), "too long"},
		{"wrong arity", "def sum_multiples():\n    return 0\n", "sum_multiples"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			submit(t, hostileEnv(t, nil), c.src, c.want)
		})
	}
}

// TestWrongTypes: returning a value of the wrong type fails the test with
// the returned value shown; a float equal to the answer does not pass.
func TestWrongTypes(t *testing.T) {
	for _, body := range []string{"return None", "return str(0)", "return (0,)", "return 0.0 * len(xs)", "return True"} {
		e := hostileEnv(t, nil)
		res, err := e.Step("def sum_multiples(xs):\n    " + body + "\n")
		if err != nil {
			t.Fatal(err)
		}
		if res.Info.Success {
			t.Errorf("%q passed every test", body)
		}
		if !strings.Contains(res.Observation, "got ") {
			t.Errorf("%q: feedback does not show the returned value:\n%s", body, res.Observation)
		}
	}
}

// TestPartialCredit: a program right on some tests gets that fraction.
func TestPartialCredit(t *testing.T) {
	e := hostileEnv(t, nil)
	task := e.Task()
	// Correct except on empty lists, where it fails.
	src := strings.Replace(task.Reference, "total = 0\n", "total = 0\n    if not xs:\n        fail(\"empty\")\n", 1)
	res, err := e.Step(src)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(len(task.Tests))
	if res.Reward != (n-1)/n {
		t.Errorf("reward %v, want %v\n%s", res.Reward, (n-1)/n, res.Observation)
	}
	if res.Info.Metrics["tests_passed"] != n-1 || res.Info.Metrics["tests_total"] != n {
		t.Errorf("metrics %v", res.Info.Metrics)
	}
	if !strings.Contains(res.Observation, "sum_multiples([]) expected 0, error: line 4, in sum_multiples: fail: empty") {
		t.Errorf("feedback does not name the failed test:\n%s", res.Observation)
	}
}

func TestPrintCaptured(t *testing.T) {
	e := hostileEnv(t, nil)
	r := submit(t, e, "def sum_multiples(xs):\n    for i in range(100000):\n        print(\"spam\", i)\n    return -1\n", "Printed output:\nspam 0")
	if len(r.obs) > 4000 {
		t.Errorf("observation is %d bytes; print output not bounded", len(r.obs))
	}
}

// TestNoGuardNamesExposed: the guard builtins cannot be called by name,
// and error messages do not mention them.
func TestNoGuardNamesExposed(t *testing.T) {
	e := hostileEnv(t, nil)
	r := submit(t, e, "def sum_multiples(xs):\n    return xs + 1\n", "unknown binary op")
	if strings.Contains(r.obs, "$") {
		t.Errorf("feedback mentions a guard:\n%s", r.obs)
	}
}

func TestExtractProgram(t *testing.T) {
	def := "def f(x):\n    return x"
	cases := map[string]string{
		def:                           def,
		"```python\n" + def + "\n```": def,
		"Sure:\n```starlark\n" + def + "\n```\nDone":         def,
		"```\n" + def + "\n```":                              def,
		"```py\n" + def:                                      def, // unclosed fence
		"```python\nx = 1\n```\n```python\n" + def + "\n```": def,
	}
	for in, want := range cases {
		if got := ExtractProgram(in, "f"); got != want {
			t.Errorf("ExtractProgram(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGuardedSemantics checks that the rewrite keeps Starlark's meaning
// for the operations it intercepts.
func TestGuardedSemantics(t *testing.T) {
	src := `
def f():
    a = [1, 2]
    b = a
    b += [3]            # in-place: a sees it
    s = "ab" * 2 + "c"
    d = {"k": 1}
    d["k"] += 1
    t = (1, 2) + (3,)
    n = -(2 - 5) * 3 // 2 % 4
    m = ~5 << 2 >> 1
    x = 12 & 10 | 1 ^ 4
    return [len(a), s, d["k"], t, n, m, x, "%d-%s" % (7, "z"), "{}!".format(1), s[1:3], s[::-1], "a,b".split(","), 7 / 2]
`
	rep := testSandbox().Evaluate(src, "f", []TestCase{{Args: nil, Want: nil}})
	if rep.CompileError != "" {
		t.Fatal(rep.CompileError)
	}
	want := `[3, "ababc", 2, (1, 2, 3), 0, -12, 13, "7-z", "1!", "ba", "cbaba", ["a", "b"], 3.5]`
	if got := rep.Results[0].Got; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestConcurrentEnvs(t *testing.T) {
	done := make(chan error)
	for g := range 8 {
		go func() {
			cfg := DefaultConfig()
			e, err := New(cfg)
			if err != nil {
				done <- err
				return
			}
			for seed := range uint64(10) {
				if _, err := e.Reset(seed*8 + uint64(g)); err != nil {
					done <- err
					return
				}
				adv, _ := e.Advise(1, nil)
				res, err := e.Step(adv.Actions[0])
				if err != nil || !res.Info.Success {
					done <- fmt.Errorf("seed %d: expert failed: %v %s", seed, err, res.Observation)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestStarlarkEqualityOfConvertedValues guards toStarlark against drift.
func TestStarlarkEqualityOfConvertedValues(t *testing.T) {
	for _, v := range []any{nil, true, 3, "s", []int{1}, []string{"a"}, [][]int{{1}, {}}} {
		ok, err := strictEqual(toStarlark(v), toStarlark(v))
		if !ok || err != nil {
			t.Errorf("%v not equal to itself: %v", v, err)
		}
	}
	if ok, _ := strictEqual(starlark.Float(3), starlark.MakeInt(3)); ok {
		t.Error("3.0 equals 3 under strictEqual")
	}
}

// TestLegitProgramsWithinBudget: ordinary, even wasteful, programs stay
// well within the default budgets.
func TestLegitProgramsWithinBudget(t *testing.T) {
	src := `
def f():
    out = []
    for i in range(2000):
        out.extend([i, i])
    s = ""
    for i in range(2000):
        s += "ab"
    d = {}
    for i in range(5000):
        d[i] = str(i)
    total = 0
    for k, v in d.items():
        total += len(v)
    big = sorted(list(range(50000)), reverse = True)
    words = " ".join([str(i) for i in range(3000)]).split()
    return [len(out), len(s), total, big[0], len(words), len(s.upper().replace("A", "xy"))]
`
	rep := testSandbox().Evaluate(src, "f", []TestCase{{Want: []int{4000, 4000, 18890, 49999, 3000, 6000}}})
	if rep.CompileError != "" || rep.Passed != 1 {
		t.Fatalf("%s %+v", rep.CompileError, rep.Results)
	}
}
