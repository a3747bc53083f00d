package game2048

import (
	"strconv"
	"strings"
)

// render writes the observation of board b with the running score in the
// configured format.
func render(b *Board, score uint64, cfg Config) string {
	var sb strings.Builder
	moves := b.ValidMoves()
	if cfg.ObservationFormat == FormatGrid {
		sb.WriteString("Score ")
		sb.WriteString(strconv.FormatUint(score, 10))
		sb.WriteString(". Moves: ")
		writeMoves(&sb, moves)
		sb.WriteString(".\n")
		sb.WriteString(b.String())
		return sb.String()
	}
	// RAGEN's Game2048Env.render, with the valid moves named rather than
	// numbered (agents here write names).
	sb.WriteString("Current 2048 Grid:\n")
	for r := range b.n {
		sb.WriteString("Row ")
		sb.WriteString(strconv.Itoa(r + 1))
		sb.WriteString(": [")
		for c := range b.n {
			if c > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(strconv.FormatUint(b.Tile(r, c), 10))
		}
		sb.WriteString("]\n")
	}
	sb.WriteString("\nValid Actions: ")
	writeMoves(&sb, moves)
	sb.WriteString(".\nGoal: Merge same numbers to reach ")
	sb.WriteString(strconv.FormatUint(cfg.Target, 10))
	sb.WriteString(".\nCurrent Score: ")
	sb.WriteString(strconv.FormatUint(score, 10))
	sb.WriteString("\nWhat is your next move?")
	return sb.String()
}

func writeMoves(sb *strings.Builder, moves []Action) {
	if len(moves) == 0 {
		sb.WriteString("none")
		return
	}
	for i, a := range moves {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(a.String())
	}
}

// instruction is the environment part of the system prompt.
func instruction(cfg Config) string {
	n := strconv.Itoa(cfg.Size)
	var sb strings.Builder
	sb.WriteString("You are playing the 2048 game on a " + n + "x" + n + " grid. Merge equal tiles by sliding Up, Right, Down, or Left: " +
		"every tile moves as far as it can, and two equal tiles that meet merge into one tile of their sum (each tile merges at most once per move). " +
		"After every move a new tile (2, or sometimes 4) appears on a random empty cell. " +
		"A move that moves no tile is invalid and changes nothing. ")
	if cfg.ObservationFormat == FormatGrid {
		sb.WriteString("The board is shown row by row from the top, '.' for an empty cell, after the score and the moves that change the board. ")
	}
	sb.WriteString("Make the " + strconv.FormatUint(cfg.Target, 10) + " tile to win. The game ends ")
	if cfg.MaxSteps > 0 {
		sb.WriteString("after " + strconv.Itoa(cfg.MaxSteps) + " moves or ")
	}
	sb.WriteString("when no move is left. ")
	if cfg.Reward == RewardLog {
		sb.WriteString("Each move is rewarded 0.1·log2(m+1), where m is the total value of the tiles its merges create. ")
	} else {
		sb.WriteString("Each move is rewarded the total value of the tiles its merges create. ")
	}
	sb.WriteString("Example: <answer>Up</answer>")
	return sb.String()
}
