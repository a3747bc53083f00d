package webshop

import (
	"strings"
)

// This file is WebShop's reward (web_agent_site/engine/goal.py, get_reward)
// for a synthetic catalogue:
//
//	R = r_type · (N_att + N_opt + 1[price ≤ bound]) / (|U_att| + |U_opt| + 1)
//
// Fuzzy matches use TokenSetRatio (fuzz.go) with WebShop's threshold 85.
// The one stand-in is the noun extraction behind r_type's title score:
// WebShop runs spaCy and keeps NOUN/PROPN tokens of the product names; here
// every product type declares its nouns in the vocabulary (words.go), and
// the title score compares the type nouns of the purchased and the goal
// product. Brand names (PROPN for spaCy) are left out, so two products of
// one type always score 1.

// fuzzyThreshold is WebShop's: a fuzzy match needs a token-set ratio > 85.
const fuzzyThreshold = 85

// exactMatchOptions are matched exactly rather than fuzzily (WebShop's
// EXACT_MATCH_OPTS).
var exactMatchOptions = map[string]bool{"size": true}

// colorSet is WebShop's COLOR_SET (engine/normalize.py), in its order: a
// colour value normalises to the first entry that occurs in it.
var colorSet = []string{
	"alabaster", "apricot", "aqua", "ash", "asphalt", "azure",
	"banana", "beige", "black", "blue", "blush", "bordeaux", "bronze",
	"brown", "burgundy", "camel", "camo", "caramel", "champagne",
	"charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee",
	"cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark",
	"denim", "eggplant", "elephant", "espresso", "fuchsia", "gold", "granite",
	"grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
	"ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac",
	"lime", "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha",
	"multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive",
	"orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red",
	"rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
	"slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal",
	"tiger", "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
}

// normalizeColor is WebShop's normalize_color: the first COLOR_SET word that
// is a substring of s (so "navy blue" becomes "blue" and "standard" becomes
// "tan"), else s unchanged.
func normalizeColor(s string) string {
	for _, c := range colorSet {
		if strings.Contains(s, c) {
			return c
		}
	}
	return s
}

// RewardParts is a purchase's score and its components.
type RewardParts struct {
	// Raw is WebShop's reward R in [0, 1] (it can exceed 1 only through
	// WebShop's quirk of counting more purchased options than the goal has).
	Raw float64
	// RType is the type factor: 1, 0.5, 0.1 or 0.
	RType         float64
	QueryMatch    bool
	CategoryMatch bool
	// TitleScore is the share of the goal's type nouns the purchase shares.
	TitleScore float64
	// AttrMatches of NumAttrs goal attributes matched.
	AttrMatches, NumAttrs int
	// OptionMatches counts purchased options that match a goal option;
	// NumOptions is the number of goal options.
	OptionMatches, NumOptions int
	// PriceOK reports price ≤ bound (true when there is no bound).
	PriceOK bool
}

// Reward scores buying product p with the selected options against goal g,
// exactly as WebShop's get_reward.
func Reward(p *Product, g *Goal, selected []Option) RewardParts {
	r := typeReward(p, g)
	r.NumAttrs = len(g.Attributes)
	r.NumOptions = len(g.Options)
	title := strings.ToLower(p.Title)
	bullets := strings.ToLower(strings.Join(p.Bullets, " "))
	desc := strings.ToLower(p.Description)
	inText := func(s string) bool {
		return strings.Contains(title, s) || strings.Contains(bullets, s) || strings.Contains(desc, s)
	}

	for _, ga := range g.Attributes {
		matched := false
		for _, pa := range p.Attributes {
			if TokenSetRatio(pa, ga) > fuzzyThreshold {
				matched = true
				break
			}
		}
		if matched || inText(ga) {
			r.AttrMatches++
		}
	}

	goalOpts := make([]string, len(g.Options))
	for i, o := range g.Options {
		goalOpts[i] = normalizeColor(o.Value)
	}
	for _, po := range selected {
		v := normalizeColor(po.Value)
		matched := false
		if exactMatchOptions[strings.ToLower(po.Name)] {
			for _, gv := range goalOpts {
				if gv == v {
					matched = true
					break
				}
			}
		} else {
			for _, gv := range goalOpts {
				if TokenSetRatio(gv, v) > fuzzyThreshold {
					matched = true
					break
				}
			}
		}
		if matched || inText(v) {
			r.OptionMatches++
		}
	}

	r.PriceOK = g.PriceUpper <= 0 || p.Price <= g.PriceUpper
	num := float64(r.AttrMatches + r.OptionMatches)
	if r.PriceOK {
		num++
	}
	r.Raw = r.RType * num / float64(r.NumAttrs+r.NumOptions+1)
	return r
}

// typeReward is WebShop's get_type_reward with the noun stand-in described
// at the top of this file. The three adjustments apply in WebShop's order,
// so a title score of 0 gives 0 even when the query matches.
func typeReward(p *Product, g *Goal) RewardParts {
	r := RewardParts{RType: 1}
	r.QueryMatch = p.Query == g.Query
	r.CategoryMatch = sharedLevels(p.Category, g.Category) >= 2
	if len(g.Nouns) == 0 {
		r.TitleScore = 0.2
	} else {
		have := map[string]bool{}
		for _, n := range p.Nouns {
			have[n] = true
		}
		shared := map[string]bool{}
		for _, n := range g.Nouns {
			if have[n] {
				shared[n] = true
			}
		}
		r.TitleScore = float64(len(shared)) / float64(len(g.Nouns))
	}
	if !(r.QueryMatch || r.CategoryMatch || r.TitleScore > 0.2) {
		r.RType = 0.5
	}
	if r.TitleScore < 0.1 {
		r.RType = 0.1
	}
	if r.TitleScore == 0 {
		r.RType = 0
	}
	return r
}

// sharedLevels counts distinct category-path levels two paths share,
// ignoring order, as WebShop's set intersection does.
func sharedLevels(a, b string) int {
	set := map[string]bool{}
	for _, x := range strings.Split(a, "›") {
		set[strings.TrimSpace(x)] = true
	}
	seen := map[string]bool{}
	n := 0
	for _, x := range strings.Split(b, "›") {
		x = strings.TrimSpace(x)
		if set[x] && !seen[x] {
			seen[x] = true
			n++
		}
	}
	return n
}
