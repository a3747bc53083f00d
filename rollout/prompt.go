package rollout

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// systemMessage is the system prompt: RAGEN's prefix, the environment's
// instruction (which carries its symbol legend for every observation
// format), and for environments with an action vocabulary, the actions and
// the per-episode budget.
func systemMessage(cfg *Config, instruction string, actions []string) string {
	var b strings.Builder
	b.WriteString(cfg.SystemPrefix)
	b.WriteString(instruction)
	switch {
	case cfg.Tools:
		// Actions are calls, each a step.
		fmt.Fprintf(&b, "\nYou can make up to %d actions, one per tool call.\n", cfg.MaxActionsPerEpisode)
	case len(actions) > 0:
		fmt.Fprintf(&b, "\nYour available actions are:\n%s\nYou can make up to %d actions, separated by the action separator \" %s \"\n",
			strings.Join(actions, ", "), cfg.MaxActionsPerEpisode, cfg.ActionSeparator)
	}
	return b.String()
}

// noValidActionWarning is shown in the turn after a reply that took no
// valid action. Unlike the reference, which drops it from the training
// text, the warning stays in the tokens: the model is trained on exactly
// what it saw.
const noValidActionWarning = "No valid action provided previously. Environment state remains the same. Please try again.\n"

// turnMessage is the user message of turn n (1-based). From the second turn
// on it starts with the previous turn's reward, as the reference does.
func turnMessage(cfg *Config, n int, prevReward float64, observation string, actionsLeft int, warn bool) string {
	var b strings.Builder
	if cfg.PromptStyle == PromptCompact {
		if n > 1 {
			fmt.Fprintf(&b, "Reward: %s\n", formatReward(prevReward))
		}
		if warn {
			b.WriteString("No valid action.\n")
		}
		fmt.Fprintf(&b, "Turn %d, %d actions left.\n%s", n, actionsLeft, observation)
		return b.String()
	}
	if n > 1 {
		fmt.Fprintf(&b, "Reward:\n%s\n", formatReward(prevReward))
	}
	fmt.Fprintf(&b, "\nTurn %d:\nState:\n%s\n", n, observation)
	if warn {
		b.WriteString(noValidActionWarning)
	}
	format := "<answer> [your answer] </answer>"
	if cfg.Tools {
		format = "a tool call"
	}
	if cfg.Think {
		format = "<think> [Your thoughts] </think> " + format
	}
	fmt.Fprintf(&b, "You have %d actions left. Always output: %s with no extra text. Strictly follow this format. Max response length: %d words (tokens).\n",
		actionsLeft, format, cfg.Sampling.MaxTokens)
	return b.String()
}

// formatReward prints a reward the way Python prints a float, without the
// binary noise of sums such as -0.1 + -0.1.
func formatReward(r float64) string {
	r = math.Round(r*1e6) / 1e6
	s := strconv.FormatFloat(r, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
