package webshop

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/envs"
)

// Catalogue sizes accepted by the catalog key besides a plain number.
const (
	// SmallCatalog matches WebShop's "-d small" product set (RAGEN's default).
	SmallCatalog = 1000
	// LargeCatalog matches the 100k search index WebShop ships.
	LargeCatalog = 100000
)

// Random stream labels for envs.NewRand.
const (
	streamCatalog = 0x77732d636174 // "ws-cat"
	streamGoals   = 0x77732d676f616c
	streamASIN    = 0x77732d6173696e
)

// Product is one catalogue item, with the fields WebShop's reward reads.
type Product struct {
	// ASIN is the Amazon-style id shown (upper-case) on results pages.
	ASIN string
	// Query is the product type (WebShop's search "query"), e.g. "shampoo".
	Query string
	// Category is the '›'-separated category path.
	Category string
	// Nouns stands in for the spaCy nouns of the product name (reward.go).
	Nouns []string
	// Title is the listing title: brand, adjective, type and attributes.
	Title string
	// Description is the text of the Description sub-page.
	Description string
	// Bullets are the feature bullet points (the Features sub-page).
	Bullets []string
	// Attributes are the mined attribute phrases the reward matches.
	Attributes []string
	// Options are the option groups shown on the item page, in page order.
	Options []OptionGroup
	// PriceLo and PriceHi are the listed price; PriceHi == PriceLo for a
	// single price, otherwise the listing shows "$lo to $hi".
	PriceLo, PriceHi float64
	// Price is the price the reward compares with a goal's bound: drawn
	// uniformly from [PriceLo, PriceHi] once, as WebShop's load_products does.
	Price float64
	// Rating is out of 5; 0 renders as "N.A." (as for most WebShop items).
	Rating float64
	// Reviews are shown on the Reviews sub-page (possibly none).
	Reviews []Review

	// Goal material: the attributes a synthetic instruction names (a subset
	// of Attributes), its base text and the price bound (WebShop samples one
	// bound per product and shares it among the product's goals).
	goalAttrs  []string
	instrText  string
	priceUpper float64
}

// OptionGroup is one option name with its clickable values (lower-case).
type OptionGroup struct {
	Name   string
	Values []string
}

// Review is one customer review.
type Review struct {
	Title string
	Score int
	Body  string
}

// PriceText is the price as a results or item page shows it.
func (p *Product) PriceText() string {
	if p.PriceHi > p.PriceLo {
		return fmt.Sprintf("$%.2f to $%.2f", p.PriceLo, p.PriceHi)
	}
	return fmt.Sprintf("$%.2f", p.PriceLo)
}

// Catalog is an immutable product catalogue with its search index and goal
// list. It is safe for concurrent use and shared by every environment built
// with the same (size, seed).
type Catalog struct {
	Products []Product
	byASIN   map[string]int
	index    *Index
	goals    goalTable
}

// Product returns the product with the given (case-insensitive) ASIN.
func (c *Catalog) Product(asin string) (*Product, bool) {
	i, ok := c.byASIN[strings.ToUpper(asin)]
	if !ok {
		return nil, false
	}
	return &c.Products[i], true
}

// Index returns the catalogue's BM25 search index.
func (c *Catalog) Index() *Index { return c.index }

// typeRef locates a typeSpec in the vocabulary.
type typeRef struct{ cat, sub, typ int }

var allTypes = func() []typeRef {
	var refs []typeRef
	for ci, c := range categories {
		for si, s := range c.subs {
			for ti := range s.types {
				refs = append(refs, typeRef{ci, si, ti})
			}
		}
	}
	return refs
}()

func (r typeRef) spec() (*categorySpec, *subcategorySpec, *typeSpec) {
	c := &categories[r.cat]
	s := &c.subs[r.sub]
	return c, s, &s.types[r.typ]
}

var (
	catalogMu    sync.Mutex
	catalogCache = map[[2]uint64]*catalogEntry{}
)

type catalogEntry struct {
	once sync.Once
	cat  *Catalog
}

// SharedCatalog returns the catalogue of size products drawn from seed,
// building it (products, index, goals) on first use and sharing it after:
// the rollout engine builds many environments from one config.
func SharedCatalog(size int, seed uint64) *Catalog {
	key := [2]uint64{uint64(size), seed}
	catalogMu.Lock()
	e, ok := catalogCache[key]
	if !ok {
		e = &catalogEntry{}
		catalogCache[key] = e
	}
	catalogMu.Unlock()
	e.once.Do(func() { e.cat = NewCatalog(size, seed) })
	return e.cat
}

// NewCatalog generates size products from seed, indexes them and lists the
// synthetic goals. The result depends only on (size, seed). Most callers
// want SharedCatalog.
func NewCatalog(size int, seed uint64) *Catalog {
	rng := envs.NewRand(seed, streamCatalog)
	asins := newASINSource(seed)
	c := &Catalog{Products: make([]Product, size), byASIN: make(map[string]int, size)}
	for i := range c.Products {
		// The first products take every type once (from a seed-dependent
		// offset) so that even small catalogues cover all query types;
		// the rest draw types uniformly.
		t := allTypes[(i+int(seed%uint64(len(allTypes))))%len(allTypes)]
		if i >= len(allTypes) {
			t = allTypes[rng.IntN(len(allTypes))]
		}
		p := &c.Products[i]
		generateProduct(p, t, rng)
		p.ASIN = asins.next(c.byASIN)
		c.byASIN[p.ASIN] = i
	}
	c.index = NewIndex(c.Products, true)
	c.goals = newGoalTable(c.Products, seed)
	return c
}

// asinSource draws unique ten-character ids "B0XXXXXXXX".
type asinSource struct{ rng *rand.Rand }

func newASINSource(seed uint64) *asinSource {
	return &asinSource{rng: envs.NewRand(seed, streamASIN)}
}

func (a *asinSource) next(taken map[string]int) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for {
		b := []byte("B0XXXXXXXX")
		for i := 2; i < len(b); i++ {
			b[i] = alphabet[a.rng.IntN(len(alphabet))]
		}
		if _, dup := taken[string(b)]; !dup {
			return string(b)
		}
	}
}

// generateProduct fills p with a product of type t.
func generateProduct(p *Product, t typeRef, rng *rand.Rand) {
	cat, sub, typ := t.spec()
	p.Query = typ.query
	p.Category = cat.name + " › " + sub.name + " › " + typ.leaf
	p.Nouns = typ.nouns

	// Attributes: three to five distinct phrases of the type's pool.
	pool := sub.attrs
	if len(typ.attrs) > 0 {
		pool = typ.attrs
	}
	p.Attributes = pick(rng, pool, min(3+rng.IntN(3), len(pool)))

	brand := cat.brands[rng.IntN(len(cat.brands))]
	adj := cat.adjectives[rng.IntN(len(cat.adjectives))]
	tmpl := titleTemplates[rng.IntN(len(titleTemplates))]
	p.Title = fmt.Sprintf(tmpl, brand, adj, typ.label, titleCase(p.Attributes[0]), titleCase(p.Attributes[1]))

	attrList := joinList(p.Attributes)
	use := cat.uses[rng.IntN(len(cat.uses))]
	label := strings.ToLower(typ.label)
	p.Description = fmt.Sprintf(descriptionTemplates[rng.IntN(len(descriptionTemplates))],
		brand, label, attrList, use, strings.ToLower(adj))

	for _, a := range p.Attributes {
		b := bulletTemplates[rng.IntN(len(bulletTemplates))]
		p.Bullets = append(p.Bullets, fmt.Sprintf(b, strings.ToUpper(a), a, label))
	}
	closing := closingBullets[rng.IntN(len(closingBullets))]
	if strings.Contains(closing, "%s") {
		closing = fmt.Sprintf(closing, "1 x "+label)
	}
	p.Bullets = append(p.Bullets, closing)

	// Options: every group of the type, two to six values each, in the
	// pool's order (sizes ascending, as on a real page).
	for _, g := range typ.groups {
		pool := optionPools[g]
		n := min(2+rng.IntN(5), len(pool.values))
		p.Options = append(p.Options, OptionGroup{Name: pool.name, Values: pickOrdered(rng, pool.values, n)})
	}

	// Price: a single price, or (30%) a range as for multi-variant listings.
	lo := typ.price[0] + rng.Float64()*(typ.price[1]-typ.price[0])
	lo = math.Floor(lo) + 0.99
	p.PriceLo, p.PriceHi = lo, lo
	if rng.IntN(10) < 3 {
		p.PriceHi = math.Floor(lo*(1.2+rng.Float64()*0.8)) + 0.99
	}
	p.Price = p.PriceLo + rng.Float64()*(p.PriceHi-p.PriceLo)

	if rng.IntN(2) == 0 {
		p.Rating = float64(30+rng.IntN(21)) / 10
	}
	for range rng.IntN(4) {
		p.Reviews = append(p.Reviews, Review{
			Title: reviewTitles[rng.IntN(len(reviewTitles))],
			Score: 1 + rng.IntN(5),
			Body:  fmt.Sprintf(reviewBodies[rng.IntN(len(reviewBodies))], label),
		})
	}

	// Goal material. WebShop's instruction attributes are one to three of
	// the product's attributes.
	p.goalAttrs = pick(rng, p.Attributes, 1+rng.IntN(min(3, len(p.Attributes))))
	p.instrText = fmt.Sprintf(instructionTemplates[rng.IntN(len(instructionTemplates))],
		joinList(p.goalAttrs), typ.query)
	p.priceUpper = priceUpper(p.Price, rng)
}

// priceUpper is WebShop's bound: the first four multiples of $10 (up to
// $990) strictly above the price; if there are at least two, two are
// sampled and the larger is the bound; otherwise there is no bound (0 here,
// WebShop's 1,000,000).
func priceUpper(price float64, rng *rand.Rand) float64 {
	var cands []float64
	for i := 1; i < 100 && len(cands) < 4; i++ {
		if v := 10 * float64(i); v > price {
			cands = append(cands, v)
		}
	}
	if len(cands) < 2 {
		return 0
	}
	i := rng.IntN(len(cands))
	j := rng.IntN(len(cands) - 1)
	if j >= i {
		j++
	}
	return max(cands[i], cands[j])
}

// pick returns n distinct elements of pool in random order.
func pick(rng *rand.Rand, pool []string, n int) []string {
	idx := rng.Perm(len(pool))[:n]
	out := make([]string, n)
	for k, i := range idx {
		out[k] = pool[i]
	}
	return out
}

// pickOrdered returns n distinct elements of pool in pool order.
func pickOrdered(rng *rand.Rand, pool []string, n int) []string {
	keep := make([]bool, len(pool))
	for _, i := range rng.Perm(len(pool))[:n] {
		keep[i] = true
	}
	out := make([]string, 0, n)
	for i, v := range pool {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

func titleCase(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// joinList writes "a, b and c".
func joinList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
