package hftok

import "fmt"

// wordLevelModel is HF's WordLevel: each pre-token is one token, or the
// unknown token.
type wordLevelModel struct {
	vocab map[string]int
	unkID int // -1 when unk_token is not in the vocabulary
}

func parseWordLevel(mj *modelJSON) (*wordLevelModel, error) {
	if isNull(mj.Vocab) {
		return nil, fmt.Errorf("model (WordLevel): missing vocab")
	}
	vocab, err := decodeVocab(mj.Vocab)
	if err != nil {
		return nil, fmt.Errorf("model (WordLevel): vocab: %w", err)
	}
	if err := checkVocab(vocab, "model (WordLevel)"); err != nil {
		return nil, err
	}
	m := &wordLevelModel{vocab: vocab, unkID: -1}
	unk := "<unk>"
	if mj.UnkToken != nil {
		unk = *mj.UnkToken
	}
	if id, ok := vocab[unk]; ok {
		m.unkID = id
	}
	return m, nil
}

func (m *wordLevelModel) vocabulary() map[string]int { return m.vocab }

func (m *wordLevelModel) appendPiece(dst []int, piece string) []int {
	if piece == "" {
		return dst
	}
	if id, ok := m.vocab[piece]; ok {
		return append(dst, id)
	}
	if m.unkID >= 0 {
		dst = append(dst, m.unkID)
	}
	return dst
}
