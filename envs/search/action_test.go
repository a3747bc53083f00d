package search

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseAction(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Action
		ok   bool
	}{
		{"search[Varo Keldin]", Action{VerbSearch, "Varo Keldin"}, true},
		{"  search[ Varo   Keldin\t]  \n", Action{VerbSearch, "Varo Keldin"}, true},
		{"answer[Port Almera]", Action{VerbAnswer, "Port Almera"}, true},
		{"finish[Port Almera]", Action{VerbAnswer, "Port Almera"}, true}, // RAGEN's spelling
		{"answer[1887]", Action{VerbAnswer, "1887"}, true},
		{"search[what is the capital of Zelandia?]", Action{VerbSearch, "what is the capital of Zelandia?"}, true},
		{"answer[Ålesund]", Action{VerbAnswer, "Ålesund"}, true},
		{"search[" + strings.Repeat("x", MaxArgLen) + "]", Action{VerbSearch, strings.Repeat("x", MaxArgLen)}, true},

		{"", Action{}, false},
		{"search", Action{}, false},
		{"search[]", Action{}, false},
		{"search[   ]", Action{}, false},
		{"search[" + strings.Repeat("x", MaxArgLen+1) + "]", Action{}, false},
		{"Search[Varo]", Action{}, false}, // verbs are lower-case
		{"SEARCH[Varo]", Action{}, false},
		{"search [Varo]", Action{}, false},
		{"click[Varo]", Action{}, false},
		{"lookup[Varo]", Action{}, false},
		{"search(Varo)", Action{}, false},
		{"search[Varo", Action{}, false},
		{"search[Varo] please", Action{}, false},
		{"I will search[Varo]", Action{}, false},
		{"search[Varo]answer[Dunmore]", Action{}, false},
		{"search[a[b]]", Action{}, false},
		{"search[a]b]", Action{}, false},
		{"search[line\nbreak]", Action{}, false},
		{"answer[nul\x00]", Action{}, false},
		{"answer[\xff]", Action{}, false},
		{"[Varo]", Action{}, false},
		{"Varo Keldin", Action{}, false},
		{"<answer>answer[Varo]</answer>", Action{}, false},
	} {
		got, ok := ParseAction(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseAction(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseAction: the parser never panics, and what it accepts is a
// search or an answer with a clean argument that reads back from its
// canonical form.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"search[a b]", "answer[Port Almera]", "finish[x]", "search[a[b]]", "x[]", "[y]",
		" search[z] ", "search[\n]", "answer[a]b]", "search[\t x \u00a0 y ]", "answer[\u2028]", "search[\xff]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseAction(s)
		if !ok {
			if a != (Action{}) {
				t.Fatalf("failed parse returned %+v", a)
			}
			return
		}
		if a.Verb != VerbSearch && a.Verb != VerbAnswer {
			t.Fatalf("ParseAction(%q): verb %q", s, a.Verb)
		}
		if a.Arg == "" || len(a.Arg) > MaxArgLen || !utf8.ValidString(a.Arg) || strings.ContainsAny(a.Arg, "[]\n\r") ||
			a.Arg != strings.Join(strings.Fields(a.Arg), " ") {
			t.Fatalf("ParseAction(%q): argument %q", s, a.Arg)
		}
		if b, ok := ParseAction(a.String()); !ok || b != a {
			t.Fatalf("%q: %+v does not read back from %q (%+v, %v)", s, a, a.String(), b, ok)
		}
	})
}
