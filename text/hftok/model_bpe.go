package hftok

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Cache limits, as in HF's BPE: pieces of at least cacheMaxLen bytes are not
// cached, and the cache stops growing at cacheCapacity entries.
const (
	cacheCapacity = 10000
	cacheMaxLen   = 256
)

// merge is the rank of a merge and the id of the token it makes.
type merge struct{ rank, id int32 }

// bpeModel is HF's BPE model. Its pieces are either characters (a
// SentencePiece-style vocabulary, or a byte-level one after a ByteLevel
// step that spelled them) or, with byteInput, raw bytes that the model
// spells with their byte-level runes itself: the fast path of byte-level
// BPE, where the ByteLevel pre-tokenizer is the last step.
type bpeModel struct {
	byteInput bool

	vocab map[string]int // token -> id
	// raw maps the raw bytes of every token spelled only with byte-level
	// runes to its id (for ignore_merges on raw-byte pieces).
	raw    map[string]int
	merges map[uint64]merge

	// Initial symbol of byte b by its place in the piece: alone, first,
	// inside, last (they differ only with a continuing_subword_prefix or
	// end_of_word_suffix); -1 when the vocabulary lacks it.
	only, first, mid, last [256]int32
	// charID maps each one-character token to its id (for character
	// pieces without affixes); byteFallbackID[b] is the id of <0xBB> or -1.
	charID         map[rune]int32
	byteFallbackID [256]int32

	prefix, suffix string
	unk            int32 // -1 without an unk_token
	fuseUnk        bool
	byteFallback   bool
	ignoreMerges   bool

	cache  sync.Map // raw piece -> []int32
	cached atomic.Int64
	pool   sync.Pool // *word
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// parseMerges reads merges given as "a b" strings or as [a, b] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("model (BPE): missing merges")
	}
	if lines, pairs, ok := scanMerges(raw); ok {
		if pairs != nil {
			return pairs, nil
		}
		return splitMerges(lines)
	}
	// The first element tells the format: [[...]...] or ["..."...].
	const space = " \t\r\n"
	pairForm := false
	if list := bytes.TrimLeft(raw, space); len(list) > 0 && list[0] == '[' {
		first := bytes.TrimLeft(list[1:], space)
		pairForm = len(first) > 0 && first[0] == '['
	}
	var pairs [][]string
	if pairForm {
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, fmt.Errorf("model (BPE): merges: %w", err)
		}
		out := make([][2]string, len(pairs))
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, fmt.Errorf("model (BPE): merge %d has %d parts, want 2", i, len(p))
			}
			out[i] = [2]string{p[0], p[1]}
		}
		return out, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("model (BPE): merges are neither strings nor pairs of strings: %w", err)
	}
	return splitMerges(lines)
}

// splitMerges reads merges written "a b".
func splitMerges(lines []string) ([][2]string, error) {
	out := make([][2]string, 0, len(lines))
	for _, l := range lines {
		if strings.HasPrefix(l, "#version") {
			continue
		}
		parts := strings.Split(l, " ")
		if len(parts) != 2 {
			return nil, fmt.Errorf("model (BPE): merge %d (%q) is not two tokens separated by one space", len(out)+1, l)
		}
		out = append(out, [2]string{parts[0], parts[1]})
	}
	return out, nil
}

// parseBPE builds the model.
func parseBPE(mj *modelJSON) (*bpeModel, error) {
	var vocab map[string]int
	if !isNull(mj.Vocab) {
		var err error
		if vocab, err = decodeVocab(mj.Vocab); err != nil {
			return nil, fmt.Errorf("model (BPE): vocab: %w", err)
		}
	}
	if mj.Dropout != nil && *mj.Dropout != 0 {
		return nil, fmt.Errorf("model (BPE): BPE dropout %v is not supported (it is random)", *mj.Dropout)
	}
	if vocab == nil {
		return nil, fmt.Errorf("model (BPE): missing vocab")
	}
	merges, err := parseMerges(mj.Merges)
	if err != nil {
		return nil, err
	}
	m := &bpeModel{
		charID: map[rune]int32{},
		vocab:  vocab,
		merges: make(map[uint64]merge, len(merges)),
		unk:    -1,
	}
	if mj.ContinuingSubwordPrefix != nil {
		m.prefix = *mj.ContinuingSubwordPrefix
	}
	if mj.EndOfWordSuffix != nil {
		m.suffix = *mj.EndOfWordSuffix
	}
	m.fuseUnk = mj.FuseUnk != nil && *mj.FuseUnk
	m.byteFallback = mj.ByteFallback != nil && *mj.ByteFallback
	m.ignoreMerges = mj.IgnoreMerges != nil && *mj.IgnoreMerges
	if err := checkVocab(vocab, "model (BPE)"); err != nil {
		return nil, err
	}
	if m.ignoreMerges {
		m.raw = make(map[string]int)
	}
	for tok, id := range vocab {
		if m.raw != nil {
			if b, ok := byteLevelDecode(tok); ok {
				m.raw[string(b)] = id
			}
		}
		if r, w := utf8.DecodeRuneInString(tok); w == len(tok) && w > 0 && !(r == utf8.RuneError && w == 1) {
			m.charID[r] = int32(id)
		}
	}
	if mj.UnkToken != nil {
		id, ok := vocab[*mj.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model (BPE): unk_token %q is not in the vocabulary", *mj.UnkToken)
		}
		m.unk = int32(id)
	}
	for i, p := range merges {
		a, ok := vocab[p[0]]
		if !ok {
			return nil, fmt.Errorf("model (BPE): merge %d (%q %q): %q is not in the vocabulary", i+1, p[0], p[1], p[0])
		}
		b, ok := vocab[p[1]]
		if !ok {
			return nil, fmt.Errorf("model (BPE): merge %d (%q %q): %q is not in the vocabulary", i+1, p[0], p[1], p[1])
		}
		if !strings.HasPrefix(p[1], m.prefix) {
			return nil, fmt.Errorf("model (BPE): merge %d (%q %q): the second token lacks the continuing_subword_prefix %q", i+1, p[0], p[1], m.prefix)
		}
		joined := p[0] + p[1][len(m.prefix):]
		id, ok := vocab[joined]
		if !ok {
			return nil, fmt.Errorf("model (BPE): merge %d (%q %q): the merged token %q is not in the vocabulary", i+1, p[0], p[1], joined)
		}
		// A repeated pair keeps its last rank, as in HF.
		m.merges[pairKey(int32(a), int32(b))] = merge{rank: int32(i), id: int32(id)}
	}
	for b := 0; b < 256; b++ {
		m.byteFallbackID[b] = m.lookup(fmt.Sprintf("<0x%02X>", b))
		c := string(byteRune[b])
		m.only[b] = m.lookup(c + m.suffix)
		m.first[b] = m.lookup(c)
		m.mid[b] = m.lookup(m.prefix + c)
		m.last[b] = m.lookup(m.prefix + c + m.suffix)
	}
	m.pool.New = func() any { return new(word) }
	return m, nil
}

func (m *bpeModel) lookup(tok string) int32 {
	if id, ok := m.vocab[tok]; ok {
		return int32(id)
	}
	return -1
}

// symbol is one symbol of a word being merged (HF's Symbol); size 0 marks a
// symbol merged into its left neighbour.
type symbol struct {
	id, prev, next, size int32
}

// mergeItem is a candidate merge of the symbol at pos with its right
// neighbour; the queue pops the lowest rank, then the leftmost position.
type mergeItem struct{ rank, pos, id int32 }

type word struct {
	syms  []symbol
	queue []mergeItem
}

func (w *word) add(id, size int32) {
	n := int32(len(w.syms))
	if n > 0 {
		w.syms[n-1].next = n
	}
	w.syms = append(w.syms, symbol{id: id, prev: n - 1, next: -1, size: size})
}

func itemLess(a, b mergeItem) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

func (w *word) push(it mergeItem) {
	q := append(w.queue, it)
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !itemLess(q[i], q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
	w.queue = q
}

func (w *word) pop() mergeItem {
	q := w.queue
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, r, s := 2*i+1, 2*i+2, i
		if l < n && itemLess(q[l], q[s]) {
			s = l
		}
		if r < n && itemLess(q[r], q[s]) {
			s = r
		}
		if s == i {
			break
		}
		q[i], q[s] = q[s], q[i]
		i = s
	}
	w.queue = q
	return top
}

// mergeAll applies the merges by rank exactly as HF's Word::merge_all does
// (without dropout): a priority queue of candidate merges, lowest rank and
// then leftmost first, where a popped candidate is skipped when its symbol
// was merged away or the pair now at its place makes a different token.
func (m *bpeModel) mergeAll(w *word) {
	syms := w.syms
	w.queue = w.queue[:0]
	for i := 0; i+1 < len(syms); i++ {
		if mg, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			w.push(mergeItem{rank: mg.rank, pos: int32(i), id: mg.id})
		}
	}
	for len(w.queue) > 0 {
		top := w.pop()
		cur := &syms[top.pos]
		if cur.size == 0 || cur.next == -1 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		if mg, ok := m.merges[pairKey(cur.id, right.id)]; !ok || mg.id != top.id {
			continue
		}
		cur.id = top.id
		cur.size += right.size
		cur.next = right.next
		syms[nextPos].size = 0
		if right.next > -1 && int(right.next) < len(syms) {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mg, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				w.push(mergeItem{rank: mg.rank, pos: cur.prev, id: mg.id})
			}
		}
		if cur.next >= 0 && int(cur.next) < len(syms) {
			if mg, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				w.push(mergeItem{rank: mg.rank, pos: top.pos, id: mg.id})
			}
		}
	}
}

// missing handles a byte whose symbol is not in the vocabulary, as HF's
// merge_word does: byte_fallback tokens <0xXX> for the UTF-8 bytes of the
// symbol's spelling when all exist, else the unk token (fused with a
// preceding one when fuse_unk is set), else nothing. unk is the pending unk
// symbol (id -1 when none).
func (m *bpeModel) missing(w *word, key string, unk *symbol) {
	if m.byteFallback {
		all := true
		for i := 0; i < len(key); i++ {
			if m.byteFallbackID[key[i]] < 0 {
				all = false
				break
			}
		}
		if all {
			for i := 0; i < len(key); i++ {
				w.add(m.byteFallbackID[key[i]], 1)
			}
			return
		}
	}
	if m.unk < 0 {
		return
	}
	switch {
	case unk.id >= 0 && m.fuseUnk:
		unk.size++
	case unk.id >= 0:
		w.add(unk.id, unk.size)
		*unk = symbol{id: m.unk, size: 1}
	default:
		*unk = symbol{id: m.unk, size: 1}
	}
}

// appendPiece appends the ids of one pre-token to dst.
func (m *bpeModel) appendPiece(dst []int, piece string) []int {
	if piece == "" {
		return dst
	}
	if m.ignoreMerges {
		if m.byteInput {
			if id, ok := m.raw[piece]; ok {
				return append(dst, id)
			}
		} else if id, ok := m.vocab[piece]; ok {
			return append(dst, id)
		}
	}
	if len(piece) < cacheMaxLen {
		if v, ok := m.cache.Load(piece); ok {
			for _, id := range v.([]int32) {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	w := m.pool.Get().(*word)
	w.syms = w.syms[:0]
	if m.byteInput {
		m.initBytes(w, piece)
	} else {
		m.initChars(w, piece)
	}
	m.mergeAll(w)
	var ids []int32
	if len(piece) < cacheMaxLen && m.cached.Load() < cacheCapacity {
		ids = make([]int32, 0, len(w.syms))
	}
	for _, s := range w.syms {
		if s.size != 0 {
			dst = append(dst, int(s.id))
			if ids != nil {
				ids = append(ids, s.id)
			}
		}
	}
	if cap(w.syms) <= 4096 {
		m.pool.Put(w)
	}
	if ids != nil {
		if _, loaded := m.cache.LoadOrStore(strings.Clone(piece), ids); !loaded {
			m.cached.Add(1)
		}
	}
	return dst
}

// initBytes makes the initial symbols of a raw-byte piece: one per byte.
func (m *bpeModel) initBytes(w *word, piece string) {
	n := len(piece)
	unk := symbol{id: -1}
	for k := 0; k < n; k++ {
		b := piece[k]
		var id int32
		switch {
		case n == 1:
			id = m.only[b]
		case k == 0:
			id = m.first[b]
		case k == n-1:
			id = m.last[b]
		default:
			id = m.mid[b]
		}
		if id >= 0 {
			if unk.id >= 0 {
				w.add(unk.id, unk.size)
				unk.id = -1
			}
			w.add(id, 1)
			continue
		}
		key := string(byteRune[b])
		if k > 0 {
			key = m.prefix + key
		}
		if k == n-1 {
			key += m.suffix
		}
		m.missing(w, key, &unk)
	}
	if unk.id >= 0 {
		w.add(unk.id, unk.size)
	}
}

// initChars makes the initial symbols of a character piece: one per
// character, with the continuing-subword prefix on all but the first and
// the end-of-word suffix on the last, as HF's merge_word. (A byte that is
// not valid UTF-8 counts as a character of its own.)
func (m *bpeModel) initChars(w *word, piece string) {
	affixes := m.prefix != "" || m.suffix != ""
	unk := symbol{id: -1}
	for i := 0; i < len(piece); {
		r, size := utf8.DecodeRuneInString(piece[i:])
		key := piece[i : i+size]
		id := int32(-1)
		if !affixes {
			if r != utf8.RuneError || size > 1 { // an invalid byte is no character
				if v, ok := m.charID[r]; ok {
					id = v
				}
			}
		} else {
			if i > 0 {
				key = m.prefix + key
			}
			if i+size == len(piece) {
				key += m.suffix
			}
			id = m.lookup(key)
		}
		i += size
		if id >= 0 {
			if unk.id >= 0 {
				w.add(unk.id, unk.size)
				unk.id = -1
			}
			w.add(id, int32(size))
			continue
		}
		m.missing(w, key, &unk)
	}
	if unk.id >= 0 {
		w.add(unk.id, unk.size)
	}
}
