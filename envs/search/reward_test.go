package search

import (
	"math"
	"testing"
)

// The expected values follow SQuAD v1.1's evaluate script (which RAGEN's
// SearchRewardFn copies), worked by hand.
func TestNormalizeAnswer(t *testing.T) {
	for in, want := range map[string]string{
		"Port Almera":               "port almera",
		"  The  Port of Almera. ":   "port of almera",
		"an apple a day":            "apple day",
		"A":                         "",
		"Anne, Theo and Ana":        "anne theo and ana", // articles only as whole words
		"the-end":                   "theend",            // punctuation goes before articles
		"rock'n'roll":               "rocknroll",
		"U.S.A.":                    "usa",
		"1887":                      "1887",
		"Ålesund, the town":         "ålesund town",
		"café a":                    "café",
		"éthe":                      "éthe", // Unicode \b: é is a word character
		"x_the":                     "xthe", // '_' is punctuation and removed before articles
		"tab\tand\nnewline":         "tab and newline",
		"\u201cquoted\u201d the":    "\u201cquoted\u201d", // curly quotes are not ASCII punctuation
		"the\u201cquoted\u201d the": "\u201cquoted\u201d",
	} {
		if got := NormalizeAnswer(in); got != want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestF1AndScore(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range []struct {
		pred, gold string
		f1         float64
	}{
		{"Port Almera", "Port Almera", 1},
		{"port almera.", "The Port Almera", 1},
		{"Almera", "Port Almera", 2 * (1 * 0.5) / 1.5},
		{"Port Almera city", "Port Almera", 2 * (2.0 / 3 * 1) / (2.0/3 + 1)},
		{"Dunmore", "Port Almera", 0},
		{"port port", "port almera", 0.5}, // multiplicity: one common token
		{"yes", "yes", 1},                 // special answers match only themselves
		{"no way", "no", 0},               // ... even when tokens overlap
		{"yes", "no", 0},
		{"", "Port Almera", 0},
		{"the", "Port Almera", 0},
	} {
		if got := F1(tc.pred, tc.gold); !near(got, tc.f1) {
			t.Errorf("F1(%q, %q) = %v, want %v", tc.pred, tc.gold, got, tc.f1)
		}
	}
	for _, tc := range []struct {
		pred   string
		mode   RewardMode
		reward float64
		em     bool
	}{
		{"Port Almera", RewardRAGEN, 1, true},
		{"the port almera!", RewardEM, 1, true},
		{"Almera", RewardRAGEN, 2.0 / 3, false}, // F1 0.67 >= 0.3
		{"Almera", RewardEM, 0, false},
		{"Almera", RewardF1, 2.0 / 3, false},
		{"Port Almera by the sea of Zelandia", RewardRAGEN, 0.5, false},                 // precision 2/6, recall 1
		{"it is somewhere near Almera in the south of Zelandia", RewardRAGEN, 0, false}, // F1 2/11 < 0.3
		{"it is somewhere near Almera in the south of Zelandia", RewardF1, 2.0 / 11, false},
		{"Dunmore", RewardRAGEN, 0, false},
	} {
		s := ScoreAnswer(tc.pred, "Port Almera", tc.mode, 0.3)
		if !near(s.Reward, tc.reward) || s.EM != tc.em {
			t.Errorf("ScoreAnswer(%q, %s) = %+v, want reward %v, em %v", tc.pred, tc.mode, s, tc.reward, tc.em)
		}
	}
}
