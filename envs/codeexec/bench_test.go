package codeexec

import (
	"testing"
)

// BenchmarkStepReference measures full task evaluations: one Step that
// loads the reference solution and runs it on every hidden test, cycling
// through all families at medium difficulty.
func BenchmarkStepReference(b *testing.B) {
	type prepared struct {
		env    *Env
		action string
	}
	var envs []prepared
	for _, name := range FamilyNames() {
		cfg := DefaultConfig()
		cfg.Tasks = []string{name}
		e, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		e.Reset(1)
		adv, _ := e.Advise(1, nil)
		envs = append(envs, prepared{e, adv.Actions[0]})
	}
	tests := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p := envs[i%len(envs)]
		p.env.attempts, p.env.best, p.env.done = 0, 0, false
		res, err := p.env.Step(p.action)
		if err != nil || !res.Info.Success {
			b.Fatalf("%s: %v %s", p.env.task.Family, err, res.Observation)
		}
		tests += len(p.env.task.Tests)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
	b.ReportMetric(float64(tests)/b.Elapsed().Seconds(), "tests/s")
}

// BenchmarkSandboxFamily measures one evaluation per family, to show the
// spread between cheap and expensive tasks.
func BenchmarkSandboxFamily(b *testing.B) {
	sb := testSandbox()
	for _, name := range []string{"sum_multiples", "count_inversions", "caesar", "is_prime", "fib_mod"} {
		task, _ := GenerateTask(name, Medium, 1)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if rep := sb.Evaluate(task.Reference, task.Func, task.Tests); rep.Passed != len(task.Tests) {
					b.Fatal(rep)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
		})
	}
}
