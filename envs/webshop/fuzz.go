package webshop

import (
	"math"
	"slices"
	"strings"
)

// This file reproduces the fuzzy string matching WebShop's reward uses:
// thefuzz 0.19.0 (the version WebShop pins, a rename of fuzzywuzzy 0.18)
// without the optional python-Levenshtein speedup, which WebShop's
// requirements do not install. In that configuration fuzz.ratio is
// difflib.SequenceMatcher(None, a, b).ratio() rounded half-to-even, so this
// file ports difflib's matching-block algorithm (Ratcliff/Obershelp with the
// "autojunk" popularity heuristic) rather than using a Levenshtein ratio;
// the two disagree on some strings, and the 85 threshold is sensitive to it.

// TokenSetRatio is thefuzz's fuzz.token_set_ratio(s1, s2) with its defaults
// (force_ascii and full_process on): both strings are reduced to lower-case
// ASCII letters, digits and underscores, split into token sets, and the best
// of three difflib ratios between "intersection", "intersection + rest of
// s1" and "intersection + rest of s2" (each sorted) is returned, 0..100.
func TokenSetRatio(s1, s2 string) int {
	if s1 == s2 {
		// Identical inputs give identical token sets: the result is
		// known without matching (the reward compares many equal phrases).
		if strings.IndexFunc(s1, isWordRune) < 0 {
			return 0
		}
		return 100
	}
	p1, p2 := fullProcess(s1), fullProcess(s2)
	if p1 == "" || p2 == "" {
		return 0
	}
	t1, t2 := tokenSet(p1), tokenSet(p2)
	var inter, diff12, diff21 []string
	for t := range t1 {
		if t2[t] {
			inter = append(inter, t)
		} else {
			diff12 = append(diff12, t)
		}
	}
	for t := range t2 {
		if !t1[t] {
			diff21 = append(diff21, t)
		}
	}
	slices.Sort(inter)
	slices.Sort(diff12)
	slices.Sort(diff21)
	sect := strings.Join(inter, " ")
	// Python builds sect + " " + rest and then strips, which drops the
	// separator when either part is empty.
	comb12 := strings.TrimSpace(sect + " " + strings.Join(diff12, " "))
	comb21 := strings.TrimSpace(sect + " " + strings.Join(diff21, " "))
	return max(Ratio(sect, comb12), Ratio(sect, comb21), Ratio(comb12, comb21))
}

// Ratio is thefuzz's fuzz.ratio without preprocessing: 100 for equal
// strings, 0 if either is empty, otherwise round(100 * difflib ratio) with
// Python's round-half-to-even.
func Ratio(a, b string) int {
	if a == b {
		return 100
	}
	if a == "" || b == "" {
		return 0
	}
	return int(math.RoundToEven(100 * sequenceRatio([]rune(a), []rune(b))))
}

// fullProcess is thefuzz's utils.full_process with force_ascii: drop
// non-ASCII characters, turn every non-word character (Python's \W: not a
// letter, digit or underscore) into a space, lower-case, trim.
func fullProcess(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 128:
			// asciidammit removes the character entirely.
		case r >= 'A' && r <= 'Z':
			sb.WriteRune(r + ('a' - 'A'))
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			sb.WriteRune(r)
		default:
			sb.WriteByte(' ')
		}
	}
	return strings.TrimSpace(sb.String())
}

// isWordRune reports whether fullProcess keeps r.
func isWordRune(r rune) bool {
	return r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
}

func tokenSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, t := range strings.Fields(s) {
		set[t] = true
	}
	return set
}

// sequenceRatio is difflib.SequenceMatcher(None, a, b).ratio():
// 2*M/(len(a)+len(b)) where M is the total size of the matching blocks.
func sequenceRatio(a, b []rune) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	m := newSeqMatcher(a, b)
	return 2 * float64(m.matches()) / float64(len(a)+len(b))
}

// seqMatcher holds difflib's index of b: the positions of every element,
// minus the "popular" ones when b has at least 200 elements (autojunk).
type seqMatcher struct {
	a, b      []rune
	b2j       map[rune][]int
	row, next []int // longestMatch's scratch rows, all zero between calls
}

func newSeqMatcher(a, b []rune) *seqMatcher {
	b2j := make(map[rune][]int)
	for j, r := range b {
		b2j[r] = append(b2j[r], j)
	}
	if n := len(b); n >= 200 {
		ntest := n/100 + 1
		for r, js := range b2j {
			if len(js) > ntest {
				delete(b2j, r)
			}
		}
	}
	return &seqMatcher{a: a, b: b, b2j: b2j}
}

// matches sums the sizes of get_matching_blocks. The sum does not depend on
// the order in which difflib visits the sub-ranges, so a plain stack
// suffices.
func (m *seqMatcher) matches() int {
	total := 0
	type span struct{ alo, ahi, blo, bhi int }
	stack := []span{{0, len(m.a), 0, len(m.b)}}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i, j, k := m.longestMatch(s.alo, s.ahi, s.blo, s.bhi)
		if k == 0 {
			continue
		}
		total += k
		if s.alo < i && s.blo < j {
			stack = append(stack, span{s.alo, i, s.blo, j})
		}
		if i+k < s.ahi && j+k < s.bhi {
			stack = append(stack, span{i + k, s.ahi, j + k, s.bhi})
		}
	}
	return total
}

// longestMatch is difflib's find_longest_match: the longest block of
// a[alo:ahi] equal to b[blo:bhi] built from indexed (non-popular)
// elements, earliest in a, then earliest in b, then extended on both sides
// with equal elements (popular ones included, since there is no junk
// function).
func (m *seqMatcher) longestMatch(alo, ahi, blo, bhi int) (int, int, int) {
	besti, bestj, bestk := alo, blo, 0
	// j2len[j+1] is the length of the match ending at a[i-1], b[j] (the
	// previous row); difflib keeps it in a dict, rows here are slices
	// cleared through the list of entries written.
	if cap(m.row) < len(m.b)+1 {
		m.row, m.next = make([]int, len(m.b)+1), make([]int, len(m.b)+1)
	}
	j2len, newj2len := m.row[:len(m.b)+1], m.next[:len(m.b)+1]
	var written, newWritten []int
	for i := alo; i < ahi; i++ {
		newWritten = newWritten[:0]
		for _, j := range m.b2j[m.a[i]] {
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := j2len[j] + 1
			newj2len[j+1] = k
			newWritten = append(newWritten, j+1)
			if k > bestk {
				besti, bestj, bestk = i-k+1, j-k+1, k
			}
		}
		for _, w := range written {
			j2len[w] = 0
		}
		j2len, newj2len = newj2len, j2len
		written, newWritten = newWritten, written
	}
	for _, w := range written {
		j2len[w] = 0
	}
	for besti > alo && bestj > blo && m.a[besti-1] == m.b[bestj-1] {
		besti, bestj, bestk = besti-1, bestj-1, bestk+1
	}
	for besti+bestk < ahi && bestj+bestk < bhi && m.a[besti+bestk] == m.b[bestj+bestk] {
		bestk++
	}
	return besti, bestj, bestk
}
