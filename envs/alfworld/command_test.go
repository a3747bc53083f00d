package alfworld

import "testing"

func TestParseCommand(t *testing.T) {
	cases := []struct {
		in   string
		want Command
	}{
		{"go to fridge 1", Command{Verb: GoTo, Target: "fridge 1"}},
		{"  Go  To   Fridge 1 ", Command{Verb: GoTo, Target: "fridge 1"}},
		{"open cabinet 12", Command{Verb: Open, Target: "cabinet 12"}},
		{"close drawer 3", Command{Verb: Close, Target: "drawer 3"}},
		{"take apple 1 from countertop 2", Command{Verb: Take, Object: "apple 1", Target: "countertop 2"}},
		{"put apple 1 in/on fridge 1", Command{Verb: Put, Object: "apple 1", Target: "fridge 1"}},
		{"put apple 1 in fridge 1", Command{Verb: Put, Object: "apple 1", Target: "fridge 1"}},
		{"put apple 1 on fridge 1", Command{Verb: Put, Object: "apple 1", Target: "fridge 1"}},
		{"clean mug 2 with sinkbasin 1", Command{Verb: Clean, Object: "mug 2", Target: "sinkbasin 1"}},
		{"heat egg 1 with microwave 1", Command{Verb: Heat, Object: "egg 1", Target: "microwave 1"}},
		{"cool pan 1 with fridge 1", Command{Verb: Cool, Object: "pan 1", Target: "fridge 1"}},
		{"use desklamp 1", Command{Verb: Use, Target: "desklamp 1"}},
		{"examine book 1", Command{Verb: Examine, Target: "book 1"}},
		{"look", Command{Verb: Look}},
		{"INVENTORY", Command{Verb: Inventory}},
	}
	for _, tc := range cases {
		got, ok := ParseCommand(tc.in)
		if !ok || got != tc.want {
			t.Errorf("ParseCommand(%q) = %+v, %v; want %+v", tc.in, got, ok, tc.want)
			continue
		}
		if again, ok := ParseCommand(got.String()); !ok || again != got {
			t.Errorf("%q does not read back", got.String())
		}
	}
	for _, bad := range []string{
		"", "go", "go to", "go fridge 1", "go to fridge", "go to fridge one", "go to fridge 0", "go to fridge 01",
		"go to fridge 1 now", "take apple 1", "take apple 1 from", "take apple 1 in fridge 1", "put apple 1 into fridge 1",
		"put apple 1 in/on", "clean apple 1 in sinkbasin 1", "heat apple with microwave 1", "look around", "inventory 1",
		"open the fridge 1", "go to Fridge-1 1", "go to fridge 100", "examine", "use", "jump", "go to fridge 1.",
	} {
		if got, ok := ParseCommand(bad); ok {
			t.Errorf("ParseCommand(%q) accepted: %+v", bad, got)
		}
	}
}
