package constrain

import (
	"bytes"
	"errors"
	"fmt"
	mbits "math/bits"
	"slices"
	"sync"
)

// Vocab indexes a model's vocabulary for masks: the tokens' bytes in a
// trie, so that a mask walks each shared prefix once and drops a subtree
// at its first refused byte, and, for the state inside a string (where
// most tokens are allowed), precomputed sets of the tokens that stay
// inside it. Build one per tokenizer and share it; it is safe for
// concurrent use.
type Vocab struct {
	size  int
	bytes [][]byte // nil for tokens a grammar never allows
	// The trie, in preorder: node 0 is the root; a node's subtree is
	// [i, nodes[i].end); its tokens are ids[first : first+n].
	nodes []trieNode
	ids   []int32
	// quoted are the tokens whose bytes hold a '"'.
	quoted []int32

	mu     sync.Mutex
	inside map[insideKey][]uint64
}

type trieNode struct {
	b        byte
	end      int32
	first, n int32
}

type insideKey struct {
	forbid   string
	lex, kmp int
}

// NewVocab indexes a vocabulary of size ids; tokenBytes returns the bytes
// of a token that grammars may use, and nil for one they never allow
// (special tokens, padding ids; stop tokens are given to each Sequence).
func NewVocab(size int, tokenBytes func(id int) []byte) *Vocab {
	v := &Vocab{size: size, bytes: make([][]byte, size), inside: map[insideKey][]uint64{}}
	var order []int32
	for id := range size {
		if b := tokenBytes(id); len(b) > 0 {
			v.bytes[id] = slices.Clone(b)
			order = append(order, int32(id))
			if bytes.IndexByte(b, '"') >= 0 {
				v.quoted = append(v.quoted, int32(id))
			}
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(v.bytes[a], v.bytes[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v.nodes = []trieNode{{}}
	path := []int32{0} // path[d] is the node of depth d on the current path
	var prev []byte
	for _, id := range order {
		b := v.bytes[id]
		lcp := 0
		for lcp < len(prev) && lcp < len(b) && prev[lcp] == b[lcp] {
			lcp++
		}
		for len(path) > lcp+1 { // close the nodes below the common prefix
			v.nodes[path[len(path)-1]].end = int32(len(v.nodes))
			path = path[:len(path)-1]
		}
		for d := lcp; d < len(b); d++ {
			path = append(path, int32(len(v.nodes)))
			v.nodes = append(v.nodes, trieNode{b: b[d]})
		}
		n := &v.nodes[path[len(path)-1]]
		if n.n == 0 {
			n.first = int32(len(v.ids))
		}
		n.n++
		v.ids = append(v.ids, id)
		prev = b
	}
	for _, i := range path {
		v.nodes[i].end = int32(len(v.nodes))
	}
	return v
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }

// insideSet returns the tokens without '"' whose bytes a string in lexer
// state lex (forbidden-text state kmp) reads whole, as a bitset.
func (v *Vocab) insideSet(m *machine, lex, kmp int) []uint64 {
	key := insideKey{string(m.forbid), lex, kmp}
	v.mu.Lock()
	set, ok := v.inside[key]
	v.mu.Unlock()
	if ok {
		return set
	}
	set = make([]uint64, (v.size+63)/64)
	for id, b := range v.bytes {
		if len(b) == 0 || bytes.IndexByte(b, '"') >= 0 {
			continue
		}
		s, k, ok := uint8(lex), kmp, true
		for _, c := range b {
			if s, _, _, ok = lexByte(s, c); !ok {
				break
			}
			if k, ok = m.match(k, c); !ok {
				break
			}
		}
		if ok {
			set[id/64] |= 1 << (id % 64)
		}
	}
	v.mu.Lock()
	v.inside[key] = set
	v.mu.Unlock()
	return set
}

// Sequence constrains one generated sequence to a grammar: it implements
// policy.Constraint. Give each sequence its own; it is safe for concurrent
// use, but a call on behalf of one sequence at a time is what it is for.
type Sequence struct {
	g      *Grammar
	v      *Vocab
	stops  []int
	budget int

	mu    sync.Mutex
	fed   []int
	state []*stack
	ended bool
}

// ErrBudget is returned by Start when the budget is smaller than the
// grammar's shortest text.
var ErrBudget = errors.New("constrain: the token budget is smaller than the shortest text")

// Start returns a Sequence of g over the vocabulary v: stops (the tokens
// that end generation) are allowed where a text of g is complete. budget,
// when positive, is the most tokens the sequence may have, a stop token
// included when there are stops: each token is then allowed only if what
// it leaves can still be completed, one byte a token, and stopped within
// the budget (so the text always completes, given a token for each byte
// it needs; when no token fits, the budget is ignored at that step). A
// budget below the grammar's MinLen (plus one for a stop token) is
// ErrBudget.
func (g *Grammar) Start(v *Vocab, stops []int, budget int) (*Sequence, error) {
	if need := g.minLen + min(len(stops), 1); budget > 0 && budget < need {
		return nil, fmt.Errorf("%w: %d tokens, at least %d needed", ErrBudget, budget, need)
	}
	return &Sequence{g: g, v: v, stops: slices.Clone(stops), budget: budget, state: g.starts}, nil
}

// Allow implements policy.Constraint: it sets allowed[id] for every token
// id that may follow generated (the tokens this sequence has sampled so
// far; a call with a generated that does not extend the previous one
// starts over). allowed has one entry per token id and arrives all false.
// It returns an error when generated leaves the grammar or nothing may
// follow it.
func (s *Sequence) Allow(generated []int, allowed []bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(generated) < len(s.fed) || !slices.Equal(generated[:len(s.fed)], s.fed) {
		s.fed, s.state, s.ended = nil, s.g.starts, false
	}
	for _, id := range generated[len(s.fed):] {
		if err := s.feed(id); err != nil {
			return err
		}
		s.fed = append(s.fed, id)
	}
	if s.ended {
		return errors.New("constrain: a token was asked for after a stop token")
	}
	room := maxCost
	if s.budget > 0 {
		// This token, then the rest of the text and a stop token; below
		// 0, only a stop token fits.
		room = s.budget - len(generated) - 1 - min(len(s.stops), 1)
	}
	if s.mask(allowed, room) || room < maxCost && s.mask(allowed, maxCost) {
		return nil
	}
	return fmt.Errorf("constrain: no token can follow the %d generated", len(generated))
}

// feed reads token id.
func (s *Sequence) feed(id int) error {
	if s.ended {
		return fmt.Errorf("constrain: token %d after a stop token", id)
	}
	if slices.Contains(s.stops, id) {
		if minCost(s.state) != 0 {
			return fmt.Errorf("constrain: stop token %d before the text is complete", id)
		}
		s.ended = true
		return nil
	}
	if id < 0 || id >= s.v.size || s.v.bytes[id] == nil {
		return fmt.Errorf("constrain: token %d is not allowed in a constrained text", id)
	}
	cs := s.state
	for _, b := range s.v.bytes[id] {
		if cs = advance(s.g.m, cs, b); len(cs) == 0 {
			return fmt.Errorf("constrain: token %d (%q) does not continue the text", id, s.v.bytes[id])
		}
	}
	s.state = cs
	return nil
}

// mask sets the tokens that may follow, leaving at most room bytes to
// complete; it reports whether it set any.
func (s *Sequence) mask(allowed []bool, room int) bool {
	any := false
	if minCost(s.state) == 0 {
		for _, id := range s.stops {
			if id >= 0 && id < len(allowed) {
				allowed[id], any = true, true
			}
		}
	}
	fits := func(cs []*stack) bool { return room >= maxCost || minCost(cs) <= room }
	if cs := s.state; len(cs) == 1 && cs[0] != nil {
		if f, ok := cs[0].f.(strFrame); ok && (f.br == nil || f.br.maxChars < 0) && cost(cs[0])+4 <= room {
			// Inside a string without a length limit: the tokens without
			// '"' from the precomputed set (none of them changes what the
			// rest costs by more than the 4 bytes of a \\uXXXX begun),
			// the others by reading them.
			set := s.v.insideSet(s.g.m, int(f.lex), int(f.kmp))
			for w, bits := range set {
				for bits != 0 {
					i := w*64 + mbits.TrailingZeros64(bits)
					bits &= bits - 1
					if i < len(allowed) {
						allowed[i], any = true, true
					}
				}
			}
			for _, id := range s.v.quoted {
				next := cs
				for _, b := range s.v.bytes[id] {
					if next = advance(s.g.m, next, b); len(next) == 0 {
						break
					}
				}
				if len(next) > 0 && fits(next) && int(id) < len(allowed) {
					allowed[id], any = true, true
				}
			}
			return any
		}
	}
	return s.walk(0, s.state, allowed, fits) || any
}

// walk sets the allowed tokens of node n's subtree, cs being the state
// after node n's bytes.
func (s *Sequence) walk(n int32, cs []*stack, allowed []bool, fits func([]*stack) bool) bool {
	any := false
	nodes := s.v.nodes
	for c := n + 1; c < nodes[n].end; c = nodes[c].end {
		next := advance(s.g.m, cs, nodes[c].b)
		if len(next) == 0 {
			continue
		}
		if nd := nodes[c]; nd.n > 0 && fits(next) {
			for _, id := range s.v.ids[nd.first : nd.first+nd.n] {
				if int(id) < len(allowed) {
					allowed[id], any = true, true
				}
			}
		}
		if s.walk(c, next, allowed, fits) {
			any = true
		}
	}
	return any
}
