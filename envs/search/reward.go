package search

import (
	"strings"
	"unicode"
)

// NormalizeAnswer is SQuAD's normalize_answer, which RAGEN's SearchQA
// reward (from rLLM) and Search-R1 use: lower-case, drop ASCII punctuation
// (Python's string.punctuation), replace the articles a, an, the (as whole
// words: Python's Unicode \b) by a space, and collapse whitespace.
func NormalizeAnswer(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && strings.ContainsRune(asciiPunctuation, r) {
			continue
		}
		b.WriteRune(r)
	}
	s = removeArticles(b.String())
	return strings.Join(strings.Fields(s), " ")
}

// asciiPunctuation is Python's string.punctuation.
const asciiPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// isWordRune is Python's \w for str patterns: letters, numbers and '_'.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// removeArticles is re.sub(r"\b(a|an|the)\b", " ", s) with Python's
// Unicode word boundaries.
func removeArticles(s string) string {
	rs := []rune(s)
	var b strings.Builder
	for i := 0; i < len(rs); {
		if i == 0 || !isWordRune(rs[i-1]) {
			matched := 0
			for _, art := range [...]string{"the", "an", "a"} {
				n := len(art)
				if i+n <= len(rs) && string(rs[i:i+n]) == art && (i+n == len(rs) || !isWordRune(rs[i+n])) {
					matched = n
					break
				}
			}
			if matched > 0 {
				b.WriteByte(' ')
				i += matched
				continue
			}
		}
		b.WriteRune(rs[i])
		i++
	}
	return b.String()
}

// ExactMatch reports whether prediction equals gold after NormalizeAnswer.
func ExactMatch(prediction, gold string) bool {
	return NormalizeAnswer(prediction) == NormalizeAnswer(gold)
}

// F1 is SQuAD's token F1 between the normalised prediction and gold (with
// multiplicity), as RAGEN's SearchRewardFn.f1_score computes it, including
// its rule that yes, no and noanswer only match themselves.
func F1(prediction, gold string) float64 {
	p, g := NormalizeAnswer(prediction), NormalizeAnswer(gold)
	special := func(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }
	if (special(p) || special(g)) && p != g {
		return 0
	}
	pt, gt := strings.Fields(p), strings.Fields(g)
	counts := map[string]int{}
	for _, t := range gt {
		counts[t]++
	}
	same := 0
	for _, t := range pt {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := float64(same) / float64(len(pt))
	recall := float64(same) / float64(len(gt))
	return 2 * precision * recall / (precision + recall)
}

// RewardMode chooses how an answer's match becomes the step reward.
type RewardMode string

const (
	// RewardRAGEN is RAGEN's SearchQA reward (SearchRewardFn): 1 for an
	// exact match, else the F1 when it reaches the threshold, else 0.
	RewardRAGEN RewardMode = "ragen"
	// RewardEM is 1 for an exact match, else 0.
	RewardEM RewardMode = "em"
	// RewardF1 is the token F1 itself.
	RewardF1 RewardMode = "f1"
)

// Score is the outcome of one answer.
type Score struct {
	EM     bool
	F1     float64
	Reward float64
}

// ScoreAnswer scores prediction against gold under mode; threshold is the
// F1 that RewardRAGEN requires (RAGEN: 0.3).
func ScoreAnswer(prediction, gold string, mode RewardMode, threshold float64) Score {
	s := Score{EM: ExactMatch(prediction, gold)}
	if s.EM {
		s.F1 = 1
	} else {
		s.F1 = F1(prediction, gold)
	}
	switch {
	case s.EM:
		s.Reward = 1
	case mode == RewardF1:
		s.Reward = s.F1
	case mode == RewardRAGEN && s.F1 >= threshold:
		s.Reward = s.F1
	}
	return s
}
