package search

import (
	"container/heap"
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters: Lucene's defaults (and so pyserini's), as in webshop.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// stopwords are neither indexed nor searched, so that a question typed as
// a query ("In which country was the founder of X born?") searches its
// content words.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "its": true,
	"no": true, "not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true, "which": true, "what": true, "where": true, "who": true,
	"whom": true, "when": true, "did": true, "does": true, "do": true, "s": true,
}

// Index is an in-memory inverted index over passages, ranked with Okapi
// BM25 as Lucene computes it: idf = ln(1 + (N−df+0.5)/(df+0.5)) and term
// frequency saturated as tf/(tf + k1·(1−b+b·dl/avgdl)). Tokens are maximal
// runs of letters and digits, lower-cased, minus stopwords; there is no
// stemming. It is safe for concurrent use.
//
// It is the ranking of webshop's Index, over plain texts rather than
// products; the two could share one helper.
type Index struct {
	terms    map[string]int32
	postings [][]posting
	norm     []float32 // k1·(1−b+b·dl/avgdl) per passage
	scratch  sync.Pool
}

type posting struct {
	doc int32
	tf  int32
}

// NewIndex indexes texts; passage i is texts[i].
func NewIndex(texts []string) *Index {
	ix := &Index{terms: map[string]int32{}, norm: make([]float32, len(texts))}
	lens := make([]int, len(texts))
	var (
		counts  []int32
		touched []int32
		buf     []byte
		total   int
	)
	for d, text := range texts {
		n := 0
		buf = eachToken(text, buf, func(tok []byte) {
			id, ok := ix.terms[string(tok)]
			if !ok {
				id = int32(len(ix.postings))
				ix.terms[string(tok)] = id
				ix.postings = append(ix.postings, nil)
				counts = append(counts, 0)
			}
			if counts[id] == 0 {
				touched = append(touched, id)
			}
			counts[id]++
			n++
		})
		// Passages are visited in order, so posting lists stay sorted.
		for _, id := range touched {
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(d), tf: counts[id]})
			counts[id] = 0
		}
		touched = touched[:0]
		lens[d] = n
		total += n
	}
	avg := 1.0
	if len(texts) > 0 && total > 0 {
		avg = float64(total) / float64(len(texts))
	}
	for d, l := range lens {
		ix.norm[d] = float32(bm25K1 * (1 - bm25B + bm25B*float64(l)/avg))
	}
	ix.scratch.New = func() any { return &searchScratch{score: make([]float32, len(texts))} }
	return ix
}

// eachToken calls fn with every token of s (see Index). The token aliases
// buf, which is returned for reuse, and is valid only during the call.
func eachToken(s string, buf []byte, fn func([]byte)) []byte {
	emit := func() {
		if len(buf) > 0 && !stopwords[string(buf)] {
			fn(buf)
		}
		buf = buf[:0]
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				buf = append(buf, c)
			case c >= 'A' && c <= 'Z':
				buf = append(buf, c+('a'-'A'))
			default:
				emit()
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		} else {
			emit()
		}
		i += size
	}
	emit()
	return buf
}

// Tokens returns the tokens of s as the index sees them.
func Tokens(s string) []string {
	var out []string
	eachToken(s, nil, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

type searchScratch struct {
	score   []float32
	touched []int32
}

// Search returns the indices of the top k passages for query, best first;
// ties go to the lower index. Passages that match no query term are never
// returned. A repeated query term counts once per occurrence, as in a
// Lucene boolean query of SHOULD clauses.
func (ix *Index) Search(query string, k int) []int {
	if k <= 0 {
		return nil
	}
	s := ix.scratch.Get().(*searchScratch)
	defer ix.scratch.Put(s)
	n := float64(len(ix.norm))
	eachToken(query, nil, func(tok []byte) {
		id, ok := ix.terms[string(tok)]
		if !ok {
			return
		}
		ps := ix.postings[id]
		df := float64(len(ps))
		idf := float32(math.Log(1 + (n-df+0.5)/(df+0.5)))
		for _, p := range ps {
			if s.score[p.doc] == 0 {
				s.touched = append(s.touched, p.doc)
			}
			tf := float32(p.tf)
			s.score[p.doc] += idf * tf / (tf + ix.norm[p.doc])
		}
	})
	if len(s.touched) == 0 {
		return nil
	}
	h := make(resultHeap, 0, k+1)
	for _, d := range s.touched {
		r := scored{doc: d, score: s.score[d]}
		s.score[d] = 0
		if len(h) < k {
			heap.Push(&h, r)
		} else if r.better(h[0]) {
			h[0] = r
			heap.Fix(&h, 0)
		}
	}
	s.touched = s.touched[:0]
	out := make([]int, len(h))
	for i := len(h) - 1; i >= 0; i-- {
		out[i] = int(heap.Pop(&h).(scored).doc)
	}
	return out
}

// Score returns the BM25 score of passage d for query (0 when nothing
// matches), for tests and diagnostics.
func (ix *Index) Score(query string, d int) float64 {
	n := float64(len(ix.norm))
	var total float32 // summed as Search sums, so scores compare exactly
	eachToken(query, nil, func(tok []byte) {
		id, ok := ix.terms[string(tok)]
		if !ok {
			return
		}
		ps := ix.postings[id]
		df := float64(len(ps))
		idf := float32(math.Log(1 + (n-df+0.5)/(df+0.5)))
		for _, p := range ps {
			if int(p.doc) == d {
				tf := float32(p.tf)
				total += idf * tf / (tf + ix.norm[d])
			}
		}
	})
	return float64(total)
}

type scored struct {
	doc   int32
	score float32
}

func (a scored) better(b scored) bool {
	return a.score > b.score || (a.score == b.score && a.doc < b.doc)
}

// resultHeap is a min-heap: the worst kept result on top.
type resultHeap []scored

func (h resultHeap) Len() int           { return len(h) }
func (h resultHeap) Less(i, j int) bool { return h[j].better(h[i]) }
func (h resultHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *resultHeap) Push(x any)        { *h = append(*h, x.(scored)) }
func (h *resultHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
