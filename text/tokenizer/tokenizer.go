package tokenizer

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Fixed ids of the special tokens. They follow the 256 byte tokens and are
// the same in every tokenizer.
const (
	PadID       = 256 // <|pad|>: padding for batches; never written by the template
	BOSID       = 257 // <|bos|>: start of a rendered conversation
	EOSID       = 258 // <|eos|>: end of document; reserved, never written by the template
	SystemID    = 259 // <|system|>: starts a system message
	UserID      = 260 // <|user|>: starts a user message
	AssistantID = 261 // <|assistant|>: starts an assistant message; the generation prompt
	EndID       = 262 // <|end|>: ends every message
	ThinkID     = 263 // <think>
	EndThinkID  = 264 // </think>
	AnswerID    = 265 // <answer>
	EndAnswerID = 266 // </answer>
)

// Sizes of the fixed blocks of the vocabulary.
const (
	NumBytes     = 256                    // byte tokens, ids 0..255
	NumSpecials  = 11                     // special tokens, ids 256..266
	FirstMergeID = NumBytes + NumSpecials // id of the first learned merge
	MaxVocabSize = 1 << 20                // largest vocabulary Train and Load accept
)

const (
	minVocabSize = FirstMergeID           // a tokenizer with no merges
	maxCacheLen  = 64                     // longest pre-token kept in the encode cache
	maxCacheSize = 1 << 16                // entries before the encode cache is cleared
	heapMinLen   = 128                    // pre-tokens at least this long merge with a heap
	noRank       = int32(^uint32(0) >> 1) // "no merge" rank
	specialLo    = NumBytes               // first special id
	specialHi    = NumBytes + NumSpecials // one past the last special id
	pairShift    = 32                     // pair key = left<<pairShift | right
)

// specialTexts holds the literal text of each special token, indexed by
// id-PadID.
var specialTexts = [NumSpecials]string{
	"<|pad|>", "<|bos|>", "<|eos|>", "<|system|>", "<|user|>", "<|assistant|>",
	"<|end|>", "<think>", "</think>", "<answer>", "</answer>",
}

// SpecialText returns the literal text of special token id, and false if id
// is not a special id.
func SpecialText(id int) (string, bool) {
	if id < specialLo || id >= specialHi {
		return "", false
	}
	return specialTexts[id-specialLo], true
}

// IsSpecial reports whether id is one of the 11 special ids.
func IsSpecial(id int) bool { return id >= specialLo && id < specialHi }

// Tokenizer is a byte-level BPE tokenizer with fixed special tokens. Build
// one with Train, Load or New. A Tokenizer is safe for concurrent use.
type Tokenizer struct {
	pre    *pretokenizer
	merges [][2]int32       // merge i: ids merges[i][0], merges[i][1] -> FirstMergeID+i
	ranks  map[uint64]int32 // pair key -> merge index
	tokens [][]byte         // bytes of every id, specials as their text

	mu    sync.RWMutex
	cache map[string][]int
}

// New returns a tokenizer with no merges: one token per byte plus the
// specials (vocabulary size FirstMergeID), with the default pre-tokenizer.
func New() *Tokenizer {
	t, err := build(DefaultGridCells, nil)
	if err != nil {
		// DefaultGridCells is valid; this cannot happen.
		panic(err)
	}
	return t
}

// build assembles a tokenizer from validated parts.
func build(gridCells string, merges [][2]int32) (*Tokenizer, error) {
	pre, err := newPretokenizer(gridCells)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{
		pre:    pre,
		merges: merges,
		ranks:  make(map[uint64]int32, len(merges)),
		tokens: make([][]byte, FirstMergeID+len(merges)),
		cache:  make(map[string][]int),
	}
	for b := 0; b < NumBytes; b++ {
		t.tokens[b] = []byte{byte(b)}
	}
	for i, s := range specialTexts {
		t.tokens[specialLo+i] = []byte(s)
	}
	for i, m := range merges {
		id := FirstMergeID + i
		for _, part := range m {
			if part < 0 || int(part) >= id || IsSpecial(int(part)) {
				return nil, fmt.Errorf("merge %d %v: id %d is not a byte or an earlier merge", i, m, part)
			}
		}
		key := pairKey(m[0], m[1])
		if prev, dup := t.ranks[key]; dup {
			return nil, fmt.Errorf("merge %d %v duplicates merge %d", i, m, prev)
		}
		t.ranks[key] = int32(i)
		tok := make([]byte, 0, len(t.tokens[m[0]])+len(t.tokens[m[1]]))
		tok = append(tok, t.tokens[m[0]]...)
		t.tokens[id] = append(tok, t.tokens[m[1]]...)
	}
	return t, nil
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<pairShift | uint64(uint32(b)) }

// VocabSize is the number of ids: bytes, specials and merges.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// NumMerges is the number of learned merges.
func (t *Tokenizer) NumMerges() int { return len(t.merges) }

// GridCells returns the runes that make up grid lines ("" when grid-line
// splitting is off).
func (t *Tokenizer) GridCells() string { return t.pre.gridCells }

// Encode returns the ids of s. The literal tags <think>, </think>, <answer>
// and </answer> become their special tokens; all other text, including the
// text of role and control tokens, is encoded as ordinary bytes.
func (t *Tokenizer) Encode(s string) []int {
	return t.AppendEncode(make([]int, 0, len(s)/2+1), s)
}

// AppendEncode appends the ids of s, as Encode returns them, to dst.
func (t *Tokenizer) AppendEncode(dst []int, s string) []int {
	for len(s) > 0 {
		seg, id, rest := cutTag(s)
		dst = t.appendOrdinary(dst, seg)
		if id >= 0 {
			dst = append(dst, id)
		}
		s = rest
	}
	return dst
}

// EncodeOrdinary returns the ids of s without any special token: tags are
// encoded as ordinary text.
func (t *Tokenizer) EncodeOrdinary(s string) []int {
	return t.appendOrdinary(make([]int, 0, len(s)/2+1), s)
}

// tagIDs are the special tokens Encode recognises in text.
var tagIDs = [...]int{ThinkID, EndThinkID, AnswerID, EndAnswerID}

// cutTag splits s at its first tag: the text before it, the tag's id (-1 if
// s has no tag) and the text after it.
func cutTag(s string) (before string, id int, after string) {
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '<')
		if i < 0 {
			return s, -1, ""
		}
		i += off
		for _, tid := range tagIDs {
			tag := specialTexts[tid-specialLo]
			if strings.HasPrefix(s[i:], tag) {
				return s[:i], tid, s[i+len(tag):]
			}
		}
		off = i + 1
	}
}

// appendOrdinary appends the BPE ids of s (no specials) to dst.
func (t *Tokenizer) appendOrdinary(dst []int, s string) []int {
	if len(t.merges) == 0 {
		for i := 0; i < len(s); i++ {
			dst = append(dst, int(s[i]))
		}
		return dst
	}
	t.pre.split(s, func(piece string) {
		dst = t.appendPiece(dst, piece)
	})
	return dst
}

// appendPiece appends the ids of one pre-token.
func (t *Tokenizer) appendPiece(dst []int, piece string) []int {
	if len(piece) == 1 {
		return append(dst, int(piece[0]))
	}
	if len(piece) > maxCacheLen {
		return append(dst, t.bpe(piece)...)
	}
	t.mu.RLock()
	ids, ok := t.cache[piece]
	t.mu.RUnlock()
	if ok {
		return append(dst, ids...)
	}
	ids = t.bpe(piece)
	t.mu.Lock()
	if len(t.cache) >= maxCacheSize {
		clear(t.cache)
	}
	// Clone the key: piece points into the caller's (maybe large) string.
	t.cache[strings.Clone(piece)] = ids
	t.mu.Unlock()
	return append(dst, ids...)
}

// rank returns the merge index of pair (a, b), or noRank.
func (t *Tokenizer) rank(a, b int32) int32 {
	if r, ok := t.ranks[pairKey(a, b)]; ok {
		return r
	}
	return noRank
}

// bpe merges the bytes of piece: repeatedly the adjacent pair with the lowest
// merge rank, leftmost first, which is the same as applying the merges in
// learned order. A new pair always ranks after the merge that created it,
// since a merge's parts are earlier ids.
func (t *Tokenizer) bpe(piece string) []int {
	if len(piece) >= heapMinLen {
		return t.bpeHeap(piece)
	}
	return t.bpeScan(piece)
}

// bpeScan is the quadratic merge loop for short pieces: the ranks of the
// adjacent pairs are kept in an array, so each step is one scan of small
// integers and at most two rank lookups.
func (t *Tokenizer) bpeScan(piece string) []int {
	n := len(piece)
	var idBuf, rankBuf [heapMinLen]int32
	var ids, ranks []int32
	if n <= heapMinLen {
		ids, ranks = idBuf[:n], rankBuf[:n]
	} else {
		ids, ranks = make([]int32, n), make([]int32, n)
	}
	for i := 0; i < n; i++ {
		ids[i] = int32(piece[i])
	}
	for i := 0; i+1 < n; i++ {
		ranks[i] = t.rank(ids[i], ids[i+1])
	}
	if n > 0 {
		ranks[n-1] = noRank
	}
	for n > 1 {
		best, bestRank := -1, noRank
		for i := 0; i+1 < n; i++ {
			if ranks[i] < bestRank {
				best, bestRank = i, ranks[i]
			}
		}
		if best < 0 {
			break
		}
		ids[best] = int32(FirstMergeID) + bestRank
		copy(ids[best+1:n-1], ids[best+2:n])
		copy(ranks[best+1:n-1], ranks[best+2:n])
		n--
		ranks[n-1] = noRank
		if best+1 < n {
			ranks[best] = t.rank(ids[best], ids[best+1])
		} else {
			ranks[best] = noRank
		}
		if best > 0 {
			ranks[best-1] = t.rank(ids[best-1], ids[best])
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(ids[i])
	}
	return out
}

// bpeHeap gives the same result as bpeScan in O(n log n) for long pieces:
// symbols form a linked list and candidate pairs sit in a min-heap ordered
// by (rank, position); stale candidates are skipped when popped.
func (t *Tokenizer) bpeHeap(piece string) []int {
	n := len(piece)
	ids := make([]int32, n)
	next := make([]int32, n) // index of the next live symbol, or n
	prev := make([]int32, n) // index of the previous live symbol, or -1
	for i := 0; i < n; i++ {
		ids[i] = int32(piece[i])
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	h := make(pairHeap, 0, n)
	for i := 0; i+1 < n; i++ {
		if r := t.rank(ids[i], ids[i+1]); r != noRank {
			h = append(h, candidate{rank: r, pos: int32(i)})
		}
	}
	h.init()
	for len(h) > 0 {
		c := h.pop()
		i := c.pos
		j := next[i]
		if ids[i] < 0 || int(j) >= n || t.rank(ids[i], ids[j]) != c.rank {
			continue // stale: the symbol or its neighbour changed
		}
		ids[i] = int32(FirstMergeID) + c.rank
		ids[j] = -1
		k := next[j]
		next[i] = k
		if int(k) < n {
			prev[k] = i
			if r := t.rank(ids[i], ids[k]); r != noRank {
				h.push(candidate{rank: r, pos: i})
			}
		}
		if p := prev[i]; p >= 0 {
			if r := t.rank(ids[p], ids[i]); r != noRank {
				h.push(candidate{rank: r, pos: p})
			}
		}
	}
	out := make([]int, 0, n)
	for i := int32(0); int(i) < n; i = next[i] {
		out = append(out, int(ids[i]))
	}
	return out
}

// candidate is a pair of adjacent symbols that some merge applies to.
type candidate struct {
	rank int32 // merge index
	pos  int32 // index of the left symbol
}

// before orders candidates by (rank, pos): the lowest-ranked merge first,
// leftmost among equals.
func (c candidate) before(o candidate) bool {
	if c.rank != o.rank {
		return c.rank < o.rank
	}
	return c.pos < o.pos
}

// pairHeap holds merge candidates, the next to apply on top.
type pairHeap = heap[candidate]

// ErrUnknownID is returned (wrapped) by Decode and TokenBytes for an id
// outside the vocabulary.
var ErrUnknownID = errors.New("tokenizer: unknown token id")

// Decode returns the text of ids; special tokens are written as their
// literal text. Decode(Encode(s)) == s for every string s. The text may be
// invalid UTF-8 if ids end inside a multi-byte character.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	n := 0
	for _, id := range ids {
		if id < 0 || id >= len(t.tokens) {
			return "", fmt.Errorf("%w: %d (vocabulary size %d)", ErrUnknownID, id, len(t.tokens))
		}
		n += len(t.tokens[id])
	}
	var b strings.Builder
	b.Grow(n)
	for _, id := range ids {
		b.Write(t.tokens[id])
	}
	return b.String(), nil
}

// TokenBytes returns the bytes of one token (a copy), for streaming decodes.
func (t *Tokenizer) TokenBytes(id int) ([]byte, error) {
	if id < 0 || id >= len(t.tokens) {
		return nil, fmt.Errorf("%w: %d (vocabulary size %d)", ErrUnknownID, id, len(t.tokens))
	}
	return append([]byte(nil), t.tokens[id]...), nil
}
