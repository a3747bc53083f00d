package search

import (
	"math/rand/v2"
	"strings"
)

// This file is the vocabulary the corpus is drawn from: syllables that make
// pronounceable names, the kinds of organisations and occupations, and the
// words the generator must never produce as a name. Nothing here is random;
// corpus.go draws from it with a seeded stream.

var (
	onsets = []string{"b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
		"b", "d", "k", "l", "m", "n", "r", "s", "t", "br", "dr", "gr", "tr", "st", "th", "sh"}
	vowels = []string{"a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou"}
	codas  = []string{"", "", "", "", "", "n", "l", "r", "s", "m", "nd", "th"}
	// citySuffixes and countrySuffixes give place names their shape.
	citySuffixes    = []string{"ford", "holm", "by", "mouth", "vik", "stad", "wick", "dale", "burg", "port"}
	cityPrefixes    = []string{"Port", "New", "Upper", "Lower", "East", "West", "Saint"}
	countrySuffixes = []string{"ia", "land", "ora", "esh", "avia", "istan", "ara", "onia"}
)

// orgType is a kind of organisation: the word in its name and the noun its
// page uses.
type orgType struct{ word, noun string }

var orgTypes = []orgType{
	{"Shipping", "shipping company"}, {"Motors", "car maker"}, {"Records", "record label"},
	{"Bank", "bank"}, {"Press", "publisher"}, {"Airlines", "airline"}, {"Foods", "food company"},
	{"Steel", "steel maker"}, {"Textiles", "textile firm"}, {"Pharma", "drug maker"},
	{"Mining", "mining company"}, {"Studios", "film studio"}, {"Insurance", "insurer"},
	{"Railways", "railway company"}, {"Brewery", "brewery"}, {"Instruments", "instrument maker"},
}

var occupations = []string{"engineer", "painter", "chemist", "poet", "banker", "architect", "composer",
	"surgeon", "lawyer", "sailor", "botanist", "merchant", "inventor", "photographer", "astronomer", "teacher"}

var townKinds = []string{"port", "market", "river", "mountain", "mill", "harbour"}

// reserved are words a generated name may not be: the template and question
// vocabulary, stopwords and SQuAD's articles, so that a name never hides in
// the text around it or vanishes under normalisation.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("born capital city country founded founder based town port year which where who what " +
		"in on of is was the a an and by it its to at as for from with new upper lower east west saint married moved " +
		"studied branch chairman twinned border largest railway opened links later became company maker label publisher " +
		"bank airline firm studio insurer brewery search answer finish results question none") {
		m[w] = true
	}
	for w := range stopwords {
		m[w] = true
	}
	for _, t := range orgTypes {
		m[strings.ToLower(t.word)] = true
	}
	return m
}()

// syllable draws one onset-vowel-coda syllable.
func syllable(rng *rand.Rand) string {
	return onsets[rng.IntN(len(onsets))] + vowels[rng.IntN(len(vowels))] + codas[rng.IntN(len(codas))]
}

// word draws a capitalised word of n syllables that is not reserved; the
// caller checks uniqueness.
func word(rng *rand.Rand, n int) string {
	for {
		var b strings.Builder
		for range n {
			b.WriteString(syllable(rng))
		}
		w := b.String()
		if len(w) < 4 || len(w) > 9 || reserved[w] {
			continue
		}
		return strings.ToUpper(w[:1]) + w[1:]
	}
}

// withArticle prefixes a noun with "a" or "an".
func withArticle(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}
