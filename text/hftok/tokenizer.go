package hftok

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// Tokenizer encodes and decodes text as a Hugging Face tokenizer.json
// does. It is safe for concurrent use.
type Tokenizer struct {
	norm  normalizer    // nil: none
	pre   *preTokenizer // nil: none
	model model
	added addedVocab
	post  *postProcessor
	dec   decoder // nil: the tokens are joined with spaces

	// byteDecode: the decoder is ByteLevel alone, and Decode joins
	// tokBytes directly.
	byteDecode bool

	// Per id (indexed by id; ok false for ids no token has): the token
	// string, the bytes the decoder makes of it, and whether it is a
	// special token's content (skipped by Decode with skipSpecial).
	ok       []bool
	tokStr   []string
	tokBytes [][]byte
	skip     []bool

	addedIDs  map[string]int // added token content -> id
	vocabSize int

	scratch sync.Pool // *encodeScratch
}

// fileJSON is the top level of tokenizer.json.
type fileJSON struct {
	Truncation    json.RawMessage  `json:"truncation"`
	Padding       json.RawMessage  `json:"padding"`
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         json.RawMessage  `json:"model"`
}

// addedTokenJSON is an entry of added_tokens. Its id field is not read:
// HF assigns the ids itself (see Parse).
type addedTokenJSON struct {
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// decodeFileJSON reads the top level of tokenizer.json. The model is
// only located, not checked: parseModel reads it.
func decodeFileJSON(data []byte) (*fileJSON, error) {
	fields, ok := objectFields(data)
	if !ok {
		var f fileJSON
		err := json.Unmarshal(data, &f)
		return &f, err
	}
	model := fields["model"]
	delete(fields, "model")
	small, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	var f fileJSON
	if err := json.Unmarshal(small, &f); err != nil {
		return nil, err
	}
	f.Model = model
	return &f, nil
}

// Load reads a tokenizer.json file; see Parse.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return t, nil
}

// Parse builds a Tokenizer from the contents of a tokenizer.json file. It
// returns an error naming the component and its type for anything it does
// not support (see the package documentation), and for truncation and
// padding settings, which change what an encoding is.
//
// Added tokens get their ids as HF's tokenizers library gives them when it
// loads the file: the id of the same string in the model's vocabulary if it
// has one, else the next id after the vocabulary, in file order. (HF only
// warns when the file's id field disagrees; in files HF writes it never
// does.)
func Parse(data []byte) (*Tokenizer, error) {
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("hftok: %w", err)
	}
	return t, nil
}

func parse(data []byte) (*Tokenizer, error) {
	f, err := decodeFileJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if !isNull(f.Truncation) {
		return nil, fmt.Errorf("truncation is not supported (it must be null)")
	}
	if !isNull(f.Padding) {
		return nil, fmt.Errorf("padding is not supported (it must be null)")
	}
	t := &Tokenizer{}
	if t.model, err = parseModel(f.Model); err != nil {
		return nil, err
	}
	if t.norm, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	// Byte-level BPE: the model maps the raw bytes of the last ByteLevel
	// step's pieces itself, sparing a string per piece.
	if bpe, ok := t.model.(*bpeModel); ok {
		if bl := t.pre.lastByteLevel(); bl != nil {
			bl.encode = false
			bpe.byteInput = true
		}
	}
	if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if t.dec, err = parseDecoder(f.Decoder, "decoder"); err != nil {
		return nil, err
	}
	_, t.byteDecode = t.dec.(byteLevelDecoder)
	if err := t.addTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if err := t.buildTables(); err != nil {
		return nil, err
	}
	t.scratch.New = func() any { return new(encodeScratch) }
	return t, nil
}

// normalize applies the normalizer.
func (t *Tokenizer) normalize(s string) string {
	if t.norm == nil {
		return s
	}
	return t.norm.normalize(s)
}

// addTokens registers the added tokens the way HF's AddedVocabulary does.
func (t *Tokenizer) addTokens(list []addedTokenJSON) error {
	vocab := t.model.vocabulary()
	nextID := len(vocab) // HF's get_vocab_size of the model
	if u, ok := t.model.(*unigramModel); ok {
		nextID = len(u.tokens)
	}
	t.addedIDs = map[string]int{}
	byID := map[int]AddedToken{}
	for _, aj := range list {
		if aj.Content == "" {
			continue
		}
		at := AddedToken{
			Content:    aj.Content,
			SingleWord: aj.SingleWord,
			LStrip:     aj.LStrip,
			RStrip:     aj.RStrip,
			Normalized: !aj.Special,
			Special:    aj.Special,
		}
		if aj.Normalized != nil {
			at.Normalized = *aj.Normalized
		}
		id, ok := t.addedIDs[at.Content]
		if !ok {
			id, ok = vocab[at.Content]
		}
		if !ok {
			id = nextID
			nextID++
		}
		at.ID = id
		t.addedIDs[at.Content] = id
		byID[id] = at
	}
	ids := make([]int, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	t.added.raw, t.added.norm = newTrie(), newTrie()
	for _, id := range ids {
		at := byID[id]
		k := len(t.added.tokens)
		t.added.tokens = append(t.added.tokens, at)
		if at.Normalized {
			if p := t.normalize(at.Content); p != "" {
				t.added.norm.insert(p, k)
			}
		} else {
			t.added.raw.insert(at.Content, k)
		}
	}
	return nil
}

// buildTables fills the per-id tables.
func (t *Tokenizer) buildTables() error {
	vocab := t.model.vocabulary()
	maxID := -1
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	if u, ok := t.model.(*unigramModel); ok {
		maxID = max(maxID, len(u.tokens)-1)
	}
	for _, at := range t.added.tokens {
		maxID = max(maxID, at.ID)
	}
	count := len(vocab) + len(t.added.tokens)
	if maxID >= 4*count+1024 {
		return fmt.Errorf("token ids are too sparse (largest %d for %d tokens)", maxID, count)
	}
	n := maxID + 1
	t.ok = make([]bool, n)
	t.tokStr = make([]string, n)
	t.tokBytes = make([][]byte, n)
	t.skip = make([]bool, n)
	if u, ok := t.model.(*unigramModel); ok {
		// A Unigram vocabulary is a list, which may repeat a token: every
		// id has its token, as in HF's id_to_token.
		for id, tok := range u.tokens {
			t.ok[id], t.tokStr[id] = true, tok
		}
	} else {
		for tok, id := range vocab {
			t.ok[id], t.tokStr[id] = true, tok
		}
	}
	special := map[string]bool{}
	for _, at := range t.added.tokens {
		s := at.Content
		if at.Normalized {
			s = t.normalize(s)
		}
		t.ok[at.ID], t.tokStr[at.ID] = true, s
		if at.Special {
			special[at.Content] = true
		}
	}
	for id := range n {
		if !t.ok[id] {
			continue
		}
		s := t.tokStr[id]
		if t.dec != nil {
			t.tokBytes[id] = []byte(t.dec.token(s))
		} else {
			t.tokBytes[id] = []byte(s)
		}
		t.skip[id] = special[s]
	}
	size := len(vocab)
	if u, ok := t.model.(*unigramModel); ok {
		size = len(u.tokens)
	}
	for s := range t.addedIDs {
		if _, ok := vocab[s]; !ok {
			size++
		}
	}
	t.vocabSize = size
	return nil
}

// EncodeOptions control an encoding.
type EncodeOptions struct {
	// AddSpecialTokens applies the post-processor's template, as HF's
	// add_special_tokens: Llama-3's official file prepends
	// <|begin_of_text|>; Qwen's adds nothing.
	AddSpecialTokens bool
	// AllowSpecial recognises the text of special added tokens (such as
	// "<|im_start|>") in the input and encodes each as its id, as HF does by
	// default. Without it their text is encoded as ordinary text, as HF does
	// with split_special_tokens (encode_special_tokens) set, so user content
	// cannot forge control tokens. Non-special added tokens (Qwen's <think>,
	// <tool_call>, ...) are recognised either way, as in HF.
	AllowSpecial bool
}

// encodeScratch holds buffers reused across encodings.
type encodeScratch struct {
	segs, segs2 []segment
	pre         scratch
}

// Encode returns the ids of text as HF's tokenizer.encode(text,
// add_special_tokens=addSpecial) does: special-token strings in the text are
// recognised. It is EncodeWithOptions with AllowSpecial set.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	return t.AppendEncode(nil, text, EncodeOptions{AddSpecialTokens: addSpecial, AllowSpecial: true})
}

// EncodeWithOptions returns the ids of text under opts.
func (t *Tokenizer) EncodeWithOptions(text string, opts EncodeOptions) []int {
	return t.AppendEncode(nil, text, opts)
}

// AppendEncode appends the ids of text under opts to dst and returns it.
//
// The steps are HF's: cut out the added tokens that match in the raw text,
// normalize the rest, cut out the added tokens that match in normalized
// text, pre-tokenize each remaining piece, run the model on each
// pre-token, then post-process. Invalid UTF-8 in text (which HF cannot
// receive) is encoded byte by byte, each invalid byte counting as a
// character that is not a letter, number or space and reaching the model
// as that byte (a byte-level token, a byte-fallback token or the unknown
// token), unless a normalizer that rewrites characters has made it U+FFFD.
func (t *Tokenizer) AppendEncode(dst []int, text string, opts EncodeOptions) []int {
	start := len(dst)
	sc := t.scratch.Get().(*encodeScratch)
	sc.segs = t.added.split(sc.segs[:0], text, t.added.raw, opts.AllowSpecial)
	for _, sg := range sc.segs {
		if sg.tok >= 0 {
			dst = append(dst, t.added.tokens[sg.tok].ID)
			continue
		}
		norm := t.normalize(text[sg.start:sg.end])
		sc.segs2 = t.added.split(sc.segs2[:0], norm, t.added.norm, opts.AllowSpecial)
		for _, sg2 := range sc.segs2 {
			if sg2.tok >= 0 {
				dst = append(dst, t.added.tokens[sg2.tok].ID)
				continue
			}
			// Metaspace's prepend_scheme "first" asks whether a piece
			// begins where the input does.
			first := sg.start == 0 && sg2.start == 0
			for _, p := range t.pre.pieces(&sc.pre, piece{norm[sg2.start:sg2.end], first}) {
				dst = t.model.appendPiece(dst, p.s)
			}
		}
	}
	clear(sc.pre.a[:cap(sc.pre.a)])
	clear(sc.pre.b[:cap(sc.pre.b)])
	t.scratch.Put(sc)
	if opts.AddSpecialTokens && len(t.post.steps) > 0 {
		ids := t.post.apply(slices.Clone(dst[start:]), true)
		dst = append(dst[:start], ids...)
	}
	return dst
}

// DecodeOptions control a decoding.
type DecodeOptions struct {
	// SkipSpecialTokens drops special tokens, as HF's skip_special_tokens.
	SkipSpecialTokens bool
	// CleanUpTokenizationSpaces removes the spaces before punctuation and
	// English contractions as Hugging Face transformers does when
	// tokenizer_config.json sets clean_up_tokenization_spaces (the
	// tokenizers library itself never does).
	CleanUpTokenizationSpaces bool
}

// Decode returns the text of ids as HF's tokenizer.decode(ids,
// skip_special_tokens=skipSpecial) does: the token strings (an added
// token's content) go through the decoder, and their concatenation is the
// text (without a decoder, they are joined with spaces). Ids that no token
// has are skipped, as in HF. The ByteLevel decoder turns byte sequences
// that are not valid UTF-8 (a character cut between tokens) into U+FFFD,
// one per maximal invalid subsequence; the ByteFallback decoder, one per
// byte, as HF's Rust library does.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	return t.DecodeWithOptions(ids, DecodeOptions{SkipSpecialTokens: skipSpecial})
}

// DecodeWithOptions returns the text of ids under opts.
func (t *Tokenizer) DecodeWithOptions(ids []int, opts DecodeOptions) string {
	keep := func(id int) bool {
		return id >= 0 && id < len(t.ok) && t.ok[id] && !(opts.SkipSpecialTokens && t.skip[id])
	}
	var s string
	if t.byteDecode {
		var raw []byte
		for _, id := range ids {
			if keep(id) {
				raw = append(raw, t.tokBytes[id]...)
			}
		}
		s = string(appendLossy(make([]byte, 0, len(raw)), raw))
	} else {
		var toks []string
		for _, id := range ids {
			if keep(id) {
				toks = append(toks, t.tokStr[id])
			}
		}
		if t.dec == nil {
			s = strings.Join(toks, " ")
		} else {
			s = strings.Join(t.dec.decodeChain(toks), "")
		}
	}
	if opts.CleanUpTokenizationSpaces {
		s = CleanUpTokenizationSpaces(s)
	}
	return s
}

// cleanUpPairs are transformers' clean_up_tokenization replacements, applied
// one after the other in this order.
var cleanUpPairs = [][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

// CleanUpTokenizationSpaces applies Hugging Face transformers'
// clean_up_tokenization to s: " ." becomes ".", and likewise " ?", " !",
// " ,", " ' " (to "'"), " n't", " 'm", " 's", " 've" and " 're".
func CleanUpTokenizationSpaces(s string) string {
	for _, p := range cleanUpPairs {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return s
}

// TokenToID returns the id of a token string (spelled as in the vocabulary,
// with byte-level runes such as "Ġ" for a space, or "▁" for SentencePiece's
// space), added tokens first.
func (t *Tokenizer) TokenToID(token string) (int, bool) {
	if id, ok := t.addedIDs[token]; ok {
		return id, true
	}
	id, ok := t.model.vocabulary()[token]
	return id, ok
}

// IDToToken returns the token string of id (added tokens first), or false
// when no token has that id.
func (t *Tokenizer) IDToToken(id int) (string, bool) {
	if id < 0 || id >= len(t.ok) || !t.ok[id] {
		return "", false
	}
	return t.tokStr[id], true
}

// TokenBytes returns the bytes the decoder makes of token id in the middle
// of a text, or false when no token has that id: a byte-level token's
// bytes, a byte-fallback token's byte (either may be part of a UTF-8
// character), a SentencePiece token with its "▁" as a space, an added
// token's text. Without a decoder it is the token string. (Decode can
// differ at the edges: the Metaspace decoder and Strip drop the first
// token's leading space.)
func (t *Tokenizer) TokenBytes(id int) ([]byte, bool) {
	if id < 0 || id >= len(t.ok) || !t.ok[id] {
		return nil, false
	}
	return slices.Clone(t.tokBytes[id]), true
}

// VocabSize returns the number of distinct tokens, the model's vocabulary
// and the added tokens together, as HF's get_vocab_size(with_added_tokens=
// True). (A model's embedding matrix may have more rows.)
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// AddedTokens returns the added tokens, by id.
func (t *Tokenizer) AddedTokens() []AddedToken { return slices.Clone(t.added.tokens) }

// SpecialTokens returns the special added tokens, by id.
func (t *Tokenizer) SpecialTokens() []AddedToken {
	var out []AddedToken
	for _, at := range t.added.tokens {
		if at.Special {
			out = append(out, at)
		}
	}
	return out
}

// IsSpecial reports whether id is a special token (one Decode skips with
// skipSpecial).
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.ok) && t.skip[id]
}

// NumSpecialTokensToAdd returns how many ids AddSpecialTokens adds to a
// single sequence.
func (t *Tokenizer) NumSpecialTokensToAdd() int { return t.post.addedIDs() }
