package codeexec

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// rationale explains the reference solution in one of several phrasings.
// It names the function, the task family's approach (with the parameters
// the seed drew) and, after a failed attempt, how far that attempt got, so
// that it depends on the state and not only on the task.
func (e *Env) rationale(rng *rand.Rand) string {
	t := e.task
	phrasings := []string{
		"The task is %[1]s; I will %[2]s.%[3]s",
		"To implement %[1]s I %[2]s.%[3]s",
		"%[1]s: the plan is to %[2]s, using only Starlark built-ins.%[3]s",
		"Approach for %[1]s: %[2]s. No while loop or recursion is needed.%[3]s",
		"I need %[1]s to pass the hidden tests, so I %[2]s and handle the edge cases.%[3]s",
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(phrasings))
	}
	progress := ""
	if e.attempts > 0 {
		progress = fmt.Sprintf(" My last attempt passed %.0f%% of the tests at best, so I rewrite it from scratch.", 100*e.best)
	}
	return fmt.Sprintf(phrasings[i], t.Signature()[len("def "):len(t.Signature())-1], t.Approach, progress)
}

// brief is the terse rationale for small models: the function's name, and
// "again" after a failed attempt.
func (e *Env) brief() string {
	sig := e.task.Signature()
	name, _, _ := strings.Cut(sig[len("def "):], "(")
	if e.attempts > 0 {
		return name + " again"
	}
	return name
}
