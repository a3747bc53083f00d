package codeexec

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Arithmetic families: functions of integers. Reference solutions use
// bounded for loops with break instead of while loops or recursion, so they
// run under every Config (allow_while and allow_recursion may be off).

func init() {
	register(
		family{"gcd_lcm", "arith", genGcdLcm},
		family{"fib_mod", "arith", genFibMod},
		family{"digit_power_sum", "arith", genDigitPowerSum},
		family{"is_prime", "arith", genIsPrime},
		family{"to_base", "arith", genToBase},
		family{"isqrt", "arith", genIsqrt},
		family{"collatz_steps", "arith", genCollatzSteps},
	)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func genGcdLcm(rng *rand.Rand, lv level) problem {
	isGCD := rng.IntN(2) == 0
	p := problem{
		params: []string{"a", "b"},
		edges:  [][]any{{0, 0}, {0, 7}, {12, 12}, {1, 13}},
		random: func() []any {
			// A shared factor makes the answer interesting.
			f := randInt(rng, 1, 12)
			hi := max(2, min(lv.maxNum, 1_000_000)/f)
			return []any{f * randInt(rng, 0, hi), f * randInt(rng, 0, hi)}
		},
	}
	if isGCD {
		p.fn = "gcd"
		p.spec = "a and b are non-negative integers. Return their greatest common divisor; gcd(0, 0) is 0 and gcd(0, b) is b."
		p.ref = `
def gcd(a, b):
    for _ in range(1000):
        if b == 0:
            break
        a, b = b, a % b
    return a
`
		p.approach = "Euclid's algorithm: replace (a, b) by (b, a % b) until b is 0"
		p.oracle = func(a []any) any { return gcd(a[0].(int), a[1].(int)) }
		return p
	}
	p.fn = "lcm"
	p.spec = "a and b are non-negative integers. Return their least common multiple; lcm(a, b) is 0 when a or b is 0."
	p.ref = `
def lcm(a, b):
    if a == 0 or b == 0:
        return 0
    x, y = a, b
    for _ in range(1000):
        if y == 0:
            break
        x, y = y, x % y
    return a // x * b
`
	p.approach = "compute the gcd with Euclid's algorithm and return a // gcd * b (0 if either is 0)"
	p.oracle = func(a []any) any {
		x, y := a[0].(int), a[1].(int)
		if x == 0 || y == 0 {
			return 0
		}
		return x / gcd(x, y) * y
	}
	return p
}

func genFibMod(rng *rand.Rand, lv level) problem {
	m := randInt(rng, 10, 10_007)
	maxN := min(lv.maxNum, 5_000)
	return problem{
		fn:     "fib_mod",
		params: []string{"n"},
		spec: fmt.Sprintf("Return F(n) modulo %d, where F(0) = 0, F(1) = 1 and F(n) = F(n-1) + F(n-2). "+
			"n is a non-negative integer.", m),
		ref: `
def fib_mod(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, (a + b) % $M
    return a
`,
		vars:     map[string]any{"M": m},
		approach: fmt.Sprintf("iterate the pair (F(i), F(i+1)) n times, reducing modulo %d at each step", m),
		oracle: func(a []any) any {
			x, y := 0, 1
			for range a[0].(int) {
				x, y = y, (x+y)%m
			}
			return x % m
		},
		edges:  [][]any{{0}, {1}, {2}},
		random: func() []any { return []any{randInt(rng, 3, maxN)} },
	}
}

func genDigitPowerSum(rng *rand.Rand, lv level) problem {
	p := randInt(rng, 1, 3)
	fn, what := "digit_sum", "the decimal digits"
	switch p {
	case 2:
		fn, what = "digit_square_sum", "the squares of the decimal digits"
	case 3:
		fn, what = "digit_cube_sum", "the cubes of the decimal digits"
	}
	pow := []string{"", "d", "d * d", "d * d * d"}[p]
	return problem{
		fn:     fn,
		params: []string{"n"},
		spec:   fmt.Sprintf("Return the sum of %s of the integer n (ignore the sign of a negative n).", what),
		ref: `
def $FN(n):
    total = 0
    for ch in str(abs(n)).elems():
        d = int(ch)
        total += $POW
    return total
`,
		vars:     map[string]any{"FN": fn, "POW": pow},
		approach: "turn abs(n) into its decimal string and add up " + pow + " for every digit d",
		oracle: func(a []any) any {
			s := 0
			for _, c := range strconv.Itoa(abs(a[0].(int))) {
				d := int(c - '0')
				s += []int{0, d, d * d, d * d * d}[p]
			}
			return s
		},
		edges:  [][]any{{0}, {-9}, {10}},
		random: func() []any { return []any{randInt(rng, -lv.maxNum, lv.maxNum)} },
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

func genIsPrime(rng *rand.Rand, lv level) problem {
	hi := min(lv.maxNum, 1_000_000)
	return problem{
		fn:     "is_prime",
		params: []string{"n"},
		spec:   "Return True if the integer n is a prime number, else False. Numbers below 2 are not prime.",
		ref: `
def is_prime(n):
    if n < 2:
        return False
    for d in range(2, n):
        if d * d > n:
            break
        if n % d == 0:
            return False
    return True
`,
		approach: "trial division by every d from 2 while d * d <= n",
		oracle:   func(a []any) any { return isPrime(a[0].(int)) },
		edges:    [][]any{{-7}, {0}, {1}, {2}, {4}, {9}},
		random: func() []any {
			// Half the draws are primes, so both answers are common.
			for {
				n := randInt(rng, 3, hi)
				if rng.IntN(2) == 0 || isPrime(n) {
					return []any{n}
				}
			}
		},
	}
}

func genToBase(rng *rand.Rand, lv level) problem {
	b := pick(rng, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 16)
	return problem{
		fn:     "to_base",
		params: []string{"n"},
		spec: fmt.Sprintf("Return the representation of the non-negative integer n in base %d as a string, using the "+
			"digits 0123456789abcdef (lower case), without any prefix or leading zeros. to_base(0) is \"0\".", b),
		ref: `
def to_base(n):
    digits = "0123456789abcdef"
    if n == 0:
        return "0"
    out = []
    for _ in range(200):
        if n == 0:
            break
        out.append(digits[n % $B])
        n = n // $B
    return "".join(reversed(out))
`,
		vars:     map[string]any{"B": b},
		approach: fmt.Sprintf("repeatedly take n %% %d as the next digit from the right and divide n by %d", b, b),
		oracle:   func(a []any) any { return strconv.FormatInt(int64(a[0].(int)), b) },
		edges:    [][]any{{0}, {1}, {b}, {b - 1}},
		random:   func() []any { return []any{randInt(rng, 2, lv.maxNum)} },
	}
}

func isqrt(n int) int {
	lo, hi := 0, n+1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if mid*mid <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

func genIsqrt(rng *rand.Rand, lv level) problem {
	return problem{
		fn:     "isqrt",
		params: []string{"n"},
		spec:   "n is a non-negative integer. Return the largest integer r with r * r <= n (an int, not a float).",
		ref: `
def isqrt(n):
    lo, hi = 0, n + 1
    for _ in range(200):
        if hi - lo <= 1:
            break
        mid = (lo + hi) // 2
        if mid * mid <= n:
            lo = mid
        else:
            hi = mid
    return lo
`,
		approach: "binary search for the largest r whose square does not exceed n, using only integers",
		oracle:   func(a []any) any { return isqrt(a[0].(int)) },
		edges:    [][]any{{0}, {1}, {3}, {4}, {99}},
		random: func() []any {
			if rng.IntN(3) == 0 { // perfect squares and their neighbours
				r := randInt(rng, 2, isqrt(lv.maxNum))
				return []any{r*r + randInt(rng, -1, 0)}
			}
			return []any{randInt(rng, 5, lv.maxNum)}
		},
	}
}

func collatz(n int) int {
	steps := 0
	for n != 1 {
		if n%2 == 0 {
			n /= 2
		} else {
			n = 3*n + 1
		}
		steps++
	}
	return steps
}

func genCollatzSteps(rng *rand.Rand, lv level) problem {
	hi := min(lv.maxNum, 100_000)
	return problem{
		fn:     "collatz_steps",
		params: []string{"n"},
		spec: "n is a positive integer. Repeatedly replace n by n // 2 if it is even and by 3 * n + 1 if it is odd. " +
			"Return the number of replacements needed to reach 1 (0 when n is 1).",
		ref: `
def collatz_steps(n):
    steps = 0
    for _ in range(100000):
        if n == 1:
            break
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
`,
		approach: "apply the Collatz rule in a bounded loop, counting replacements until n is 1",
		oracle:   func(a []any) any { return collatz(a[0].(int)) },
		edges:    [][]any{{1}, {2}, {27}},
		random:   func() []any { return []any{randInt(rng, 3, hi)} },
	}
}
