package webshop

import (
	"container/heap"
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// BM25 parameters: Lucene's (and so pyserini's, which WebShop uses) defaults.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Search result limits, WebShop's SEARCH_RETURN_N and PRODUCT_WINDOW.
const (
	SearchReturnN = 50
	PageSize      = 10
)

// Index is an in-memory inverted index over the products' title,
// description and attributes, ranked with Okapi BM25 as Lucene computes it
// (idf = ln(1 + (N-df+0.5)/(df+0.5)), tf saturation tf/(tf+k1(1-b+b·dl/avgdl))).
// Lucene's lossy one-byte length encoding and Porter stemming are not
// reproduced. It is safe for concurrent use.
type Index struct {
	terms     map[string]int32
	postings  [][]posting
	norm      []float32 // k1·(1-b+b·dl/avgdl) per document
	stopwords bool
	scratch   sync.Pool
}

type posting struct {
	doc int32
	tf  int32
}

// NewIndex indexes products. With stopwords, tokens in the stop list are
// neither indexed nor searched.
func NewIndex(products []Product, stopwords bool) *Index {
	ix := &Index{terms: map[string]int32{}, norm: make([]float32, len(products)), stopwords: stopwords}
	lens := make([]int, len(products))
	var (
		counts  []int32 // term frequency in the current document, by term id
		touched []int32 // term ids counted in the current document
		buf     []byte
		total   int
	)
	for d := range products {
		p := &products[d]
		n := 0
		add := func(tok []byte) {
			// string(tok) in a map index does not allocate; only new
			// terms pay for a string.
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
		}
		buf = ix.eachToken(p.Title, buf, add)
		buf = ix.eachToken(p.Description, buf, add)
		for _, a := range p.Attributes {
			buf = ix.eachToken(a, buf, add)
		}
		// Documents are visited in order, so every posting list stays
		// sorted by document.
		for _, id := range touched {
			ix.postings[id] = append(ix.postings[id], posting{doc: int32(d), tf: counts[id]})
			counts[id] = 0
		}
		touched = touched[:0]
		lens[d] = n
		total += n
	}
	avg := 1.0
	if len(products) > 0 && total > 0 {
		avg = float64(total) / float64(len(products))
	}
	for d, l := range lens {
		ix.norm[d] = float32(bm25K1 * (1 - bm25B + bm25B*float64(l)/avg))
	}
	ix.scratch.New = func() any { return &searchScratch{score: make([]float32, len(products))} }
	return ix
}

// eachToken calls fn with every token of s: a maximal run of letters and
// digits, lower-cased, minus stopwords when enabled. The token aliases buf
// (returned for reuse) and is only valid during the call.
func (ix *Index) eachToken(s string, buf []byte, fn func([]byte)) []byte {
	emit := func() {
		if len(buf) > 0 && !(ix.stopwords && stopwords[string(buf)]) {
			fn(buf)
		}
		buf = buf[:0]
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			// ASCII fast path: the catalogue's text is ASCII apart from '›'.
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

// tokenize returns the tokens of s as strings (see eachToken).
func (ix *Index) tokenize(s string, out []string) []string {
	ix.eachToken(s, nil, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

type searchScratch struct {
	score   []float32
	touched []int32
}

// Search returns the indices of the top k products for query, best first;
// ties go to the lower index. Products matching no query term are never
// returned. A repeated query term counts once per occurrence, as in a
// Lucene boolean query of SHOULD clauses.
func (ix *Index) Search(query string, k int) []int {
	toks := ix.tokenize(query, nil)
	if len(toks) == 0 || k <= 0 {
		return nil
	}
	s := ix.scratch.Get().(*searchScratch)
	defer ix.scratch.Put(s)
	n := float64(len(ix.norm))
	for _, t := range toks {
		id, ok := ix.terms[t]
		if !ok {
			continue
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
