package webshop

import (
	"strings"
	"testing"
)

// FuzzStep feeds arbitrary action lines to an episode: nothing panics, an
// invalid action changes nothing, and errors only come after the end.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), "search[body lotion]\nclick[next >]\nclick[< prev]")
	f.Add(uint64(1), "search[x]\nclick[back to search]\nsearch[shampoo]\nclick[buy now]")
	f.Add(uint64(2), "click[a[b]]\nsearch[]\n[]\nsearch[[[]]]\nclick[\x00]")
	f.Add(uint64(3), "search[mug]\nclick[b0]\nclick[description]\nclick[< prev]")
	e, err := New(Config{Catalog: "300", MaxActions: 9, Reward: RewardRaw, Split: SplitTrain, ShowActions: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed uint64, script string) {
		e.Reset(seed)
		for _, a := range strings.Split(script, "\n") {
			// The expert's first result on a results page makes clicks
			// more likely to reach deep pages.
			if a == "click[b0]" && e.st.page == pageResults && len(e.st.pageProducts()) > 0 {
				a = "click[" + strings.ToLower(e.cat.Products[e.st.pageProducts()[0]].ASIN) + "]"
			}
			before, steps := e.Render(), e.steps
			res, err := e.Step(a)
			if err != nil {
				t.Fatalf("Step(%q): %v", a, err)
			}
			if !res.Info.ActionValid && (res.Observation != before || e.steps != steps || res.Reward != 0) {
				t.Fatalf("invalid %q changed the state", a)
			}
			if res.Reward < 0 || res.Reward > 2 {
				t.Fatalf("reward %v", res.Reward)
			}
			if res.Done {
				if _, err := e.Step(a); err == nil {
					t.Fatal("Step after done did not fail")
				}
				return
			}
			if e.Render() != res.Observation {
				t.Fatal("Render differs from the step's observation")
			}
		}
	})
}

// FuzzParseAction: the parser never panics, lower-cases its argument and
// reads back what it produced.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"search[a b]", "click[Buy Now]", "click[a[b]]", "x[]", "[y]", " click[z] ", "s[\n]", "a[b]c]d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, arg, ok := ParseAction(s)
		if !ok {
			if name != "" || arg != "" {
				t.Fatalf("failed parse returned %q, %q", name, arg)
			}
			return
		}
		if name == "" || arg == "" || strings.ContainsRune(name+arg, '\n') {
			t.Fatalf("ParseAction(%q) = %q, %q", s, name, arg)
		}
		if !strings.HasPrefix(strings.TrimSpace(s), name+"[") {
			t.Fatalf("name %q is not a prefix of %q", name, s)
		}
		if strings.ToLower(arg) != arg {
			t.Fatalf("argument %q not lower-case", arg)
		}
		n2, a2, ok2 := ParseAction(name + "[" + arg + "]")
		if !ok2 || n2 != name || a2 != arg {
			t.Fatalf("reparse of %q[%q] gave %q, %q, %v", name, arg, n2, a2, ok2)
		}
	})
}
