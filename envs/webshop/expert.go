package webshop

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// The expert knows the goal and the catalogue. At every step it lists the
// purchases it can still complete within the actions left, scores each with
// the reward function itself, and follows the best (highest score, then
// fewest actions, then least disruptive):
//
//   - from the search page: each query among a few made of the
//     instruction's words (the instruction without options and price, type
//     plus attributes, ...), each of its top 50 results, reached by paging;
//   - from a results page: each result, paging as needed, or a new search;
//   - from an item page: this product with the requested options clicked,
//     or going back to the results or to a new search;
//   - from a sub-page: back to the item page.
//
// A product counts when it can score 1 (the goal product or an equally
// matching one); when none is reachable in time the expert buys the best
// one that is, with as many of its options as fit. Advise simulates the
// policy on a copy of the environment to return the whole remaining plan.

// decision is one step of the policy with what its rationale needs.
type decision struct {
	action string
	kind   int
	args   []any
}

// Rationale kinds; each has several phrasings in rationales.
const (
	whySearch = iota
	whyOpen
	whyNext
	whyPrev
	whyBackToSearch
	whyOption
	whyBuy
	whyLeaveItem
	whyLeaveSub
	whyHurry
)

// rationales holds at least four phrasings per kind; the format arguments
// are the decision's args, referenced by index.
var rationales = [][]string{
	whySearch: {
		"The instruction asks for %[1]s. I search for %[2]q: the product type and its attributes; options are chosen on the product page.",
		"I need %[1]s. Searching %[2]q should rank matching products first.",
		"Goal: %[1]s. I start with search[%[2]s], keeping size and color for the item page.",
		"To find %[1]s I query the store with %[2]q.",
	},
	whyOpen: {
		"On page %[1]d of the results, %[2]s %[3]q (%[4]s) is %[5]s, so I open it.",
		"%[2]s on results page %[1]d, %[3]q at %[4]s, matches what I need: %[5]s. Opening it.",
		"I click %[2]s (%[3]q, %[4]s): it is %[5]s.",
		"Result %[2]s fits the instruction (%[5]s) and costs %[4]s; I open %[3]q.",
	},
	whyNext: {
		"Nothing on page %[1]d fits %[2]s, but %[3]s on page %[4]d does, so I go to the next page.",
		"Page %[1]d has no product that is %[2]s; %[3]s is further down on page %[4]d. Next page.",
		"The match %[3]s is on page %[4]d, not on page %[1]d; I click next to reach it (%[2]s).",
		"I keep paging: %[3]s on page %[4]d fits %[2]s and page %[1]d has nothing that does.",
	},
	whyPrev: {
		"Page %[1]d has no product that is %[2]s; %[3]s on page %[4]d does, so I go back a page.",
		"The match %[3]s was on page %[4]d; I return from page %[1]d (%[2]s).",
		"Nothing on page %[1]d fits %[2]s. Going back to page %[4]d for %[3]s.",
		"I click prev: %[3]s on page %[4]d is the product that is %[2]s, not anything on page %[1]d.",
	},
	whyBackToSearch: {
		"None of the %[1]d results for %[2]q is %[3]s; I go back to search with a better query.",
		"The results for %[2]q (%[1]d of them) contain nothing that is %[3]s. Back to search.",
		"Searching %[2]q did not surface %[3]s among %[1]d results, so I search again.",
		"No result for %[2]q fits %[3]s (%[1]d checked); returning to the search page.",
	},
	whyOption: {
		"This is %[1]q. The instruction wants %[2]s: %[3]s, which is not selected yet, so I click %[3]s.",
		"On %[1]q I still have to pick %[2]s %[3]s.",
		"%[2]s: %[3]s is required and not yet chosen on %[1]q; clicking it.",
		"Before buying %[1]q I select the %[2]s the instruction asks for: %[3]s.",
	},
	whyBuy: {
		"%[1]q matches: it is %[2]s, the options %[3]s are selected and its price %[4]s is within %[5]s. I buy it.",
		"Everything fits on %[1]q (%[2]s; %[3]s; price %[4]s, limit %[5]s): buy now.",
		"%[1]q is %[2]s with %[3]s selected, at %[4]s against a limit of %[5]s. Buying.",
		"All requirements are met by %[1]q: %[2]s, options %[3]s, price %[4]s (limit %[5]s). Click buy now.",
	},
	whyLeaveItem: {
		"%[1]q is not what I need: %[2]s. I go back.",
		"This product, %[1]q, fails the instruction (%[2]s), so I leave it.",
		"%[2]s for %[1]q; it cannot be the right purchase. Going back.",
		"I will not buy %[1]q because %[2]s. Back to the list.",
	},
	whyLeaveSub: {
		"This is the %[1]s page of %[2]q; the decision is made on the product page, so I go back to it.",
		"I am reading the %[1]s of %[2]q. Nothing more is needed here; back to the item.",
		"The %[1]s page of %[2]q does not change what to buy; returning to the product page.",
		"Back from the %[1]s of %[2]q to the product page to continue.",
	},
	whyHurry: {
		"Only %[1]d action(s) left, too few for a perfect purchase; %[2]q is the best product I can still buy, so I %[3]s.",
		"With %[1]d action(s) remaining I settle for %[2]q and %[3]s.",
		"Running out of actions (%[1]d left): I %[3]s to buy %[2]q, the closest match within reach.",
		"%[1]d action(s) left. The best reachable purchase is %[2]q; I %[3]s.",
	},
}

// Advise implements envs.Expert: the remaining plan from the current state,
// at most maxActions actions (all if maxActions <= 0), and a rationale for
// the first one. It does not change the environment.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	if e.done {
		return envs.Advice{}, envs.ErrEpisodeDone
	}
	sim := *e
	first := sim.decide()
	actions := []string{first.action}
	for d := first; maxActions <= 0 || len(actions) < maxActions; {
		res, err := sim.Step(d.action)
		if err != nil || res.Done || !res.Info.ActionValid {
			break
		}
		d = sim.decide()
		actions = append(actions, d.action)
	}
	phr := rationales[first.kind]
	k := 0
	if rng != nil {
		k = rng.IntN(len(phr))
	}
	return envs.Advice{Actions: actions, Rationale: fmt.Sprintf(phr[k], first.args...), Brief: first.brief()}, nil
}

// brief is the decision's terse rationale for small models: what the step
// does in two or three words (which option group, how many actions are
// left), without the titles and the instruction the long form repeats.
func (d decision) brief() string {
	switch d.kind {
	case whySearch:
		return "search"
	case whyOpen:
		return "open match"
	case whyNext:
		return "next page"
	case whyPrev:
		return "previous page"
	case whyBackToSearch:
		return "search again"
	case whyOption:
		return "select " + d.args[1].(string)
	case whyBuy:
		return "buy"
	case whyLeaveItem:
		return "wrong item"
	case whyLeaveSub:
		return "back to item"
	default: // whyHurry
		return fmt.Sprintf("%d left, %s", d.args[0].(int), d.args[2].(string))
	}
}

// choice is a product the expert could buy: the options to select and the
// score that purchase gets.
type choice struct {
	product int
	options []Option
	score   RewardParts
}

// evaluate picks, for product pi, a value for each goal option (the same
// group name with the value matching best, falling back to any unused group)
// and scores buying pi with them. Results are cached per episode.
func (e *Env) evaluate(pi int) choice {
	if c, ok := e.memo.choices[pi]; ok {
		return c
	}
	p := &e.cat.Products[pi]
	used := make([]bool, len(p.Options))
	var opts []Option
	for _, want := range e.goal.Options {
		bestG, bestV, best := -1, "", -1
		// The requested value itself, in a group of the same name, cannot
		// be beaten; finding it first skips the fuzzy scores.
		for gi, g := range p.Options {
			if !used[gi] && g.Name == want.Name && slices.Contains(g.Values, want.Value) {
				bestG, bestV, best = gi, want.Value, 1200
			}
		}
		for gi, g := range p.Options {
			if best == 1200 {
				break
			}
			if used[gi] {
				continue
			}
			for _, v := range g.Values {
				s := TokenSetRatio(normalizeColor(want.Value), normalizeColor(v))
				if v == want.Value {
					s = 1000
				}
				if g.Name == want.Name {
					s += 200
				}
				if s > best {
					bestG, bestV, best = gi, v, s
				}
			}
		}
		if bestG >= 0 && best > fuzzyThreshold {
			used[bestG] = true
			opts = append(opts, Option{Name: p.Options[bestG].Name, Value: bestV})
		}
	}
	c := choice{product: pi, options: opts, score: Reward(p, &e.goal, opts)}
	e.memo.choices[pi] = c
	return c
}

// expertMemo caches what the expert computes about the current goal; Reset
// clears it. Copies of the environment (Advise's simulation) share it,
// which is right since they share the goal.
type expertMemo struct {
	choices map[int]choice
	partial map[[2]int]float64 // score of a product bought with its first k options
	results map[string][]int
	queries []string
}

func (m *expertMemo) reset() {
	m.choices, m.partial, m.results, m.queries = map[int]choice{}, map[[2]int]float64{}, map[string][]int{}, nil
}

// candidateQueries are the searches the expert considers, all made of the
// instruction's own words: the instruction without options and price
// (first, so that among equally good searches the expert types a span of
// the instruction as it reads, which a small model can copy), type plus
// attributes, the same plus option values, the type alone.
func (e *Env) candidateQueries() []string {
	if e.memo.queries == nil {
		g := &e.goal
		attrs := strings.Join(g.Attributes, " ")
		var opts []string
		for _, o := range g.Options {
			opts = append(opts, o.Value)
		}
		e.memo.queries = []string{
			e.cat.Products[g.Product].instrText,
			g.Query + " " + attrs,
			g.Query + " " + attrs + " " + strings.Join(opts, " "),
			g.Query,
		}
	}
	return e.memo.queries
}

func (e *Env) search(q string) []int {
	r, ok := e.memo.results[q]
	if !ok {
		r = e.cat.index.Search(q, SearchReturnN)
		e.memo.results[q] = r
	}
	return r
}

// First steps of a plan.
const (
	stepSearch = iota
	stepOpen
	stepNext
	stepPrev
	stepBackToSearch
	stepOption
	stepBuy
	stepLeaveItem
	stepItemToSearch
)

// plan is the best purchase the expert can still make from some state: the
// score it gets, the actions it takes, and what to do first.
type plan struct {
	raw     float64
	cost    int
	step    int
	query   string
	product int
	page    int // results page the product is on
	option  Option
	ok      bool
}

// better prefers the higher score, then the shorter plan; on a tie the
// plan found first (the less disruptive one) stays.
func (p plan) better(q plan) bool {
	return p.ok && (!q.ok || p.raw > q.raw || (p.raw == q.raw && p.cost < q.cost))
}

// purchase scores buying product pi with at most budget actions left for
// selecting options and buying: options beyond the budget are skipped.
func (e *Env) purchase(pi, budget int) (raw float64, actions int) {
	c := e.evaluate(pi)
	k := min(len(c.options), budget-1)
	if k == len(c.options) {
		return c.score.Raw, k + 1
	}
	key := [2]int{pi, k}
	raw, ok := e.memo.partial[key]
	if !ok {
		raw = Reward(&e.cat.Products[pi], &e.goal, c.options[:k]).Raw
		e.memo.partial[key] = raw
	}
	return raw, k + 1
}

// fromResults is the best plan from results page cur of results, with
// left actions.
func (e *Env) fromResults(results []int, cur, left int) plan {
	best := plan{}
	for r, pi := range results {
		page := r/PageSize + 1
		cost := abs(page-cur) + 1 // paging, then opening the product
		if cost+1 > left {
			continue
		}
		raw, n := e.purchase(pi, left-cost)
		step := stepOpen
		if page > cur {
			step = stepNext
		} else if page < cur {
			step = stepPrev
		}
		if p := (plan{raw: raw, cost: cost + n, step: step, product: pi, page: page, ok: true}); p.better(best) {
			best = p
		}
	}
	return best
}

// fromSearch is the best plan from the search page with left actions.
func (e *Env) fromSearch(left int) plan {
	best := plan{}
	for _, q := range e.candidateQueries() {
		p := e.fromResults(e.search(q), 1, left-1)
		p.cost++
		p.step, p.query = stepSearch, q
		if p.better(best) {
			best = p
		}
	}
	return best
}

// fromItem is the best plan from the current item page: buy this product
// (after selecting its options), or leave for a better one.
func (e *Env) fromItem(left int) plan {
	s := &e.st
	c := e.evaluate(s.item)
	opts := s.options
	var first Option
	n := 0
	for _, o := range c.options {
		if n+1 >= left {
			break
		}
		if !containsOption(opts, o) {
			if n == 0 {
				first = o
			}
			opts = selectOption(opts, e.cat.Products[s.item].Options, o.Value)
			n++
		}
	}
	best := plan{raw: Reward(&e.cat.Products[s.item], &e.goal, opts).Raw, cost: n + 1, step: stepBuy,
		product: s.item, ok: true}
	if n > 0 {
		best.step, best.option = stepOption, first
	}
	for i, p := range []plan{e.fromResults(s.results, s.resultPage, left-1), e.fromSearch(left - 1)} {
		p.cost++
		p.step = stepLeaveItem
		if i == 1 {
			p.step = stepItemToSearch
		}
		if p.better(best) {
			best = p
		}
	}
	return best
}

// decide is the policy: the next action for the current state.
func (e *Env) decide() decision {
	left := e.cfg.MaxActions - e.steps
	s := &e.st
	var pl plan
	switch s.page {
	case pageSearch:
		pl = e.fromSearch(left)
	case pageResults:
		pl = e.fromResults(s.results, s.resultPage, left)
		if back := e.fromSearch(left - 1); back.ok {
			back.cost++
			back.step = stepBackToSearch
			if back.better(pl) {
				pl = back
			}
		}
	case pageItem:
		pl = e.fromItem(left)
	default: // pageSub; the done page never reaches here
		return decision{"click[" + btnPrev + "]", whyLeaveSub, []any{s.sub, e.cat.Products[s.item].Title}}
	}
	return e.explain(pl, left)
}

// explain turns a plan's first step into an action and its rationale.
func (e *Env) explain(pl plan, left int) decision {
	s := &e.st
	if !pl.ok {
		// Nothing can be bought in time; any valid move will do.
		if s.page == pageSearch {
			q := e.candidateQueries()[0]
			return decision{"search[" + q + "]", whySearch, []any{e.goalSummary(), q}}
		}
		return decision{"click[" + btnBackToSearch + "]", whyHurry, []any{left, "nothing", "go back to search"}}
	}
	p := &e.cat.Products[pl.product]
	perfect := pl.raw >= 1
	label, named := p.ASIN, p.ASIN // as the page shows it, and in a sentence
	if r := slices.Index(s.results, pl.product); r >= 0 && e.cfg.ResultLabels == LabelRank {
		label, named = e.resultLabel(r, pl.product), "result "+e.resultLabel(r, pl.product)
	}
	switch pl.step {
	case stepSearch:
		return decision{"search[" + pl.query + "]", whySearch, []any{e.goalSummary(), pl.query}}
	case stepOpen:
		// The label as the results page shows it (clicks ignore case): a
		// model then copies it rather than changing its case.
		a := "click[" + label + "]"
		if !perfect {
			return decision{a, whyHurry, []any{left, p.Title, "open it"}}
		}
		return decision{a, whyOpen, []any{s.resultPage, named, p.Title, p.PriceText(), e.fitSummary(e.evaluate(pl.product))}}
	case stepNext:
		return decision{"click[" + btnNext + "]", whyNext, []any{s.resultPage, e.wantSummary(), named, pl.page}}
	case stepPrev:
		return decision{"click[" + btnPrev + "]", whyPrev, []any{s.resultPage, e.wantSummary(), named, pl.page}}
	case stepBackToSearch:
		return decision{"click[" + btnBackToSearch + "]", whyBackToSearch, []any{len(s.results), s.keywords, e.wantSummary()}}
	case stepOption:
		return decision{"click[" + pl.option.Value + "]", whyOption, []any{p.Title, pl.option.Name, pl.option.Value}}
	case stepBuy:
		if !perfect {
			return decision{"click[" + btnBuyNow + "]", whyHurry, []any{left, p.Title, "buy it now"}}
		}
		return decision{"click[" + btnBuyNow + "]", whyBuy,
			[]any{p.Title, e.attrSummary(), selectedText(s.options), p.PriceText(), e.limitText()}}
	default: // stepLeaveItem, stepItemToSearch
		a := "click[" + btnPrev + "]"
		if pl.step == stepItemToSearch {
			a = "click[" + btnBackToSearch + "]"
		}
		cur := &e.cat.Products[s.item]
		return decision{a, whyLeaveItem, []any{cur.Title, e.failure(e.evaluate(s.item))}}
	}
}

// selectedText names the selected options for a rationale.
func selectedText(opts []Option) string {
	if len(opts) == 0 {
		return "(none needed)"
	}
	return optionText(opts)
}

func containsOption(opts []Option, o Option) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// failure names why a product cannot score 1.
func (e *Env) failure(c choice) string {
	r := c.score
	switch {
	case r.RType < 1:
		return fmt.Sprintf("it is not a %s", e.goal.Query)
	case r.AttrMatches < r.NumAttrs:
		return fmt.Sprintf("it is not %s", e.attrSummary())
	case r.OptionMatches < r.NumOptions:
		return fmt.Sprintf("it does not offer %s", optionText(e.goal.Options))
	case !r.PriceOK:
		return fmt.Sprintf("its price is over %s", e.limitText())
	}
	return "it does not match"
}

func (e *Env) attrSummary() string { return joinList(e.goal.Attributes) }

func (e *Env) limitText() string {
	if e.goal.PriceUpper <= 0 {
		return "no price limit"
	}
	return fmt.Sprintf("$%.2f", e.goal.PriceUpper)
}

// goalSummary is the whole request: type, attributes, options and limit.
func (e *Env) goalSummary() string {
	g := &e.goal
	s := fmt.Sprintf("a %s that is %s", g.Query, e.attrSummary())
	if len(g.Options) > 0 {
		s += " with " + optionText(g.Options)
	}
	if g.PriceUpper > 0 {
		s += fmt.Sprintf(", under $%.2f", g.PriceUpper)
	}
	return s
}

// wantSummary is the part of the request results can be judged on.
func (e *Env) wantSummary() string {
	return fmt.Sprintf("a %s that is %s", e.goal.Query, e.attrSummary())
}

func (e *Env) fitSummary(c choice) string {
	return fmt.Sprintf("a %s that is %s, offers %s and is within %s",
		e.goal.Query, e.attrSummary(), optionText(c.options), e.limitText())
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
