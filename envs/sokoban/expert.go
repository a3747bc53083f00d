package sokoban

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// expertCache keeps what the expert computed for the current level: the
// one-box distance table, or the last multi-box plan with the state before
// each of its moves, so that following the advice costs one search per
// level rather than one per step. Following a cached plan gives the same
// moves as a fresh search: the tie-break depends only on the state.
type expertCache struct {
	table    *oneBoxTable
	plan     []Action
	planKeys []stateKey // planKeys[i] is the state before plan[i]
}

func (c *expertCache) reset() { *c = expertCache{} }

// Advise implements envs.Expert. The actions are the start of a shortest
// solution from the current state, tie-broken move by move in the order
// Up, Down, Left, Right. The rationale names the player, box and target
// positions and the next push of the plan; rng picks one of several
// phrasings (nil picks the first).
//
// In a solved state, or one from which the boxes can no longer all reach
// targets, the advice has no actions and a rationale saying so. With
// several boxes the search is capped at DefaultMaxStates states, and
// exceeding it is an error wrapping ErrSearchLimit.
func (e *Env) Advise(maxActions int, rng *rand.Rand) (envs.Advice, error) {
	if !e.started {
		return envs.Advice{}, envs.ErrNotReset
	}
	boxes := e.boxes()
	plan, err := e.plan(boxes)
	if err != nil && !errors.Is(err, ErrUnsolvable) {
		return envs.Advice{}, err
	}
	b := e.level.board
	st := stateWords(b, e.player, boxes)
	switch {
	case b.solved(boxes):
		return envs.Advice{Rationale: fmt.Sprintf("Every box is on a target (%s), so the puzzle is solved.", st.boxList)}, nil
	case err != nil:
		return envs.Advice{Rationale: fmt.Sprintf("The player is at %s, %s and %s; no sequence of moves can put every box on a target any more.",
			st.player, st.boxes, st.targets)}, nil
	}
	n := len(plan)
	if maxActions > 0 && maxActions < n {
		n = maxActions
	}
	actions := make([]string, n)
	for i, a := range plan[:n] {
		actions[i] = a.String()
	}
	return envs.Advice{Actions: actions, Rationale: rationale(b, e.player, boxes, plan, st, rng), Brief: brief(b, e.player, boxes)}, nil
}

// brief lists the player, the boxes and the targets as "P4,3 X3,3 O1,3".
func brief(b *board, player int, boxes []int) string {
	var sb strings.Builder
	cell := func(tag byte, c int) {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		p := b.pos(c)
		fmt.Fprintf(&sb, "%c%d,%d", tag, p.Row, p.Col)
	}
	cell('P', player)
	for _, c := range boxes {
		cell('X', c)
	}
	for _, c := range b.targets {
		cell('O', c)
	}
	return sb.String()
}

// plan returns the tie-broken shortest solution from the current state.
func (e *Env) plan(boxes []int) ([]Action, error) {
	b := e.level.board
	c := &e.expert
	if len(boxes) == 1 {
		if c.table == nil {
			c.table = newOneBoxTable(b)
		}
		p, ok := c.table.plan(e.player, boxes[0])
		if !ok {
			return nil, ErrUnsolvable
		}
		return p, nil
	}
	key := packState(e.player, boxes)
	for i, k := range c.planKeys {
		if k == key {
			return c.plan[i:], nil
		}
	}
	p, err := solveLevel(b, e.player, boxes, DefaultMaxStates)
	if err != nil {
		return nil, err
	}
	c.plan, c.planKeys = p, make([]stateKey, len(p))
	player, cur, next := e.player, append([]int(nil), boxes...), make([]int, len(boxes))
	for i, a := range p {
		c.planKeys[i] = packState(player, cur)
		player, _, _ = b.step(player, cur, a, next)
		cur, next = next, cur
	}
	return p, nil
}

// words are the pieces of a state description.
type words struct {
	player           string
	boxes, targets   string // "the box is at (1, 2)" / "the boxes are at (1, 2) and (3, 4)"
	boxList, tgtList string // "(1, 2)" / "(1, 2) and (3, 4)"
}

func stateWords(b *board, player int, boxes []int) words {
	w := words{player: b.pos(player).String(), boxList: posList(b, boxes), tgtList: posList(b, b.targets)}
	if len(boxes) == 1 {
		w.boxes = "the box is at " + w.boxList
		w.targets = "the target is at " + w.tgtList
	} else {
		w.boxes = "the boxes are at " + w.boxList
		w.targets = "the targets are at " + w.tgtList
	}
	return w
}

func posList(b *board, cells []int) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = b.pos(c).String()
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// rationale describes plan's first push: where the player must stand, which
// box goes which way and how far, and the target that box ends on.
func rationale(b *board, player int, boxes []int, plan []Action, st words, rng *rand.Rand) string {
	// Follow the plan with box identities: ids[j] is the cell of box j.
	ids := append([]int(nil), boxes...)
	at := func(c int) int {
		for j, x := range ids {
			if x == c {
				return j
			}
		}
		return -1
	}
	stand, box, dir, pushed, first := player, -1, Action(0), -1, -1
	p := player
	for i, a := range plan {
		d := b.delta[a]
		q := p + d
		if j := at(q); j >= 0 {
			if first < 0 {
				first, stand, box, dir, pushed = i, p, q, a, j
			}
			ids[j] = q + d
		}
		p = q
	}
	// Moves in the push direction right after a push push the same box again.
	count := 0
	for i := first; i >= 0 && i < len(plan) && plan[i] == dir; i++ {
		count++
	}
	if box < 0 {
		// Unreachable for a solution of an unsolved state, which must push.
		return fmt.Sprintf("The player is at %s, %s and %s.", st.player, st.boxes, st.targets)
	}
	final := ids[pushed]
	goal := "toward the target at " + b.pos(final).String()
	if box+count*b.delta[dir] == final {
		goal = "onto the target at " + b.pos(final).String()
	}
	push := fmt.Sprintf("push the box at %s %s %s %s", b.pos(box), dir.word(), stepWord(count), goal)
	walk := ""
	if stand != player {
		walk = "walk to " + b.pos(stand).String() + ", then "
	}
	templates := []func() string{
		func() string {
			return fmt.Sprintf("The player is at %s, %s and %s. Plan: %s%s.", st.player, st.boxes, st.targets, walk, push)
		},
		func() string {
			return fmt.Sprintf("Boxes: %s. Targets: %s. Player: %s. I %s%s.", st.boxList, st.tgtList, st.player, walk, push)
		},
		func() string {
			return fmt.Sprintf("From %s I %s%s; %s and %s.", st.player, walk, push, st.boxes, st.targets)
		},
		func() string {
			return fmt.Sprintf("%s and %s, and I am at %s, so I %s%s.", capitalize(st.boxes), st.targets, st.player, walk, push)
		},
		func() string {
			return fmt.Sprintf("Next I %s%s (player %s, boxes %s, targets %s).", walk, push, st.player, st.boxList, st.tgtList)
		},
	}
	i := 0
	if rng != nil {
		i = rng.IntN(len(templates))
	}
	return templates[i]()
}

func stepWord(n int) string {
	switch n {
	case 1:
		return "one step"
	case 2:
		return "two steps"
	case 3:
		return "three steps"
	}
	return fmt.Sprintf("%d steps", n)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
