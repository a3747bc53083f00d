package webshop

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Goal is one synthetic shopping goal in WebShop's sense: a target product,
// the attributes and the one option combination the instruction asks for,
// and a price bound.
type Goal struct {
	// Product is the index of the target product in Catalog.Products.
	Product  int
	ASIN     string
	Query    string
	Category string
	Nouns    []string
	// Attributes are the attribute phrases the instruction names.
	Attributes []string
	// Options is the option combination, sorted by option name.
	Options []Option
	// PriceUpper is the price bound; 0 means none (WebShop's 1,000,000).
	PriceUpper float64
	// Instruction is the text shown to the agent.
	Instruction string
}

// Option is one selected option value.
type Option struct {
	Name, Value string
}

// goalTable enumerates WebShop's synthetic goals without materialising them:
// every product contributes one goal per combination of its option values
// (the Cartesian product over option names in sorted order), so goal k of
// product i is a mixed-radix number. perm is the fixed shuffle WebShop
// (random.seed(233)) and RAGEN (random.Random(42)) apply, drawn here from
// the catalogue seed.
type goalTable struct {
	offsets []int // offsets[i] is the first goal of product i; len n+1
	perm    []int32
}

func newGoalTable(products []Product, seed uint64) goalTable {
	offsets := make([]int, len(products)+1)
	for i := range products {
		n := 1
		for _, g := range products[i].Options {
			n *= len(g.Values)
		}
		offsets[i+1] = offsets[i] + n
	}
	total := offsets[len(products)]
	perm := make([]int32, total)
	for i := range perm {
		perm[i] = int32(i)
	}
	rng := envs.NewRand(seed, streamGoals)
	rng.Shuffle(total, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	return goalTable{offsets: offsets, perm: perm}
}

// NumGoals is the number of synthetic goals.
func (c *Catalog) NumGoals() int { return len(c.goals.perm) }

// Goal returns goal k (0 <= k < NumGoals) in the shuffled order.
func (c *Catalog) Goal(k int) Goal {
	g := int(c.goals.perm[k])
	pi := sort.Search(len(c.Products), func(i int) bool { return c.goals.offsets[i+1] > g })
	p := &c.Products[pi]
	combo := g - c.goals.offsets[pi]

	// Option names in sorted order, the last one varying fastest, as
	// itertools.product over sorted names does.
	groups := slices.Clone(p.Options)
	slices.SortStableFunc(groups, func(a, b OptionGroup) int { return strings.Compare(a.Name, b.Name) })
	opts := make([]Option, len(groups))
	for i := len(groups) - 1; i >= 0; i-- {
		n := len(groups[i].Values)
		opts[i] = Option{Name: groups[i].Name, Value: groups[i].Values[combo%n]}
		combo /= n
	}

	var sb strings.Builder
	sb.WriteString(p.instrText)
	for i, o := range opts {
		if i == 0 {
			sb.WriteString(" with ")
		} else {
			sb.WriteString(", and ")
		}
		sb.WriteString(o.Name + ": " + o.Value)
	}
	if p.priceUpper > 0 {
		fmt.Fprintf(&sb, ", and price lower than %.2f dollars", p.priceUpper)
	}
	return Goal{
		Product:     pi,
		ASIN:        p.ASIN,
		Query:       p.Query,
		Category:    p.Category,
		Nouns:       p.Nouns,
		Attributes:  p.goalAttrs,
		Options:     opts,
		PriceUpper:  p.priceUpper,
		Instruction: sb.String(),
	}
}

// Split is a goal split: "train", "val" or "test".
type Split string

// The goal splits, RAGEN's index scheme.
const (
	SplitTrain Split = "train"
	SplitVal   Split = "val"
	SplitTest  Split = "test"
)

// GoalIndex maps an episode seed to a goal index as RAGEN's WebShop wrapper
// does: test seed%500, val 500+seed%1000, train 1500+seed%(N-1500), over
// the shuffled goal list. Catalogues with fewer than 3,000 goals (custom
// small sizes) keep the scheme's shape with proportional splits: the first
// sixth test, the next third val, the rest train.
func (c *Catalog) GoalIndex(split Split, seed uint64) int {
	n := uint64(c.NumGoals())
	testN, valN := uint64(500), uint64(1000)
	if n < 3000 {
		testN, valN = max(n/6, 1), max(n/3, 1)
		if testN+valN >= n {
			return int(seed % n)
		}
	}
	switch split {
	case SplitTest:
		return int(seed % testN)
	case SplitVal:
		return int(testN + seed%valN)
	default:
		return int(testN + valN + seed%(n-testN-valN))
	}
}
