// Package webshop is a WebShop-style shopping environment (Yao et al. 2022,
// as wrapped by RAGEN) over a synthetic, seed-determined catalogue: the
// agent reads an instruction ("i need gluten free protein bar with flavor:
// sea salt, and price lower than 30.00 dollars"), searches with
// search[keywords], browses results and item pages with click[element],
// selects options and buys. The purchase is scored with WebShop's reward
// formula; RAGEN's binary variant (1 only for a perfect purchase) is the
// default.
//
// Differences from WebShop, all deliberate: the catalogue is generated (see
// words.go and catalog.go) rather than scraped; search is an in-memory BM25
// index (search.go) instead of pyserini/Lucene; spaCy's nouns are replaced
// by per-type noun lists (reward.go); observations add a "Selected options"
// line and RAGEN's available-actions list (pages.go); following agentrl's
// convention, invalid actions do not count against max_actions, and
// Info.ActionEffective reports a change of browsing state (RAGEN compares
// observations, which differs only for clicks that change nothing visible).
package webshop

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// RewardMode chooses how a purchase's score becomes the step reward.
type RewardMode string

const (
	// RewardBinary is RAGEN's: 1 if WebShop's reward is at least 1, else 0.
	RewardBinary RewardMode = "binary"
	// RewardRaw is WebShop's reward itself, in [0, 1].
	RewardRaw RewardMode = "raw"
)

// Config is the YAML configuration of the "webshop" environment.
type Config struct {
	// Catalog is the number of products: "small" (1,000, WebShop's small
	// set and RAGEN's default), "large" (100,000) or a positive integer.
	Catalog string `yaml:"catalog"`
	// CatalogSeed draws the catalogue and the goal order. Environments
	// with the same catalog and catalog_seed share one catalogue.
	CatalogSeed uint64 `yaml:"catalog_seed"`
	// MaxActions ends an unfinished episode, with reward 0, after this many
	// valid actions (default 9, RAGEN's WebShop; its WebShopFull uses 15).
	MaxActions int `yaml:"max_actions"`
	// Reward is "binary" (default, RAGEN) or "raw" (WebShop's score).
	Reward RewardMode `yaml:"reward"`
	// Split picks the goals an episode seed maps to: "train" (default),
	// "val" or "test", by RAGEN's index scheme (see Catalog.GoalIndex).
	Split Split `yaml:"split"`
	// ShowActions appends RAGEN's list of available actions to every
	// observation (default true).
	ShowActions bool `yaml:"show_actions"`
	// ResultLabels names the products on a results page: "asin" (the
	// default; empty means the same) shows WebShop's ten-character product
	// ids, clicked as click[b0abc12xyz]; "rank" shows their rank among the
	// search's results, 1 to 50, clicked as click[3]. Ranks are a rendering
	// for small models trained from scratch, which cannot copy random ids
	// reliably; the product pages, the goals and the reward are the same.
	ResultLabels string `yaml:"result_labels"`
}

// The values of Config.ResultLabels.
const (
	LabelASIN = "asin"
	LabelRank = "rank"
)

// MaxCatalog bounds the catalog key: larger catalogues take minutes and
// gigabytes to build.
const MaxCatalog = 2_000_000

// DefaultConfig is RAGEN's WebShop setting: small catalogue, 9 actions,
// binary reward, train goals, actions listed.
func DefaultConfig() Config {
	return Config{Catalog: "small", MaxActions: 9, Reward: RewardBinary, Split: SplitTrain, ShowActions: true, ResultLabels: LabelASIN}
}

// CatalogSize resolves the catalog key to a number of products.
func (c *Config) CatalogSize() (int, error) {
	switch strings.ToLower(strings.TrimSpace(c.Catalog)) {
	case "small":
		return SmallCatalog, nil
	case "large":
		return LargeCatalog, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(c.Catalog))
	if err != nil || n < 1 || n > MaxCatalog {
		return 0, fmt.Errorf("catalog: must be \"small\" (%d products), \"large\" (%d) or an integer in [1, %d], got %q",
			SmallCatalog, LargeCatalog, MaxCatalog, c.Catalog)
	}
	return n, nil
}

// Validate checks every key and names the offending one with its allowed
// values.
func (c *Config) Validate() error {
	if _, err := c.CatalogSize(); err != nil {
		return err
	}
	if c.MaxActions < 1 {
		return fmt.Errorf("max_actions: must be at least 1 (RAGEN uses 9), got %d", c.MaxActions)
	}
	if c.Reward != RewardBinary && c.Reward != RewardRaw {
		return fmt.Errorf("reward: must be %q or %q, got %q", RewardBinary, RewardRaw, c.Reward)
	}
	switch c.Split {
	case SplitTrain, SplitVal, SplitTest:
	default:
		return fmt.Errorf("split: must be %q, %q or %q, got %q", SplitTrain, SplitVal, SplitTest, c.Split)
	}
	if c.ResultLabels != "" && c.ResultLabels != LabelASIN && c.ResultLabels != LabelRank {
		return fmt.Errorf("result_labels: must be %q (product ids, as WebShop) or %q (result ranks), got %q", LabelASIN, LabelRank, c.ResultLabels)
	}
	return nil
}

func init() {
	envs.MustRegister("webshop", envs.Registration[Config]{
		Description: "WebShop: search a synthetic shop, pick options and buy the product an instruction describes (RAGEN/WebShop)",
		Default:     DefaultConfig,
		New: func(cfg Config) (envs.Env, error) {
			return New(cfg)
		},
	})
}

// Env is one WebShop episode at a time. It implements envs.Env and
// envs.Expert. It is not safe for concurrent use; its catalogue is shared.
type Env struct {
	cfg     Config
	cat     *Catalog
	goal    Goal
	goalIdx int
	st      state
	steps   int
	last    RewardParts // score of the purchase, once bought
	memo    *expertMemo
	started bool
	done    bool
}

var (
	_ envs.Env    = (*Env)(nil)
	_ envs.Expert = (*Env)(nil)
)

// New validates cfg and returns an environment over the shared catalogue
// of (catalog, catalog_seed), building it on first use.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, _ := cfg.CatalogSize()
	return &Env{cfg: cfg, cat: SharedCatalog(n, cfg.CatalogSeed), memo: &expertMemo{}}, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Catalog returns the shared catalogue.
func (e *Env) Catalog() *Catalog { return e.cat }

// Goal returns the current episode's goal (zero before the first Reset).
// Its slices belong to the shared catalogue and must not be modified.
func (e *Env) Goal() Goal { return e.goal }

// Steps returns the number of valid actions taken in this episode.
func (e *Env) Steps() int { return e.steps }

// Reset picks the goal of seed in the configured split and shows the search
// page.
func (e *Env) Reset(seed uint64) (string, error) {
	e.goalIdx = e.cat.GoalIndex(e.cfg.Split, seed)
	e.goal = e.cat.Goal(e.goalIdx)
	e.st = state{page: pageSearch}
	e.steps, e.last, e.started, e.done = 0, RewardParts{}, true, false
	e.memo.reset()
	return e.render(), nil
}

// Render returns the current observation, "" before the first Reset.
func (e *Env) Render() string {
	if !e.started {
		return ""
	}
	return e.render()
}

// Actions returns nil: actions are free-form search[...] and click[...]
// strings, described by Instruction.
func (e *Env) Actions() []string { return nil }

// Instruction explains the task and the action grammar.
func (e *Env) Instruction() string {
	return fmt.Sprintf(`You are shopping in WebShop, an online store. An instruction describes a product to buy: its type, attributes, options (such as size, color or flavor) and a price limit. Each observation is the current web page, its texts separated by [SEP], followed by the actions available on it.
Actions (one per turn):
- search[keywords]: search the store. Only possible on the search page. Results come 10 per page, up to 50.
- click[element]: click a button, a product id or an option value shown on the page, e.g. click[next >], click[< prev], click[back to search], click[b0abc12xyz], click[large], click[description], click[features], click[reviews], click[buy now].
Element names are not case-sensitive. An action that is not available on the page does nothing.
You have %d actions. click[buy now] on a product page buys it and ends the episode; the purchase succeeds only if the product has the requested type and attributes, every requested option is selected (one click per option group, before buying) and the price is under the limit.
Tips: search with the product type and its attributes, not size or color; prefer products on the current page over paging; if few actions are left, buy the best product you can reach.`, e.cfg.MaxActions)
}

// Step applies one action. A malformed action, a search outside the search
// page, an empty search or a click on something the page does not show is
// an invalid step: nothing changes, reward 0, and it does not count against
// max_actions. Buying ends the episode with the purchase's reward; running
// out of actions ends it with reward 0.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	name, arg, ok := ParseAction(action)
	if !ok {
		return envs.StepResult{Observation: e.render()}, nil
	}
	before := e.st
	valid, bought := e.transition(name, arg)
	if !valid {
		return envs.StepResult{Observation: e.render()}, nil
	}
	e.steps++
	res := envs.StepResult{Info: envs.Info{ActionValid: true, ActionEffective: !e.st.equal(before)}}
	switch {
	case bought:
		p := &e.cat.Products[e.st.item]
		e.last = Reward(p, &e.goal, e.st.options)
		e.done = true
		success := e.last.Raw >= 1
		res.Reward = e.last.Raw
		if e.cfg.Reward == RewardBinary {
			res.Reward = b2f(success)
		}
		res.Info.Success = success
		res.Info.Metrics = e.last.metrics()
	case e.steps >= e.cfg.MaxActions:
		e.done = true
		res.Info.Metrics = map[string]float64{"purchased": 0, "raw_reward": 0}
	}
	res.Done = e.done
	res.Observation = e.render()
	return res, nil
}

// metrics are the Info.Metrics of a purchase.
func (r RewardParts) metrics() map[string]float64 {
	m := map[string]float64{
		"purchased":      1,
		"raw_reward":     r.Raw,
		"r_type":         r.RType,
		"r_price":        b2f(r.PriceOK),
		"title_score":    r.TitleScore,
		"query_match":    b2f(r.QueryMatch),
		"category_match": b2f(r.CategoryMatch),
	}
	if r.NumAttrs > 0 {
		m["r_att"] = float64(r.AttrMatches) / float64(r.NumAttrs)
	}
	if r.NumOptions > 0 {
		m["r_option"] = float64(r.OptionMatches) / float64(r.NumOptions)
	}
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
