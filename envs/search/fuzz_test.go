package search

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzStep feeds arbitrary action lines to episodes: nothing panics, an
// invalid action changes nothing, rewards stay in [0, 1], the observation
// is Render's, and errors come only after the end.
func FuzzStep(f *testing.F) {
	f.Add(uint64(0), "search[Perlen Posru]|answer[1845]")
	f.Add(uint64(1), "search[]|finish[x]|search[the of]|answer[[x]]")
	f.Add(uint64(2), "SUBJECT|ANSWER|search[capital]|search[capital]|\x00|\xff|answer[a\nb]")
	f.Add(uint64(5), "search[born]|search[founded]|search[based]|search[x]|search[y]|search[z]")
	e := newEnv(f, func(c *Config) { c.TopK, c.MaxSteps = 3, 5 })
	f.Fuzz(func(t *testing.T, seed uint64, script string) {
		e.Reset(seed)
		for _, a := range strings.Split(script, "|") {
			// Placeholders reach the deeper states: the subject's search and
			// the gold answer.
			a = strings.ReplaceAll(a, "SUBJECT", "search["+e.c.Entities[e.q.Subject()].Name+"]")
			a = strings.ReplaceAll(a, "ANSWER", "answer["+e.q.Answer+"]")
			before, steps, key := e.Render(), e.Steps(), e.StateKey()
			res, err := e.Step(a)
			if err != nil {
				t.Fatalf("Step(%q): %v", a, err)
			}
			if !utf8.ValidString(res.Observation) || res.Observation != e.Render() {
				t.Fatal("observation differs from Render")
			}
			if !res.Info.ActionValid {
				if res.Observation != before || e.Steps() != steps || e.StateKey() != key || res.Reward != 0 || res.Done {
					t.Fatalf("invalid %q changed the state", a)
				}
				continue
			}
			if res.Reward < 0 || res.Reward > 1 || (res.Info.Success && res.Reward != 1) {
				t.Fatalf("%q: reward %v, success %v", a, res.Reward, res.Info.Success)
			}
			if res.Done {
				if _, err := e.Step(a); err == nil {
					t.Fatal("Step after the end accepted")
				}
				return
			}
			if _, err := e.Advise(1, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}
