package hftok

import (
	"fmt"
	"unicode/utf8"
)

// wordPieceModel is HF's WordPiece: greedy longest-match-first from the
// left, continuation pieces spelled with a prefix ("##"); a word with a
// part no token covers, or longer than max_input_chars_per_word
// characters, becomes the unknown token.
type wordPieceModel struct {
	vocab    map[string]int
	unkID    int // -1 when unk_token is not in the vocabulary
	prefix   string
	maxChars int
}

func parseWordPiece(mj *modelJSON) (*wordPieceModel, error) {
	if isNull(mj.Vocab) {
		return nil, fmt.Errorf("model (WordPiece): missing vocab")
	}
	vocab, err := decodeVocab(mj.Vocab)
	if err != nil {
		return nil, fmt.Errorf("model (WordPiece): vocab: %w", err)
	}
	if err := checkVocab(vocab, "model (WordPiece)"); err != nil {
		return nil, err
	}
	m := &wordPieceModel{vocab: vocab, unkID: -1, prefix: "##", maxChars: 100}
	unk := "[UNK]"
	if mj.UnkToken != nil {
		unk = *mj.UnkToken
	}
	if id, ok := vocab[unk]; ok {
		m.unkID = id
	}
	if mj.ContinuingSubwordPrefix != nil {
		m.prefix = *mj.ContinuingSubwordPrefix
	}
	if mj.MaxInputChars != nil {
		m.maxChars = *mj.MaxInputChars
	}
	return m, nil
}

func (m *wordPieceModel) vocabulary() map[string]int { return m.vocab }

func (m *wordPieceModel) unknown(dst []int) []int {
	if m.unkID >= 0 {
		dst = append(dst, m.unkID)
	}
	return dst
}

func (m *wordPieceModel) appendPiece(dst []int, piece string) []int {
	if piece == "" {
		return dst
	}
	if utf8.RuneCountInString(piece) > m.maxChars {
		return m.unknown(dst)
	}
	start0 := len(dst)
	key := make([]byte, 0, len(m.prefix)+len(piece))
	for start := 0; start < len(piece); {
		end := len(piece)
		found := -1
		for start < end {
			key = key[:0]
			if start > 0 {
				key = append(key, m.prefix...)
			}
			key = append(key, piece[start:end]...)
			if id, ok := m.vocab[string(key)]; ok {
				found = id
				break
			}
			_, w := utf8.DecodeLastRuneInString(piece[start:end])
			end -= w
		}
		if found < 0 {
			return m.unknown(dst[:start0])
		}
		dst = append(dst, found)
		start = end
	}
	return dst
}
