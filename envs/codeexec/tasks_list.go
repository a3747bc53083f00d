package codeexec

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// List families: functions of a list of integers (or of a list of lists).

func init() {
	register(
		family{"sum_multiples", "list", genSumMultiples},
		family{"running_extreme", "list", genRunningExtreme},
		family{"rotate", "list", genRotate},
		family{"dedupe", "list", genDedupe},
		family{"kth_largest", "list", genKthLargest},
		family{"flatten", "list", genFlatten},
		family{"count_inversions", "list", genCountInversions},
		family{"window_sums", "list", genWindowSums},
		family{"max_subarray", "list", genMaxSubarray},
		family{"count_pair_sums", "list", genCountPairSums},
	)
}

func genSumMultiples(rng *rand.Rand, lv level) problem {
	d := randInt(rng, 2, 5)
	return problem{
		fn:     "sum_multiples",
		params: []string{"xs"},
		spec: fmt.Sprintf("Return the sum of the elements of the integer list xs that are divisible by %d "+
			"(negative multiples count too). Return 0 when there are none.", d),
		ref: `
def sum_multiples(xs):
    total = 0
    for x in xs:
        if x % $D == 0:
            total += x
    return total
`,
		vars:     map[string]any{"D": d},
		approach: fmt.Sprintf("loop over xs and add every x with x %% %d == 0 to a running total", d),
		oracle: func(a []any) any {
			s := 0
			for _, x := range a[0].([]int) {
				if x%d == 0 {
					s += x
				}
			}
			return s
		},
		edges:  [][]any{{[]int{}}, {[]int{d + 1}}, {[]int{-d, d, 0}}},
		random: func() []any { return []any{randList(rng, lv, 1)} },
	}
}

func genRunningExtreme(rng *rand.Rand, lv level) problem {
	isMax := rng.IntN(2) == 0
	word, cmp, fn := "maximum", ">", "running_max"
	if !isMax {
		word, cmp, fn = "minimum", "<", "running_min"
	}
	return problem{
		fn:     fn,
		params: []string{"xs"},
		spec: fmt.Sprintf("Return a new list of the same length as the integer list xs whose i-th element "+
			"is the %s of xs[0], ..., xs[i]. An empty list gives an empty list.", word),
		ref: `
def $FN(xs):
    out = []
    for x in xs:
        if not out or x $CMP out[-1]:
            out.append(x)
        else:
            out.append(out[-1])
    return out
`,
		vars:     map[string]any{"FN": fn, "CMP": cmp},
		approach: fmt.Sprintf("keep the %s seen so far while scanning xs and append it after each element", word),
		oracle: func(a []any) any {
			xs := a[0].([]int)
			out := make([]int, len(xs))
			for i, x := range xs {
				out[i] = x
				if i > 0 && ((isMax && out[i-1] > x) || (!isMax && out[i-1] < x)) {
					out[i] = out[i-1]
				}
			}
			return out
		},
		edges:  [][]any{{[]int{}}, {[]int{7}}, {[]int{3, 3, 3}}, {[]int{5, 4, 3, 2, 1}}, {[]int{1, 2, 3, 4}}},
		random: func() []any { return []any{randList(rng, lv, 1)} },
	}
}

func genRotate(rng *rand.Rand, lv level) problem {
	k := randInt(rng, 1, 4)
	left := rng.IntN(2) == 0
	fn, dir, moves := "rotate_left", "left", "the first"
	if !left {
		fn, dir, moves = "rotate_right", "right", "the last"
	}
	split := "k % n"
	if !left {
		split = "(n - k % n) % n"
	}
	return problem{
		fn:     fn,
		params: []string{"xs"},
		spec: fmt.Sprintf("Return a new list with the elements of xs rotated %s by %d positions (%s %d elements "+
			"move to the other end, in order). Rotating wraps around when %d is larger than len(xs); "+
			"an empty list gives an empty list.", dir, k, moves, k, k),
		ref: `
def $FN(xs):
    n = len(xs)
    if n == 0:
        return []
    k = $K
    s = $SPLIT
    return xs[s:] + xs[:s]
`,
		vars:     map[string]any{"FN": fn, "K": k, "SPLIT": split},
		approach: fmt.Sprintf("reduce %d modulo len(xs) and join the two slices of xs around the split point", k),
		oracle: func(a []any) any {
			xs := a[0].([]int)
			n := len(xs)
			if n == 0 {
				return []int{}
			}
			s := k % n
			if !left {
				s = (n - k%n) % n
			}
			return append(slices.Clone(xs[s:]), xs[:s]...)
		},
		edges:  [][]any{{[]int{}}, {[]int{9}}, {[]int{1, 2}}, {randInts(rng, k, 0, 9)}},
		random: func() []any { return []any{randList(rng, lv, 2)} },
	}
}

func genDedupe(rng *rand.Rand, lv level) problem {
	keepFirst := rng.IntN(2) == 0
	which, fn := "first", "dedupe_first"
	if !keepFirst {
		which, fn = "last", "dedupe_last"
	}
	ref := `
def dedupe_first(xs):
    seen = {}
    out = []
    for x in xs:
        if x not in seen:
            seen[x] = True
            out.append(x)
    return out
`
	if !keepFirst {
		ref = `
def dedupe_last(xs):
    seen = {}
    out = []
    for x in reversed(xs):
        if x not in seen:
            seen[x] = True
            out.append(x)
    return out[::-1]
`
	}
	return problem{
		fn:     fn,
		params: []string{"xs"},
		spec: fmt.Sprintf("Return a new list with the repeated values of xs removed: keep only the %s "+
			"occurrence of each value, and keep the kept elements in their original relative order.", which),
		ref:      ref,
		approach: fmt.Sprintf("scan xs (from the %s side) remembering seen values in a dict and keep unseen ones", map[bool]string{true: "front", false: "back"}[keepFirst]),
		oracle: func(a []any) any {
			xs := a[0].([]int)
			seen := map[int]bool{}
			out := []int{}
			if keepFirst {
				for _, x := range xs {
					if !seen[x] {
						seen[x] = true
						out = append(out, x)
					}
				}
				return out
			}
			for i := len(xs) - 1; i >= 0; i-- {
				if !seen[xs[i]] {
					seen[xs[i]] = true
					out = append(out, xs[i])
				}
			}
			slices.Reverse(out)
			return out
		},
		edges: [][]any{{[]int{}}, {[]int{4, 4, 4}}, {[]int{1, 2, 1, 3, 2}}},
		// Small values make repeats likely.
		random: func() []any {
			return []any{randInts(rng, randInt(rng, 2, lv.maxLen), 0, max(3, lv.maxLen/2))}
		},
	}
}

func genKthLargest(rng *rand.Rand, lv level) problem {
	k := randInt(rng, 2, 3)
	fn, ord := "second_largest", "second"
	if k == 3 {
		fn, ord = "third_largest", "third"
	}
	return problem{
		fn:     fn,
		params: []string{"xs"},
		spec: fmt.Sprintf("Return the %s largest distinct value of the integer list xs (equal values count once), "+
			"or None if xs has fewer than %d distinct values.", ord, k),
		ref: `
def $FN(xs):
    uniq = {}
    for x in xs:
        uniq[x] = True
    vals = sorted(uniq.keys(), reverse = True)
    if len(vals) < $K:
        return None
    return vals[$K1]
`,
		vars:     map[string]any{"FN": fn, "K": k, "K1": k - 1},
		approach: fmt.Sprintf("collect the distinct values, sort them in decreasing order and take position %d if it exists", k-1),
		oracle: func(a []any) any {
			vals := slices.Clone(a[0].([]int))
			slices.Sort(vals)
			vals = slices.Compact(vals)
			if len(vals) < k {
				return nil
			}
			return vals[len(vals)-k]
		},
		edges: [][]any{{[]int{}}, {[]int{5}}, {[]int{2, 2, 2}}, {[]int{3, 1, 3, 2, 1}}},
		random: func() []any {
			return []any{randInts(rng, randInt(rng, 1, lv.maxLen), -lv.maxAbs/4-3, lv.maxAbs/4+3)}
		},
	}
}

func genFlatten(rng *rand.Rand, lv level) problem {
	return problem{
		fn:     "flatten",
		params: []string{"xss"},
		spec: "xss is a list of lists of integers. Return a single new list containing the elements of the " +
			"inner lists, inner list by inner list, in order (flatten one level).",
		ref: `
def flatten(xss):
    out = []
    for xs in xss:
        out.extend(xs)
    return out
`,
		approach: "extend one output list with every inner list in turn",
		oracle: func(a []any) any {
			out := []int{}
			for _, xs := range a[0].([][]int) {
				out = append(out, xs...)
			}
			return out
		},
		edges: [][]any{{[][]int{}}, {[][]int{{}, {}}}, {[][]int{{1}, {}, {2, 3}}}},
		random: func() []any {
			xss := make([][]int, randInt(rng, 1, max(2, lv.maxLen/2)))
			for i := range xss {
				xss[i] = randInts(rng, rng.IntN(4), -lv.maxAbs, lv.maxAbs)
			}
			return []any{xss}
		},
	}
}

func genCountInversions(rng *rand.Rand, lv level) problem {
	return problem{
		fn:     "count_inversions",
		params: []string{"xs"},
		spec:   "Return the number of pairs of positions (i, j) with i < j and xs[i] > xs[j] in the integer list xs.",
		ref: `
def count_inversions(xs):
    n = len(xs)
    count = 0
    for i in range(n):
        for j in range(i + 1, n):
            if xs[i] > xs[j]:
                count += 1
    return count
`,
		approach: "compare every pair of positions i < j with two nested loops and count the out-of-order ones",
		oracle: func(a []any) any {
			xs := a[0].([]int)
			c := 0
			for i := range xs {
				for j := i + 1; j < len(xs); j++ {
					if xs[i] > xs[j] {
						c++
					}
				}
			}
			return c
		},
		edges:  [][]any{{[]int{}}, {[]int{1, 2, 3}}, {[]int{3, 2, 1}}, {[]int{2, 2}}},
		random: func() []any { return []any{randList(rng, lv, 2)} },
	}
}

func genWindowSums(rng *rand.Rand, lv level) problem {
	k := randInt(rng, 2, 4)
	return problem{
		fn:     "window_sums",
		params: []string{"xs"},
		spec: fmt.Sprintf("Return the list of the sums of every run of %d consecutive elements of the integer "+
			"list xs, from left to right (len(xs) - %d + 1 sums). Return [] if xs has fewer than %d elements.", k, k, k),
		ref: `
def window_sums(xs):
    out = []
    for i in range(len(xs) - $K + 1):
        s = 0
        for x in xs[i:i + $K]:
            s += x
        out.append(s)
    return out
`,
		vars:     map[string]any{"K": k},
		approach: fmt.Sprintf("for each start position sum the slice of the next %d elements", k),
		oracle: func(a []any) any {
			xs := a[0].([]int)
			out := []int{}
			for i := 0; i+k <= len(xs); i++ {
				s := 0
				for _, x := range xs[i : i+k] {
					s += x
				}
				out = append(out, s)
			}
			return out
		},
		edges:  [][]any{{[]int{}}, {randInts(rng, k-1, 0, 9)}, {randInts(rng, k, 0, 9)}},
		random: func() []any { return []any{randList(rng, lv, k)} },
	}
}

func genMaxSubarray(rng *rand.Rand, lv level) problem {
	return problem{
		fn:     "max_subarray",
		params: []string{"xs"},
		spec: "xs is a non-empty list of integers. Return the largest sum of a non-empty run of consecutive " +
			"elements of xs.",
		ref: `
def max_subarray(xs):
    best = xs[0]
    cur = xs[0]
    for x in xs[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    return best
`,
		approach: "Kadane's scan: the best sum ending at each position is max(x, previous + x); keep the overall best",
		oracle: func(a []any) any {
			xs := a[0].([]int)
			best, cur := xs[0], xs[0]
			for _, x := range xs[1:] {
				cur = max(x, cur+x)
				best = max(best, cur)
			}
			return best
		},
		edges:  [][]any{{[]int{-5}}, {[]int{-3, -1, -2}}, {[]int{2, -1, 2}}},
		random: func() []any { return []any{randList(rng, lv, 1)} },
	}
}

func genCountPairSums(rng *rand.Rand, lv level) problem {
	t := randInt(rng, -5, 10)
	return problem{
		fn:     "count_pair_sums",
		params: []string{"xs"},
		spec: fmt.Sprintf("Return the number of pairs of positions (i, j) with i < j and xs[i] + xs[j] == %d "+
			"in the integer list xs.", t),
		ref: `
def count_pair_sums(xs):
    count = 0
    for i in range(len(xs)):
        for j in range(i + 1, len(xs)):
            if xs[i] + xs[j] == $T:
                count += 1
    return count
`,
		vars:     map[string]any{"T": t},
		approach: fmt.Sprintf("check every pair of positions i < j and count those whose values add up to %d", t),
		oracle: func(a []any) any {
			xs := a[0].([]int)
			c := 0
			for i := range xs {
				for j := i + 1; j < len(xs); j++ {
					if xs[i]+xs[j] == t {
						c++
					}
				}
			}
			return c
		},
		edges: [][]any{{[]int{}}, {[]int{t}}, {[]int{t / 2, t - t/2, t / 2, t - t/2}}},
		// Values near t/2 make matching pairs common.
		random: func() []any {
			return []any{randInts(rng, randInt(rng, 2, lv.maxLen), t/2-6, t/2+6)}
		},
	}
}
