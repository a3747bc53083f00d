package search

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// The expert knows each question's hop chain. It reads only what the
// observation shows (the question and the last search's passages), so a
// policy that sees the same can imitate it: it finds the deepest hop of the
// chain whose fact a shown passage states; at the last hop it answers,
// otherwise it searches for the entity that fact names (the next hop's
// subject). When no shown passage states a fact of the chain it searches
// for the question's subject. A search is the entity's name; if the shown
// passages already are that search's and still lack the fact, or the name
// alone would not surface it, it adds a word of the relation ("born",
// "founded", ...).

// decision is one step of the expert with what its rationale needs.
type decision struct {
	action string
	kind   int
	hop    int // the fact read (kinds next and answer), 0-based
	rank   int // 1-based rank of the passage stating it
}

// Rationale kinds.
const (
	whyStart = iota
	whyNext
	whyAnswer
)

// rationales holds four phrasings per kind. Arguments: start: subject,
// hops, first relation; next: rank, fact sentence, next entity, its
// relation, fact number, hops; answer: rank, fact sentence, answer.
var rationales = [][]string{
	whyStart: {
		"The question names %[1]s and needs %[2]d fact(s), starting with its %[3]s. I search for %[1]s.",
		"First I need the %[3]s of %[1]s, so I look up %[1]s (%[2]d fact(s) in all).",
		"To answer I must chain %[2]d fact(s); the first is the %[3]s of %[1]s. Searching %[1]s.",
		"I start from %[1]s: its %[3]s is the first of %[2]d fact(s) I need.",
	},
	whyNext: {
		"Document %[1]d says %[2]s. Next I need the %[4]s of %[3]s, so I search for %[3]s.",
		"From document %[1]d: %[2]s. That is fact %[5]d of %[6]d; now I look up %[3]s for its %[4]s.",
		"%[2]s (document %[1]d). The question goes on to the %[4]s of %[3]s: searching %[3]s.",
		"Fact %[5]d of %[6]d found in document %[1]d: %[2]s. I search %[3]s to find its %[4]s.",
	},
	whyAnswer: {
		"Document %[1]d says %[2]s, which answers the question: %[3]s.",
		"From document %[1]d: %[2]s. The answer is %[3]s.",
		"%[2]s (document %[1]d), so I answer %[3]s.",
		"The last fact is in document %[1]d: %[2]s. Answering %[3]s.",
	},
}

// relationWord is the word the expert adds to a name when the name alone
// does not surface the fact.
var relationWord = [numRelations]string{"capital", "city", "born", "born", "founded", "founded", "based"}

// Advise implements envs.Expert: the remaining plan from the current state,
// at most maxActions actions (all if maxActions <= 0), and a rationale for
// the first. It does not change the environment.
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
	return envs.Advice{Actions: actions, Rationale: fmt.Sprintf(phr[k], e.rationaleArgs(first)...), Brief: e.brief(first)}, nil
}

// deepestFact returns the deepest hop whose fact a shown passage states,
// with the passage's 1-based rank, or -1.
func (e *Env) deepestFact() (hop, rank int) {
	q := e.q
	for i := q.Hops() - 1; i >= 0; i-- {
		for r, p := range e.results {
			if e.c.States(p, q.Chain[i], q.Rels[i]) {
				return i, r + 1
			}
		}
	}
	return -1, 0
}

// decide is the expert's policy for the current state.
func (e *Env) decide() decision {
	q := e.q
	hop, rank := e.deepestFact()
	switch {
	case hop == q.Hops()-1:
		return decision{action: VerbAnswer + "[" + q.Answer + "]", kind: whyAnswer, hop: hop, rank: rank}
	case hop >= 0:
		return decision{action: VerbSearch + "[" + e.queryFor(q.Chain[hop+1], q.Rels[hop+1]) + "]", kind: whyNext, hop: hop, rank: rank}
	default:
		return decision{action: VerbSearch + "[" + e.queryFor(q.Chain[0], q.Rels[0]) + "]", kind: whyStart}
	}
}

// queryFor is the search for relation rel of entity: its name, unless that
// search is already shown (and lacked the fact) or would not show the
// fact, then its name and the relation's word, then the name again.
func (e *Env) queryFor(entity int, rel Relation) string {
	name := e.c.Entities[entity].Name
	for _, q := range []string{name, name + " " + relationWord[rel]} {
		if e.searched && q == e.query {
			continue
		}
		for _, p := range e.c.Search(q, e.cfg.TopK) {
			if e.c.States(p, entity, rel) {
				return q
			}
		}
	}
	return name
}

// factSentence states relation rel of subject.
func (e *Env) factSentence(subject int, rel Relation, value int) string {
	s, v := e.c.Entities[subject].Name, e.c.valueText(rel, value)
	switch rel {
	case RelCapital:
		return fmt.Sprintf("the capital of %s is %s", s, v)
	case RelCountry:
		return fmt.Sprintf("%s is in %s", s, v)
	case RelBornIn, RelBornYear:
		return fmt.Sprintf("%s was born in %s", s, v)
	case RelFounder:
		return fmt.Sprintf("%s was founded by %s", s, v)
	case RelFounded:
		return fmt.Sprintf("%s was founded in %s", s, v)
	default:
		return fmt.Sprintf("%s is based in %s", s, v)
	}
}

// hopValue is the value of hop i of the question.
func (q *Question) hopValue(i int) int {
	if i == len(q.Rels)-1 {
		return q.answerValue
	}
	return q.Chain[i+1]
}

func (e *Env) rationaleArgs(d decision) []any {
	q := e.q
	switch d.kind {
	case whyStart:
		return []any{e.c.Entities[q.Chain[0]].Name, q.Hops(), q.Rels[0].label()}
	case whyNext:
		next := q.Chain[d.hop+1]
		return []any{d.rank, e.factSentence(q.Chain[d.hop], q.Rels[d.hop], next), e.c.Entities[next].Name,
			q.Rels[d.hop+1].label(), d.hop + 1, q.Hops()}
	default:
		return []any{d.rank, e.factSentence(q.Chain[d.hop], q.Rels[d.hop], q.answerValue), q.Answer}
	}
}

// brief is the terse rationale: at the start the relation to look up
// first ("founder"); after reading a fact, its relation and value
// ("founder Varo Keldin", "birthplace Port Almera").
func (e *Env) brief(d decision) string {
	q := e.q
	if d.kind == whyStart {
		return q.Rels[0].label()
	}
	return q.Rels[d.hop].label() + " " + e.c.valueText(q.Rels[d.hop], q.hopValue(d.hop))
}

// CheckRationale implements envs.RationaleChecker for the brief form: at
// the start, whether text names the first relation to look up
// ("relation"); after a fact is shown, also whether it states the fact's
// value ("value"), compared after SQuAD normalisation as whole words.
func (e *Env) CheckRationale(text string) map[string]bool {
	if !e.started || e.done {
		return nil
	}
	d := e.decide()
	q := e.q
	norm := " " + NormalizeAnswer(text) + " "
	has := func(s string) bool { return strings.Contains(norm, " "+NormalizeAnswer(s)+" ") }
	if d.kind == whyStart {
		return map[string]bool{"relation": has(q.Rels[0].label())}
	}
	return map[string]bool{
		"relation": has(q.Rels[d.hop].label()),
		"value":    has(e.c.valueText(q.Rels[d.hop], q.hopValue(d.hop))),
	}
}

// StateKey implements envs.StateKeyer: the passages shown (equal results
// are equal states within one question, whatever query found them).
func (e *Env) StateKey() string {
	if !e.searched {
		return "start"
	}
	var b strings.Builder
	b.WriteString("r")
	for i, p := range e.results {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(p))
	}
	return b.String()
}

// RandomAction implements envs.RandomActor: with equal odds, a search for
// an entity named in the observation (the question's subject or one a
// shown passage names), or an answer naming one of those entities or a
// year a shown passage gives, each uniformly.
func (e *Env) RandomAction(rng *rand.Rand) (string, error) {
	if !e.started {
		return "", envs.ErrNotReset
	}
	names := []string{e.c.Entities[e.q.Subject()].Name}
	var years []string
	for _, p := range e.results {
		for _, m := range e.c.Passages[p].Mentions {
			names = append(names, e.c.Entities[m].Name)
		}
		for _, y := range e.c.Passages[p].Years {
			years = append(years, strconv.Itoa(y))
		}
	}
	if rng.IntN(2) == 0 {
		return VerbSearch + "[" + names[rng.IntN(len(names))] + "]", nil
	}
	all := append(names, years...)
	return VerbAnswer + "[" + all[rng.IntN(len(all))] + "]", nil
}
