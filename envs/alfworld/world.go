package alfworld

import (
	"slices"
	"strconv"
	"strings"
)

// Task is an episode's goal.
type Task struct {
	// Type is the task type.
	Type TaskType
	// Room is the kind of scene: kitchen, bathroom, bedroom or livingroom.
	Room string
	// Object is the kind of object the task is about ("apple").
	Object string
	// Target is the receptacle kind it must end in ("fridge"), or the
	// lamp kind for LookInLight ("desklamp").
	Target string
	// Goal is the sentence the agent reads ("put a hot apple in fridge.").
	Goal string
}

// receptacle is one place of the scene.
type receptacle struct {
	kind     string
	name     string // "cabinet 3"
	openable bool
}

// object is one thing of the scene. A lamp stays where it is and is used,
// not taken.
type object struct {
	kind string
	name string // "apple 1"
	loc  int    // receptacle index, or -1 while held
	lamp bool
	// clean, hot and cool record what was done to the object; on is a
	// lamp's switch.
	clean, hot, cool, on bool
}

// world is the full state of an episode: the scene, where everything is,
// and what the agent has searched. Receptacles are sorted by kind and
// number, objects by kind and number.
type world struct {
	task     Task
	recs     []receptacle
	objs     []object
	open     []bool
	searched []bool // the agent has seen inside (or on top of)
	at       int    // the receptacle the agent stands at; -1 in the middle of the room
	held     int    // the object in hand; -1 for none
}

// clone returns a copy that shares only the read-only scene.
func (w *world) clone() *world {
	c := *w
	c.objs = slices.Clone(w.objs)
	c.open = slices.Clone(w.open)
	c.searched = slices.Clone(w.searched)
	return &c
}

func (w *world) recIndex(name string) int {
	for i := range w.recs {
		if w.recs[i].name == name {
			return i
		}
	}
	return -1
}

func (w *world) objIndex(name string) int {
	for i := range w.objs {
		if w.objs[i].name == name {
			return i
		}
	}
	return -1
}

// accessible reports whether the inside (or top) of r can be seen and
// reached: r does not open, or is open.
func (w *world) accessible(r int) bool { return !w.recs[r].openable || w.open[r] }

// visible reports whether the agent sees the contents of r: it stands at
// r and r is accessible.
func (w *world) visible(r int) bool { return r >= 0 && r == w.at && w.accessible(r) }

// contents lists the objects in r, by name.
func (w *world) contents(r int) []int {
	var out []int
	for i := range w.objs {
		if w.objs[i].loc == r {
			out = append(out, i)
		}
	}
	return out
}

// done reports whether object o has what the task type asks of it.
func (w *world) done(o int) bool {
	switch w.task.Type {
	case CleanAndPlace:
		return w.objs[o].clean
	case HeatAndPlace:
		return w.objs[o].hot
	case CoolAndPlace:
		return w.objs[o].cool
	}
	return true
}

// isTaskObject reports whether o is of the task's kind.
func (w *world) isTaskObject(o int) bool { return o >= 0 && w.objs[o].kind == w.task.Object }

// satisfied reports whether the goal holds.
func (w *world) satisfied() bool {
	t := w.task
	switch t.Type {
	case LookInLight:
		if !w.isTaskObject(w.held) || w.at < 0 {
			return false
		}
		for i := range w.objs {
			if o := &w.objs[i]; o.lamp && o.on && o.loc == w.at {
				return true
			}
		}
		return false
	case PickTwoAndPlace:
		for r := range w.recs {
			if w.recs[r].kind == t.Target && w.countIn(r) >= 2 {
				return true
			}
		}
		return false
	}
	for i := range w.objs {
		if w.isTaskObject(i) && w.objs[i].loc >= 0 && w.recs[w.objs[i].loc].kind == t.Target && w.done(i) {
			return true
		}
	}
	return false
}

// countIn counts the task objects in r.
func (w *world) countIn(r int) int {
	k := 0
	for i := range w.objs {
		if w.objs[i].loc == r && w.isTaskObject(i) {
			k++
		}
	}
	return k
}

// seeList writes objects ALFWorld's way: "a apple 1, a bread 1, and a
// knife 1" ("a" whatever the word), or "nothing".
func (w *world) seeList(objs []int) string {
	if len(objs) == 0 {
		return "nothing"
	}
	var sb strings.Builder
	for i, o := range objs {
		if i > 0 {
			sb.WriteString(", ")
			if i == len(objs)-1 {
				sb.WriteString("and ")
			}
		}
		sb.WriteString("a ")
		sb.WriteString(w.objs[o].name)
	}
	return sb.String()
}

// describe is what the agent sees of r from in front of it.
func (w *world) describe(r int) string {
	rc := &w.recs[r]
	switch {
	case rc.openable && !w.open[r]:
		return "The " + rc.name + " is closed."
	case rc.openable:
		return "The " + rc.name + " is open. In it, you see " + w.seeList(w.contents(r)) + "."
	default:
		return "On the " + rc.name + ", you see " + w.seeList(w.contents(r)) + "."
	}
}

// roomView is ALFWorld's look from the middle of the room: every
// receptacle, kinds in order and numbers descending as ALFWorld lists them.
func (w *world) roomView() string {
	var sb strings.Builder
	sb.WriteString("You are in the middle of a room. Looking quickly around you, you see ")
	n := len(w.recs)
	k := 0
	for i := 0; i < n; {
		j := i
		for j < n && w.recs[j].kind == w.recs[i].kind {
			j++
		}
		for r := j - 1; r >= i; r-- {
			if k > 0 {
				sb.WriteString(", ")
				if k == n-1 {
					sb.WriteString("and ")
				}
			}
			sb.WriteString("a ")
			sb.WriteString(w.recs[r].name)
			k++
		}
		i = j
	}
	sb.WriteString(".")
	return sb.String()
}

// applianceKind is the receptacle kind a verb needs ("" if none).
func applianceKind(v Verb) string {
	switch v {
	case Clean:
		return "sinkbasin"
	case Heat:
		return "microwave"
	case Cool:
		return "fridge"
	}
	return ""
}

// apply carries out c if the state allows it and returns ALFWorld's
// feedback and whether the state changed; ok is false (and nothing
// changes) when c is not admissible.
func (w *world) apply(c Command) (feedback string, effective, ok bool) {
	switch c.Verb {
	case Look:
		if w.at < 0 {
			return w.roomView(), false, true
		}
		return "You are facing the " + w.recs[w.at].name + ". Next to it, you see nothing.", false, true
	case Inventory:
		if w.held < 0 {
			return "You are not carrying anything.", false, true
		}
		return "You are carrying: a " + w.objs[w.held].name + ".", false, true
	case Examine:
		if w.at >= 0 && c.Target == w.recs[w.at].name {
			return w.describe(w.at), false, true
		}
		if w.held >= 0 && c.Target == w.objs[w.held].name {
			o := &w.objs[w.held]
			if st := o.states(); st != "" {
				return "This is a " + st + " " + o.name + ".", false, true
			}
			return "There's nothing special about " + o.name + ".", false, true
		}
		return "", false, false
	case GoTo:
		r := w.recIndex(c.Target)
		if r < 0 || r == w.at {
			return "", false, false
		}
		w.at = r
		if w.accessible(r) {
			w.searched[r] = true
		}
		return "You arrive at " + w.recs[r].name + ". " + w.describe(r), true, true
	case Use:
		l := w.objIndex(c.Target)
		if l < 0 || !w.objs[l].lamp || w.objs[l].on || !w.visible(w.objs[l].loc) {
			return "", false, false
		}
		w.objs[l].on = true
		return "You turn on the " + w.objs[l].name + ".", true, true
	}
	// The rest act on the receptacle the agent stands at.
	r := w.at
	if r < 0 || c.Target != w.recs[r].name {
		return "", false, false
	}
	rc := &w.recs[r]
	switch c.Verb {
	case Open, Close:
		want := c.Verb == Open
		if !rc.openable || w.open[r] == want {
			return "", false, false
		}
		w.open[r] = want
		if !want {
			return "You close the " + rc.name + ".", true, true
		}
		w.searched[r] = true
		return "You open the " + rc.name + ". " + w.describe(r), true, true
	case Take:
		o := w.objIndex(c.Object)
		if o < 0 || w.held >= 0 || w.objs[o].loc != r || w.objs[o].lamp || !w.accessible(r) {
			return "", false, false
		}
		w.objs[o].loc, w.held = -1, o
		return "You pick up the " + w.objs[o].name + " from the " + rc.name + ".", true, true
	case Put:
		o := w.held
		if o < 0 || c.Object != w.objs[o].name || !w.accessible(r) {
			return "", false, false
		}
		w.objs[o].loc, w.held = r, -1
		return "You put the " + w.objs[o].name + " in/on the " + rc.name + ".", true, true
	case Clean, Heat, Cool:
		o := w.held
		if o < 0 || c.Object != w.objs[o].name || rc.kind != applianceKind(c.Verb) {
			return "", false, false
		}
		ob := &w.objs[o]
		before := *ob
		verb := ""
		switch c.Verb {
		case Clean:
			ob.clean, verb = true, "clean"
		case Heat:
			ob.hot, ob.cool, verb = true, false, "heat"
		default:
			ob.cool, ob.hot, verb = true, false, "cool"
		}
		return "You " + verb + " the " + ob.name + " using the " + rc.name + ".", *ob != before, true
	}
	return "", false, false
}

// states lists what was done to an object ("clean, hot"), "" if nothing.
func (o *object) states() string {
	var s []string
	if o.clean {
		s = append(s, "clean")
	}
	if o.hot {
		s = append(s, "hot")
	}
	if o.cool {
		s = append(s, "cool")
	}
	return strings.Join(s, ", ")
}

// admissible lists the commands the state allows, sorted, as ALFWorld's
// admissible_commands does.
func (w *world) admissible() []string {
	var out []string
	for r := range w.recs {
		if r != w.at {
			out = append(out, Command{Verb: GoTo, Target: w.recs[r].name}.String())
		}
	}
	out = append(out, w.localCommands()...)
	if w.at >= 0 {
		out = append(out, Command{Verb: Examine, Target: w.recs[w.at].name}.String())
	}
	if w.held >= 0 {
		out = append(out, Command{Verb: Examine, Target: w.objs[w.held].name}.String())
	}
	out = append(out, "inventory", "look")
	slices.Sort(out)
	return out
}

// localCommands lists the admissible commands that act at the agent's
// place (open, close, take, put, clean, heat, cool, use), sorted.
func (w *world) localCommands() []string {
	r := w.at
	if r < 0 {
		return nil
	}
	var out []string
	rc := &w.recs[r]
	if rc.openable {
		v := Open
		if w.open[r] {
			v = Close
		}
		out = append(out, Command{Verb: v, Target: rc.name}.String())
	}
	if w.accessible(r) {
		for _, o := range w.contents(r) {
			ob := &w.objs[o]
			switch {
			case ob.lamp && !ob.on:
				out = append(out, Command{Verb: Use, Target: ob.name}.String())
			case !ob.lamp && w.held < 0:
				out = append(out, Command{Verb: Take, Object: ob.name, Target: rc.name}.String())
			}
		}
		if w.held >= 0 {
			out = append(out, Command{Verb: Put, Object: w.objs[w.held].name, Target: rc.name}.String())
		}
	}
	if w.held >= 0 {
		for _, v := range [...]Verb{Clean, Heat, Cool} {
			if rc.kind == applianceKind(v) {
				out = append(out, Command{Verb: v, Object: w.objs[w.held].name, Target: rc.name}.String())
			}
		}
	}
	slices.Sort(out)
	return out
}

// key is a compact printable form of the whole state: place, hand, open
// and searched receptacles, and every object's place and states.
func (w *world) key() string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
	b := make([]byte, 0, 4+2*len(w.recs)+2*len(w.objs))
	b = append(b, digits[(w.at+1)&63], digits[(w.held+1)&63], '|')
	for r := range w.recs {
		v := 0
		if w.open[r] {
			v |= 1
		}
		if w.searched[r] {
			v |= 2
		}
		b = append(b, digits[v])
	}
	b = append(b, '|')
	for i := range w.objs {
		o := &w.objs[i]
		v := 0
		for bit, set := range [...]bool{o.clean, o.hot, o.cool, o.on} {
			if set {
				v |= 1 << bit
			}
		}
		b = append(b, digits[(o.loc+1)&63], digits[v])
	}
	return string(b)
}

// itoa is strconv.Itoa, short for the many names built here.
func itoa(i int) string { return strconv.Itoa(i) }
