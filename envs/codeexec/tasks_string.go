package codeexec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// String families. Inputs are ASCII so that "letter", "lower case" and
// "character" mean the same thing in Go, Starlark and the specification.

func init() {
	register(
		family{"reverse_words", "string", genReverseWords},
		family{"is_palindrome", "string", genIsPalindrome},
		family{"run_length", "string", genRunLength},
		family{"caesar", "string", genCaesar},
		family{"count_vowels", "string", genCountVowels},
		family{"common_prefix", "string", genCommonPrefix},
		family{"most_common_char", "string", genMostCommonChar},
		family{"is_anagram", "string", genIsAnagram},
	)
}

// randWords draws n short lower-case words.
func randWords(rng *rand.Rand, n int) []string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = randString(rng, randInt(rng, 1, 5), lowerLetters)
	}
	return ws
}

func genReverseWords(rng *rand.Rand, lv level) problem {
	return problem{
		fn:     "reverse_words",
		params: []string{"s"},
		spec: "s is a string of words separated by one or more spaces, possibly with leading or trailing spaces. " +
			"Return the words in reverse order joined by single spaces, with no leading or trailing space.",
		ref: `
def reverse_words(s):
    return " ".join(reversed(s.split()))
`,
		approach: "split s on runs of spaces, reverse the word list and join it with single spaces",
		oracle: func(a []any) any {
			ws := strings.Fields(a[0].(string))
			slices.Reverse(ws)
			return strings.Join(ws, " ")
		},
		edges: [][]any{{""}, {"   "}, {"one"}, {"  a  b "}},
		random: func() []any {
			ws := randWords(rng, randInt(rng, 2, max(3, lv.maxStr/4)))
			var b strings.Builder
			b.WriteString(strings.Repeat(" ", rng.IntN(2)))
			for i, w := range ws {
				if i > 0 {
					b.WriteString(strings.Repeat(" ", randInt(rng, 1, 2)))
				}
				b.WriteString(w)
			}
			return []any{b.String()}
		},
	}
}

func genIsPalindrome(rng *rand.Rand, lv level) problem {
	withDigits := rng.IntN(2) == 0
	kept, keep := "ASCII letter", lowerLetters
	if withDigits {
		kept, keep = "ASCII letter or digit", lowerLetters+digits
	}
	isKept := func(c byte) bool { return strings.IndexByte(keep, c) >= 0 }
	return problem{
		fn:     "is_palindrome",
		params: []string{"s"},
		spec: fmt.Sprintf("Return True if s reads the same forwards and backwards once upper case is turned into "+
			"lower case and every character that is not an %s is removed, else False. "+
			"A string with nothing left is a palindrome.", kept),
		ref: `
def is_palindrome(s):
    keep = "$KEEP"
    cs = [c for c in s.lower().elems() if c in keep]
    return cs == cs[::-1]
`,
		vars:     map[string]any{"KEEP": keep},
		approach: fmt.Sprintf("lower-case s, keep each %s and compare the result with its reverse", kept),
		oracle: func(a []any) any {
			var cs []byte
			for _, c := range []byte(strings.ToLower(a[0].(string))) {
				if isKept(c) {
					cs = append(cs, c)
				}
			}
			for i, j := 0, len(cs)-1; i < j; i, j = i+1, j-1 {
				if cs[i] != cs[j] {
					return false
				}
			}
			return true
		},
		edges: [][]any{{""}, {"!?"}, {"Aa"}, {"1a2"}, {"ab1ba"}},
		random: func() []any {
			alphabet := "abcAB12 ,.!"
			half := randString(rng, randInt(rng, 1, max(2, lv.maxStr/2)), alphabet)
			if rng.IntN(2) == 0 {
				return []any{randString(rng, randInt(rng, 1, lv.maxStr), alphabet)}
			}
			// A palindrome of letters and digits with case and punctuation
			// noise, so that roughly half the answers are True.
			r := []byte(half)
			slices.Reverse(r)
			mid := randString(rng, rng.IntN(2), "xY")
			s := []byte(half + mid + string(r))
			for i := range s {
				if rng.IntN(4) == 0 {
					s[i] = strings.ToUpper(string(s[i]))[0]
				}
			}
			return []any{string(s)}
		},
	}
}

func genRunLength(rng *rand.Rand, lv level) problem {
	countFirst := rng.IntN(2) == 0
	example, join := `"aaab" -> "a3b1"`, "c + str(n)"
	if countFirst {
		example, join = `"aaab" -> "3a1b"`, "str(n) + c"
	}
	return problem{
		fn:     "run_length",
		params: []string{"s"},
		spec: fmt.Sprintf("Run-length encode the string s: replace each maximal run of one repeated character by "+
			"%s, and concatenate the pieces (%s). The empty string encodes to \"\".",
			map[bool]string{false: "the character followed by the run length", true: "the run length followed by the character"}[countFirst],
			example),
		ref: `
def run_length(s):
    out = []
    prev = ""
    n = 0
    for ch in s.elems():
        if ch == prev:
            n += 1
        else:
            if n > 0:
                c = prev
                out.append($JOIN)
            prev = ch
            n = 1
    if n > 0:
        c = prev
        out.append($JOIN)
    return "".join(out)
`,
		vars:     map[string]any{"JOIN": join},
		approach: "scan the characters keeping the current run's character and length, emitting a piece whenever the run ends",
		oracle: func(a []any) any {
			s := a[0].(string)
			var b strings.Builder
			for i := 0; i < len(s); {
				j := i
				for j < len(s) && s[j] == s[i] {
					j++
				}
				if countFirst {
					b.WriteString(strconv.Itoa(j-i) + s[i:i+1])
				} else {
					b.WriteString(s[i:i+1] + strconv.Itoa(j-i))
				}
				i = j
			}
			return b.String()
		},
		edges: [][]any{{""}, {"z"}, {"aaaaaaaaaaaa"}},
		random: func() []any {
			var b strings.Builder
			for range randInt(rng, 1, max(2, lv.maxStr/3)) {
				b.WriteString(strings.Repeat(pick(rng, "a", "b", "c", "d"), randInt(rng, 1, 4)))
			}
			return []any{b.String()}
		},
	}
}

func genCaesar(rng *rand.Rand, lv level) problem {
	k := randInt(rng, 1, 25)
	shift := func(c byte) byte {
		switch {
		case c >= 'a' && c <= 'z':
			return 'a' + (c-'a'+byte(k))%26
		case c >= 'A' && c <= 'Z':
			return 'A' + (c-'A'+byte(k))%26
		}
		return c
	}
	return problem{
		fn:     "caesar",
		params: []string{"s"},
		spec: fmt.Sprintf("Apply a Caesar shift of %d to s: move every letter %d places forward in the alphabet, "+
			"wrapping around from z to a, and keep its case (a-z stay lower case, A-Z stay upper case). "+
			"Every other character is unchanged.", k, k),
		ref: `
def caesar(s):
    lower = "abcdefghijklmnopqrstuvwxyz"
    upper = lower.upper()
    out = []
    for c in s.elems():
        i = lower.find(c)
        j = upper.find(c)
        if i >= 0:
            out.append(lower[(i + $K) % 26])
        elif j >= 0:
            out.append(upper[(j + $K) % 26])
        else:
            out.append(c)
    return "".join(out)
`,
		vars:     map[string]any{"K": k},
		approach: fmt.Sprintf("map each letter to the one %d places later in its alphabet with index arithmetic modulo 26", k),
		oracle: func(a []any) any {
			b := []byte(a[0].(string))
			for i := range b {
				b[i] = shift(b[i])
			}
			return string(b)
		},
		edges: [][]any{{""}, {"xyz XYZ"}, {"123 !?"}},
		random: func() []any {
			return []any{randString(rng, randInt(rng, 1, lv.maxStr), lowerLetters+"ABCXYZ ,!")}
		},
	}
}

func genCountVowels(rng *rand.Rand, lv level) problem {
	withY := rng.IntN(2) == 0
	vowels, list := "aeiou", "a, e, i, o and u"
	if withY {
		vowels, list = "aeiouy", "a, e, i, o, u and y"
	}
	return problem{
		fn:     "count_vowels",
		params: []string{"s"},
		spec: fmt.Sprintf("Return how many characters of s are vowels, where the vowels are %s "+
			"in either lower or upper case.", list),
		ref: `
def count_vowels(s):
    n = 0
    for c in s.lower().elems():
        if c in "$VOWELS":
            n += 1
    return n
`,
		vars:     map[string]any{"VOWELS": vowels},
		approach: fmt.Sprintf("lower-case s and count the characters that occur in %q", vowels),
		oracle: func(a []any) any {
			n := 0
			for _, c := range []byte(strings.ToLower(a[0].(string))) {
				if strings.IndexByte(vowels, c) >= 0 {
					n++
				}
			}
			return n
		},
		edges: [][]any{{""}, {"rhythm"}, {"AEIOUY"}},
		random: func() []any {
			return []any{randString(rng, randInt(rng, 1, lv.maxStr), lowerLetters+"AEIOUY !")}
		},
	}
}

func genCommonPrefix(rng *rand.Rand, lv level) problem {
	return problem{
		fn:     "common_prefix",
		params: []string{"words"},
		spec: "words is a list of strings. Return the longest string that is a prefix of every word in words. " +
			"Return \"\" if words is empty or the words share no prefix.",
		ref: `
def common_prefix(words):
    if not words:
        return ""
    prefix = words[0]
    for w in words[1:]:
        n = 0
        for i in range(min(len(prefix), len(w))):
            if prefix[i] != w[i]:
                break
            n += 1
        prefix = prefix[:n]
    return prefix
`,
		approach: "start from the first word and shorten it to the longest prefix it shares with each following word",
		oracle: func(a []any) any {
			ws := a[0].([]string)
			if len(ws) == 0 {
				return ""
			}
			p := ws[0]
			for _, w := range ws[1:] {
				n := 0
				for n < len(p) && n < len(w) && p[n] == w[n] {
					n++
				}
				p = p[:n]
			}
			return p
		},
		edges: [][]any{{[]string{}}, {[]string{"solo"}}, {[]string{"", "abc"}}, {[]string{"ab", "abc", "abd"}}},
		random: func() []any {
			stem := randString(rng, rng.IntN(max(2, lv.maxStr/3)), "ab")
			ws := make([]string, randInt(rng, 2, max(3, lv.maxLen/2)))
			for i := range ws {
				ws[i] = stem[:randInt(rng, len(stem)*2/3, len(stem))] + randString(rng, rng.IntN(4), "abc")
			}
			return []any{ws}
		},
	}
}

func genMostCommonChar(rng *rand.Rand, lv level) problem {
	alphaTie := rng.IntN(2) == 0
	tie := "the one that appears first in s"
	if alphaTie {
		tie = "the one that comes first in alphabetical order"
	}
	ref := `
def most_common_char(s):
    counts = {}
    for c in s.elems():
        counts[c] = counts.get(c, 0) + 1
    best = ""
    for c in s.elems():
        if best == "" or counts[c] > counts[best]:
            best = c
    return best
`
	if alphaTie {
		ref = `
def most_common_char(s):
    counts = {}
    for c in s.elems():
        counts[c] = counts.get(c, 0) + 1
    best = ""
    for c in sorted(counts.keys()):
        if best == "" or counts[c] > counts[best]:
            best = c
    return best
`
	}
	return problem{
		fn:     "most_common_char",
		params: []string{"s"},
		spec: fmt.Sprintf("s is a non-empty string of lower-case letters. Return (as a one-character string) the "+
			"character that occurs most often in s; if several are tied, return %s.", tie),
		ref:      ref,
		approach: "count every character in a dict, then pick the highest count, scanning candidates in tie-break order",
		oracle: func(a []any) any {
			s := a[0].(string)
			counts := map[byte]int{}
			for i := range len(s) {
				counts[s[i]]++
			}
			order := []byte(s)
			if alphaTie {
				order = []byte(lowerLetters)
			}
			var best byte
			for _, c := range order {
				if counts[c] > counts[best] {
					best = c
				}
			}
			return string(best)
		},
		edges: [][]any{{"q"}, {"ba"}, {"abcabc"}},
		random: func() []any {
			return []any{randString(rng, randInt(rng, 1, lv.maxStr), "abcde")}
		},
	}
}

func genIsAnagram(rng *rand.Rand, lv level) problem {
	ignoreCase := rng.IntN(2) == 0
	rule, norm := "Upper and lower case letters are different", ""
	if ignoreCase {
		rule, norm = "Upper and lower case do not matter", ".lower()"
	}
	key := func(s string) string {
		if ignoreCase {
			s = strings.ToLower(s)
		}
		b := []byte(strings.ReplaceAll(s, " ", ""))
		slices.Sort(b)
		return string(b)
	}
	return problem{
		fn:     "is_anagram",
		params: []string{"a", "b"},
		spec: fmt.Sprintf("Return True if the strings a and b are anagrams: after removing spaces they contain the "+
			"same characters the same number of times. %s. Return False otherwise.", rule),
		ref: `
def is_anagram(a, b):
    ka = sorted([c for c in a$NORM.elems() if c != " "])
    kb = sorted([c for c in b$NORM.elems() if c != " "])
    return ka == kb
`,
		vars:     map[string]any{"NORM": norm},
		approach: "drop the spaces, " + map[bool]string{true: "lower-case both strings, ", false: ""}[ignoreCase] + "sort the characters of each and compare",
		oracle: func(a []any) any {
			return key(a[0].(string)) == key(a[1].(string))
		},
		edges: [][]any{{"", ""}, {"a", ""}, {"Ab", "bA"}, {"ab", "aB"}, {"a b", "ba"}},
		random: func() []any {
			a := randString(rng, randInt(rng, 1, max(2, lv.maxStr/2)), "abcAB ")
			b := []byte(a)
			rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
			switch rng.IntN(3) {
			case 0: // flip the case of one character
				i := rng.IntN(len(b))
				if strings.ToLower(string(b[i])) == string(b[i]) {
					b[i] = strings.ToUpper(string(b[i]))[0]
				} else {
					b[i] = strings.ToLower(string(b[i]))[0]
				}
			case 1: // change one character
				b[rng.IntN(len(b))] = pick(rng, byte('a'), 'c', 'B')
			}
			return []any{a, string(b)}
		},
	}
}
