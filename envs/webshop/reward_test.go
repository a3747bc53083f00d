package webshop

import (
	"math"
	"testing"
)

// testProduct and testGoal are a hand-built purchase whose scores are
// computed by hand below.
func testProduct() *Product {
	return &Product{
		Query:       "shampoo",
		Category:    "Beauty & Personal Care › Hair Care › Shampoos",
		Nouns:       []string{"shampoo"},
		Title:       "Aveline Gentle Shampoo - Sulfate Free, Paraben Free",
		Description: "A mild shampoo for every day.",
		Bullets:     []string{"SULFATE FREE - kind to your hair", "WHAT YOU GET - 1 bottle"},
		Attributes:  []string{"sulfate free", "paraben free", "argan oil"},
		Options: []OptionGroup{
			{Name: "size", Values: []string{"8 fl oz", "16 fl oz"}},
			{Name: "scent", Values: []string{"lavender", "coconut"}},
			{Name: "color", Values: []string{"royal blue", "black"}},
		},
		PriceLo: 12.5, PriceHi: 12.5, Price: 12.5,
	}
}

func testGoal() *Goal {
	return &Goal{
		Query:      "shampoo",
		Category:   "Beauty & Personal Care › Hair Care › Shampoos",
		Nouns:      []string{"shampoo"},
		Attributes: []string{"sulfate free", "argan oil"},
		Options:    []Option{{"scent", "lavender"}, {"size", "16 fl oz"}},
		PriceUpper: 20,
	}
}

func TestRewardHandComputed(t *testing.T) {
	full := []Option{{"size", "16 fl oz"}, {"scent", "lavender"}}
	cases := []struct {
		name     string
		edit     func(p *Product, g *Goal)
		selected []Option
		want     float64
		rType    float64
	}{
		{"full match", nil, full, 1, 1},
		{"missing attribute", func(p *Product, g *Goal) {
			g.Attributes = append(g.Attributes, "cruelty free")
		}, full, 5.0 / 6, 1},
		{"attribute found in title", func(p *Product, g *Goal) {
			g.Attributes = append(g.Attributes, "gentle")
		}, full, 1, 1},
		{"wrong scent", nil, []Option{{"size", "16 fl oz"}, {"scent", "coconut"}}, 4.0 / 5, 1},
		{"size is exact match only", nil, []Option{{"size", "8 fl oz"}, {"scent", "lavender"}}, 4.0 / 5, 1},
		{"option not selected", nil, []Option{{"size", "16 fl oz"}}, 4.0 / 5, 1},
		{"price over bound", func(p *Product, g *Goal) { g.PriceUpper = 10 }, full, 4.0 / 5, 1},
		{"no price bound", func(p *Product, g *Goal) { g.PriceUpper = 0; p.Price = 5000 }, full, 1, 1},
		{"colour normalised: royal blue buys navy blue", func(p *Product, g *Goal) {
			g.Options = append(g.Options, Option{"color", "navy blue"})
		}, append(full, Option{"color", "royal blue"}), 1, 1},
		{"type 0.5: no query or category match, title score 0.2", func(p *Product, g *Goal) {
			g.Query, g.Category = "hair oil", "Beauty & Personal Care › Oils › Hair Oils"
			g.Nouns = []string{"shampoo", "a", "b", "c", "d"}
		}, full, 0.5, 0.5},
		{"type 1: category match keeps title score 0.2", func(p *Product, g *Goal) {
			g.Query, g.Category = "hair oil", "Beauty & Personal Care › Hair Care › Hair Oils"
			g.Nouns = []string{"shampoo", "a", "b", "c", "d"}
		}, full, 1, 1},
		{"type 0.1: title score below 0.1", func(p *Product, g *Goal) {
			g.Query = "hair oil"
			g.Nouns = []string{"shampoo", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		}, full, 0.1, 0.1},
		{"type 0: no shared noun even with the same query", func(p *Product, g *Goal) {
			g.Nouns = []string{"conditioner"}
		}, full, 0, 0},
		{"goal without nouns scores title 0.2", func(p *Product, g *Goal) {
			g.Query, g.Category, g.Nouns = "x", "A › B", nil
		}, full, 0.5, 0.5},
	}
	for _, c := range cases {
		p, g := testProduct(), testGoal()
		if c.edit != nil {
			c.edit(p, g)
		}
		r := Reward(p, g, c.selected)
		if math.Abs(r.Raw-c.want) > 1e-12 || r.RType != c.rType {
			t.Errorf("%s: raw %v, r_type %v; want %v, %v (%+v)", c.name, r.Raw, r.RType, c.want, c.rType, r)
		}
	}
}

// TestRewardExtraOptionQuirk: WebShop counts matched purchased options, not
// goal options, so an extra option that appears in the title can push the
// score above 1. The binary reward treats that as success too.
func TestRewardExtraOptionQuirk(t *testing.T) {
	p, g := testProduct(), testGoal()
	g.Options = nil
	r := Reward(p, g, []Option{{"style", "gentle"}})
	if want := 4.0 / 3; math.Abs(r.Raw-want) > 1e-12 {
		t.Errorf("raw = %v, want %v", r.Raw, want)
	}
}

func TestNormalizeColor(t *testing.T) {
	for in, want := range map[string]string{
		"navy blue": "blue", "heather gray": "gray", "space gray": "gray", "standard": "tan",
		"rose gold": "gold", "original": "original", "light pink": "light",
	} {
		if got := normalizeColor(in); got != want {
			t.Errorf("normalizeColor(%q) = %q, want %q", in, got, want)
		}
	}
}
