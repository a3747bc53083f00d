package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// model is the tokenizer's model: it turns one pre-token into ids.
type model interface {
	// appendPiece appends the ids of one pre-token to dst. Where HF's
	// model fails (a piece no token covers and no unknown token to stand
	// for it), the piece gives no ids.
	appendPiece(dst []int, piece string) []int
	// vocabulary returns the model's tokens by string.
	vocabulary() map[string]int
}

// modelJSON is the model section of tokenizer.json, the fields of every
// model type together (the vocabulary and merges left raw: their shape
// depends on the type).
type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	UnkID                   *int            `json:"unk_id"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 *bool           `json:"fuse_unk"`
	ByteFallback            *bool           `json:"byte_fallback"`
	IgnoreMerges            *bool           `json:"ignore_merges"`
	MaxInputChars           *int            `json:"max_input_chars_per_word"`
}

// parseModel builds the model of tokenizer.json: BPE, Unigram, WordPiece or
// WordLevel. A model without a type is recognised by its fields, as HF's
// untagged deserialization does.
func parseModel(raw json.RawMessage) (model, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("model is missing")
	}
	mj, err := decodeModelJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	typ := mj.Type
	if typ == "" {
		switch v := bytes.TrimSpace(mj.Vocab); {
		case len(v) == 0 || isNull(mj.Vocab):
			return nil, fmt.Errorf("model has no type and no vocab")
		case v[0] == '[':
			typ = "Unigram"
		case !isNull(mj.Merges):
			typ = "BPE"
		case mj.ContinuingSubwordPrefix != nil || mj.MaxInputChars != nil:
			typ = "WordPiece"
		default:
			typ = "WordLevel"
		}
	}
	switch typ {
	case "BPE":
		return parseBPE(mj)
	case "Unigram":
		return parseUnigram(mj)
	case "WordPiece":
		return parseWordPiece(mj)
	case "WordLevel":
		return parseWordLevel(mj)
	}
	return nil, fmt.Errorf("model type %q is not supported (supported: BPE, Unigram, WordPiece, WordLevel)", typ)
}

// decodeModelJSON reads the model section: its small fields with
// encoding/json, the vocabulary and merges only located (their decoders
// read them).
func decodeModelJSON(raw json.RawMessage) (*modelJSON, error) {
	fields, ok := objectFields(raw)
	if !ok {
		var mj modelJSON
		err := json.Unmarshal(raw, &mj)
		return &mj, err
	}
	vocab, merges := fields["vocab"], fields["merges"]
	delete(fields, "vocab")
	delete(fields, "merges")
	small, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var mj modelJSON
	if err := json.Unmarshal(small, &mj); err != nil {
		return nil, err
	}
	mj.Vocab, mj.Merges = vocab, merges
	return &mj, nil
}

// checkVocab checks that no two tokens share an id and that the ids are
// neither negative nor much larger than the vocabulary.
func checkVocab(vocab map[string]int, where string) error {
	limit := 4*len(vocab) + 1024
	seen := make([]string, limit)
	taken := make([]bool, limit)
	for tok, id := range vocab {
		if id < 0 || id >= limit {
			return fmt.Errorf("%s: vocab id %d of %q is out of range (the vocabulary has %d tokens)", where, id, tok, len(vocab))
		}
		if taken[id] {
			a, b := min(seen[id], tok), max(seen[id], tok)
			return fmt.Errorf("%s: vocab id %d is given to both %q and %q", where, id, a, b)
		}
		seen[id], taken[id] = tok, true
	}
	return nil
}

func (m *bpeModel) vocabulary() map[string]int { return m.vocab }
