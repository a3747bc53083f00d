package codeexec

import (
	"reflect"
	"strings"
	"testing"
)

func testSandbox() *Sandbox {
	cfg := DefaultConfig()
	return NewSandbox(cfg.Limits())
}

func TestCatalogueSize(t *testing.T) {
	if n := len(catalogue); n < 20 {
		t.Fatalf("catalogue has %d families, want at least 20", n)
	}
	counts := map[string]int{}
	for _, f := range catalogue {
		counts[f.category]++
	}
	for _, c := range Categories {
		if counts[c] < 5 {
			t.Errorf("category %s has %d families, want at least 5", c, counts[c])
		}
	}
}

// TestReferenceSolutionsPass checks, for every family, difficulty and many
// seeds, that the Starlark reference agrees with the Go oracle on every
// hidden test.
func TestReferenceSolutionsPass(t *testing.T) {
	sb := testSandbox()
	seeds := 25
	if testing.Short() {
		seeds = 5
	}
	for _, name := range FamilyNames() {
		t.Run(name, func(t *testing.T) {
			for _, d := range []Difficulty{Easy, Medium, Hard} {
				for seed := range uint64(seeds) {
					task, err := GenerateTask(name, d, seed)
					if err != nil {
						t.Fatal(err)
					}
					if len(task.Tests) < 4 {
						t.Fatalf("%s seed %d: only %d tests", d, seed, len(task.Tests))
					}
					rep := sb.Evaluate(task.Reference, task.Func, task.Tests)
					if rep.CompileError != "" {
						t.Fatalf("%s seed %d: reference does not load: %s\n%s", d, seed, rep.CompileError, task.Reference)
					}
					for i, r := range rep.Results {
						if !r.Passed {
							tc := task.Tests[i]
							t.Fatalf("%s seed %d: %s: want %v, got %s %s\n%s", d, seed, tc.Call(task.Func),
								toStarlark(tc.Want), r.Got, r.Err, task.Reference)
						}
					}
				}
			}
		})
	}
}

// TestReferencesNeedNoDialectOptions runs the references with while loops
// and recursion disabled, the strictest configuration.
func TestReferencesNeedNoDialectOptions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AllowWhile, cfg.AllowRecursion = false, false
	sb := NewSandbox(cfg.Limits())
	for _, name := range FamilyNames() {
		task, _ := GenerateTask(name, Medium, 7)
		if rep := sb.Evaluate(task.Reference, task.Func, task.Tests); rep.Passed != len(task.Tests) {
			t.Errorf("%s: %d/%d passed, %s", name, rep.Passed, len(task.Tests), rep.CompileError)
		}
	}
}

func TestTaskDeterminism(t *testing.T) {
	for _, name := range FamilyNames() {
		a, _ := GenerateTask(name, Hard, 42)
		b, _ := GenerateTask(name, Hard, 42)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed gave different tasks", name)
		}
	}
}

// TestTasksVary checks that seeds change the tests (and, for the
// parameterised families, the specification).
func TestTasksVary(t *testing.T) {
	for _, name := range FamilyNames() {
		tests := map[string]bool{}
		for seed := range uint64(20) {
			task, _ := GenerateTask(name, Medium, seed)
			tests[task.Tests[0].Call(task.Func)] = true
		}
		if len(tests) < 5 {
			t.Errorf("%s: only %d distinct first tests over 20 seeds", name, len(tests))
		}
	}
	distinctSpecs := 0
	for _, name := range FamilyNames() {
		specs := map[string]bool{}
		for seed := range uint64(20) {
			task, _ := GenerateTask(name, Medium, seed)
			specs[task.Spec] = true
		}
		if len(specs) > 1 {
			distinctSpecs++
		}
	}
	if distinctSpecs < 15 {
		t.Errorf("only %d families vary their specification with the seed, want >= 15", distinctSpecs)
	}
}

func TestSignatureAndSpec(t *testing.T) {
	for _, name := range FamilyNames() {
		task, _ := GenerateTask(name, Easy, 1)
		if !strings.HasPrefix(task.Reference, "def "+task.Func+"(") {
			t.Errorf("%s: reference does not start with its def line: %q", name, task.Reference[:20])
		}
		if !strings.Contains(task.Reference, task.Signature()) {
			t.Errorf("%s: reference lacks signature %q", name, task.Signature())
		}
		if strings.Contains(task.Reference, "$") {
			t.Errorf("%s: unfilled placeholder in reference:\n%s", name, task.Reference)
		}
		if task.Spec == "" || task.Approach == "" {
			t.Errorf("%s: empty spec or approach", name)
		}
	}
}
