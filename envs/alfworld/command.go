package alfworld

import (
	"strings"
)

// Verb is the kind of a command.
type Verb int

// The verbs of ALFWorld's command grammar.
const (
	GoTo      Verb = iota // go to R
	Open                  // open R
	Close                 // close R
	Take                  // take O from R
	Put                   // put O in/on R
	Clean                 // clean O with R
	Heat                  // heat O with R
	Cool                  // cool O with R
	Use                   // use L (a lamp)
	Look                  // look
	Inventory             // inventory
	Examine               // examine R or O
)

// Command is one parsed action. Names are "kind number" ("apple 1");
// Object is the object acted on (take, put, clean, heat, cool), Target
// the receptacle, lamp or thing examined.
type Command struct {
	Verb   Verb
	Object string
	Target string
}

// String is the command as ALFWorld writes it in its admissible
// commands, "put apple 1 in/on countertop 1" included.
func (c Command) String() string {
	switch c.Verb {
	case GoTo:
		return "go to " + c.Target
	case Open:
		return "open " + c.Target
	case Close:
		return "close " + c.Target
	case Take:
		return "take " + c.Object + " from " + c.Target
	case Put:
		return "put " + c.Object + " in/on " + c.Target
	case Clean:
		return "clean " + c.Object + " with " + c.Target
	case Heat:
		return "heat " + c.Object + " with " + c.Target
	case Cool:
		return "cool " + c.Object + " with " + c.Target
	case Use:
		return "use " + c.Target
	case Look:
		return "look"
	case Inventory:
		return "inventory"
	case Examine:
		return "examine " + c.Target
	}
	return "Command(?)"
}

// maxCommandLen bounds the text ParseCommand looks at; real commands are
// far shorter.
const maxCommandLen = 200

// ParseCommand reads one command of ALFWorld's grammar:
//
//	go to R          open R          close R          examine X
//	take O from R    put O in/on R   (or "in R", "on R")
//	clean O with R   heat O with R   cool O with R    use L
//	look             inventory
//
// where every name is a lower-case kind and a number ("cabinet 3"). Case
// and runs of whitespace are ignored. Whether the command is possible in
// the current state is the environment's business.
func ParseCommand(s string) (Command, bool) {
	if len(s) > maxCommandLen {
		return Command{}, false
	}
	w := strings.Fields(strings.ToLower(s))
	if len(w) == 0 {
		return Command{}, false
	}
	// name reads "kind number" at w[i:] and returns it with the index
	// after it.
	name := func(i int) (string, int, bool) {
		if i+1 >= len(w) || !isKind(w[i]) || !isNumber(w[i+1]) {
			return "", 0, false
		}
		return w[i] + " " + w[i+1], i + 2, true
	}
	// target reads a name that must end the command.
	target := func(i int) (string, bool) {
		n, j, ok := name(i)
		return n, ok && j == len(w)
	}
	verb, known := verbWords[w[0]]
	if !known {
		return Command{}, false
	}
	c := Command{Verb: verb}
	ok := false
	switch verb {
	case Look, Inventory:
		ok = len(w) == 1
	case GoTo:
		if len(w) > 1 && w[1] == "to" {
			c.Target, ok = target(2)
		}
	case Open, Close, Use, Examine:
		c.Target, ok = target(1)
	default: // take, put, clean, heat, cool: verb object preposition target
		var j int
		if c.Object, j, ok = name(1); !ok || j >= len(w) {
			return Command{}, false
		}
		prep := w[j]
		switch c.Verb {
		case Take:
			ok = prep == "from"
		case Put:
			ok = prep == "in/on" || prep == "in" || prep == "on"
		default:
			ok = prep == "with"
		}
		if ok {
			c.Target, ok = target(j + 1)
		}
	}
	if !ok {
		return Command{}, false
	}
	return c, true
}

// verbWords maps a command's first word to its verb.
var verbWords = map[string]Verb{
	"go": GoTo, "open": Open, "close": Close, "take": Take, "put": Put, "clean": Clean, "heat": Heat,
	"cool": Cool, "use": Use, "look": Look, "inventory": Inventory, "examine": Examine,
}

// isKind reports whether s can be a kind: lower-case ASCII letters.
func isKind(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := range len(s) {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

// isNumber reports whether s is an instance number: 1 to 99 without a
// leading zero.
func isNumber(s string) bool {
	if s == "" || len(s) > 2 || s[0] == '0' {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
