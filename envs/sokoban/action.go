package sokoban

import "strings"

// Action is one move of the player. The order Up, Down, Left, Right is
// RAGEN's action_lookup (ids 1 to 4, so RAGEN's id is Action+1) and the
// solver's tie-break order.
type Action int

// The four moves. Each pushes the box in front of the player when the cell
// beyond it is free, and otherwise just moves the player if it can.
const (
	Up Action = iota
	Down
	Left
	Right
	numActions
)

var actionNames = [numActions]string{"Up", "Down", "Left", "Right"}

// String is the action's name as the agent writes it.
func (a Action) String() string {
	if a < 0 || a >= numActions {
		return "Action(?)"
	}
	return actionNames[a]
}

// ParseAction reads an action name, ignoring case and surrounding
// whitespace.
func ParseAction(s string) (Action, bool) {
	s = strings.TrimSpace(s)
	for a, name := range actionNames {
		if strings.EqualFold(s, name) {
			return Action(a), true
		}
	}
	return 0, false
}

// word is the lower-case direction used in rationales.
func (a Action) word() string { return strings.ToLower(a.String()) }
