package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// This file builds a synthetic corpus that imitates agentrl's observations
// and conversations: RAGEN-style Sokoban (6x6, grid and coordinates) and
// FrozenLake (4x4) boards, user turns, and assistant replies.

type cell struct{ r, c int }

func (p cell) String() string { return fmt.Sprintf("(%d, %d)", p.r, p.c) }

// sokobanBoard returns a random 6x6 Sokoban board (walls around, one box,
// one target, one player) as grid rows and its coordinate lines.
func sokobanBoard(rng *rand.Rand) (grid string, coords string) {
	const n = 6
	var g [n][n]byte
	for r := range n {
		for c := range n {
			g[r][c] = '_'
			if r == 0 || c == 0 || r == n-1 || c == n-1 || rng.Float64() < 0.15 {
				g[r][c] = '#'
			}
		}
	}
	free := func() cell {
		for {
			p := cell{1 + rng.IntN(n-2), 1 + rng.IntN(n-2)}
			if g[p.r][p.c] == '_' {
				return p
			}
		}
	}
	target := free()
	g[target.r][target.c] = 'O'
	box, player := target, target
	onTarget := rng.IntN(10) == 0
	if !onTarget {
		box = free()
		g[box.r][box.c] = 'X'
	}
	playerOnTarget := !onTarget && rng.IntN(10) == 0
	if !playerOnTarget {
		player = free()
		g[player.r][player.c] = 'P'
	}
	var rows []string
	for r := range n {
		row := strings.Builder{}
		for c := range n {
			switch {
			case onTarget && r == target.r && c == target.c:
				row.WriteString("√")
			case playerOnTarget && r == target.r && c == target.c:
				row.WriteByte('S')
			default:
				row.WriteByte(g[r][c])
			}
		}
		rows = append(rows, row.String())
	}
	var cl []string
	cl = append(cl, "Board size: 6 rows x 6 cols (zero-indexed).")
	if onTarget {
		cl = append(cl, "Boxes on target: "+target.String())
	} else {
		cl = append(cl, "Targets: "+target.String(), "Boxes: "+box.String())
	}
	if playerOnTarget {
		cl = append(cl, "Player on target: "+target.String())
	} else {
		cl = append(cl, "Player: "+player.String())
	}
	return strings.Join(rows, "\n"), strings.Join(cl, "\n")
}

// sokobanObs is a CoordSokoban (grid_coord) observation.
func sokobanObs(rng *rand.Rand) string {
	grid, coords := sokobanBoard(rng)
	return "Coordinates: \n" + coords + "\nGrid Map: \n" + grid
}

// frozenGrid returns a random 4x4 FrozenLake board: P player, _ frozen,
// O hole, G goal (X player in hole, √ player on goal now and then).
func frozenGrid(rng *rand.Rand) string {
	const n = 4
	var g [n][n]string
	for r := range n {
		for c := range n {
			g[r][c] = "_"
			if rng.Float64() < 0.15 {
				g[r][c] = "O"
			}
		}
	}
	gr, gc := rng.IntN(n), rng.IntN(n)
	pr, pc := rng.IntN(n), rng.IntN(n)
	g[gr][gc] = "G"
	switch {
	case pr == gr && pc == gc:
		g[pr][pc] = "√"
	case g[pr][pc] == "O":
		g[pr][pc] = "X"
	default:
		g[pr][pc] = "P"
	}
	var rows []string
	for r := range n {
		rows = append(rows, strings.Join(g[r][:], ""))
	}
	return strings.Join(rows, "\n")
}

var actionNames = []string{"Up", "Down", "Left", "Right"}

// userTurn is a RAGEN user turn around an observation.
func userTurn(rng *rand.Rand, turn int, obs string) string {
	s := ""
	if turn > 1 {
		s = fmt.Sprintf("Reward:\n%.1f\n", []float64{-0.1, 0.9, -1.1, 10.8}[rng.IntN(4)])
	}
	return s + fmt.Sprintf("\nTurn %d:\nState:\n%s\nYou have %d actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 100 words (tokens).\n",
		turn, obs, 10-2*(turn-1))
}

// reply is an assistant reply with a state-dependent rationale.
func reply(rng *rand.Rand) string {
	p := cell{1 + rng.IntN(4), 1 + rng.IntN(4)}
	b := cell{1 + rng.IntN(4), 1 + rng.IntN(4)}
	a1, a2 := actionNames[rng.IntN(4)], actionNames[rng.IntN(4)]
	switch rng.IntN(3) {
	case 0:
		return fmt.Sprintf("<think>The player is at %v and the box is at %v, so I push it %s.</think><answer>%s || %s</answer>", p, b, strings.ToLower(a1), a1, a2)
	case 1:
		return fmt.Sprintf("<think>P%d,%d X%d,%d O%d,%d</think><answer>%s || %s</answer>", p.r, p.c, b.r, b.c, b.c, p.r, a1, a2)
	}
	return fmt.Sprintf("<think>Box at %v, target at %v. Move %s first.</think><answer>%s</answer>", b, p, a1, a1)
}

const sokobanSystem = "You're a helpful assistant. You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets. When you are right next to a box, you can push it by moving in the same direction. You cannot push a box through a wall, and you cannot pull a box. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>.\nThe meaning of each symbol in the state is:\n#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target\nYour available actions are:\nUp, Down, Left, Right\nYou can make up to 10 actions, separated by the action separator \" || \"\n"

const frozenSystem = "You're a helpful assistant. You are walking on a frozen lake. FrozenLake Quick Guide\nGoal: Reach the goal (G).\nSymbols:\n_ Frozen | O Hole | G Goal | P Player | X Player fell into hole | √ Player on goal\nRules:\n1. Avoid falling into holes (O).\n2. Frozen tiles are slippery, you may move perpendicular to your intended direction.\nYour available actions are:\nLeft, Down, Right, Up\n"

// conversation returns a random multi-turn conversation.
func conversation(rng *rand.Rand) []Message {
	frozen := rng.IntN(3) == 0
	msgs := []Message{{RoleSystem, sokobanSystem}}
	if frozen {
		msgs[0].Content = frozenSystem
	}
	turns := 1 + rng.IntN(3)
	for t := 1; t <= turns; t++ {
		obs := sokobanObs(rng)
		if frozen {
			obs = frozenGrid(rng)
		}
		msgs = append(msgs, Message{RoleUser, userTurn(rng, t, obs)}, Message{RoleAssistant, reply(rng)})
	}
	return msgs
}

// trainingCorpus returns message contents of random conversations, about
// size bytes in all.
func trainingCorpus(seed uint64, size int) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []string
	n := 0
	for n < size {
		for _, m := range conversation(rng) {
			out = append(out, m.Content)
			n += len(m.Content)
		}
	}
	return out
}

// corpora returns held-out measurement corpora of count texts each.
func corpora(seed uint64, count int) map[string][]string {
	rng := rand.New(rand.NewPCG(seed, 2))
	c := map[string][]string{}
	for range count {
		grid, coords := sokobanBoard(rng)
		c["sokoban grid"] = append(c["sokoban grid"], grid)
		c["sokoban coords"] = append(c["sokoban coords"], coords)
		c["sokoban obs"] = append(c["sokoban obs"], "Coordinates: \n"+coords+"\nGrid Map: \n"+grid)
		c["frozenlake grid"] = append(c["frozenlake grid"], frozenGrid(rng))
		c["user turn"] = append(c["user turn"], userTurn(rng, 1+rng.IntN(3), sokobanObs(rng)))
		c["reply"] = append(c["reply"], reply(rng))
	}
	return c
}

// diverseCorpus returns about size bytes of text made of random pseudo-words
// (syllables drawn with a skewed distribution), numbers and punctuation, in
// lines of 100 to 200 bytes: a stand-in for natural text with a long tail.
func diverseCorpus(size int) []string {
	rng := rand.New(rand.NewPCG(42, 3))
	syll := []string{"ka", "to", "ri", "en", "the", "st", "ion", "ar", "qu", "ly", "mo", "bo", "x", "ze", "ph", "ou", "ing", "ed", "ch", "√"}
	var out []string
	n := 0
	for n < size {
		var b strings.Builder
		for b.Len() < 100+rng.IntN(100) {
			switch rng.IntN(10) {
			case 0:
				fmt.Fprintf(&b, " %d", rng.IntN(1000))
			case 1:
				b.WriteString([]string{",", ".", ":", " ||", " (", ")"}[rng.IntN(6)])
			default:
				b.WriteByte(' ')
				for k := 1 + rng.IntN(4); k > 0; k-- {
					// Skewed: low indices are far more frequent.
					b.WriteString(syll[int(float64(len(syll))*rng.Float64()*rng.Float64())])
				}
			}
		}
		out = append(out, b.String())
		n += b.Len()
	}
	return out
}
