package alfworld

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// step is the expert's next command and why it chose it.
type step struct {
	cmd Command
	why reason
	obj int // the object concerned, -1 if none
	rec int // the receptacle concerned, -1 if none
}

type reason int

const (
	searchObject reason = iota // go to or open the likeliest unsearched place
	takeObject                 // a task object is here
	fetchObject                // go to (or open) a place known to hold one
	goProcess                  // carry it to the appliance
	process                    // clean, heat or cool it
	goDeliver                  // carry it to the target
	openDeliver                // open the closed target
	deliver                    // put it in the target
	searchLamp                 // look for the lamp
	goLamp                     // carry the object to the lamp
	useLamp                    // turn the lamp on
	dropObject                 // put down an object the task does not need
	noPlan                     // nothing left to try (not reached in generated scenes)
)

// knows reports whether the agent knows where object o is: in its hand or
// in a receptacle it has searched.
func (w *world) knows(o int) bool {
	l := w.objs[o].loc
	return l < 0 || w.searched[l]
}

// deliveryTarget is the receptacle the expert puts task objects in: for
// two objects, the searched one of the target kind known to hold the most
// of them; otherwise, or when none holds any, the target-kind receptacle
// the agent stands at, else the first one.
func (w *world) deliveryTarget() int {
	best, bestN := -1, 0
	if w.task.Type == PickTwoAndPlace {
		for r := range w.recs {
			if w.recs[r].kind == w.task.Target && w.searched[r] {
				if n := w.countIn(r); n > bestN {
					best, bestN = r, n
				}
			}
		}
		if best >= 0 {
			return best
		}
	}
	if w.at >= 0 && w.recs[w.at].kind == w.task.Target {
		return w.at
	}
	for r := range w.recs {
		if w.recs[r].kind == w.task.Target {
			return r
		}
	}
	return -1
}

// firstOfKind is the lowest-numbered receptacle of kind, -1 if none.
func (w *world) firstOfKind(kind string) int {
	for r := range w.recs {
		if w.recs[r].kind == kind {
			return r
		}
	}
	return -1
}

// searchOrder is where a kind of object is found, likeliest first: the
// room's placement list (lampAt for the lamp).
func (w *world) searchOrder(kind string) []string {
	for i := range rooms {
		rm := &rooms[i]
		if rm.name != w.task.Room {
			continue
		}
		if kind == rm.lamp {
			return rm.lampAt
		}
		for _, ok := range rm.objects {
			if ok.name == kind {
				return ok.found
			}
		}
	}
	return nil
}

// nextSearch is the unsearched receptacle to search next for kind. The
// generator puts an object at a uniformly drawn kind among its room's
// placement list (searchOrder) and then at a uniformly drawn receptacle
// of that kind, never in the task's target kind; so each unsearched
// receptacle holds it with probability 1/(kinds × receptacles of its
// kind), and searching in decreasing order of probability per action
// (two for a closed receptacle, one otherwise) finds it soonest on
// average. Ties go to the earlier kind of searchOrder, then to receptacle
// order; receptacles of other kinds come last. -1 when everything has
// been searched.
func (w *world) nextSearch(kind string) int {
	order := w.searchOrder(kind)
	count := map[string]int{}
	for r := range w.recs {
		count[w.recs[r].kind]++
	}
	excluded := ""
	if kind == w.task.Object && w.task.Type != LookInLight {
		excluded = w.task.Target
	}
	kinds := 0
	for _, k := range order {
		if count[k] > 0 && k != excluded {
			kinds++
		}
	}
	best, bestScore, bestRank := -1, -1.0, len(order)+1
	for r := range w.recs {
		if w.searched[r] {
			continue
		}
		k := w.recs[r].kind
		rank, score := len(order), 0.0
		for i, o := range order {
			if o == k && k != excluded {
				rank = i
				cost := 1.0
				if !w.accessible(r) {
					cost = 2
				}
				score = 1 / (float64(kinds*count[k]) * cost)
				break
			}
		}
		if score > bestScore || score == bestScore && rank < bestRank {
			best, bestScore, bestRank = r, score, rank
		}
	}
	return best
}

// goOrOpen returns the step that brings the agent to r with its inside
// reachable: go there, or open it when standing at it closed. ok is false
// when the agent is already there with r accessible.
func (w *world) goOrOpen(r int, why reason, obj int) (step, bool) {
	if w.at != r {
		return step{cmd: Command{Verb: GoTo, Target: w.recs[r].name}, why: why, obj: obj, rec: r}, true
	}
	if !w.accessible(r) {
		return step{cmd: Command{Verb: Open, Target: w.recs[r].name}, why: why, obj: obj, rec: r}, true
	}
	return step{}, false
}

// expertStep is the expert's policy. It uses only what the agent knows:
// where it is, what it holds, and the contents of the places it has
// searched (nothing else changes them), so a model that reads the same
// observations can learn to follow it.
func (w *world) expertStep() step {
	t := w.task
	if h := w.held; h >= 0 {
		name := w.objs[h].name
		if !w.isTaskObject(h) {
			if s, ok := w.goOrOpen(w.at, dropObject, h); ok {
				return s
			}
			return step{cmd: Command{Verb: Put, Object: name, Target: w.recs[w.at].name}, why: dropObject, obj: h, rec: w.at}
		}
		if t.Type == LookInLight {
			lamp := -1
			for i := range w.objs {
				if w.objs[i].lamp && w.knows(i) {
					lamp = i
					break
				}
			}
			if lamp < 0 {
				r := w.nextSearch(t.Target)
				if r < 0 {
					return step{cmd: Command{Verb: Look}, why: noPlan, obj: h, rec: -1}
				}
				s, _ := w.goOrOpen(r, searchLamp, h)
				return s
			}
			if s, ok := w.goOrOpen(w.objs[lamp].loc, goLamp, lamp); ok {
				return s
			}
			return step{cmd: Command{Verb: Use, Target: w.objs[lamp].name}, why: useLamp, obj: lamp, rec: w.at}
		}
		if kind := appliance[t.Type]; kind != "" && !w.done(h) {
			a := w.firstOfKind(kind)
			if w.at != a {
				return step{cmd: Command{Verb: GoTo, Target: w.recs[a].name}, why: goProcess, obj: h, rec: a}
			}
			return step{cmd: Command{Verb: processVerb[t.Type], Object: name, Target: w.recs[a].name}, why: process, obj: h, rec: a}
		}
		r := w.deliveryTarget()
		if w.at != r {
			return step{cmd: Command{Verb: GoTo, Target: w.recs[r].name}, why: goDeliver, obj: h, rec: r}
		}
		if !w.accessible(r) {
			return step{cmd: Command{Verb: Open, Target: w.recs[r].name}, why: openDeliver, obj: h, rec: r}
		}
		return step{cmd: Command{Verb: Put, Object: name, Target: w.recs[r].name}, why: deliver, obj: h, rec: r}
	}
	// Empty-handed: fetch a task object, one in sight first.
	skip := -1
	if t.Type == PickTwoAndPlace {
		skip = w.deliveryTarget()
	}
	wanted := func(o int) bool { return w.isTaskObject(o) && w.knows(o) && w.objs[o].loc != skip }
	if w.visible(w.at) {
		for _, o := range w.contents(w.at) {
			if wanted(o) {
				return step{cmd: Command{Verb: Take, Object: w.objs[o].name, Target: w.recs[w.at].name}, why: takeObject, obj: o, rec: w.at}
			}
		}
	}
	for o := range w.objs {
		if wanted(o) {
			s, _ := w.goOrOpen(w.objs[o].loc, fetchObject, o)
			return s
		}
	}
	r := w.nextSearch(t.Object)
	if r < 0 {
		return step{cmd: Command{Verb: Look}, why: noPlan, obj: -1, rec: -1}
	}
	s, _ := w.goOrOpen(r, searchObject, -1)
	return s
}

// reveals reports whether carrying out s shows the agent something it
// did not know: arriving at an unsearched open place, or opening an
// unsearched one.
func (w *world) reveals(s step) bool {
	r := w.recIndex(s.cmd.Target)
	if r < 0 || w.searched[r] {
		return false
	}
	return s.cmd.Verb == Open || s.cmd.Verb == GoTo && w.accessible(r)
}

// Advise implements envs.Expert. The expert searches the places where the
// task's object is likeliest (by the room's placement lists) until it
// sees one, takes it, cleans, heats or cools it where the task asks,
// and puts it in the first receptacle of the target kind (for two
// objects, the one already holding one); for a lamp task it carries the
// object to the lamp, searching for that too, and turns it on. It decides
// only from what the agent has observed. Its actions are the plan up to
// the next one that reveals something (at most maxActions, all of them
// if maxActions <= 0), since what follows depends on what is found.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	if e.done {
		return envs.Advice{}, envs.ErrEpisodeDone
	}
	c := e.w.clone()
	first := c.expertStep()
	var actions []string
	for s := first; ; s = c.expertStep() {
		actions = append(actions, s.cmd.String())
		revealing := c.reveals(s)
		if _, _, ok := c.apply(s.cmd); !ok || revealing || c.satisfied() || s.why == noPlan ||
			maxActions > 0 && len(actions) >= maxActions {
			break
		}
	}
	return envs.Advice{Actions: actions, Rationale: e.w.rationale(first, rng), Brief: e.w.brief(first)}, nil
}

// processVerb is the command that does to an object what a task type
// asks of it.
var processVerb = [numTaskTypes]Verb{CleanAndPlace: Clean, HeatAndPlace: Heat, CoolAndPlace: Cool}

// adjective is what a task type asks of its object ("hot"), "" if nothing.
func adjective(tt TaskType) string {
	switch tt {
	case CleanAndPlace:
		return "clean"
	case HeatAndPlace:
		return "hot"
	case CoolAndPlace:
		return "cool"
	}
	return ""
}

// brief is the expert's terse rationale: the subgoal and the place or
// object it concerns ("find apple: fridge 1", "heat apple 1: microwave 1",
// "apple 1 to diningtable 1").
func (w *world) brief(s step) string {
	rec := func() string { return w.recs[s.rec].name }
	switch s.why {
	case searchObject:
		return "find " + w.task.Object + ": " + rec()
	case takeObject, fetchObject:
		return w.objs[s.obj].name + " at " + rec()
	case goProcess, process:
		return verbWord(w.task.Type) + " " + w.objs[s.obj].name + ": " + rec()
	case goDeliver, openDeliver, deliver:
		return w.objs[s.obj].name + " to " + rec()
	case searchLamp:
		return "find " + w.task.Target + ": " + rec()
	case goLamp:
		return w.objs[s.obj].name + " at " + rec()
	case useLamp:
		return "use " + w.objs[s.obj].name
	case dropObject:
		return "drop " + w.objs[s.obj].name
	}
	return "no plan"
}

// verbWord is the verb of what a task type asks ("heat").
func verbWord(tt TaskType) string {
	switch tt {
	case CleanAndPlace:
		return "clean"
	case HeatAndPlace:
		return "heat"
	case CoolAndPlace:
		return "cool"
	}
	return "use"
}

// rationale explains the step in a sentence or two, in one of several
// phrasings, naming the task and the concrete objects and places.
func (w *world) rationale(s step, rng *rand.Rand) string {
	t := w.task
	goal := strings.TrimSuffix(t.Goal, ".")
	obj := func() string { return w.objs[s.obj].name }
	rec := func() string { return w.recs[s.rec].name }
	var ps []string
	switch s.why {
	case searchObject:
		if s.cmd.Verb == Open {
			ps = []string{
				fmt.Sprintf("The task is to %s. %s is closed and not searched yet, so I open it to look for a %s.", goal, rec(), t.Object),
				fmt.Sprintf("No %s found so far; I open %s to see inside.", t.Object, rec()),
			}
		} else {
			ps = []string{
				fmt.Sprintf("The task is to %s. I have not found a %s yet; %s is the likeliest place I have not searched.", goal, t.Object, rec()),
				fmt.Sprintf("I need a %s and have not seen one yet, so I check %s next.", t.Object, rec()),
			}
		}
	case takeObject:
		ps = []string{
			fmt.Sprintf("The task is to %s. %s is here at %s, so I take it.", goal, obj(), rec()),
			fmt.Sprintf("%s is right here on %s; I pick it up.", obj(), rec()),
		}
	case fetchObject:
		ps = []string{
			fmt.Sprintf("The task is to %s. I saw %s at %s, so I go back for it.", goal, obj(), rec()),
			fmt.Sprintf("%s is at %s, which I searched before; I get it from there.", obj(), rec()),
		}
		if s.cmd.Verb == Open {
			ps = []string{fmt.Sprintf("%s is inside %s, which is closed; I open it.", obj(), rec())}
		}
	case goProcess:
		ps = []string{
			fmt.Sprintf("The task is to %s. I hold %s, which must be %s first; %s does that.", goal, obj(), adjective(t.Type), rec()),
			fmt.Sprintf("%s is not %s yet, so I carry it to %s.", obj(), adjective(t.Type), rec()),
		}
	case process:
		ps = []string{
			fmt.Sprintf("I am at %s holding %s, so I %s it now.", rec(), obj(), verbWord(t.Type)),
			fmt.Sprintf("%s must be %s: I %s it with %s.", obj(), adjective(t.Type), verbWord(t.Type), rec()),
		}
	case goDeliver:
		ps = []string{
			fmt.Sprintf("The task is to %s. I hold %s; it goes to %s.", goal, w.objectDesc(s.obj), rec()),
			fmt.Sprintf("With %s in hand, I head to %s to put it there.", w.objectDesc(s.obj), rec()),
		}
	case openDeliver:
		ps = []string{fmt.Sprintf("%s is closed; I open it to put %s in.", rec(), obj())}
	case deliver:
		rest := "which completes the task"
		if t.Type == PickTwoAndPlace && w.countIn(s.rec) == 0 {
			rest = "then I need a second " + t.Object
		}
		ps = []string{
			fmt.Sprintf("I am at %s with %s; I put it there, %s.", rec(), w.objectDesc(s.obj), rest),
			fmt.Sprintf("Putting %s in/on %s, %s.", obj(), rec(), rest),
		}
	case searchLamp:
		ps = []string{
			fmt.Sprintf("The task is to %s. I hold %s but have not found the %s; %s is the likeliest place I have not searched.", goal, obj(), t.Target, rec()),
		}
	case goLamp:
		ps = []string{
			fmt.Sprintf("The task is to %s. I hold %s and the %s is %s at %s, so I go there.", goal, w.objs[w.held].name, t.Target, obj(), rec()),
		}
	case useLamp:
		ps = []string{
			fmt.Sprintf("I hold %s next to %s; turning it on completes the task.", w.objs[w.held].name, obj()),
		}
	case dropObject:
		ps = []string{fmt.Sprintf("I hold %s, which the task does not need; I put it down here to free my hand.", obj())}
	default:
		ps = []string{"I have searched everywhere without finding what the task needs."}
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(ps))
	}
	return ps[i]
}

// objectDesc is an object's name with what was done to it ("hot apple 1").
func (w *world) objectDesc(o int) string {
	if st := w.objs[o].states(); st != "" {
		return st + " " + w.objs[o].name
	}
	return w.objs[o].name
}
