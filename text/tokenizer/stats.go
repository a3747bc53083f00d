package tokenizer

import "unicode/utf8"

// CorpusStats summarises how a tokenizer encodes a corpus.
type CorpusStats struct {
	Texts  int // number of texts
	Bytes  int // total UTF-8 bytes
	Chars  int // total characters (runes; an invalid byte counts as one)
	Tokens int // total ids from Encode
}

// TokensPerChar is Tokens/Chars (0 for an empty corpus).
func (s CorpusStats) TokensPerChar() float64 {
	if s.Chars == 0 {
		return 0
	}
	return float64(s.Tokens) / float64(s.Chars)
}

// TokensPerText is the mean number of ids per text (0 for no texts).
func (s CorpusStats) TokensPerText() float64 {
	if s.Texts == 0 {
		return 0
	}
	return float64(s.Tokens) / float64(s.Texts)
}

// Measure encodes every text of corpus with Encode and counts texts, bytes,
// characters and tokens, for reporting tokens per character.
func (t *Tokenizer) Measure(corpus []string) CorpusStats {
	s := CorpusStats{Texts: len(corpus)}
	var buf []int
	for _, text := range corpus {
		buf = t.AppendEncode(buf[:0], text)
		s.Tokens += len(buf)
		s.Bytes += len(text)
		s.Chars += utf8.RuneCountInString(text)
	}
	return s
}
