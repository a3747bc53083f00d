package webshop

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file holds the browsing state, the clickable elements of each page,
// the transitions and the text rendering. Observations use WebShop's "text"
// mode (the visible texts of the page joined with " [SEP] ", what RAGEN
// trains on) followed, when show_actions is on, by RAGEN's list of available
// actions in click[...] form. Text mode hides which option values are
// selected (WebShop's text_rich mode marks them as clicked buttons), so the
// item page adds a "Selected options:" line once any is chosen.

// Button texts (lower-cased, they are also the click arguments).
const (
	btnBackToSearch = "back to search"
	btnNext         = "next >"
	btnPrev         = "< prev"
	btnBuyNow       = "buy now"
	btnDescription  = "description"
	btnFeatures     = "features"
	btnReviews      = "reviews"
)

type pageKind int

const (
	pageSearch pageKind = iota
	pageResults
	pageItem
	pageSub
	pageDone
)

// state is everything a step can change. Slices are replaced, never
// modified in place, so copying a state snapshots it.
type state struct {
	page       pageKind
	keywords   string
	results    []int // top SearchReturnN product indices
	resultPage int   // 1-based
	item       int   // product index on item and sub-pages
	options    []Option
	sub        string // description, features or reviews
}

func (s state) equal(t state) bool {
	return s.page == t.page && s.keywords == t.keywords && s.resultPage == t.resultPage &&
		s.item == t.item && s.sub == t.sub && slices.Equal(s.results, t.results) &&
		slices.Equal(s.options, t.options)
}

// actionRE is WebShop's parse_action pattern (.+)\[(.+)\], matched from the
// start of the action as Python's re.match does; Go's leftmost-first
// semantics pick the same groups.
var actionRE = regexp.MustCompile(`^(.+)\[(.+)\]`)

// ParseAction splits an action into its name and lower-cased argument as
// WebShop does; ok is false when the action has no "name[arg]" form.
// Surrounding whitespace is trimmed first (WebShop does not, but a model's
// trailing newline should not make an action invalid).
func ParseAction(action string) (name, arg string, ok bool) {
	m := actionRE.FindStringSubmatch(strings.TrimSpace(action))
	if m == nil {
		return "", "", false
	}
	return m[1], strings.ToLower(m[2]), true
}

// pageProducts returns the product indices on the current results page.
func (s *state) pageProducts() []int {
	lo := (s.resultPage - 1) * PageSize
	if lo >= len(s.results) || lo < 0 {
		return nil
	}
	return s.results[lo:min(lo+PageSize, len(s.results))]
}

// clickables lists the click arguments valid on the current page, in page
// order. click[search] is never valid (WebShop excludes it).
func (e *Env) clickables() []string {
	s := &e.st
	switch s.page {
	case pageResults:
		out := []string{btnBackToSearch}
		if s.resultPage > 1 {
			out = append(out, btnPrev)
		}
		out = append(out, btnNext)
		lo := (s.resultPage - 1) * PageSize
		for i, pi := range s.pageProducts() {
			out = append(out, strings.ToLower(e.resultLabel(lo+i, pi)))
		}
		return out
	case pageItem:
		out := []string{btnBackToSearch, btnPrev}
		for _, g := range e.cat.Products[s.item].Options {
			out = append(out, g.Values...)
		}
		return append(out, btnDescription, btnFeatures, btnReviews, btnBuyNow)
	case pageSub:
		return []string{btnBackToSearch, btnPrev}
	}
	return nil
}

// resultLabel is how the results page shows, and a click names, product
// pi at rank r (0-based) of the results: its ASIN, or its rank from 1.
func (e *Env) resultLabel(r, pi int) string {
	if e.cfg.ResultLabels == LabelRank {
		return strconv.Itoa(r + 1)
	}
	return e.cat.Products[pi].ASIN
}

// availableActions is RAGEN's list: search[<query>] where there is a search
// bar, then every clickable, without next > on an empty results page.
func (e *Env) availableActions() []string {
	if e.st.page == pageSearch {
		return []string{"search[<query>]"}
	}
	var out []string
	empty := e.st.page == pageResults && len(e.st.pageProducts()) == 0
	for _, c := range e.clickables() {
		if empty && c == btnNext {
			continue
		}
		out = append(out, "click["+c+"]")
	}
	return out
}

// transition applies a parsed action and reports whether it was valid. An
// invalid action leaves the state untouched.
func (e *Env) transition(name, arg string) (valid, bought bool) {
	s := e.st
	switch name {
	case "search":
		if s.page != pageSearch || arg == "" {
			return false, false
		}
		e.st = state{page: pageResults, keywords: arg, results: e.cat.index.Search(arg, SearchReturnN), resultPage: 1}
		return true, false
	case "click":
		if arg == "search" || !slices.Contains(e.clickables(), arg) {
			return false, false
		}
	default:
		return false, false
	}
	switch {
	case arg == btnBackToSearch:
		e.st = state{page: pageSearch}
	case s.page == pageResults && arg == btnNext:
		s.resultPage++
		e.st = s
	case s.page == pageResults && arg == btnPrev:
		s.resultPage--
		e.st = s
	case s.page == pageResults:
		var pi int
		if e.cfg.ResultLabels == LabelRank {
			r, _ := strconv.Atoi(arg) // a clickable, so a rank on this page
			pi = s.results[r-1]
		} else {
			pi = e.cat.byASIN[strings.ToUpper(arg)]
		}
		s.page, s.item, s.options = pageItem, pi, nil
		e.st = s
	case s.page == pageItem && arg == btnPrev:
		// Back to the results page; WebShop's search_results clears the
		// selected options.
		s.page, s.options = pageResults, nil
		e.st = s
	case s.page == pageItem && arg == btnBuyNow:
		e.st.page = pageDone
		return true, true
	case s.page == pageItem && (arg == btnDescription || arg == btnFeatures || arg == btnReviews):
		s.page, s.sub = pageSub, arg
		e.st = s
	case s.page == pageItem:
		s.options = selectOption(s.options, e.cat.Products[s.item].Options, arg)
		e.st = s
	case s.page == pageSub && arg == btnPrev:
		s.page, s.sub = pageItem, ""
		e.st = s
	}
	return true, false
}

// selectOption returns opts with the group holding value set to value. As
// in WebShop, where clickables are a dict keyed by value, a value offered by
// two groups belongs to the last one.
func selectOption(opts []Option, groups []OptionGroup, value string) []Option {
	name := ""
	for _, g := range groups {
		if slices.Contains(g.Values, value) {
			name = g.Name
		}
	}
	out := make([]Option, 0, len(opts)+1)
	replaced := false
	for _, o := range opts {
		if o.Name == name {
			o.Value, replaced = value, true
		}
		out = append(out, o)
	}
	if !replaced {
		out = append(out, Option{Name: name, Value: value})
	}
	return out
}

// render writes the observation of the current state.
func (e *Env) render() string {
	s := &e.st
	var parts []string
	instr := []string{"Instruction:", e.goal.Instruction}
	switch s.page {
	case pageSearch:
		parts = append([]string{"WebShop"}, instr...)
		parts = append(parts, "Search")
	case pageResults:
		parts = append(instr, "Back to Search", fmt.Sprintf("Page %d (Total results: %d)", s.resultPage, len(s.results)))
		if s.resultPage > 1 {
			parts = append(parts, "< Prev")
		}
		parts = append(parts, "Next >")
		lo := (s.resultPage - 1) * PageSize
		for i, pi := range s.pageProducts() {
			p := &e.cat.Products[pi]
			parts = append(parts, e.resultLabel(lo+i, pi), p.Title, p.PriceText())
		}
	case pageItem:
		p := &e.cat.Products[s.item]
		parts = append(instr, "Back to Search", "< Prev")
		for _, g := range p.Options {
			parts = append(parts, g.Name)
			parts = append(parts, g.Values...)
		}
		rating := "N.A."
		if p.Rating > 0 {
			rating = fmt.Sprintf("%.1f", p.Rating)
		}
		parts = append(parts, p.Title, "Price: "+p.PriceText(), "Rating: "+rating,
			"Description", "Features", "Reviews", "Buy Now")
	case pageSub:
		p := &e.cat.Products[s.item]
		parts = append(instr, "Back to Search", "< Prev")
		switch s.sub {
		case btnDescription:
			parts = append(parts, p.Description)
		case btnFeatures:
			parts = append(parts, p.Bullets...)
		case btnReviews:
			for _, r := range p.Reviews {
				parts = append(parts, r.Title, fmt.Sprintf("%d", r.Score), r.Body)
			}
		}
	case pageDone:
		p := &e.cat.Products[s.item]
		parts = []string{"Thank you for shopping with us!", "Purchased", p.ASIN, p.Title,
			"Options: " + optionText(s.options), "Your score (min 0.0, max 1.0)", fmt.Sprintf("%.4g", e.last.Raw)}
	}
	out := strings.Join(parts, " [SEP] ")
	if s.page == pageItem && len(s.options) > 0 {
		out += "\nSelected options: " + optionText(s.options)
	}
	if e.cfg.ShowActions && s.page != pageDone && !e.done {
		out += "\nAvailable actions: " + strings.Join(e.availableActions(), ", ")
	}
	return out
}

// optionText writes "size: large, color: red" ("none" when empty).
func optionText(opts []Option) string {
	if len(opts) == 0 {
		return "none"
	}
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o.Name + ": " + o.Value
	}
	return strings.Join(parts, ", ")
}
