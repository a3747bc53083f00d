package codeexec

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/agentrl/agentrl/envs"
)

// Task is one programming problem: a function to write, its specification,
// a reference solution and the hidden tests it is graded on.
type Task struct {
	// Family is the catalogue entry the task was drawn from, e.g. "rotate".
	Family string
	// Category is the family's group: "list", "string" or "arith".
	Category string
	// Func is the name of the function the agent must define.
	Func string
	// Params are the function's parameter names, in order.
	Params []string
	// Spec is the natural-language specification, with the parameters the
	// seed drew (the k of a rotation, the modulus) written out.
	Spec string
	// Reference is a Starlark solution; the expert submits it.
	Reference string
	// Approach is a one-sentence summary of the reference solution, used in
	// the expert's rationale.
	Approach string
	// Tests are the hidden test cases. Tests[:Visible] are shown to the
	// agent as examples.
	Tests []TestCase
	// Visible is how many of the leading tests the observation shows.
	Visible int
}

// Signature returns the def line the agent must write, e.g. "def f(xs):".
func (t *Task) Signature() string {
	return "def " + t.Func + "(" + strings.Join(t.Params, ", ") + "):"
}

// TestCase is one call of the task's function and the value it must return.
//
// Values are Go values of the few kinds tasks use: int, bool, string, nil
// (None), []int, []string and [][]int. Expected values come from the Go
// oracle of the task family, never from the Starlark reference, so that a
// test can check one against the other.
type TestCase struct {
	Args []any
	Want any
}

// Call renders the call as Starlark source, e.g. `rotate([1, 2], 3)`.
func (tc TestCase) Call(fn string) string {
	parts := make([]string, len(tc.Args))
	for i, a := range tc.Args {
		parts[i] = toStarlark(a).String()
	}
	return fn + "(" + strings.Join(parts, ", ") + ")"
}

// level holds the size knobs of one difficulty.
type level struct {
	maxLen   int // longest generated list
	maxAbs   int // largest absolute value of a list element
	maxStr   int // longest generated string
	maxNum   int // largest argument of arithmetic tasks
	numTests int // hidden tests per task
}

var levels = map[Difficulty]level{
	Easy:   {maxLen: 6, maxAbs: 20, maxStr: 8, maxNum: 1_000, numTests: 6},
	Medium: {maxLen: 10, maxAbs: 100, maxStr: 16, maxNum: 100_000, numTests: 10},
	Hard:   {maxLen: 24, maxAbs: 1_000, maxStr: 40, maxNum: 1_000_000_000, numTests: 14},
}

// family is one task template of the catalogue. gen draws the template's
// parameters and returns the problem; the test inputs are drawn afterwards
// from the same stream.
type family struct {
	name     string
	category string
	gen      func(rng *rand.Rand, lv level) problem
}

// problem is what a family's generator returns: everything about a task
// except its tests, plus the means to make them.
type problem struct {
	fn       string
	params   []string
	spec     string
	ref      string // Starlark source; "$NAME" placeholders are filled from vars
	vars     map[string]any
	approach string
	oracle   func(args []any) any
	edges    [][]any      // edge-case inputs, always tested
	random   func() []any // draws one random input
}

// Categories are the family groups that Config.Families selects from.
var Categories = []string{"list", "string", "arith"}

var catalogue []family

// register adds families to the catalogue; the per-category files call it
// from their init functions. The catalogue is sorted by name afterwards so
// that a seed maps to the same task whatever order the files initialise in.
func register(fs ...family) {
	catalogue = append(catalogue, fs...)
	slices.SortFunc(catalogue, func(a, b family) int { return strings.Compare(a.name, b.name) })
}

// FamilyNames lists every task family in the catalogue, sorted.
func FamilyNames() []string {
	names := make([]string, len(catalogue))
	for i, f := range catalogue {
		names[i] = f.name
	}
	return names
}

func findFamily(name string) (family, bool) {
	for _, f := range catalogue {
		if f.name == name {
			return f, true
		}
	}
	return family{}, false
}

// GenerateTask builds the task of family name for seed at difficulty d. The
// environment draws the family from the seed itself; this entry point exists
// for tests and tools that want one family.
func GenerateTask(name string, d Difficulty, seed uint64) (*Task, error) {
	f, ok := findFamily(name)
	if !ok {
		return nil, fmt.Errorf("codeexec: unknown task family %q", name)
	}
	lv, ok := levels[d]
	if !ok {
		return nil, fmt.Errorf("codeexec: unknown difficulty %q", d)
	}
	return buildTask(f, lv, envs.NewRand(seed, streamTask)), nil
}

// buildTask draws f's parameters and tests from rng.
func buildTask(f family, lv level, rng *rand.Rand) *Task {
	p := f.gen(rng, lv)
	// Longer placeholders first, so that $K1 is not read as $K and "1".
	keys := slices.Collect(maps.Keys(p.vars))
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	ref := p.ref
	for _, k := range keys {
		ref = strings.ReplaceAll(ref, "$"+k, fmt.Sprint(p.vars[k]))
	}
	t := &Task{
		Family:    f.name,
		Category:  f.category,
		Func:      p.fn,
		Params:    p.params,
		Spec:      p.spec,
		Reference: strings.TrimSpace(ref) + "\n",
		Approach:  p.approach,
	}
	// Random inputs first so that the visible examples are typical ones;
	// the edge cases follow. Duplicates are dropped, keyed by their
	// rendering, and a bounded number of draws keeps a family with a tiny
	// input space from looping.
	seen := map[string]bool{}
	add := func(args []any) {
		key := TestCase{Args: args}.Call("")
		if seen[key] {
			return
		}
		seen[key] = true
		t.Tests = append(t.Tests, TestCase{Args: args, Want: p.oracle(args)})
	}
	nRandom := max(lv.numTests-len(p.edges), 2)
	for tries := 0; len(t.Tests) < nRandom && tries < 20*nRandom; tries++ {
		add(p.random())
	}
	for _, e := range p.edges {
		add(e)
	}
	t.Visible = min(2, len(t.Tests))
	return t
}

// toStarlark converts a task value to a fresh Starlark value. Every call
// builds new lists, so a function that mutates its arguments cannot affect
// another test.
func toStarlark(v any) starlark.Value {
	switch v := v.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(v)
	case int:
		return starlark.MakeInt(v)
	case string:
		return starlark.String(v)
	case []int:
		elems := make([]starlark.Value, len(v))
		for i, x := range v {
			elems[i] = starlark.MakeInt(x)
		}
		return starlark.NewList(elems)
	case []string:
		elems := make([]starlark.Value, len(v))
		for i, x := range v {
			elems[i] = starlark.String(x)
		}
		return starlark.NewList(elems)
	case [][]int:
		elems := make([]starlark.Value, len(v))
		for i, x := range v {
			elems[i] = toStarlark(x)
		}
		return starlark.NewList(elems)
	}
	panic(fmt.Sprintf("codeexec: task value of unsupported type %T", v))
}

// --- random input helpers ---

func randInt(rng *rand.Rand, lo, hi int) int { return lo + rng.IntN(hi-lo+1) }

func randInts(rng *rand.Rand, n, lo, hi int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = randInt(rng, lo, hi)
	}
	return xs
}

// randList draws a list of up to lv.maxLen elements in [-maxAbs, maxAbs].
// minLen is the shortest length allowed.
func randList(rng *rand.Rand, lv level, minLen int) []int {
	return randInts(rng, randInt(rng, minLen, lv.maxLen), -lv.maxAbs, lv.maxAbs)
}

// randString draws a string of n characters from alphabet.
func randString(rng *rand.Rand, n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// pick returns one of xs.
func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

const (
	lowerLetters = "abcdefghijklmnopqrstuvwxyz"
	upperLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits       = "0123456789"
)
