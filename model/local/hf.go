package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/text/chattemplate"
	"github.com/agentrl/agentrl/text/hftok"
	"github.com/agentrl/agentrl/text/toolcall"
)

// This file makes a Policy of a Hugging Face model directory: the weights
// through native.LoadHF (Qwen2, Qwen3, Llama, Mistral and Gemma 3
// decoders), the tokenizer
// through hftok and the chat template through chattemplate, so that the
// policy renders, encodes and decodes exactly as transformers does.

// Files of a Hugging Face model directory besides its weights.
const (
	hfConfigFile          = "config.json"
	hfTokenizerConfigFile = "tokenizer_config.json"
	hfGenerationFile      = "generation_config.json"
	hfSpecialTokensFile   = "special_tokens_map.json"
	// hfTemplateFile holds the chat template in directories written by
	// recent transformers versions, which leave it out of
	// tokenizer_config.json.
	hfTemplateFile = "chat_template.jinja"
)

// hfRequiredFiles must be in a Hugging Face model directory (besides the
// weights); hfOptionalFiles are read when present. Both are kept in
// HFFiles and written back by WriteHF.
var (
	hfRequiredFiles = []string{hfConfigFile, TokenizerFile, hfTokenizerConfigFile}
	hfOptionalFiles = []string{hfGenerationFile, hfSpecialTokensFile, hfTemplateFile}
)

// HFFiles are the files of a Hugging Face model directory besides its
// weights, by name: config.json, tokenizer.json and tokenizer_config.json,
// and generation_config.json, special_tokens_map.json and
// chat_template.jinja when present. They are what NewHF needs, beside the
// model, to make the policy, and what WriteHF writes back beside the
// weights. Their contents are not to be changed.
type HFFiles map[string][]byte

// IsHFDir reports whether dir is a Hugging Face model directory, as
// opposed to a native checkpoint (native.SaveCheckpoint with the agentrl
// tokenizer). Both hold a config.json and a tokenizer.json, so the file
// names cannot tell them apart; config.json's content can: Hugging Face's
// names the model_type (transformers picks the architecture by it), and
// the native config never has that key (native.LoadCheckpoint rejects any
// key it does not know). A directory with a Hugging Face config.json that
// lacks the tokenizer files or the weights is a Hugging Face directory
// that LoadHF refuses, naming what is missing.
func IsHFDir(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, hfConfigFile))
	if err != nil {
		return false
	}
	var c struct {
		ModelType *string `json:"model_type"`
	}
	return json.Unmarshal(raw, &c) == nil && c.ModelType != nil
}

// LoadHF loads the Hugging Face model directory dir as a Policy named name
// (the base name of dir when empty). maxContext bounds the context (the
// model's MaxSeq): 0, or more than config.json's max_position_embeddings,
// means max_position_embeddings. See NewHF for what the policy does.
func LoadHF(dir, name string, maxContext int) (*Policy, error) {
	files, codec, err := readHF(dir)
	if err != nil {
		return nil, err
	}
	model, err := loadHFModel(dir, files, maxContext)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	p, err := newHF(name, model, files, codec)
	if err != nil {
		return nil, fmt.Errorf("local: hf: %s: %w", dir, err)
	}
	return p, nil
}

// ReadHF reads the Hugging Face model directory dir: the model (maxContext
// as in LoadHF) and its other files, checked as LoadHF checks them. It is
// for callers that train the model and build its policy with NewHF.
func ReadHF(dir string, maxContext int) (*native.Model, HFFiles, error) {
	files, codec, err := readHF(dir)
	if err != nil {
		return nil, nil, err
	}
	model, err := loadHFModel(dir, files, maxContext)
	if err != nil {
		return nil, nil, err
	}
	if err := checkHFModel(model, codec); err != nil {
		return nil, nil, fmt.Errorf("local: hf: %s: %w", dir, err)
	}
	return model, files, nil
}

// NewHF makes a Policy of model with the tokenizer and chat template in
// files (from ReadHF):
//
//   - RenderChat renders the chat template as transformers'
//     apply_chat_template does (with the special tokens of
//     tokenizer_config.json) and encodes the text as its tokenize=True
//     does: tokenizer.json's encoding without added special tokens, with
//     the text of special tokens that the template writes recognised.
//   - Encode does not recognise the text of control tokens such as
//     <|im_end|> (HF's split_special_tokens), so that content cannot forge
//     them. Non-special added tokens (Qwen3's <think>, <tool_call>) are
//     recognised, as HF always does, and so are the reasoning tags <think>,
//     </think>, <answer> and </answer> where the tokenizer has them as
//     special tokens: policy.Policy's Encode promises that literal
//     reasoning tags map to their tokens, and the rollout engine relies on
//     it to open and find the reasoning.
//   - Decode keeps special tokens, and cleans up tokenization spaces when
//     tokenizer_config.json asks for it, as transformers' decode.
//   - Info().StopTokens are tokenizer_config.json's eos_token and the
//     eos_token_id (a number or a list) of generation_config.json, or of
//     config.json when generation_config.json has none.
//   - The model's embedding may have more rows than the tokenizer has
//     tokens (checkpoints pad it, e.g. Qwen2.5's 152064 rows for 151665
//     tokens), not fewer.
func NewHF(name string, model *native.Model, files HFFiles) (*Policy, error) {
	codec, err := newHFCodec(files)
	if err != nil {
		return nil, fmt.Errorf("local: hf: %w", err)
	}
	p, err := newHF(name, model, files, codec)
	if err != nil {
		return nil, fmt.Errorf("local: hf: %w", err)
	}
	return p, nil
}

func newHF(name string, model *native.Model, files HFFiles, codec *hfCodec) (*Policy, error) {
	if err := checkHFModel(model, codec); err != nil {
		return nil, err
	}
	p, err := NewWithCodec(name, model, codec)
	if err != nil {
		return nil, err
	}
	p.hf = files
	return p, nil
}

// checkHFModel checks that model's embedding covers the tokenizer and the
// stop tokens.
func checkHFModel(model *native.Model, c *hfCodec) error {
	rows := model.Config().Vocab
	if rows < c.vocab {
		return fmt.Errorf("the tokenizer has %d token ids but the model's embedding only %d rows (config.json vocab_size): "+
			"tokenizer.json belongs to another model", c.vocab, rows)
	}
	for _, id := range c.stops {
		if id >= rows {
			return fmt.Errorf("stop token id %d is outside the model's vocabulary of %d", id, rows)
		}
	}
	return nil
}

// readHF reads the files of dir besides the weights, checks that the
// weights are there, and parses the text side.
func readHF(dir string) (HFFiles, *hfCodec, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil, fmt.Errorf("local: hf: %s does not exist", dir)
	case err != nil:
		return nil, nil, fmt.Errorf("local: hf: %w", err)
	case !st.IsDir():
		return nil, nil, fmt.Errorf("local: hf: %s is not a directory", dir)
	}
	files := HFFiles{}
	for _, name := range append(slices.Clone(hfRequiredFiles), hfOptionalFiles...) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist) && slices.Contains(hfOptionalFiles, name):
			continue
		case errors.Is(err, os.ErrNotExist) && name == TokenizerFile && exists(filepath.Join(dir, "vocab.json")):
			return nil, nil, fmt.Errorf("local: hf: %s has no %s, only a slow tokenizer (vocab.json); "+
				"write the fast one with transformers: AutoTokenizer.from_pretrained(dir).save_pretrained(dir)", dir, TokenizerFile)
		case errors.Is(err, os.ErrNotExist):
			return nil, nil, fmt.Errorf("local: hf: %s has no %s", dir, name)
		case err != nil:
			return nil, nil, fmt.Errorf("local: hf: %w", err)
		}
		files[name] = raw
	}
	if !exists(filepath.Join(dir, native.WeightsFile)) && !exists(filepath.Join(dir, "model.safetensors.index.json")) {
		if exists(filepath.Join(dir, "pytorch_model.bin")) || exists(filepath.Join(dir, "pytorch_model.bin.index.json")) {
			return nil, nil, fmt.Errorf("local: hf: %s has PyTorch .bin weights only; save the model with safetensors "+
				"(transformers: model.save_pretrained(dir, safe_serialization=True))", dir)
		}
		return nil, nil, fmt.Errorf("local: hf: %s has no weights (%s, or shards listed in model.safetensors.index.json)", dir, native.WeightsFile)
	}
	codec, err := newHFCodec(files)
	if err != nil {
		return nil, nil, fmt.Errorf("local: hf: %s: %w", dir, err)
	}
	return files, codec, nil
}

// hfModelConfig is what this package reads of config.json itself; the
// architecture is native.LoadHF's.
type hfModelConfig struct {
	EOSTokenID json.RawMessage `json:"eos_token_id"`
}

// loadHFModel loads the weights of dir with a context of maxContext
// (bounded by max_position_embeddings).
func loadHFModel(dir string, files HFFiles, maxContext int) (*native.Model, error) {
	// The architecture's context: max_position_embeddings (of the
	// text_config of an image-text model, or its configuration class's
	// default).
	cfg, err := native.ParseHFConfig(files[hfConfigFile], 0)
	if err != nil {
		return nil, fmt.Errorf("local: hf: %s: %w", dir, err)
	}
	maxSeq := 0 // native.LoadHF: max_position_embeddings
	if maxContext > 0 && (cfg.MaxSeq <= 0 || maxContext < cfg.MaxSeq) {
		maxSeq = maxContext
	}
	m, err := native.LoadHF(dir, maxSeq)
	if err != nil {
		return nil, fmt.Errorf("local: hf: %s: %w", dir, err)
	}
	return m, nil
}

// WriteHF writes model and files as a Hugging Face model directory in dir
// (created if needed): the weights as a float32 model.safetensors
// (native.SaveHF, lossless, so that a run resumes on the same weights),
// files' config.json with torch_dtype float32 (everything else as it was,
// so transformers and vLLM read the model as before), and the other files
// unchanged. model must be the architecture files describe, as a model
// from ReadHF trained in place is. Two exceptions: a Gemma model keeps its
// torch_dtype, which decides how its embedding scale √hidden_size is
// rounded (transformers and vLLM run it in that dtype; LoadHF rounds the
// scale to it), and the text decoder of a Gemma 3 image-text model, whose
// vision tower is not kept, is written as a text model (model_type
// gemma3_text, Gemma3ForCausalLM: its text_config, with the top level's
// dtype and token ids where it has none). The files are not fsynced:
// write into a directory that is then synced and swapped in
// (internal/atomicdir), as the trainer's checkpoints are.
func WriteHF(dir string, model *native.Model, files HFFiles) error {
	var src map[string]any
	if err := json.Unmarshal(files[hfConfigFile], &src); err != nil {
		return fmt.Errorf("local: hf: %s: %w", hfConfigFile, err)
	}
	if src["model_type"] == "gemma3" {
		text, ok := src["text_config"].(map[string]any)
		if !ok {
			return fmt.Errorf("local: hf: %s: model_type gemma3 without a text_config", hfConfigFile)
		}
		for _, k := range []string{"torch_dtype", "dtype", "bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings", "transformers_version"} {
			if v, ok := src[k]; ok {
				if _, has := text[k]; !has {
					text[k] = v
				}
			}
		}
		text["model_type"], text["architectures"] = "gemma3_text", []string{"Gemma3ForCausalLM"}
		src = text
	}
	if err := native.SaveHF(dir, model); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, hfConfigFile))
	if err != nil {
		return fmt.Errorf("local: hf: %w", err)
	}
	var written map[string]any
	if err := json.Unmarshal(raw, &written); err != nil {
		return fmt.Errorf("local: hf: %w", err)
	}
	// SaveHF describes the model in its own words; where the source
	// config says the same thing, the source's config is kept whole.
	for _, key := range []string{"hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
		"intermediate_size", "vocab_size", "tie_word_embeddings"} {
		want, ok := src[key]
		if ok && fmt.Sprint(want) != fmt.Sprint(written[key]) {
			return fmt.Errorf("local: hf: the model does not match %s: %s is %v there, %v in the model", hfConfigFile, key, want, written[key])
		}
	}
	if model.Config().EmbedScale == 0 {
		src["torch_dtype"] = "float32"
		if _, ok := src["dtype"]; ok { // the key's name since transformers 4.56
			src["dtype"] = "float32"
		}
	}
	cfg, err := json.MarshalIndent(src, "", "  ")
	if err != nil {
		return fmt.Errorf("local: hf: %w", err)
	}
	// The config.json written must read back as the model's architecture.
	want := model.Config()
	want.ModulePrefix, want.ValueHead = "", false
	if got, err := native.ParseHFConfig(cfg, want.MaxSeq); err != nil || got != want {
		return fmt.Errorf("local: hf: the model does not match %s: it reads as %+v, the model is %+v (%v)", hfConfigFile, got, want, err)
	}
	out := map[string][]byte{hfConfigFile: append(cfg, '\n')}
	for name, data := range files {
		if name == hfConfigFile {
			continue
		}
		if !slices.Contains(hfRequiredFiles, name) && !slices.Contains(hfOptionalFiles, name) {
			return fmt.Errorf("local: hf: unexpected file %q", name)
		}
		out[name] = data
	}
	for name, data := range out {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("local: hf: %w", err)
		}
	}
	return nil
}

// reasoningTags are the literal tags policy.Policy's Encode maps to their
// tokens (the agentrl tokenizer's Encode recognises the same four).
var reasoningTags = []string{"<think>", "</think>", "<answer>", "</answer>"}

// hfCodec is the text side of a Hugging Face model directory.
type hfCodec struct {
	tok     *hftok.Tokenizer
	tmpl    *chattemplate.Template
	cleanUp bool
	stops   []int
	// tags are the reasoning tags that are special tokens of the
	// tokenizer, which Encode cuts out itself (hftok recognises the
	// non-special ones).
	tags []hfTag
	// vocab is one past the largest token id.
	vocab int
	// prefix is what the post-processor adds to a text.
	prefix []int
	// toolFormat is the text/toolcall format the template shows its model
	// writing calls in ("" for none).
	toolFormat string
}

type hfTag struct {
	text string
	id   int
}

var _ Codec = (*hfCodec)(nil)

// newHFCodec parses the tokenizer, its configuration and chat template, and
// the stop tokens, and renders a probe conversation so that a template that
// cannot render fails when the policy is made rather than in a run.
func newHFCodec(files HFFiles) (*hfCodec, error) {
	tok, err := hftok.Parse(files[TokenizerFile])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TokenizerFile, err)
	}
	tc, err := hftok.ParseConfig(files[hfTokenizerConfigFile])
	if err != nil {
		return nil, err
	}
	if tc.ChatTemplate == "" {
		if tc.ChatTemplate, err = chatTemplateSource(files); err != nil {
			return nil, err
		}
	}
	tmpl, err := chattemplate.FromConfig(*tc)
	if err != nil {
		return nil, fmt.Errorf("%s: chat_template: %w", hfTokenizerConfigFile, err)
	}
	c := &hfCodec{tok: tok, tmpl: tmpl, cleanUp: tc.CleanUpTokenizationSpaces, vocab: tok.VocabSize(),
		prefix: tok.Encode("", true), toolFormat: toolcall.Detect(tc.ChatTemplate)}
	for _, at := range tok.AddedTokens() {
		c.vocab = max(c.vocab, at.ID+1)
		if at.Special && slices.Contains(reasoningTags, at.Content) {
			c.tags = append(c.tags, hfTag{at.Content, at.ID})
		}
	}
	if c.stops, err = hfStopTokens(tok, tc, files); err != nil {
		return nil, err
	}
	// One user message is what every chat template renders (some refuse
	// system messages, which is for the conversation's caller to find).
	if _, err := c.render([]policy.Message{{Role: policy.RoleUser, Content: "probe question"}}, nil, true); err != nil {
		return nil, fmt.Errorf("%s: the chat template cannot render a user message: %w", hfTokenizerConfigFile, err)
	}
	return c, nil
}

// chatTemplateSource finds the chat template where tokenizer_config.json
// has no single one: the "default" of a list of named templates, or
// chat_template.jinja.
func chatTemplateSource(files HFFiles) (string, error) {
	var cj struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	_ = json.Unmarshal(files[hfTokenizerConfigFile], &cj) // ParseConfig has read it already
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if json.Unmarshal(cj.ChatTemplate, &named) == nil && len(named) > 0 {
		var names []string
		for _, n := range named {
			if n.Name == "default" {
				return n.Template, nil
			}
			names = append(names, n.Name)
		}
		return "", fmt.Errorf("%s: chat_template lists templates %s but none named default", hfTokenizerConfigFile, strings.Join(names, ", "))
	}
	if src, ok := files[hfTemplateFile]; ok {
		return string(src), nil
	}
	return "", fmt.Errorf("%s has no chat_template (nor is there a %s): a model without a chat template cannot render conversations",
		hfTokenizerConfigFile, hfTemplateFile)
}

// hfStopTokens returns tokenizer_config.json's eos_token and the
// eos_token_id of generation_config.json (config.json's when
// generation_config.json has none), without repeats, in that order.
func hfStopTokens(tok *hftok.Tokenizer, tc *hftok.Config, files HFFiles) ([]int, error) {
	var stops []int
	add := func(ids ...int) {
		for _, id := range ids {
			if !slices.Contains(stops, id) {
				stops = append(stops, id)
			}
		}
	}
	if tc.EOSToken != "" {
		id, ok := tok.TokenToID(tc.EOSToken)
		if !ok {
			return nil, fmt.Errorf("%s: eos_token %q is not a token of %s", hfTokenizerConfigFile, tc.EOSToken, TokenizerFile)
		}
		add(id)
	}
	var fromGeneration []int
	if raw, ok := files[hfGenerationFile]; ok {
		var gc struct {
			EOS json.RawMessage `json:"eos_token_id"`
		}
		if err := json.Unmarshal(raw, &gc); err != nil {
			return nil, fmt.Errorf("%s: %w", hfGenerationFile, err)
		}
		ids, err := tokenIDs(gc.EOS)
		if err != nil {
			return nil, fmt.Errorf("%s: eos_token_id: %w", hfGenerationFile, err)
		}
		fromGeneration = ids
	}
	if fromGeneration == nil {
		var hc hfModelConfig
		if err := json.Unmarshal(files[hfConfigFile], &hc); err != nil {
			return nil, fmt.Errorf("%s: %w", hfConfigFile, err)
		}
		ids, err := tokenIDs(hc.EOSTokenID)
		if err != nil {
			return nil, fmt.Errorf("%s: eos_token_id: %w", hfConfigFile, err)
		}
		fromGeneration = ids
	}
	add(fromGeneration...)
	if len(stops) == 0 {
		return nil, fmt.Errorf("no stop token: %s has no eos_token, and neither %s nor %s an eos_token_id",
			hfTokenizerConfigFile, hfGenerationFile, hfConfigFile)
	}
	return stops, nil
}

// tokenIDs reads an eos_token_id: absent or null, a number, or a list of
// numbers.
func tokenIDs(raw json.RawMessage) ([]int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		raw = []byte(fmt.Sprintf("[%d]", one))
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, fmt.Errorf("want a token id or a list of them, got %s", raw)
	}
	for _, id := range ids {
		if id < 0 {
			return nil, fmt.Errorf("negative token id %d", id)
		}
	}
	return ids, nil
}

// render renders msgs with the chat template, offering tools when there
// are any, as apply_chat_template(messages, tools=...) does: each tool as
// {"type": "function", "function": {name, description, parameters}}.
func (c *hfCodec) render(msgs []policy.Message, tools []policy.Tool, addGenerationPrompt bool) (string, error) {
	cm := make([]chattemplate.Message, len(msgs))
	for i, m := range msgs {
		cm[i] = chattemplate.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			cm[i].ToolCalls = append(cm[i].ToolCalls, chattemplate.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
		}
	}
	ctx := chattemplate.Context{Messages: cm, AddGenerationPrompt: addGenerationPrompt}
	for _, t := range tools {
		// A struct keeps transformers' key order, which tojson shows.
		fn, err := json.Marshal(toolcall.APITool{Type: "function", Function: t})
		if err != nil {
			return "", fmt.Errorf("tool %s: %w", t.Name, err)
		}
		ctx.Tools = append(ctx.Tools, json.RawMessage(fn))
	}
	return c.tmpl.Render(ctx)
}

func (c *hfCodec) RenderChat(msgs []policy.Message, addGenerationPrompt bool) ([]int, error) {
	return c.RenderChatTools(msgs, nil, addGenerationPrompt)
}

// RenderChatTools renders msgs offering tools to the model.
func (c *hfCodec) RenderChatTools(msgs []policy.Message, tools []policy.Tool, addGenerationPrompt bool) ([]int, error) {
	text, err := c.render(msgs, tools, addGenerationPrompt)
	if err != nil {
		return nil, err // chattemplate's errors name themselves
	}
	// As apply_chat_template(tokenize=True): the template writes the
	// special tokens as text, and they are recognised.
	return c.tok.Encode(text, false), nil
}

func (c *hfCodec) Encode(text string) []int {
	opts := hftok.EncodeOptions{} // control tokens' text stays text
	var ids []int
	for len(c.tags) > 0 {
		at, tag := -1, hfTag{}
		for _, t := range c.tags {
			if i := strings.Index(text, t.text); i >= 0 && (at < 0 || i < at) {
				at, tag = i, t
			}
		}
		if at < 0 {
			break
		}
		// HF cuts added tokens out of the text before pre-tokenizing, so
		// encoding the text on either side apart is what it does too.
		ids = append(c.tok.AppendEncode(ids, text[:at], opts), tag.id)
		text = text[at+len(tag.text):]
	}
	return c.tok.AppendEncode(ids, text, opts)
}

func (c *hfCodec) Decode(ids []int) (string, error) {
	return c.tok.DecodeWithOptions(ids, hftok.DecodeOptions{CleanUpTokenizationSpaces: c.cleanUp}), nil
}

// ToolCallFormat is the format the template shows calls written in.
func (c *hfCodec) ToolCallFormat() string { return c.toolFormat }

func (c *hfCodec) StopTokens() []int     { return c.stops }
func (c *hfCodec) TextPrefix() []int     { return c.prefix }
func (c *hfCodec) VocabSize() int        { return c.vocab }
func (c *hfCodec) IsSpecial(id int) bool { return c.tok.IsSpecial(id) }

func (c *hfCodec) TokenBytes(id int) ([]byte, error) {
	if b, ok := c.tok.TokenBytes(id); ok {
		return b, nil
	}
	if id < 0 {
		return nil, fmt.Errorf("token id %d is negative", id)
	}
	// An embedding row beyond the tokenizer (padding) decodes to nothing,
	// as in Decode.
	return nil, nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
