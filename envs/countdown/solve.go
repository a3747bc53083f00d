package countdown

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
)

// Solution is an equation reaching the target, with its intermediate steps.
type Solution struct {
	// Expression is the answer text, e.g. "(44 + 19) - 35".
	Expression string
	// Steps are the intermediate results in order, e.g. "44 + 19 = 63".
	Steps []string
}

type term struct {
	value *big.Rat
	text  string // fully parenthesised except at the top level
	steps []string
}

// Solve searches all ways of combining the numbers pairwise with + - * /
// (each number used once; all of them when all is set) and returns the first
// equation equal to the target in a fixed search order, which tries addition
// and subtraction before multiplication and division.
func Solve(inst Instance, all bool) (Solution, bool) {
	target := new(big.Rat).SetInt64(inst.Target)
	terms := make([]term, len(inst.Numbers))
	for i, n := range inst.Numbers {
		terms[i] = term{value: new(big.Rat).SetInt64(n), text: fmt.Sprint(n)}
	}
	t, ok := search(terms, target, all)
	if !ok {
		return Solution{}, false
	}
	return Solution{Expression: t.text, Steps: t.steps}, true
}

func search(terms []term, target *big.Rat, all bool) (term, bool) {
	for _, t := range terms {
		if (!all || len(terms) == 1) && t.value.Cmp(target) == 0 {
			return t, true
		}
	}
	if len(terms) == 1 {
		return term{}, false
	}
	for i := range terms {
		for j := range terms {
			if i == j {
				continue
			}
			a, b := terms[i], terms[j]
			for _, op := range "+-*/" {
				// + and * commute: try each unordered pair once.
				if (op == '+' || op == '*') && j < i {
					continue
				}
				v := new(big.Rat)
				switch op {
				case '+':
					v.Add(a.value, b.value)
				case '-':
					v.Sub(a.value, b.value)
				case '*':
					v.Mul(a.value, b.value)
				case '/':
					if b.value.Sign() == 0 {
						continue
					}
					v.Quo(a.value, b.value)
				}
				step := fmt.Sprintf("%s %c %s = %s", a.value.RatString(), op, b.value.RatString(), v.RatString())
				combined := term{
					value: v,
					text:  fmt.Sprintf("%s %c %s", wrap(a.text), op, wrap(b.text)),
					steps: append(append(append([]string{}, a.steps...), b.steps...), step),
				}
				rest := make([]term, 0, len(terms)-1)
				rest = append(rest, combined)
				for k, t := range terms {
					if k != i && k != j {
						rest = append(rest, t)
					}
				}
				if t, ok := search(rest, target, all); ok {
					return t, true
				}
			}
		}
	}
	return term{}, false
}

// wrap parenthesises a compound sub-expression.
func wrap(s string) string {
	if strings.ContainsAny(s, "+-*/") {
		return "(" + s + ")"
	}
	return s
}

var rationaleTemplates = []string{
	"Target %d from %s: %s.",
	"I need %d using %s. Work it out: %s.",
	"To reach %d with %s, combine step by step: %s.",
	"Numbers %[2]s, goal %[1]d. Plan: %[3]s.",
	"%[3]s, which hits the target %[1]d using %[2]s.",
}

func rationale(inst Instance, sol Solution, rng *rand.Rand) string {
	nums := make([]string, len(inst.Numbers))
	for i, n := range inst.Numbers {
		nums[i] = fmt.Sprint(n)
	}
	tmpl := rationaleTemplates[0]
	if rng != nil {
		tmpl = rationaleTemplates[rng.IntN(len(rationaleTemplates))]
	}
	return fmt.Sprintf(tmpl, inst.Target, "["+strings.Join(nums, ", ")+"]", strings.Join(sol.Steps, ", then "))
}
