package hftok

import (
	"unicode"
	"unicode/utf8"
)

// AddedToken is one entry of tokenizer.json's added_tokens: a string that is
// cut out of the text before normalization and pre-tokenization and encoded
// as one id.
type AddedToken struct {
	// ID is the token's id, assigned as HF assigns it (see Parse).
	ID int
	// Content is the token's text.
	Content string
	// SingleWord: match only where the token is not inside a word.
	SingleWord bool
	// LStrip and RStrip: the match also takes the whitespace on its left
	// (right).
	LStrip, RStrip bool
	// Normalized: match in the normalized text (against the normalized
	// content) rather than in the raw text.
	Normalized bool
	// Special tokens are the control tokens: EncodeOptions.AllowSpecial
	// decides whether their text is recognised, and Decode can skip them.
	Special bool
}

// trieNode is a node of a byte trie over added-token patterns.
type trieNode struct {
	next map[byte]*trieNode
	tok  int // index into addedVocab.tokens, or -1
}

// trie finds added tokens leftmost-longest, as HF's Aho-Corasick automaton
// (MatchKind::LeftmostLongest) does.
type trie struct {
	root  trieNode
	start [256]bool // bytes that begin some pattern
	empty bool
}

func newTrie() *trie { return &trie{root: trieNode{tok: -1}, empty: true} }

func (t *trie) insert(pattern string, tok int) {
	n := &t.root
	for i := 0; i < len(pattern); i++ {
		if n.next == nil {
			n.next = map[byte]*trieNode{}
		}
		c, ok := n.next[pattern[i]]
		if !ok {
			c = &trieNode{tok: -1}
			n.next[pattern[i]] = c
		}
		n = c
	}
	n.tok = tok
	t.start[pattern[0]] = true
	t.empty = false
}

// longest returns the index and length of the longest pattern at s[i:], or
// -1.
func (t *trie) longest(s string, i int) (tok, n int) {
	tok = -1
	node := &t.root
	for j := i; j < len(s); j++ {
		node = node.next[s[j]]
		if node == nil {
			break
		}
		if node.tok >= 0 {
			tok, n = node.tok, j+1-i
		}
	}
	return tok, n
}

// addedVocab is HF's AddedVocabulary.
type addedVocab struct {
	tokens []AddedToken
	raw    *trie // tokens with Normalized false, matched in the raw text
	norm   *trie // tokens with Normalized true, by their normalized content
}

// segment is a piece of text between added tokens (tok -1) or an added token
// (an index into addedVocab.tokens).
type segment struct {
	start, end int
	tok        int
}

// split cuts s at the added tokens of tr, exactly as HF's find_matches: the
// leftmost-longest matches are found among all tokens; a match of a special
// token (unless allowSpecial) or of a single_word token inside a word is
// then ignored (its text stays in the surrounding piece and hides any
// overlapping match); lstrip and rstrip widen a match over the whitespace
// beside it.
func (v *addedVocab) split(dst []segment, s string, tr *trie, allowSpecial bool) []segment {
	if tr.empty {
		if len(s) > 0 {
			dst = append(dst, segment{0, len(s), -1})
		}
		return dst
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !tr.start[s[i]] {
			i++
			continue
		}
		tok, n := tr.longest(s, i)
		if tok < 0 {
			i++
			continue
		}
		start, stop := i, i+n
		i = stop
		at := &v.tokens[tok]
		if at.Special && !allowSpecial {
			continue
		}
		if at.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if at.LStrip {
			start = max(trailingSpaceStart(s[:start]), startOffset)
		}
		if at.RStrip {
			stop += leadingSpaceLen(s[stop:])
		}
		if startOffset < start {
			dst = append(dst, segment{startOffset, start, -1})
		}
		dst = append(dst, segment{start, stop, tok})
		startOffset = stop
	}
	if startOffset < len(s) {
		dst = append(dst, segment{startOffset, len(s), -1})
	}
	return dst
}

// isWordRune is Rust regex's Unicode \w: Alphabetic, Mark,
// Decimal_Number, Connector_Punctuation and Join_Control.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.In(r, unicode.Nd, unicode.Nl, unicode.Pc,
		unicode.Other_Alphabetic, unicode.Other_Lowercase, unicode.Other_Uppercase, unicode.Join_Control)
}

func endsWithWord(s string) bool {
	r, w := utf8.DecodeLastRuneInString(s)
	return w > 0 && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, w := utf8.DecodeRuneInString(s)
	return w > 0 && isWordRune(r)
}

// trailingSpaceStart returns where the whitespace at the end of s begins.
func trailingSpaceStart(s string) int {
	for len(s) > 0 {
		r, w := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-w]
	}
	return len(s)
}

// leadingSpaceLen returns the byte length of the whitespace that begins s.
func leadingSpaceLen(s string) int {
	n := 0
	for n < len(s) {
		r, w := utf8.DecodeRuneInString(s[n:])
		if !unicode.IsSpace(r) {
			break
		}
		n += w
	}
	return n
}
