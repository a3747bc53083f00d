package hftok

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// unigramModel is HF's Unigram model (SentencePiece's): the segmentation of
// a piece into vocabulary tokens with the highest total score, found by
// Viterbi exactly as HF's encode_optimized does (ties keep the first path
// found). A character no token covers costs the lowest score minus 10 and
// becomes the unknown token, consecutive ones fused into one; with
// byte_fallback a fused unknown piece becomes its <0xXX> byte tokens when
// all of them exist.
type unigramModel struct {
	tokens []string
	scores []float64
	ids    map[string]int
	// sorted lists the distinct tokens in byte order, for the
	// common-prefix search.
	sorted       []string
	unkID        int // -1 without unk_id
	byteFallback bool
	unkScore     float64

	cache  sync.Map // piece -> []int32
	cached atomic.Int64
}

func parseUnigram(mj *modelJSON) (*unigramModel, error) {
	var vocab [][2]json.RawMessage
	if isNull(mj.Vocab) {
		return nil, fmt.Errorf("model (Unigram): missing vocab")
	}
	if err := json.Unmarshal(mj.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("model (Unigram): vocab: %w", err)
	}
	m := &unigramModel{ids: make(map[string]int, len(vocab)), unkID: -1, byteFallback: mj.ByteFallback != nil && *mj.ByteFallback}
	minScore := math.Inf(1)
	for i, e := range vocab {
		var tok string
		var score float64
		if err := json.Unmarshal(e[0], &tok); err != nil {
			return nil, fmt.Errorf("model (Unigram): vocab[%d]: %w", i, err)
		}
		if err := json.Unmarshal(e[1], &score); err != nil {
			return nil, fmt.Errorf("model (Unigram): vocab[%d]: %w", i, err)
		}
		m.tokens = append(m.tokens, tok)
		m.scores = append(m.scores, score)
		m.ids[tok] = i // a repeated token keeps its last id, as in HF
		minScore = min(minScore, score)
	}
	if mj.UnkID != nil {
		if *mj.UnkID < 0 || *mj.UnkID >= len(m.tokens) {
			return nil, fmt.Errorf("model (Unigram): unk_id %d is outside the vocabulary", *mj.UnkID)
		}
		m.unkID = *mj.UnkID
	}
	m.unkScore = minScore - 10
	for tok := range m.ids {
		if tok != "" {
			m.sorted = append(m.sorted, tok)
		}
	}
	slices.Sort(m.sorted)
	return m, nil
}

func (m *unigramModel) vocabulary() map[string]int { return m.ids }

// prefixes calls f with the byte length of every token that is a prefix of
// s, shortest first.
func (m *unigramModel) prefixes(s string, f func(n int)) {
	lo, hi := 0, len(m.sorted)
	for d := 0; d < len(s) && lo < hi; d++ {
		c := s[d]
		// Within [lo, hi) every token has the prefix s[:d]; a token equal
		// to it sorts first and cannot continue.
		if len(m.sorted[lo]) == d {
			lo++
		}
		lo = lo + sortSearch(hi-lo, func(k int) bool { return m.sorted[lo+k][d] >= c })
		hi = lo + sortSearch(hi-lo, func(k int) bool { return m.sorted[lo+k][d] > c })
		if lo < hi && len(m.sorted[lo]) == d+1 {
			f(d + 1)
		}
	}
}

// sortSearch is sort.Search without the import of sort's interface.
func sortSearch(n int, f func(int) bool) int {
	i, j := 0, n
	for i < j {
		h := int(uint(i+j) >> 1)
		if !f(h) {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

// bestPath is a node of encode_optimized's table.
type bestPath struct {
	id     int
	score  float64
	starts int // -1: no path ends here yet
}

func (m *unigramModel) appendPiece(dst []int, piece string) []int {
	if piece == "" {
		return dst
	}
	if len(piece) < cacheMaxLen {
		if v, ok := m.cache.Load(piece); ok {
			for _, id := range v.([]int32) {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	start := len(dst)
	dst = m.encode(dst, piece)
	if len(piece) < cacheMaxLen && m.cached.Load() < cacheCapacity {
		ids := make([]int32, 0, len(dst)-start)
		for _, id := range dst[start:] {
			ids = append(ids, int32(id))
		}
		if _, loaded := m.cache.LoadOrStore(strings.Clone(piece), ids); !loaded {
			m.cached.Add(1)
		}
	}
	return dst
}

func (m *unigramModel) encode(dst []int, s string) []int {
	best := make([]bestPath, len(s)+1)
	for i := range best {
		best[i].starts = -1
	}
	for at := 0; at < len(s); {
		_, mblen := utf8.DecodeRuneInString(s[at:])
		base := best[at].score
		single := false
		m.prefixes(s[at:], func(n int) {
			id := m.ids[s[at:at+n]]
			score := m.scores[id] + base
			if t := &best[at+n]; t.starts < 0 || score > t.score {
				*t = bestPath{id: id, score: score, starts: at}
			}
			if n == mblen {
				single = true
			}
		})
		if !single {
			score := m.unkScore + base
			if t := &best[at+mblen]; t.starts < 0 || score > t.score {
				*t = bestPath{id: m.unkID, score: score, starts: at}
			}
		}
		at += mblen
	}
	// Walk back, fusing consecutive unknown pieces.
	type seg struct{ start, end, id int }
	var segs []seg
	for end := len(s); end > 0; {
		n := best[end]
		if n.starts < 0 {
			break // unreachable: every character has a path
		}
		if n.id == m.unkID && m.unkID >= 0 && len(segs) > 0 && segs[len(segs)-1].id == m.unkID && segs[len(segs)-1].start == end {
			segs[len(segs)-1].start = n.starts
		} else {
			segs = append(segs, seg{n.starts, end, n.id})
		}
		end = n.starts
	}
	for k := len(segs) - 1; k >= 0; k-- {
		sg := segs[k]
		text := s[sg.start:sg.end]
		if id, ok := m.ids[text]; ok {
			dst = append(dst, id)
			continue
		}
		if m.byteFallback {
			ok := true
			for i := 0; i < len(text) && ok; i++ {
				_, ok = m.ids[fmt.Sprintf("<0x%02X>", text[i])]
			}
			if ok {
				for i := 0; i < len(text); i++ {
					dst = append(dst, m.ids[fmt.Sprintf("<0x%02X>", text[i])])
				}
				continue
			}
		}
		if m.unkID >= 0 {
			dst = append(dst, m.unkID)
		}
	}
	return dst
}
