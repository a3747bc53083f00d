package native

import (
	"math"
	"sync"
)

// DefaultPrefixCacheBytes is the default memory budget of the prefix cache
// (32k positions of the default d_model 128, 2-layer model).
const DefaultPrefixCacheBytes = 64 << 20

// prefixCache keeps the KV caches of recently sampled sequences so that a
// later request whose prompt starts with one of them — the next turn of a
// multi-turn episode, whose prompt is the previous prompt plus the reply plus
// the new observation — recomputes only the new tail. Reuse is exact: the
// cached keys and values are the ones a fresh prefill would compute, bit for
// bit (see attendBlock and gemm.go).
//
// Entries are tied to the parameters they were computed with. AdamW.Update
// bumps the model's version, and a checksum of a sample of the parameters
// catches other writes; either clears the cache (and makes inference repack
// the weights, see inferWeights). Code that edits a few parameters by hand
// should call Model.ClearPrefixCache.
type prefixCache struct {
	mu      sync.Mutex
	limit   int // budget in bytes of storage (capacity) held by entries
	used    int
	posSize int    // bytes per cached position
	sig     uint64 // parameter signature the entries belong to
	clock   uint64
	entries []*prefixEntry
	stats   PrefixCacheStats
}

// PrefixCacheStats counts prompt positions served from the prefix cache and
// positions computed by prefill since the model was created.
type PrefixCacheStats struct {
	Reused   int64 // prompt positions whose keys and values came from the cache
	Computed int64 // prompt positions run through the model
}

type prefixEntry struct {
	tokens []int
	ref    kvRef // view holding exactly tokens
	cost   int
	used   uint64
}

// SetPrefixCache sets the prefix cache's memory budget in bytes (0 disables
// it and frees its entries). Each cached position takes Layers·2·KVHeads·
// HeadDim·4 bytes.
func (m *Model) SetPrefixCache(maxBytes int) {
	p := &m.pcache
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = max(maxBytes, 0)
	p.evict()
}

// ClearPrefixCache drops every cached prefix, and the copy of the weights
// that Sample and Score compute with. Call it after changing parameters
// other than through AdamW.Update or loading.
func (m *Model) ClearPrefixCache() {
	p := &m.pcache
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	m.dropPacked()
}

// PrefixCacheStats returns the prefix cache counters.
func (m *Model) PrefixCacheStats() PrefixCacheStats {
	p := &m.pcache
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// paramSignature identifies the current weights: the update counter mixed
// with a hash of every 61st parameter (cheap: under 10k reads for the
// default model) and of every adapter parameter (B starts at zero, so a
// sample of them could miss an edit; rank 8 on every projection of a
// 0.5B model is 4.4M reads, a few milliseconds).
func (m *Model) paramSignature() uint64 {
	h := uint64(14695981039346656037) ^ m.version
	for i := 0; i < len(m.params); i += 61 {
		h ^= uint64(math.Float32bits(m.params[i]))
		h *= 1099511628211
	}
	if lo := m.lora; lo != nil {
		h ^= 0x4c6f5241
		for _, x := range lo.params {
			h ^= uint64(math.Float32bits(x))
			h *= 1099511628211
		}
	}
	return h
}

func (p *prefixCache) clear() {
	p.entries, p.used = nil, 0
}

// evict drops least recently used entries until the budget holds.
func (p *prefixCache) evict() {
	for p.used > p.limit && len(p.entries) > 0 {
		old := 0
		for i, e := range p.entries {
			if e.used < p.entries[old].used {
				old = i
			}
		}
		p.remove(old)
	}
}

func (p *prefixCache) remove(i int) {
	p.used -= p.entries[i].cost
	p.entries = append(p.entries[:i], p.entries[i+1:]...)
}

// sync clears the cache if the weights changed since its entries were made.
func (p *prefixCache) sync(sig uint64) {
	if p.sig != sig {
		p.clear()
		p.sig = sig
	}
}

// lookup returns a view of the longest cached prefix of prompt, leaving at
// least the last prompt token to compute (its logits start generation), and
// the number of positions it covers.
func (p *prefixCache) lookup(sig uint64, prompt []int) (kvRef, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sync(sig)
	var best *prefixEntry
	bestLen := 0
	for _, e := range p.entries {
		n := 0
		for n < len(e.tokens) && n < len(prompt)-1 && e.tokens[n] == prompt[n] {
			n++
		}
		if n > bestLen {
			best, bestLen = e, n
		}
	}
	p.stats.Reused += int64(bestLen)
	p.stats.Computed += int64(len(prompt) - bestLen)
	if best == nil {
		return kvRef{}, 0
	}
	p.clock++
	best.used = p.clock
	return best.ref.truncate(bestLen), bestLen
}

// put records that ref holds the keys and values of tokens.
func (p *prefixCache) put(sig uint64, tokens []int, ref kvRef) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sync(sig)
	if p.limit == 0 || len(tokens) == 0 {
		return
	}
	// Entries that are prefixes of the new one are superseded by it.
	for i := 0; i < len(p.entries); {
		e := p.entries[i]
		if len(e.tokens) <= len(tokens) && equalInts(e.tokens, tokens[:len(e.tokens)]) {
			p.remove(i)
			continue
		}
		i++
	}
	cost := ref.c.cap
	for _, a := range ref.c.chain {
		cost += a.c.cap
	}
	cost *= p.posSize
	p.clock++
	p.entries = append(p.entries, &prefixEntry{tokens: tokens, ref: ref, cost: cost, used: p.clock})
	p.used += cost
	p.evict()
}

// truncate returns a view of the first n positions visible through r.
func (r kvRef) truncate(n int) kvRef {
	if n > r.c.start {
		return kvRef{r.c, n - r.c.start}
	}
	for _, a := range r.c.chain {
		if n <= a.c.start+a.n {
			return kvRef{a.c, n - a.c.start}
		}
	}
	return kvRef{} // n == 0
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
