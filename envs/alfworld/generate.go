package alfworld

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Scene sizes: how many receptacles and distracting objects a scene has.
const (
	// SceneFull has ALFWorld-like rooms: 15 to 26 receptacles in a
	// kitchen, four to six kinds of distracting objects.
	SceneFull = "full"
	// SceneSmall has 6 to 12 receptacles and two or three kinds of
	// distracting objects, for small models.
	SceneSmall = "small"
)

// Splits: which (room, object) combinations tasks ask for.
const (
	// SplitSeen draws tasks from every combination but the held-out ones.
	SplitSeen = "seen"
	// SplitUnseen draws tasks only from the held-out combinations (see
	// unseenPairs): the same rooms and rules, objects the seen split
	// never asks for in that room.
	SplitUnseen = "unseen"
)

// taskChoice is one possible task: an object kind of a room and the
// receptacle kinds it may be asked to end in.
type taskChoice struct {
	object  objectKind
	targets []string
}

// present reports whether kind is a receptacle kind the room can have in
// a scene of the given size.
func (rm *room) present(kind string, small bool) bool {
	for _, rk := range rm.recs {
		if rk.name == kind {
			hi := rk.full[1]
			if small {
				hi = rk.small[1]
			}
			return hi > 0
		}
	}
	return false
}

// choices lists the tasks of type tt the room offers in a split.
func (rm *room) choices(tt TaskType, unseen, small bool) []taskChoice {
	if tt == LookInLight && rm.lamp == "" || appliance[tt] != "" && !rm.present(appliance[tt], small) {
		return nil
	}
	var out []taskChoice
	for _, ok := range rm.objects {
		if needs[tt] != 0 && ok.props&needs[tt] == 0 || isUnseen(rm.name, ok.name) != unseen {
			continue
		}
		var homes []string
		for _, k := range ok.found {
			if rm.present(k, small) {
				homes = append(homes, k)
			}
		}
		if tt == LookInLight {
			if len(homes) > 0 {
				out = append(out, taskChoice{object: ok})
			}
			continue
		}
		var targets []string
		for _, k := range homes {
			if k == appliance[tt] || k == "garbagecan" && tt != PickAndPlace {
				continue
			}
			// The objects start elsewhere, so another home must exist.
			if len(homes) > 1 {
				targets = append(targets, k)
			}
		}
		if len(targets) > 0 {
			out = append(out, taskChoice{object: ok, targets: targets})
		}
	}
	return out
}

// generate draws the scene and task of an episode from rng: a task type
// among types, a room that offers it, an object of the split and a target,
// then receptacles, the task's objects (never already where the goal
// wants them), a lamp in rooms that have one, and distracting objects.
// Everything openable starts closed and the agent in the middle of the
// room.
func generate(types []TaskType, unseen, small bool, rng *rand.Rand) (*world, error) {
	tt := types[rng.IntN(len(types))]
	var roomsOK []*room
	for i := range rooms {
		if len(rooms[i].choices(tt, unseen, small)) > 0 {
			roomsOK = append(roomsOK, &rooms[i])
		}
	}
	if len(roomsOK) == 0 {
		return nil, fmt.Errorf("alfworld: no room offers %s tasks", tt)
	}
	rm := roomsOK[rng.IntN(len(roomsOK))]
	cs := rm.choices(tt, unseen, small)
	choice := cs[rng.IntN(len(cs))]
	task := Task{Type: tt, Room: rm.name, Object: choice.object.name, Target: rm.lamp}
	if tt != LookInLight {
		task.Target = choice.targets[rng.IntN(len(choice.targets))]
	}
	task.Goal = fmt.Sprintf(goalTemplates[tt][rng.IntN(2)], task.Object, task.Target)

	// Receptacles, with the kinds the task needs forced in.
	counts := map[string]int{}
	for _, rk := range rm.recs {
		lo, hi := rk.full[0], rk.full[1]
		if small {
			lo, hi = rk.small[0], rk.small[1]
		}
		counts[rk.name] = lo + rng.IntN(hi-lo+1)
	}
	require := func(kind string) {
		if kind != "" && counts[kind] == 0 {
			counts[kind] = 1
		}
	}
	if tt == LookInLight {
		require(rm.lampAt[0])
	} else {
		require(task.Target)
	}
	require(appliance[tt])
	var homes []string
	for _, k := range choice.object.found {
		if k != task.Target && rm.present(k, small) {
			homes = append(homes, k)
		}
	}
	if !slices.ContainsFunc(homes, func(k string) bool { return counts[k] > 0 }) {
		require(homes[0])
	}
	w := &world{task: task, at: -1, held: -1}
	index := map[string][]int{} // kind -> receptacle indexes
	for _, rk := range rm.recs {
		for n := 1; n <= counts[rk.name]; n++ {
			index[rk.name] = append(index[rk.name], len(w.recs))
			w.recs = append(w.recs, receptacle{kind: rk.name, name: rk.name + " " + itoa(n), openable: rk.openable})
		}
	}
	w.open = make([]bool, len(w.recs))
	w.searched = make([]bool, len(w.recs))

	// place puts one object of kind at a random receptacle of a random
	// kind among kinds that the scene has; false if it has none.
	numbers := map[string]int{}
	place := func(kind string, kinds []string, lamp bool) bool {
		var at []string
		for _, k := range kinds {
			if len(index[k]) > 0 {
				at = append(at, k)
			}
		}
		if len(at) == 0 {
			return false
		}
		rs := index[at[rng.IntN(len(at))]]
		numbers[kind]++
		w.objs = append(w.objs, object{kind: kind, name: kind + " " + itoa(numbers[kind]), loc: rs[rng.IntN(len(rs))], lamp: lamp})
		return true
	}
	n := 1 + rng.IntN(2)
	if tt == PickTwoAndPlace {
		n = 2 + rng.IntN(2)
	}
	for range n {
		place(task.Object, homes, false)
	}
	if rm.lamp != "" {
		place(rm.lamp, rm.lampAt, true)
	}
	k := 4 + rng.IntN(3)
	if small {
		k = 2 + rng.IntN(2)
	}
	var others []objectKind
	for _, ok := range rm.objects {
		if ok.name != task.Object {
			others = append(others, ok)
		}
	}
	rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
	for _, ok := range others[:min(k, len(others))] {
		copies := 1
		if !small {
			copies += rng.IntN(2)
		}
		for range copies {
			place(ok.name, ok.found, false)
		}
	}
	// Names sort as kinds and then numbers: no kind has ten objects.
	slices.SortFunc(w.objs, func(a, b object) int { return strings.Compare(a.name, b.name) })
	return w, nil
}
