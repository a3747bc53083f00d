package codeexec

import (
	"testing"
	"time"
)

// FuzzStep submits arbitrary programs: Step must never panic, never return
// an error during an episode, and finish within a bounded time.
func FuzzStep(f *testing.F) {
	for _, seed := range []string{
		"def sum_multiples(xs):\n    return 0\n",
		"```python\ndef sum_multiples(xs):\n    return sum_multiples(xs)\n```",
		"def sum_multiples(xs):\n    while True:\n        pass\n",
		"def sum_multiples(xs):\n    return len(\"x\" * (1 << 29))\n",
		"def sum_multiples(xs):\n    a = [1]\n    for i in range(60):\n        a = [a, a]\n    return str(a)\n",
		"def sum_multiples(xs):\n    x = 3\n    for i in range(64):\n        x = x * x\n    return x\n",
		"def sum_multiples(xs):\n    d = {}\n    d[xs[0]] += 1\n    return d\n",
		"def sum_multiples(xs):\n    return [x for x in xs if x % 2 == 0][::-1][0].bit_length()\n",
		"lambda: (((((",
		"def sum_multiples(xs, *a, **k):\n    return -~len(xs) << 3 >> 1 | 1 ^ 2 & 3\n",
		"load('x', 'y')\n",
		"def sum_multiples(xs):\n    return \"%s %d\" % (xs, 1) + \"{}\".format(xs)\n",
		"def sum_multiples(xs):\n    s = 0\n    for i, x in enumerate(sorted(xs, key = lambda v: -v)):\n        s += i * x\n    return s\n",
	} {
		f.Add(seed)
	}
	cfg := DefaultConfig()
	cfg.Tasks = []string{"sum_multiples"}
	cfg.Families = []string{"list"}
	cfg.TimeoutSeconds = 0.5
	cfg.MaxSteps = 100_000
	f.Fuzz(func(t *testing.T, program string) {
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(1)
		start := time.Now()
		res, err := e.Step(program)
		if err != nil {
			t.Fatalf("Step returned an error: %v", err)
		}
		if wall := time.Since(start); wall > 5*time.Second {
			t.Fatalf("Step took %v", wall)
		}
		if res.Reward < 0 || res.Reward > 1 {
			t.Fatalf("reward %v out of [0, 1]", res.Reward)
		}
	})
}
