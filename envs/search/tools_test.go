package search

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/text/toolcall"
)

func call(name, args string) toolcall.Call {
	return toolcall.Call{Name: name, Arguments: json.RawMessage(args)}
}

func TestTools(t *testing.T) {
	e := newEnv(t, nil)
	ts := e.Tools()
	if len(ts) != 2 || ts[0].Name != "search" || ts[1].Name != "answer" {
		t.Fatalf("tools %+v", ts)
	}
	for _, tool := range ts {
		var s struct {
			Type       string
			Properties map[string]struct{ Type, Description string }
			Required   []string
		}
		if err := json.Unmarshal(tool.Parameters, &s); err != nil {
			t.Fatalf("%s: schema: %v", tool.Name, err)
		}
		if tool.Description == "" || s.Type != "object" || len(s.Properties) != 1 || len(s.Required) != 1 {
			t.Errorf("%s: description %q, schema %s", tool.Name, tool.Description, tool.Parameters)
		}
		if p := s.Properties[s.Required[0]]; p.Type != "string" || p.Description == "" {
			t.Errorf("%s: the required argument %q is %+v", tool.Name, s.Required[0], p)
		}
	}
	// The schemas accept the calls ActionOf takes and refuse the shapes it
	// refuses.
	for _, c := range []toolcall.Call{call("search", `{"query":"Varo Keldin"}`), call("answer", `{"text":"1887"}`)} {
		if err := toolcall.Check(ts, c); err != nil {
			t.Errorf("Check(%s): %v", c.Arguments, err)
		}
	}
	for _, c := range []toolcall.Call{call("search", `{}`), call("search", `{"query":3}`), call("answer", `{"query":"z"}`),
		call("lookup", `{"query":"x"}`)} {
		if err := toolcall.Check(ts, c); err == nil {
			t.Errorf("Check(%s %s) accepted", c.Name, c.Arguments)
		}
		if _, err := e.ActionOf(c); err == nil {
			t.Errorf("ActionOf(%s %s) accepted", c.Name, c.Arguments)
		}
	}
	// Tools returns a copy.
	ts[0].Name, ts[0].Parameters[0] = "x", 'x'
	if again := e.Tools(); again[0].Name != "search" || again[0].Parameters[0] != '{' {
		t.Error("Tools shares its slice")
	}
	// With tools on, the instruction and the action line speak of tools.
	on := newEnv(t, func(c *Config) { c.Tools = true })
	obs, _ := on.Reset(0)
	if !strings.Contains(on.Instruction(), "search(query)") || strings.Contains(on.Instruction(), "search[") ||
		!strings.HasSuffix(obs, "Available tools: search(query), answer(text)") {
		t.Errorf("tools on: instruction %q, observation %q", on.Instruction(), obs)
	}
}

func TestActionOf(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		call       toolcall.Call
		want, fail string
	}{
		{call: call("search", `{"query":"Varo Keldin"}`), want: "search[Varo Keldin]"},
		{call: call("search", `{"query":"  Varo \n\t Keldin  born "}`), want: "search[Varo Keldin born]"},
		{call: call("answer", `{"text":"Port Almera"}`), want: "answer[Port Almera]"},
		{call: call("answer", ` { "text" : "\u00c9lan" } `), want: "answer[Élan]"},
		{call: call("finish", `{"text":"x"}`), fail: `no tool is named "finish"`},
		{call: call("", `{}`), fail: `no tool is named ""`},
		{call: call("search", ``), fail: `missing the required argument "query"`},
		{call: call("search", `null`), fail: "must be a JSON object"},
		{call: call("search", `["x"]`), fail: "must be a JSON object"},
		{call: call("search", `{"query":`), fail: "must be a JSON object"},
		{call: call("search", `{"text":"x"}`), fail: `unknown argument "text"`},
		{call: call("answer", `{"text":"x","query":"y"}`), fail: `unknown argument "query"`},
		{call: call("answer", `{"text":null}`), fail: `"text" must be a string`},
		{call: call("answer", `{"text":["x"]}`), fail: `"text" must be a string`},
		{call: call("answer", `{"text":" \n "}`), fail: `"text" is empty`},
		{call: call("search", `{"query":"a[1]"}`), fail: "square brackets"},
		{call: call("search", `{"query":"a\u0000b"}`), fail: "control characters"},
		{call: call("search", `{"query":"`+strings.Repeat("ab ", 70)+`"}`), fail: "more than 200"},
	} {
		got, err := e.ActionOf(tc.call)
		switch {
		case tc.fail == "" && (err != nil || got != tc.want):
			t.Errorf("ActionOf(%s %s) = %q, %v; want %q", tc.call.Name, tc.call.Arguments, got, err, tc.want)
		case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail) || !strings.HasPrefix(err.Error(), "search: ")):
			t.Errorf("ActionOf(%s %s) = %q, %v; want an error with %q", tc.call.Name, tc.call.Arguments, got, err, tc.fail)
		}
	}
	for _, a := range []string{"", "search[]", "answer[a]b", "lookup[x]", "search[a\nb]", "answer[[x]]"} {
		if c, err := e.CallOf(a); err == nil {
			t.Errorf("CallOf(%q) = %+v", a, c)
		}
	}
}

// TestToolRoundTrip: every action the expert, the random actor and the
// text grammar make is a call that passes the schemas and maps back to the
// same action, through the compact format's text too, so demonstrations and
// baselines written as calls act as they do as text.
func TestToolRoundTrip(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.TopK = 3 })
	compact, err := toolcall.New("compact")
	if err != nil {
		t.Fatal(err)
	}
	check := func(action string) {
		t.Helper()
		a, ok := ParseAction(action)
		if !ok {
			t.Fatalf("%q is no action", action)
		}
		c, err := e.CallOf(action)
		if err != nil {
			t.Fatalf("CallOf(%q): %v", action, err)
		}
		if err := toolcall.Check(e.Tools(), c); err != nil {
			t.Errorf("CallOf(%q) = %s %s fails its schema: %v", action, c.Name, c.Arguments, err)
		}
		_, parsed, ok := compact.Parse(compact.Format([]toolcall.Call{c}))
		if !ok || len(parsed) != 1 {
			t.Fatalf("compact text of %q does not parse", action)
		}
		back, err := e.ActionOf(parsed[0])
		if err != nil || back != a.String() {
			t.Errorf("ActionOf(CallOf(%q)) = %q, %v; want %q", action, back, err, a.String())
		}
	}
	for _, a := range []string{"search[Varo Keldin]", "  search[ a \t b ]  ", "finish[1887]", `answer[say "hi" \ there]`, "answer[Élan → ☃]"} {
		check(a)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for seed := range uint64(40) {
		e.Reset(seed)
		for !e.done {
			r, err := e.RandomAction(rng)
			if err != nil {
				t.Fatal(err)
			}
			check(r)
			adv, err := e.Advise(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			check(adv.Actions[0])
			if _, err := e.Step(adv.Actions[0]); err != nil {
				t.Fatal(err)
			}
		}
		if !e.score.EM {
			t.Errorf("seed %d: the expert missed", seed)
		}
	}
}

// FuzzActionOf feeds arbitrary names and argument bytes: nothing panics,
// every refusal is an error that says so, and every accepted call is an
// action Step takes as valid, whose call maps back to it.
func FuzzActionOf(f *testing.F) {
	f.Add("search", []byte(`{"query":"Varo Keldin"}`))
	f.Add("answer", []byte(`{"text":"  Port \n Almera "}`))
	f.Add("answer", []byte(`{"text":"x","text":"y"}`))
	f.Add("search", []byte(`{"query":"\ud800"}`))
	f.Add("search", []byte("{\"query\":\"\xff\"}"))
	f.Add("search", []byte(`{"query":{"a":1}}`))
	f.Add("answer", []byte(`"text"`))
	f.Add("search", []byte(`{"query":"x"} trailing`))
	f.Add("", []byte(nil))
	e := newEnv(f, func(c *Config) { c.TopK = 2 })
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		action, err := e.ActionOf(toolcall.Call{Name: name, Arguments: args})
		if err != nil {
			if action != "" || !strings.HasPrefix(err.Error(), "search: ") {
				t.Fatalf("ActionOf(%q, %q) = %q, %v", name, args, action, err)
			}
			return
		}
		a, ok := ParseAction(action)
		if !ok || a.String() != action || a.Verb != name {
			t.Fatalf("ActionOf(%q, %q) = %q, which is no canonical %s action", name, args, action, name)
		}
		c, err := e.CallOf(action)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := e.ActionOf(c); err != nil || back != action {
			t.Fatalf("ActionOf(CallOf(%q)) = %q, %v", action, back, err)
		}
		e.Reset(0)
		if res, err := e.Step(action); err != nil || !res.Info.ActionValid {
			t.Fatalf("Step(%q): %+v, %v", action, res.Info, err)
		}
	})
}
