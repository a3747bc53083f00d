package tokenizer

import (
	"fmt"
	"sort"
)

// TrainOptions configures Train. The zero value gives the defaults.
type TrainOptions struct {
	// MinFrequency is the smallest corpus count of a pair worth merging;
	// training stops early, below vocabSize, when no pair is this frequent.
	// 0 means 2.
	MinFrequency int
	// GridCells are the runes that make up grid lines, each of which is
	// split into one pre-token per rune. "" means DefaultGridCells.
	GridCells string
	// NoGridSplit turns grid-line splitting off: grid rows are then
	// pre-tokenized like any other text and BPE may merge neighbouring cells.
	NoGridSplit bool
}

// Train learns a vocabulary of at most vocabSize ids (256 bytes, 11
// specials, and vocabSize-267 merges) from corpus. Text is pre-tokenized as
// Encode does (tags are cut out first), and at each step the most frequent
// adjacent pair of ids is merged, ties going to the smallest (left, right).
// The result depends only on the corpus (as a multiset of texts) and the
// options.
func Train(corpus []string, vocabSize int, opts TrainOptions) (*Tokenizer, error) {
	if vocabSize < minVocabSize || vocabSize > MaxVocabSize {
		return nil, fmt.Errorf("tokenizer: vocabulary size %d out of range [%d, %d]", vocabSize, minVocabSize, MaxVocabSize)
	}
	minFreq := int64(opts.MinFrequency)
	if opts.MinFrequency < 0 {
		return nil, fmt.Errorf("tokenizer: negative MinFrequency %d", opts.MinFrequency)
	}
	if minFreq == 0 {
		minFreq = 2
	}
	grid := opts.GridCells
	if grid == "" {
		grid = DefaultGridCells
	}
	if opts.NoGridSplit {
		grid = ""
	}
	pre, err := newPretokenizer(grid)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}

	// Count pre-tokens. One-byte pieces have no pairs and are skipped.
	freq := make(map[string]int64)
	count := func(piece string) {
		if len(piece) > 1 {
			freq[piece]++
		}
	}
	for _, text := range corpus {
		for len(text) > 0 {
			seg, _, rest := cutTag(text)
			pre.split(seg, count)
			text = rest
		}
	}
	pieces := make([]string, 0, len(freq))
	for p := range freq {
		pieces = append(pieces, p)
	}
	sort.Strings(pieces)

	tr := &trainer{
		words:  make([][]int32, len(pieces)),
		freqs:  make([]int64, len(pieces)),
		counts: make(map[uint64]int64),
		where:  make(map[uint64][]int32),
		seen:   make([]int, len(pieces)),
	}
	for wi, p := range pieces {
		w := make([]int32, len(p))
		for i := 0; i < len(p); i++ {
			w[i] = int32(p[i])
		}
		tr.words[wi], tr.freqs[wi] = w, freq[p]
		for i := 0; i+1 < len(w); i++ {
			k := pairKey(w[i], w[i+1])
			tr.counts[k] += freq[p]
			tr.addWhere(k, int32(wi))
		}
	}
	for k, c := range tr.counts {
		tr.heap = append(tr.heap, countEntry{count: c, key: k})
	}
	tr.heap.init()

	var merges [][2]int32
	for step := 1; FirstMergeID+len(merges) < vocabSize; step++ {
		e, ok := tr.best()
		if !ok || e.count < minFreq {
			break
		}
		a, b := int32(e.key>>pairShift), int32(uint32(e.key))
		tr.merge(a, b, int32(FirstMergeID+len(merges)), step)
		merges = append(merges, [2]int32{a, b})
	}
	t, err := build(grid, merges)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

// trainer holds the state of one BPE training run.
type trainer struct {
	words  [][]int32          // distinct pre-tokens as id sequences
	freqs  []int64            // corpus count of each word
	counts map[uint64]int64   // pair -> weighted count over all words
	where  map[uint64][]int32 // pair -> words that may contain it (superset)
	seen   []int              // step at which a word was last visited
	heap   countHeap          // candidate pairs; stale entries skipped
	delta  map[uint64]int64   // scratch: count changes of one step
}

func (tr *trainer) addWhere(k uint64, wi int32) {
	l := tr.where[k]
	if len(l) > 0 && l[len(l)-1] == wi {
		return
	}
	tr.where[k] = append(l, wi)
}

// best pops the most frequent pair whose heap entry is current.
func (tr *trainer) best() (countEntry, bool) {
	for len(tr.heap) > 0 {
		e := tr.heap.pop()
		if c, ok := tr.counts[e.key]; ok && c == e.count {
			return e, true
		}
	}
	return countEntry{}, false
}

// merge replaces every occurrence of (a, b) by id in all words that contain
// it and updates the pair counts.
func (tr *trainer) merge(a, b, id int32, step int) {
	key := pairKey(a, b)
	if tr.delta == nil {
		tr.delta = make(map[uint64]int64)
	}
	clear(tr.delta)
	for _, wi := range tr.where[key] {
		if tr.seen[wi] == step {
			continue
		}
		tr.seen[wi] = step
		w, f := tr.words[wi], tr.freqs[wi]
		found := false
		for i := 0; i+1 < len(w); i++ {
			if w[i] == a && w[i+1] == b {
				found = true
				break
			}
		}
		if !found {
			continue
		}
		for i := 0; i+1 < len(w); i++ {
			tr.delta[pairKey(w[i], w[i+1])] -= f
		}
		out := w[:0]
		for i := 0; i < len(w); i++ {
			if i+1 < len(w) && w[i] == a && w[i+1] == b {
				out = append(out, id)
				i++
			} else {
				out = append(out, w[i])
			}
		}
		tr.words[wi] = out
		for i := 0; i+1 < len(out); i++ {
			k := pairKey(out[i], out[i+1])
			tr.delta[k] += f
			if out[i] == id || out[i+1] == id {
				tr.addWhere(k, wi)
			}
		}
	}
	delete(tr.where, key)
	// The pops below are ordered by the heap's total order, so the order in
	// which entries are pushed here does not affect the result.
	for k, d := range tr.delta {
		if d == 0 {
			continue
		}
		c := tr.counts[k] + d
		if c <= 0 {
			delete(tr.counts, k)
			continue
		}
		tr.counts[k] = c
		tr.heap.push(countEntry{count: c, key: k})
	}
}

// countEntry is a pair with its count when the entry was pushed.
type countEntry struct {
	count int64
	key   uint64
}

// before puts the higher count first, ties going to the smallest pair key,
// that is the smallest (left, right).
func (e countEntry) before(o countEntry) bool {
	if e.count != o.count {
		return e.count > o.count
	}
	return e.key < o.key
}

// countHeap holds pair counts, the pair to merge next on top.
type countHeap = heap[countEntry]
