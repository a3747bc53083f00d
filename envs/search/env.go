// Package search is a multi-hop search environment in the spirit of RAGEN's
// SearchQA (HotpotQA questions over a retrieval server), offline: the
// corpus is generated from a seed. Passages state facts about generated
// people, cities, countries and organisations ("Varo Keldin was born in
// Port Almera in 1887", "The capital of Zelandia is Dunmore", "Orvane
// Shipping was founded in 1921 by Varo Keldin ..."), beside distractor
// passages that mention the same entities (a move, a branch office, a twin
// city, namesakes). A question chains one to three of those facts ("In
// which country was the founder of Orvane Shipping born?") and has one
// gold answer.
//
// The agent acts with search[query], which shows the top-k passages by
// BM25 as the next observation, and answer[text] (RAGEN's finish[text] is
// the same action), which ends the episode. With rollout.tools the agent
// makes the same actions as tool calls (envs.ToolUser): search(query) and
// answer(text), whose schemas require their one string argument. The
// reward is RAGEN's SearchQA reward by default: 1 for an exact match after
// SQuAD normalisation, else the token F1 when it is at least 0.3, else 0;
// success is an exact match.
//
// Differences from RAGEN, all deliberate: the corpus is generated instead
// of Wikipedia, retrieval is BM25 instead of E5 dense retrieval, the
// action grammar is strict (RAGEN scores unparseable text as an answer;
// here it is an invalid step), and, as everywhere in agentrl, invalid steps
// do not count against max_steps.
package search

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// Config is the YAML configuration of the "search" environment.
type Config struct {
	// Corpus is the corpus size: "small" (300 people, 1,044 passages),
	// "large" (3,000 people) or a number of people.
	Corpus string `yaml:"corpus"`
	// CorpusSeed draws the world and the question order. Environments
	// with the same corpus and corpus_seed share one corpus.
	CorpusSeed uint64 `yaml:"corpus_seed"`
	// Split is "train" (default), "test" (questions about the fifth of the
	// entities no train question names) or "all".
	Split Split `yaml:"split"`
	// MinHops and MaxHops bound the questions' hop counts (1 to 3); every
	// count in range is equally frequent.
	MinHops int `yaml:"min_hops"`
	MaxHops int `yaml:"max_hops"`
	// TopK is the number of passages a search shows (RAGEN's
	// max_search_results: 5).
	TopK int `yaml:"top_k"`
	// MaxSteps ends an unanswered episode, with reward 0, after this many
	// valid actions (RAGEN: 10). Set it to the rollout's
	// max_actions_per_episode so that every episode ends here and reports
	// its metrics.
	MaxSteps int `yaml:"max_steps"`
	// Reward is "ragen" (default), "em" or "f1"; see RewardMode.
	Reward RewardMode `yaml:"reward"`
	// F1Threshold is the F1 the "ragen" reward needs to pay a partial
	// answer (RAGEN: 0.3).
	F1Threshold float64 `yaml:"f1_threshold"`
	// ShowActions ends every observation with RAGEN's line of available
	// actions (default true): the tools with tools on.
	ShowActions bool `yaml:"show_actions"`
	// Tools words the instruction and the action line for an agent that
	// acts through the search and answer tools (set it with
	// rollout.tools). Step takes the same action text either way.
	Tools bool `yaml:"tools"`
}

// DefaultConfig is RAGEN's SearchQA setting on the small corpus: 5 passages
// a search, 10 steps, RAGEN's reward.
func DefaultConfig() Config {
	return Config{Corpus: "small", Split: SplitTrain, MinHops: 1, MaxHops: 3, TopK: 5, MaxSteps: 10,
		Reward: RewardRAGEN, F1Threshold: 0.3, ShowActions: true}
}

// CorpusSize resolves the corpus key to a number of people.
func (c *Config) CorpusSize() (int, error) {
	switch strings.ToLower(strings.TrimSpace(c.Corpus)) {
	case "small":
		return SmallCorpus, nil
	case "large":
		return LargeCorpus, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(c.Corpus))
	if err != nil || n < MinCorpus || n > MaxCorpus {
		return 0, fmt.Errorf("corpus: must be \"small\" (%d people), \"large\" (%d) or a number of people in [%d, %d], got %q",
			SmallCorpus, LargeCorpus, MinCorpus, MaxCorpus, c.Corpus)
	}
	return n, nil
}

// Validate checks every key and names the offending one.
func (c *Config) Validate() error {
	if _, err := c.CorpusSize(); err != nil {
		return err
	}
	switch {
	case c.Split != SplitTrain && c.Split != SplitTest && c.Split != SplitAll:
		return fmt.Errorf("split: must be %q, %q or %q, got %q", SplitTrain, SplitTest, SplitAll, c.Split)
	case c.MinHops < 1 || c.MinHops > 3:
		return fmt.Errorf("min_hops: must be 1, 2 or 3, got %d", c.MinHops)
	case c.MaxHops < c.MinHops || c.MaxHops > 3:
		return fmt.Errorf("max_hops: must be in [min_hops, 3] = [%d, 3], got %d", c.MinHops, c.MaxHops)
	case c.TopK < 1 || c.TopK > 20:
		return fmt.Errorf("top_k: must be in [1, 20] (RAGEN: 5), got %d", c.TopK)
	case c.MaxSteps < 1 || c.MaxSteps > 100:
		return fmt.Errorf("max_steps: must be in [1, 100] (RAGEN: 10), got %d", c.MaxSteps)
	case c.Reward != RewardRAGEN && c.Reward != RewardEM && c.Reward != RewardF1:
		return fmt.Errorf("reward: must be %q, %q or %q, got %q", RewardRAGEN, RewardEM, RewardF1, c.Reward)
	case c.F1Threshold < 0 || c.F1Threshold > 1:
		return fmt.Errorf("f1_threshold: must be in [0, 1] (RAGEN: 0.3), got %v", c.F1Threshold)
	}
	return nil
}

func init() {
	envs.MustRegister("search", envs.Registration[Config]{
		Description: "SearchQA offline: answer 1-3 hop questions by BM25 search over a generated corpus (RAGEN's SearchQA)",
		Default:     DefaultConfig,
		New:         func(cfg Config) (envs.Env, error) { return New(cfg) },
	})
}

// Env is one question at a time. It implements envs.Env, envs.Expert,
// envs.RandomActor, envs.RationaleChecker, envs.StateKeyer and
// envs.ToolUser. It is not
// safe for concurrent use; its corpus is shared.
type Env struct {
	cfg      Config
	c        *Corpus
	q        *Question
	qi       int
	query    string // the last search, as typed (whitespace collapsed)
	results  []int  // its passages, best first
	searched bool
	searches int
	steps    int
	answer   string
	score    Score
	answered bool
	started  bool
	done     bool
}

var (
	_ envs.Env              = (*Env)(nil)
	_ envs.Expert           = (*Env)(nil)
	_ envs.RandomActor      = (*Env)(nil)
	_ envs.RationaleChecker = (*Env)(nil)
	_ envs.StateKeyer       = (*Env)(nil)
)

// New validates cfg and returns an environment over the shared corpus of
// (corpus, corpus_seed), generating it on first use.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, _ := cfg.CorpusSize()
	c := SharedCorpus(n, cfg.CorpusSeed)
	for h := cfg.MinHops; h <= cfg.MaxHops; h++ {
		if c.NumQuestions(cfg.Split, h) == 0 {
			return nil, fmt.Errorf("corpus %q has no %d-hop questions in split %q; use a larger corpus", cfg.Corpus, h, cfg.Split)
		}
	}
	return &Env{cfg: cfg, c: c}, nil
}

// Config returns the environment's configuration.
func (e *Env) Config() Config { return e.cfg }

// Corpus returns the shared corpus.
func (e *Env) Corpus() *Corpus { return e.c }

// Question returns the current question (nil before the first Reset).
func (e *Env) Question() *Question { return e.q }

// Results returns the passages the last search showed, best first.
func (e *Env) Results() []int { return slices.Clone(e.results) }

// Steps returns the number of valid actions taken in this episode.
func (e *Env) Steps() int { return e.steps }

// Reset picks the question of seed in the configured split and hop range.
func (e *Env) Reset(seed uint64) (string, error) {
	return e.resetQuestion(e.c.QuestionIndex(e.cfg.Split, e.cfg.MinHops, e.cfg.MaxHops, seed)), nil
}

// resetQuestion starts an episode on question qi of the corpus.
func (e *Env) resetQuestion(qi int) string {
	e.qi = qi
	e.q = &e.c.Questions[qi]
	e.query, e.results, e.searched, e.searches, e.steps = "", nil, false, 0, 0
	e.answer, e.score, e.answered, e.started, e.done = "", Score{}, false, true, false
	return e.render()
}

// Render returns the current observation, "" before the first Reset.
func (e *Env) Render() string {
	if !e.started {
		return ""
	}
	return e.render()
}

// render shows the question, the last search's passages and, once the
// episode is over, how it ended.
func (e *Env) render() string {
	var b strings.Builder
	b.WriteString("Question: ")
	b.WriteString(e.q.Text)
	if e.searched {
		fmt.Fprintf(&b, "\nResults for %q:", e.query)
		if len(e.results) == 0 {
			b.WriteString(" none.")
		}
		for i, p := range e.results {
			fmt.Fprintf(&b, "\n[%d] %s", i+1, e.c.Passages[p].Text)
		}
	}
	switch {
	case e.answered:
		fmt.Fprintf(&b, "\nYour answer: %s. Reward: %.2f", e.answer, e.score.Reward)
	case e.done:
		b.WriteString("\nNo actions left: the episode ends without an answer.")
	case e.cfg.ShowActions && e.cfg.Tools:
		b.WriteString("\nAvailable tools: search(query), answer(text)")
	case e.cfg.ShowActions:
		b.WriteString("\nAvailable actions: search[<query>], answer[<answer>]")
	}
	return b.String()
}

// Actions returns nil: actions are free-form search[...] and answer[...]
// strings, described by Instruction.
func (e *Env) Actions() []string { return nil }

// Instruction explains the task, the action grammar (the tools, with
// tools on) and the reward.
func (e *Env) Instruction() string {
	reward := "The answer is scored by exact match after lower-casing and removing punctuation and articles"
	switch e.cfg.Reward {
	case RewardRAGEN:
		reward += fmt.Sprintf("; an inexact answer whose word overlap (F1) with the gold answer is at least %g earns that F1, otherwise 0.", e.cfg.F1Threshold)
	case RewardF1:
		reward += "; an inexact answer earns its word overlap (F1) with the gold answer."
	default:
		reward += ": 1 or 0."
	}
	if e.cfg.Tools {
		return fmt.Sprintf(`You answer questions by searching a collection of short documents about people, cities, countries and organisations. Find the answer in the documents: some questions need one fact, others chain two or three (who founded a company, then where that person was born, then which country that city is in).
Tools (one call per turn):
- search(query): returns the question and the %d documents that best match the query (BM25 word matching). Searching for the name of the person, place or organisation you need works best.
- answer(text): submits your final answer and ends the episode.
You have %d calls. %s
Example: to find where the founder of Orvane Shipping was born, call search with query "Orvane Shipping"; a document says it was founded by Varo Keldin, so call search with query "Varo Keldin"; a document says Varo Keldin was born in Port Almera, so call answer with text "Port Almera".`,
			e.cfg.TopK, e.cfg.MaxSteps, reward)
	}
	return fmt.Sprintf(`You answer questions by searching a collection of short documents about people, cities, countries and organisations. Find the answer in the documents: some questions need one fact, others chain two or three (who founded a company, then where that person was born, then which country that city is in).
Actions (one per turn):
- search[query]: shows the %d documents that best match the query (BM25 word matching). Searching for the name of the person, place or organisation you need works best.
- answer[text]: submits your final answer and ends the episode (finish[text] is the same).
You have %d actions. %s
Examples:
<think>To find where the founder of Orvane Shipping was born, I first look up Orvane Shipping.</think><answer>search[Orvane Shipping]</answer>
<think>Document 1 says Orvane Shipping was founded by Varo Keldin. Now I look up Varo Keldin.</think><answer>search[Varo Keldin]</answer>
<think>Document 2 says Varo Keldin was born in Port Almera.</think><answer>answer[Port Almera]</answer>`,
		e.cfg.TopK, e.cfg.MaxSteps, reward)
}

// Step applies one action. Text that ParseAction rejects is an invalid
// step: nothing changes, reward 0, and it does not count against
// max_steps. A search shows its passages (a search that matches nothing is
// valid and shows none); an answer ends the episode with its reward;
// running out of steps ends it with reward 0.
func (e *Env) Step(action string) (envs.StepResult, error) {
	if !e.started {
		return envs.StepResult{}, envs.ErrNotReset
	}
	if e.done {
		return envs.StepResult{}, envs.ErrEpisodeDone
	}
	a, ok := ParseAction(action)
	if !ok {
		return envs.StepResult{Observation: e.render()}, nil
	}
	e.steps++
	res := envs.StepResult{Info: envs.Info{ActionValid: true}}
	switch a.Verb {
	case VerbSearch:
		r := e.c.Search(a.Arg, e.cfg.TopK)
		res.Info.ActionEffective = !e.searched || !slices.Equal(r, e.results)
		e.query, e.results, e.searched = a.Arg, r, true
		e.searches++
		if e.steps >= e.cfg.MaxSteps {
			e.done = true
			res.Info.Metrics = e.metrics()
		}
	default: // VerbAnswer
		e.score = ScoreAnswer(a.Arg, e.q.Answer, e.cfg.Reward, e.cfg.F1Threshold)
		e.answer, e.answered, e.done = a.Arg, true, true
		res.Reward = e.score.Reward
		res.Info.Success = e.score.EM
		res.Info.ActionEffective = true
		res.Info.Metrics = e.metrics()
	}
	res.Done = e.done
	res.Observation = e.render()
	return res, nil
}

// metrics are the Info.Metrics of the episode's last step: whether it
// answered, its exact match and F1 (0 unanswered), RAGEN's success (reward
// above 0), its searches and hop count, and the exact match by hop count.
func (e *Env) metrics() map[string]float64 {
	em := b2f(e.score.EM)
	return map[string]float64{
		"answered":                               b2f(e.answered),
		"em":                                     em,
		"f1":                                     e.score.F1,
		"ragen_success":                          b2f(e.score.Reward > 0),
		"searches":                               float64(e.searches),
		"hops":                                   float64(e.q.Hops()),
		"em_" + strconv.Itoa(e.q.Hops()) + "hop": em,
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
