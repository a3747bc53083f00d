package constrain

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrl/agentrl/text/toolcall"
)

// schemas are the schemas the walks and mask tests run over.
var schemas = []string{
	`{}`,
	`{"type":"object"}`,
	`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":14},"unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false}`,
	`{"type":"object","properties":{"query":{"type":"string","minLength":2,"maxLength":5},"k":{"type":"integer","minimum":-3,"maximum":120}},"required":["query","k"]}`,
	`{"type":"object","properties":{"text":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string","maxLength":3},"minItems":1,"maxItems":3},"mode":{"anyOf":[{"const":"fast"},{"type":"integer"}]}}}`,
	`{"type":"object","properties":{"x":{"type":"number","minimum":0.5,"maximum":0.75},"y":{"type":"number","minimum":-2.5,"maximum":1e3},"z":{"type":"number"}},"required":["x","y","z"]}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{"type":"object","properties":{"c":{"type":"boolean"}},"required":["c"]}}},"required":["b"]}},"required":["a"]}`,
	`{"anyOf":[{"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number","minimum":0}},"required":["kind","r"],"additionalProperties":false},{"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"integer"}},"required":["kind","side"],"additionalProperties":false}]}`,
	`{"type":"object","properties":{"note":{"type":"string","minLength":3}},"required":["note","extra"]}`,
	`{"type":"array","items":{"type":"integer","minimum":10,"maximum":12},"maxItems":4}`,
	`{"type":"string","minLength":1}`,
	`{"type":"integer","minimum":-1000000,"maximum":-999990}`,
	`{"enum":[1,"one",[1,2],{"b":1,"a":"x"},null,true,1.5]}`,
	`{"type":"object","properties":{"emoji":{"type":"string","minLength":2,"maxLength":2}},"required":["emoji"]}`,
}

// checkValue asserts that text is JSON the schema accepts under
// toolcall.Check.
func checkValue(t *testing.T, schema string, text []byte) {
	t.Helper()
	if !json.Valid(text) {
		t.Fatalf("schema %s: %q is not valid JSON", schema, text)
	}
	if !utf8.Valid(text) {
		t.Fatalf("schema %s: %q is not valid UTF-8", schema, text)
	}
	tools := []toolcall.Tool{{Name: "f", Parameters: json.RawMessage(schema)}}
	if err := toolcall.Check(tools, toolcall.Call{Name: "f", Arguments: text}); err != nil {
		t.Fatalf("schema %s: %q: %v", schema, text, err)
	}
}

// randomText walks g from its start one byte at a time, each byte drawn
// among those that keep a completion within budget bytes (favouring
// structure), and stops at a complete text. Every state on the way must
// allow a byte or be complete: that is the liveness the package promises.
func randomText(t *testing.T, g *Grammar, rng *rand.Rand, budget int) []byte {
	t.Helper()
	cs := g.starts
	var out []byte
	for {
		done := minCost(cs) == 0
		var cands, structural []byte
		for b := range 256 {
			next := advance(g.m, cs, byte(b))
			if len(next) == 0 || minCost(next) > budget-len(out)-1 {
				continue
			}
			cands = append(cands, byte(b))
			if strings.IndexByte(`"{}[],:0123456789-.tfn `, byte(b)) >= 0 {
				structural = append(structural, byte(b))
			}
		}
		if done && (len(cands) == 0 || rng.IntN(6) == 0) {
			return out
		}
		if len(cands) == 0 {
			t.Fatalf("stuck after %q (cost %d, budget %d): no byte continues it", out, minCost(cs), budget)
		}
		pick := cands
		if len(structural) > 0 && rng.IntN(2) == 0 {
			pick = structural
		}
		b := pick[rng.IntN(len(pick))]
		out = append(out, b)
		cs = advance(g.m, cs, b)
	}
}

func TestRandomValuesValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, schema := range schemas {
		v, err := Compile(json.RawMessage(schema), CompileOptions{})
		if err != nil {
			t.Fatalf("Compile(%s): %v", schema, err)
		}
		g, err := JSON(v)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			budget := g.MinLen() + rng.IntN(80)
			text := randomText(t, g, rng, budget)
			if len(text) > budget {
				t.Fatalf("schema %s: %q is longer than the budget %d", schema, text, budget)
			}
			if !g.Accepts(text) {
				t.Fatalf("schema %s: the walk's text %q is not accepted", schema, text)
			}
			checkValue(t, schema, text)
			if i == 0 {
				t.Logf("%s: %s", schema, text)
			}
		}
	}
}

func TestAccepts(t *testing.T) {
	tests := []struct {
		schema, text string
		want         bool
	}{
		{schemas[2], `{"city": "Paris", "days": 3}`, true},
		{schemas[2], `{"days":14,"city":"Oslo","unit":"c"}`, true},
		{schemas[2], `{"city":"Oslo","days":15}`, false},
		{schemas[2], `{"city":"Oslo","days":0}`, false},
		{schemas[2], `{"days":3}`, false},
		{schemas[2], `{"city":"a","city":"b"}`, false},
		{schemas[2], `{"city":"a","other":1}`, false},
		{schemas[2], `{ "city":"a"}`, false},
		{schemas[2], `{"city":"a",  "days":2}`, false},
		{schemas[2], `{"city":"a"} `, false},
		{schemas[3], `{"query":"abc","k":-3}`, true},
		{schemas[3], `{"query":"a","k":1}`, false},
		{schemas[3], `{"query":"abcdef","k":1}`, false},
		{schemas[3], `{"query":"ab","k":121}`, false},
		{schemas[3], `{"query":"é\u00e9","k":0}`, true},
		{schemas[3], `{"query":"ab\ud83d","k":0}`, false},
		{schemas[5], `{"x":0.5,"y":-2.5,"z":1e-7}`, true},
		{schemas[5], `{"x":0.75,"y":1000,"z":-0}`, true},
		{schemas[5], `{"x":0.76,"y":0,"z":0}`, false},
		{schemas[5], `{"x":0.6,"y":1e2,"z":0}`, false},
		{schemas[5], `{"x":0.6,"y":01,"z":0}`, false},
		{schemas[7], `{"kind":"circle","r":2.5}`, true},
		{schemas[7], `{"kind":"square","side":2}`, true},
		{schemas[7], `{"kind":"square","r":2}`, false},
		{schemas[8], `{"note":"abc","extra":[1,{"x":null}]}`, true},
		{schemas[8], `{"note":"abc"}`, false},
		{schemas[9], `[10, 11,12]`, true},
		{schemas[9], `[]`, true},
		{schemas[9], `[9]`, false},
		{schemas[9], `[10,10,10,10,10]`, false},
		{schemas[11], `-999995`, true},
		{schemas[11], `-999989`, false},
		{schemas[12], `{"a":"x","b":1}`, true},
		{schemas[12], `{"b":1,"a":"x"}`, false},
		{schemas[12], `1.5`, true},
		{schemas[12], `"one"`, true},
		{schemas[13], `{"emoji":"😀🎉"}`, true},
		{schemas[13], `{"emoji":"😀🎉!"}`, false},
		{`{"type":"string"}`, "\"a\x01\"", false},
		{`{"type":"string"}`, "\"\xff\"", false},
		{`{"type":"string"}`, `"\q"`, false},
		{`{"type":"number"}`, `1e999`, false},
		{`{"type":"number"}`, `123456789012345678901`, false},
		{`{"type":"number"}`, `12345678901234567890.5e-12`, true},
		{`{"type":"integer"}`, `1.0`, false},
		{`{}`, `{"a":[{"b":{"c":[null,true,"x",-1.5e+3]}}]}`, true},
	}
	for _, tt := range tests {
		v, err := Compile(json.RawMessage(tt.schema), CompileOptions{})
		if err != nil {
			t.Fatalf("Compile(%s): %v", tt.schema, err)
		}
		g, _ := JSON(v)
		if got := g.Accepts([]byte(tt.text)); got != tt.want {
			t.Errorf("schema %s: Accepts(%s) = %v, want %v", tt.schema, tt.text, got, tt.want)
		}
		if tt.want {
			checkValue(t, tt.schema, []byte(tt.text))
		}
	}
}

// TestPrefixLiveness: a prefix that no value of the schema completes is
// refused at its first byte, not accepted into a dead end.
func TestPrefixLiveness(t *testing.T) {
	tests := []struct{ schema, dead string }{
		{`{"type":"integer","minimum":10,"maximum":19}`, `2`},
		{`{"type":"integer","minimum":10,"maximum":19}`, `-`},
		{`{"type":"integer","minimum":10,"maximum":19}`, `0`},
		{`{"type":"integer","minimum":-5,"maximum":5}`, `6`},
		{`{"type":"number","minimum":0.5,"maximum":0.7}`, `0.8`},
		{`{"type":"number","minimum":0.5,"maximum":0.7}`, `1`},
		{`{"type":"object","properties":{"a":{},"ab":{}},"additionalProperties":false}`, `{"a":1,"a"`},
		{`{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"a":1,`},
		{`{"type":"object","properties":{"a":{}},"additionalProperties":false}`, `{"b`},
		{`{"type":"array","maxItems":1}`, `[1,`},
		{`{"type":"string","maxLength":1}`, `"ab`},
		{`{"type":"string","maxLength":1}`, `"a\`},
	}
	for _, tt := range tests {
		v, err := Compile(json.RawMessage(tt.schema), CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := JSON(v)
		if g.IsPrefix([]byte(tt.dead)) {
			t.Errorf("schema %s: the dead prefix %q is accepted", tt.schema, tt.dead)
		}
		if live := tt.dead[:len(tt.dead)-1]; live != "" && !g.IsPrefix([]byte(live)) {
			t.Errorf("schema %s: %q is refused", tt.schema, live)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, MaxSchemaDepth+2) + `{}` + strings.Repeat(`}}`, MaxSchemaDepth+2)
	var many strings.Builder
	many.WriteString(`{"anyOf":[`)
	for i := range MaxSchemaNodes + 1 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"type":"string"}`)
	}
	many.WriteString(`]}`)
	tests := []struct{ schema, want string }{
		{`[1]`, "not a JSON object"},
		{`"string"`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{`{"enum":[]}`, "no value satisfies"},
		{`{"type":"string","minLength":3,"maxLength":2}`, "no value satisfies"},
		{`{"type":"integer","minimum":1.2,"maximum":1.8}`, "no value satisfies"},
		{`{"type":"integer","minimum":1e30}`, "no value satisfies"},
		{`{"type":"object","required":["a"],"additionalProperties":false}`, "no value satisfies"},
		{`{"type":"object","properties":{"a":{"enum":[]}},"required":["a"]}`, "no value satisfies"},
		{`{"type":"array","items":{"enum":[]},"minItems":1}`, "no value satisfies"},
		{`{"type":"float"}`, "no value satisfies"},
		{`{"anyOf":[]}`, "no value satisfies"},
		{deep, "nests values more than"},
		{many.String(), "subschemas"},
	}
	for _, tt := range tests {
		_, err := Compile(json.RawMessage(tt.schema), CompileOptions{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%.60s) = %v, want an error with %q", tt.schema, err, tt.want)
		}
	}
	if _, err := Compile(json.RawMessage(`{"enum":[]}`), CompileOptions{}); !errors.Is(err, ErrUnsatisfiable) {
		t.Errorf("an empty enum: %v, want ErrUnsatisfiable", err)
	}
}

func TestToolCallGrammars(t *testing.T) {
	tools := []toolcall.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(schemas[2])},
		{Name: "search", Parameters: json.RawMessage(schemas[3])},
		{Name: "noop"},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, format := range toolcall.Formats {
		g, err := ToolCalls(format, tools)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := toolcall.New(format)
		seen := map[string]bool{}
		for range 300 {
			text := randomText(t, g, rng, g.MinLen()+rng.IntN(120))
			content, calls, ok := p.Parse(string(text))
			if !ok || content != "" || len(calls) != 1 {
				t.Fatalf("%s: %q parses as %q, %d calls, ok %v", format, text, content, len(calls), ok)
			}
			if err := toolcall.Check(tools, calls[0]); err != nil {
				t.Fatalf("%s: %q: %v", format, text, err)
			}
			seen[calls[0].Name] = true
		}
		if len(seen) != len(tools) {
			t.Errorf("%s: the walks called only %v", format, seen)
		}
	}
	// Several calls: one to three, each parsed and checked.
	for _, format := range toolcall.Formats {
		g, err := ToolCallsN(format, tools, 3)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := toolcall.New(format)
		counts := map[int]int{}
		for range 60 {
			text := randomText(t, g, rng, g.MinLen()+rng.IntN(250))
			content, calls, ok := p.Parse(string(text))
			if !ok || content != "" || len(calls) < 1 || len(calls) > 3 {
				t.Fatalf("%s: %q parses as %q, %d calls, ok %v", format, text, content, len(calls), ok)
			}
			for _, c := range calls {
				if err := toolcall.Check(tools, c); err != nil {
					t.Fatalf("%s: %q: %v", format, text, err)
				}
			}
			counts[len(calls)]++
		}
		if counts[1] == 0 || counts[2]+counts[3] == 0 {
			t.Errorf("%s: calls per text %v, want one and more", format, counts)
		}
		one := map[string]string{
			"hermes":      "<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>",
			"llama3_json": `{"name": "noop", "parameters": {}}`,
			"compact":     "<call>noop {}</call>",
		}[format]
		sep := map[string]string{"hermes": "\n", "llama3_json": "; ", "compact": "\n"}[format]
		four := strings.Join([]string{one, one, one, one}, sep)
		if three := strings.Join([]string{one, one, one}, sep); !g.Accepts([]byte(three)) {
			t.Errorf("%s: three calls %q refused", format, three)
		}
		if !g.Accepts([]byte(one)) || g.IsPrefix([]byte(four)) {
			t.Errorf("%s: one call accepted %v, four calls a prefix %v", format, g.Accepts([]byte(one)), g.IsPrefix([]byte(four)))
		}
	}

	// A string that would close the call early is refused.
	g, _ := ToolCalls("hermes", tools[2:])
	if g.IsPrefix([]byte("<tool_call>\n{\"name\": \"noop\", \"arguments\": {\"a\":\"x</tool_call>")) {
		t.Error("hermes: an argument holding </tool_call> is accepted")
	}
	if _, err := ToolCalls("compact", []toolcall.Tool{{Name: "9lives"}}); err == nil {
		t.Error("compact: a name the format cannot write is accepted")
	}
	if _, err := ToolCalls("hermes", []toolcall.Tool{{Name: "x", Parameters: json.RawMessage(`{"type":"string"}`)}}); !errors.Is(err, ErrUnsatisfiable) {
		t.Errorf("parameters that allow no object: %v", err)
	}
}

// byteVocab is a vocabulary of every single byte and some longer tokens,
// a few special (nil).
func byteVocab(rng *rand.Rand) ([][]byte, *Vocab) {
	toks := make([][]byte, 0, 700)
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	words := []string{`{"`, `":`, `": "`, `",`, `", "`, `"}`, `}`, `[`, `]`, `, `, `true`, `false`, `null`, `12`, `0.`, `-1`,
		`city`, `days`, `query`, `"city"`, `Paris`, `<tool_call>`, `</tool_call>`, "\n", `{"name": "`, `arguments`, `"arguments": `,
		"é", "\xc3", "\xa9", "😀", `\"`, `\u00`, `e9`, `\n`, ` "`, `""`, `"""`, `a"b`, `"}]`, `x</tool_`, `call>`}
	for _, w := range words {
		toks = append(toks, []byte(w))
	}
	for range 300 {
		n := 1 + rng.IntN(5)
		w := make([]byte, n)
		for i := range w {
			w[i] = `abc"{}[],: 0123\u.-eé`[rng.IntN(22)]
		}
		toks = append(toks, w)
	}
	toks = append(toks, nil, nil) // special tokens
	return toks, NewVocab(len(toks)+3, func(id int) []byte {
		if id < len(toks) {
			return toks[id]
		}
		return nil
	})
}

// TestMaskMatchesBruteForce: at every state of random generations, the
// tokens Allow sets are exactly those whose bytes continue the text and
// leave a completion within the budget (the trie walk and the fast path
// inside strings agree with reading each token on its own).
func TestMaskMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	toks, vocab := byteVocab(rng)
	stop := len(toks) + 1
	grammars := map[string]*Grammar{}
	for i, schema := range schemas {
		v, err := Compile(json.RawMessage(schema), CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		grammars[fmt.Sprint("schema", i)], _ = JSON(v)
	}
	grammars["tools"], _ = ToolCalls("hermes", []toolcall.Tool{{Name: "get_weather", Parameters: json.RawMessage(schemas[2])}, {Name: "free"}})
	grammars["calls"], _ = ToolCallsN("compact", []toolcall.Tool{{Name: "get_weather", Parameters: json.RawMessage(schemas[2])}, {Name: "free"}}, 0)
	for name, g := range grammars {
		for run := range 8 {
			budget := 0
			if run%2 == 1 {
				budget = g.MinLen() + 1 + rng.IntN(40)
			}
			seq, err := g.Start(vocab, []int{stop}, budget)
			if err != nil {
				t.Fatal(err)
			}
			var gen []int
			var text []byte
			for {
				allowed := make([]bool, vocab.Size())
				if err := seq.Allow(gen, allowed); err != nil {
					t.Fatalf("%s: after %q: %v", name, text, err)
				}
				room := maxCost
				if budget > 0 {
					room = budget - len(gen) - 2 // this token and the stop token
				}
				want := bruteForce(g, toks, text, room)
				if minCost(mustPrefix(t, g, text)) == 0 {
					want[stop] = true
				}
				if !slices.Equal(allowed[:len(want)], want) {
					for id := range want {
						if allowed[id] != want[id] {
							t.Errorf("%s: after %q (room %d): token %d %q allowed %v, want %v", name, text, room, id, toks[min(id, len(toks)-1)], allowed[id], want[id])
						}
					}
					t.FailNow()
				}
				var ids []int
				for id, ok := range allowed {
					if ok {
						ids = append(ids, id)
					}
				}
				id := ids[rng.IntN(len(ids))]
				if id == stop {
					break
				}
				gen = append(gen, id)
				text = append(text, toks[id]...)
				if budget > 0 && len(gen)+1 > budget { // the stop token counts
					t.Fatalf("%s: %d tokens over the budget %d", name, len(gen), budget)
				}
			}
			if !g.Accepts(text) {
				t.Fatalf("%s: stopped at %q, not a complete text", name, text)
			}
		}
	}
}

func mustPrefix(t *testing.T, g *Grammar, text []byte) []*stack {
	t.Helper()
	cs, ok := g.prefix(text)
	if !ok {
		t.Fatalf("%q is not a prefix", text)
	}
	return cs
}

// bruteForce is the mask by reading each token on its own; when the budget
// allows no token it is ignored, as Allow does.
func bruteForce(g *Grammar, toks [][]byte, text []byte, room int) []bool {
	want := make([]bool, len(toks)+2)
	base, _ := g.prefix(text)
	anyFit := false
	fits := make([]bool, len(toks))
	for id, tok := range toks {
		if tok == nil {
			continue
		}
		cs := base
		for _, b := range tok {
			if cs = advance(g.m, cs, b); len(cs) == 0 {
				break
			}
		}
		if len(cs) == 0 {
			continue
		}
		want[id] = true
		if minCost(cs) <= room {
			fits[id], anyFit = true, true
		}
	}
	if anyFit || minCost(base) == 0 {
		for id := range toks {
			want[id] = fits[id]
		}
	}
	return want
}

func TestStartBudget(t *testing.T) {
	g, _ := ToolCalls("hermes", []toolcall.Tool{{Name: "f"}})
	_, vocab := byteVocab(rand.New(rand.NewPCG(1, 1)))
	if _, err := g.Start(vocab, nil, g.MinLen()-1); !errors.Is(err, ErrBudget) {
		t.Errorf("Start with a budget below MinLen: %v, want ErrBudget", err)
	}
	if _, err := g.Start(vocab, []int{1}, g.MinLen()); !errors.Is(err, ErrBudget) {
		t.Errorf("Start with stops and a budget of MinLen (no room for the stop): %v, want ErrBudget", err)
	}
	seq, err := g.Start(vocab, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := make([]bool, vocab.Size())
	if err := seq.Allow([]int{'{'}, allowed); err == nil {
		t.Error("Allow after a token that leaves the grammar succeeded")
	}
	clear(allowed)
	if err := seq.Allow(nil, allowed); err != nil || !allowed['<'] || allowed['{'] {
		t.Errorf("Allow from the start again: %v, '<' %v, '{' %v", err, allowed['<'], allowed['{'])
	}
}

// FuzzCompile: no schema panics Compile, and every text a compiled schema
// accepts is JSON the schema accepts under toolcall.Check.
func FuzzCompile(f *testing.F) {
	for _, s := range schemas {
		f.Add(s, uint64(1), `{"city":"x"}`)
	}
	f.Add(`{"type":"number","minimum":-1e-30,"maximum":1e-30}`, uint64(2), `0`)
	f.Add(`{"type":["integer","string"],"minimum":3,"maxLength":0}`, uint64(3), `""`)
	f.Add(`{"properties":{"\u003c":{"const":"</tool_call>"}},"required":["<"]}`, uint64(4), `{}`)
	f.Fuzz(func(t *testing.T, schema string, seed uint64, text string) {
		v, err := Compile(json.RawMessage(schema), CompileOptions{Forbid: "</x>"})
		if err != nil {
			return
		}
		g, err := JSON(v)
		if err != nil {
			t.Fatalf("JSON of a compiled schema: %v", err)
		}
		if g.Accepts([]byte(text)) {
			checkValue(t, schema, []byte(text))
		}
		rng := rand.New(rand.NewPCG(seed, seed))
		if g.MinLen() > 200 {
			return
		}
		out := randomText(t, g, rng, g.MinLen()+rng.IntN(40))
		checkValue(t, schema, out)
		if strings.Contains(string(out), "</x>") {
			t.Fatalf("%q holds the forbidden text", out)
		}
	})
}
