package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/envs"
)

// Random streams of the corpus (envs.NewRand labels).
const (
	streamCorpus = 0x5ea4c
	streamSplit  = 0x5ea4d
	streamOrder  = 0x5ea4e
)

// Kind is the kind of an entity.
type Kind uint8

// The entity kinds.
const (
	Country Kind = iota
	City
	Person
	Org
)

// Relation is a fact type a question can ask about.
type Relation uint8

// The relations. Each holds between an entity and another entity or a year.
const (
	RelCapital  Relation = iota // country → its capital city
	RelCountry                  // city → its country
	RelBornIn                   // person → birth city
	RelBornYear                 // person → birth year
	RelFounder                  // organisation → founding person
	RelFounded                  // organisation → founding year
	RelBasedIn                  // organisation → headquarters city
	numRelations
)

// label is the relation's short name, used in brief rationales.
func (r Relation) label() string {
	return [...]string{"capital", "country", "birthplace", "birth year", "founder", "founded", "based in"}[r]
}

// Entity is one generated entity. The relation fields hold entity indices
// (-1 when they do not apply) or years (0 when they do not apply).
type Entity struct {
	Kind Kind
	Name string
	// Noun is what the entity is: an occupation, an organisation type.
	Noun     string
	Capital  int // country
	Country  int // city
	BornIn   int // person
	BornYear int // person
	Founder  int // organisation
	Founded  int // organisation
	BasedIn  int // organisation
	// Page is the index of the entity's own passage.
	Page int
}

// Fact is one statement a passage makes: Rel of Subject is Value (an
// entity index, or a year for RelBornYear and RelFounded).
type Fact struct {
	Subject int
	Rel     Relation
	Value   int
}

// Passage is one document of the corpus.
type Passage struct {
	// Title is the entity's name on its own page and empty on a
	// distractor. It is indexed with the text, as Search-R1's corpora index
	// a passage's title and text, but not shown.
	Title string
	Text  string
	// About is the entity whose page this is, or -1 for a distractor.
	About int
	// Facts are the relations the passage states, the ones questions ask.
	Facts []Fact
	// Mentions are the entities the passage names; Years the years it
	// names. The random actor draws its answers and searches from them.
	Mentions []int
	Years    []int
}

// Question is one generated question with its hop chain: hop i reads
// relation Rels[i] of entity Chain[i] (whose value is Chain[i+1], or the
// answer at the last hop).
type Question struct {
	Text   string
	Chain  []int
	Rels   []Relation
	Answer string
	// answerValue is the last hop's value (an entity or a year).
	answerValue int
}

// Hops is the number of facts the question chains.
func (q *Question) Hops() int { return len(q.Rels) }

// Subject is the entity the question names.
func (q *Question) Subject() int { return q.Chain[0] }

// Corpus is a generated world: entities, the passages that describe them
// (with distractors that mention the same entities), the BM25 index over
// the passages and the questions, by split and hop count. It depends only
// on (people, seed) and is read-only after construction.
type Corpus struct {
	Entities  []Entity
	Passages  []Passage
	Questions []Question
	index     *Index
	// bySplit[split][hops-1] lists question indices in a seeded order.
	bySplit map[Split][3][]int
	// facts maps a (subject, relation) to the passages that state it.
	facts map[[2]int][]int
}

// Split is a question split.
type Split string

// The question splits: subjects are partitioned, a fifth of every kind
// held out, so test questions ask about entities no train question names.
const (
	SplitTrain Split = "train"
	SplitTest  Split = "test"
	SplitAll   Split = "all"
)

// Sizes of the named corpora, in people.
const (
	SmallCorpus = 300
	LargeCorpus = 3000
	// MinCorpus and MaxCorpus bound a corpus given as a number.
	MinCorpus = 20
	MaxCorpus = 200_000
)

var (
	corpusMu    sync.Mutex
	corpusCache = map[[2]uint64]*corpusEntry{}
)

type corpusEntry struct {
	once sync.Once
	c    *Corpus
}

// SharedCorpus returns the corpus of (people, seed), generating it on first
// use; every environment of the process with the same pair shares it.
func SharedCorpus(people int, seed uint64) *Corpus {
	key := [2]uint64{uint64(people), seed}
	corpusMu.Lock()
	e, ok := corpusCache[key]
	if !ok {
		e = &corpusEntry{}
		corpusCache[key] = e
	}
	corpusMu.Unlock()
	e.once.Do(func() { e.c = NewCorpus(people, seed) })
	return e.c
}

// Index returns the BM25 index over the passages.
func (c *Corpus) Index() *Index { return c.index }

// Search returns the top k passages for query.
func (c *Corpus) Search(query string, k int) []int { return c.index.Search(query, k) }

// valueText returns the text of a relation value: an entity's name or a year.
func (c *Corpus) valueText(rel Relation, v int) string {
	if rel == RelBornYear || rel == RelFounded {
		return strconv.Itoa(v)
	}
	return c.Entities[v].Name
}

// States reports whether passage p states relation rel of subject.
func (c *Corpus) States(p, subject int, rel Relation) bool {
	return slices.Contains(c.facts[[2]int{subject, int(rel)}], p)
}

// FactPassages lists the passages that state relation rel of subject.
func (c *Corpus) FactPassages(subject int, rel Relation) []int {
	return c.facts[[2]int{subject, int(rel)}]
}

// NumQuestions returns the number of questions of split with hops hops.
func (c *Corpus) NumQuestions(split Split, hops int) int {
	if hops < 1 || hops > 3 {
		return 0
	}
	return len(c.bySplit[split][hops-1])
}

// QuestionIndex maps an episode seed to a question of split whose hop count
// is in [minHops, maxHops]: the hop count cycles with the seed (so every
// count is equally frequent), and consecutive seeds of one count walk the
// split's seeded order of those questions. It returns -1 when there is none.
func (c *Corpus) QuestionIndex(split Split, minHops, maxHops int, seed uint64) int {
	n := uint64(maxHops - minHops + 1)
	hops := minHops + int(seed%n)
	list := c.bySplit[split][hops-1]
	if len(list) == 0 {
		return -1
	}
	return list[(seed/n)%uint64(len(list))]
}

// builder holds the generator's state.
type builder struct {
	c    *Corpus
	rng  *rand.Rand
	used map[string]bool
	// by kind: entity indices
	countries, cities, people, orgs []int
	citiesOf                        map[int][]int
	surnames                        []string
}

// NewCorpus generates the corpus of people people from seed. Most callers
// want SharedCorpus.
//
// The world: max(3, people/25) countries, max(2·countries, people/5) cities
// (every country has at least two, one its capital), people people (names
// drawn from pools of first names and surnames small enough that namesakes
// are common) and people/2 organisations (half named after a surname, so
// that a person's name also finds companies, and the rest after a place-like
// word). Every entity has a page stating its facts and one distractor
// passage that names it beside other entities and years without stating
// any fact a question asks for (except the facts of other entities, such as
// a twin city's country).
func NewCorpus(people int, seed uint64) *Corpus {
	b := &builder{c: &Corpus{facts: map[[2]int][]int{}},
		rng: envs.NewRand(seed, streamCorpus), used: map[string]bool{}, citiesOf: map[int][]int{}}
	nCountries := max(3, people/25)
	nCities := max(2*nCountries, people/5)
	nOrgs := max(4, people/2)
	b.makeCountries(nCountries, nCities)
	b.makePeople(people)
	b.makeOrgs(nOrgs)
	b.c.Passages = make([]Passage, 0, 2*len(b.c.Entities))
	b.writePages()
	b.writeDistractors()
	texts := make([]string, len(b.c.Passages))
	for i, p := range b.c.Passages {
		texts[i] = p.Title + " " + p.Text
	}
	b.c.index = NewIndex(texts)
	b.makeQuestions(seed)
	return b.c
}

func (b *builder) add(e Entity) int {
	e.Capital, e.Page = -1, -1
	if e.Kind != City {
		e.Country = -1
	}
	if e.Kind != Person {
		e.BornIn = -1
	}
	if e.Kind != Org {
		e.Founder, e.BasedIn = -1, -1
	}
	i := len(b.c.Entities)
	b.c.Entities = append(b.c.Entities, e)
	switch e.Kind {
	case Country:
		b.countries = append(b.countries, i)
	case City:
		b.cities = append(b.cities, i)
	case Person:
		b.people = append(b.people, i)
	case Org:
		b.orgs = append(b.orgs, i)
	}
	return i
}

// fresh returns name if no entity has it yet (case-insensitively), marking
// it used.
func (b *builder) fresh(name string) bool {
	k := strings.ToLower(name)
	if b.used[k] {
		return false
	}
	b.used[k] = true
	return true
}

func (b *builder) makeCountries(nCountries, nCities int) {
	for len(b.countries) < nCountries {
		name := word(b.rng, 1+b.rng.IntN(2))
		name = strings.TrimRight(name, "aeiou") + countrySuffixes[b.rng.IntN(len(countrySuffixes))]
		if len(name) < 5 || reserved[strings.ToLower(name)] || !b.fresh(name) {
			continue
		}
		b.add(Entity{Kind: Country, Name: name})
	}
	for i := 0; len(b.cities) < nCities; i++ {
		country := b.countries[i%nCountries] // every country gets cities in turn
		if i >= 2*nCountries {
			country = b.countries[b.rng.IntN(nCountries)]
		}
		var name string
		switch r := b.rng.IntN(10); {
		case r < 4:
			name = word(b.rng, 2)
		case r < 8:
			name = word(b.rng, 1) + citySuffixes[b.rng.IntN(len(citySuffixes))]
		default:
			name = cityPrefixes[b.rng.IntN(len(cityPrefixes))] + " " + word(b.rng, 2)
		}
		if !b.fresh(name) {
			i--
			continue
		}
		ci := b.add(Entity{Kind: City, Name: name, Noun: townKinds[b.rng.IntN(len(townKinds))], Country: country})
		b.citiesOf[country] = append(b.citiesOf[country], ci)
	}
	for _, z := range b.countries {
		cs := b.citiesOf[z]
		b.c.Entities[z].Capital = cs[b.rng.IntN(len(cs))]
	}
}

func (b *builder) makePeople(n int) {
	firsts := b.pool(max(8, n/6), 2)
	surnames := b.pool(max(10, n/2), 2)
	pairs := map[[2]int]bool{}
	for len(b.people) < n {
		f, s := b.rng.IntN(len(firsts)), b.rng.IntN(len(surnames))
		if pairs[[2]int{f, s}] {
			continue
		}
		name := firsts[f] + " " + surnames[s]
		if !b.fresh(name) {
			continue
		}
		pairs[[2]int{f, s}] = true
		b.add(Entity{Kind: Person, Name: name, Noun: occupations[b.rng.IntN(len(occupations))],
			BornIn: b.cities[b.rng.IntN(len(b.cities))], BornYear: 1800 + b.rng.IntN(120)})
	}
	b.surnames = surnames
}

// pool draws n distinct words of syl syllables, none an entity's name.
func (b *builder) pool(n, syl int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		w := word(b.rng, syl)
		if seen[w] || b.used[strings.ToLower(w)] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

func (b *builder) makeOrgs(n int) {
	for len(b.orgs) < n {
		t := orgTypes[b.rng.IntN(len(orgTypes))]
		var w string
		if b.rng.IntN(2) == 0 {
			w = b.surnames[b.rng.IntN(len(b.surnames))]
		} else {
			w = word(b.rng, 2)
		}
		name := w + " " + t.word
		if !b.fresh(name) {
			continue
		}
		founder := b.people[b.rng.IntN(len(b.people))]
		year := b.c.Entities[founder].BornYear + 22 + b.rng.IntN(40)
		b.add(Entity{Kind: Org, Name: name, Noun: t.noun, Founder: founder, Founded: year,
			BasedIn: b.cities[b.rng.IntN(len(b.cities))]})
	}
}

// passage appends a passage and records the facts it states.
func (b *builder) passage(p Passage) int {
	i := len(b.c.Passages)
	b.c.Passages = append(b.c.Passages, p)
	for _, f := range p.Facts {
		k := [2]int{f.Subject, int(f.Rel)}
		b.c.facts[k] = append(b.c.facts[k], i)
	}
	return i
}

// pick returns a template index.
func (b *builder) pick(n int) int { return b.rng.IntN(n) }

// writePages writes every entity's own page.
func (b *builder) writePages() {
	es := b.c.Entities
	for i := range es {
		e := &es[i]
		p := Passage{Title: e.Name, About: i, Mentions: []int{i}}
		switch e.Kind {
		case Country:
			c := es[e.Capital].Name
			p.Text = [...]string{
				fmt.Sprintf("%s is a country. Its capital is %s.", e.Name, c),
				fmt.Sprintf("The capital of %s is %s.", e.Name, c),
				fmt.Sprintf("%s is a country whose capital city is %s.", e.Name, c),
			}[b.pick(3)]
			p.Facts = []Fact{{i, RelCapital, e.Capital}, {e.Capital, RelCountry, i}}
			p.Mentions = append(p.Mentions, e.Capital)
		case City:
			z := es[e.Country].Name
			if es[e.Country].Capital == i {
				p.Text = [...]string{
					fmt.Sprintf("%s is the capital of %s.", e.Name, z),
					fmt.Sprintf("%s is the capital city of %s.", e.Name, z),
				}[b.pick(2)]
				p.Facts = []Fact{{i, RelCountry, e.Country}, {e.Country, RelCapital, i}}
			} else {
				p.Text = [...]string{
					fmt.Sprintf("%s is a city in %s.", e.Name, z),
					fmt.Sprintf("%s is %s town in %s.", e.Name, withArticle(e.Noun), z),
					fmt.Sprintf("%s lies in %s.", e.Name, z),
				}[b.pick(3)]
				p.Facts = []Fact{{i, RelCountry, e.Country}}
			}
			p.Mentions = append(p.Mentions, e.Country)
		case Person:
			c, y := es[e.BornIn].Name, e.BornYear
			p.Text = [...]string{
				fmt.Sprintf("%s was %s born in %s in %d.", e.Name, withArticle(e.Noun), c, y),
				fmt.Sprintf("%s was born in %s in %d and worked as %s.", e.Name, c, y, withArticle(e.Noun)),
				fmt.Sprintf("Born in %d in %s, %s became %s.", y, c, e.Name, withArticle(e.Noun)),
			}[b.pick(3)]
			p.Facts = []Fact{{i, RelBornIn, e.BornIn}, {i, RelBornYear, y}}
			p.Mentions = append(p.Mentions, e.BornIn)
			p.Years = []int{y}
		case Org:
			x, y, c := es[e.Founder].Name, e.Founded, es[e.BasedIn].Name
			p.Text = [...]string{
				fmt.Sprintf("%s is %s founded by %s in %d. It is based in %s.", e.Name, withArticle(e.Noun), x, y, c),
				fmt.Sprintf("%s was founded in %d by %s and is based in %s.", e.Name, y, x, c),
				fmt.Sprintf("The founder of %s is %s. The %s was set up in %d and is based in %s.", e.Name, x, e.Noun, y, c),
			}[b.pick(3)]
			p.Facts = []Fact{{i, RelFounder, e.Founder}, {i, RelFounded, y}, {i, RelBasedIn, e.BasedIn}}
			p.Mentions = append(p.Mentions, e.Founder, e.BasedIn)
			p.Years = []int{y}
		}
		e.Page = b.passage(p)
	}
}

// other draws an entity of list other than every one of not.
func (b *builder) other(list []int, not ...int) int {
	for {
		v := list[b.rng.IntN(len(list))]
		if !slices.Contains(not, v) {
			return v
		}
	}
}

// writeDistractors writes one passage per entity that names it beside
// other entities and years without stating its asked facts: a person's
// move, marriage or studies; an organisation's branch or chairman; a
// city's twin (whose country it does state) or railway; a country's
// largest port or neighbour. Every value differs from the true one.
func (b *builder) writeDistractors() {
	es := b.c.Entities
	for i := range es {
		e := &es[i]
		p := Passage{About: -1, Mentions: []int{i}}
		switch e.Kind {
		case Country:
			ports := slices.DeleteFunc(slices.Clone(b.citiesOf[i]), func(c int) bool { return c == e.Capital })
			if len(ports) > 0 && b.rng.IntN(2) == 0 {
				port := ports[b.rng.IntN(len(ports))]
				p.Text = fmt.Sprintf("The largest port of %s is %s.", e.Name, es[port].Name)
				p.Mentions = append(p.Mentions, port)
			} else {
				z2 := b.other(b.countries, i)
				p.Text = fmt.Sprintf("%s shares a border with %s.", e.Name, es[z2].Name)
				p.Mentions = append(p.Mentions, z2)
			}
		case City:
			c2 := b.other(b.cities, i)
			if z2 := es[c2].Country; z2 != e.Country && b.rng.IntN(2) == 0 {
				p.Text = fmt.Sprintf("%s is twinned with %s, a city in %s.", e.Name, es[c2].Name, es[z2].Name)
				p.Facts = []Fact{{c2, RelCountry, z2}}
				p.Mentions = append(p.Mentions, c2, z2)
			} else {
				y := 1820 + b.rng.IntN(180)
				p.Text = fmt.Sprintf("A railway opened in %d links %s with %s.", y, e.Name, es[c2].Name)
				p.Mentions = append(p.Mentions, c2)
				p.Years = []int{y}
			}
		case Person:
			c2 := b.other(b.cities, e.BornIn)
			y := e.BornYear + 18 + b.rng.IntN(30)
			switch b.pick(3) {
			case 0:
				p.Text = fmt.Sprintf("In %d, %s moved to %s.", y, e.Name, es[c2].Name)
			case 1:
				x2 := b.other(b.people, i)
				p.Text = fmt.Sprintf("%s married %s in %s in %d.", e.Name, es[x2].Name, es[c2].Name, y)
				p.Mentions = append(p.Mentions, x2)
			default:
				p.Text = fmt.Sprintf("%s studied in %s and later taught there from %d.", e.Name, es[c2].Name, y)
			}
			p.Mentions = append(p.Mentions, c2)
			p.Years = []int{y}
		case Org:
			y := e.Founded + 3 + b.rng.IntN(40)
			if b.rng.IntN(2) == 0 {
				c2 := b.other(b.cities, e.BasedIn)
				p.Text = fmt.Sprintf("%s opened a branch in %s in %d.", e.Name, es[c2].Name, y)
				p.Mentions = append(p.Mentions, c2)
			} else {
				x2 := b.other(b.people, e.Founder)
				p.Text = fmt.Sprintf("In %d, %s became chairman of %s.", y, es[x2].Name, e.Name)
				p.Mentions = append(p.Mentions, x2)
			}
			p.Years = []int{y}
		}
		b.passage(p)
	}
	// Interleave pages and distractors so that passage order (the tie
	// break) does not favour pages.
	order := b.rng.Perm(len(b.c.Passages))
	passages := make([]Passage, len(order))
	newIndex := make([]int, len(order))
	for to, from := range order {
		passages[to] = b.c.Passages[from]
		newIndex[from] = to
	}
	b.c.Passages = passages
	for i := range es {
		es[i].Page = newIndex[es[i].Page]
	}
	for k, ps := range b.c.facts {
		for j, p := range ps {
			ps[j] = newIndex[p]
		}
		slices.Sort(ps)
		b.c.facts[k] = ps
	}
}

// questionTemplate is one question shape: the relations it chains from a
// subject of kind, and its text.
type questionTemplate struct {
	kind Kind
	rels []Relation
	text string // one %s: the subject's name
}

var questionTemplates = []questionTemplate{
	{Country, []Relation{RelCapital}, "What is the capital of %s?"},
	{City, []Relation{RelCountry}, "In which country is %s?"},
	{Person, []Relation{RelBornIn}, "Where was %s born?"},
	{Person, []Relation{RelBornYear}, "In which year was %s born?"},
	{Org, []Relation{RelFounder}, "Who founded %s?"},
	{Org, []Relation{RelFounded}, "In which year was %s founded?"},
	{Org, []Relation{RelBasedIn}, "In which city is %s based?"},

	{Org, []Relation{RelFounder, RelBornIn}, "Where was the founder of %s born?"},
	{Org, []Relation{RelFounder, RelBornYear}, "In which year was the founder of %s born?"},
	{Person, []Relation{RelBornIn, RelCountry}, "In which country was %s born?"},
	{Org, []Relation{RelBasedIn, RelCountry}, "In which country is %s based?"},
	{City, []Relation{RelCountry, RelCapital}, "What is the capital of the country where %s lies?"},

	{Org, []Relation{RelFounder, RelBornIn, RelCountry}, "In which country was the founder of %s born?"},
	{Person, []Relation{RelBornIn, RelCountry, RelCapital}, "What is the capital of the country where %s was born?"},
	{Org, []Relation{RelBasedIn, RelCountry, RelCapital}, "What is the capital of the country where %s is based?"},
}

// follow returns relation rel of entity e.
func (c *Corpus) follow(e int, rel Relation) int {
	x := &c.Entities[e]
	switch rel {
	case RelCapital:
		return x.Capital
	case RelCountry:
		return x.Country
	case RelBornIn:
		return x.BornIn
	case RelBornYear:
		return x.BornYear
	case RelFounder:
		return x.Founder
	case RelFounded:
		return x.Founded
	default:
		return x.BasedIn
	}
}

// makeQuestions instantiates every template on every subject of its kind,
// drops those whose answer is an entity of the chain (the capital of the
// country where a capital lies), and splits them by subject: in a seeded
// order of each kind, every fifth entity is a test subject.
func (b *builder) makeQuestions(seed uint64) {
	c := b.c
	test := map[int]bool{}
	srng := envs.NewRand(seed, streamSplit)
	for _, list := range [][]int{b.countries, b.cities, b.people, b.orgs} {
		order := slices.Clone(list)
		srng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for k, e := range order {
			test[e] = k%5 == 0
		}
	}
	var lists [3][3][]int // split (train, test, all) × hops
	c.Questions = make([]Question, 0, 5*len(c.Entities))
	for _, t := range questionTemplates {
		for e := range c.Entities {
			if c.Entities[e].Kind != t.kind {
				continue
			}
			q := Question{Text: fmt.Sprintf(t.text, c.Entities[e].Name), Chain: []int{e}, Rels: t.rels}
			v := e
			degenerate := false
			for h, rel := range t.rels {
				v = c.follow(v, rel)
				if h < len(t.rels)-1 {
					degenerate = degenerate || slices.Contains(q.Chain, v)
					q.Chain = append(q.Chain, v)
				}
			}
			last := t.rels[len(t.rels)-1]
			if last != RelBornYear && last != RelFounded && slices.Contains(q.Chain, v) {
				degenerate = true
			}
			if degenerate {
				continue
			}
			q.answerValue = v
			q.Answer = c.valueText(last, v)
			qi := len(c.Questions)
			c.Questions = append(c.Questions, q)
			h := len(t.rels) - 1
			s := 0
			if test[e] {
				s = 1
			}
			lists[s][h] = append(lists[s][h], qi)
			lists[2][h] = append(lists[2][h], qi)
		}
	}
	orng := envs.NewRand(seed, streamOrder)
	c.bySplit = map[Split][3][]int{}
	for s, name := range []Split{SplitTrain, SplitTest, SplitAll} {
		for h := range lists[s] {
			l := lists[s][h]
			orng.Shuffle(len(l), func(i, j int) { l[i], l[j] = l[j], l[i] })
		}
		c.bySplit[name] = lists[s]
	}
}
