package native

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// This file converts between the native layout and Hugging Face
// checkpoints (config.json + model.safetensors, or shards listed in
// model.safetensors.index.json) of the decoders the native model computes:
// Qwen2, Qwen3, Llama (with Llama 3.1's RoPE scaling), Mistral and Gemma 3
// (text). Only names differ, and Q/K/V and gate/up are fused here: our
// wqkv is the row-wise concatenation of q_proj, k_proj and v_proj, our wgu
// that of gate_proj and up_proj.
//
// Adding an architecture: map its config.json onto Config in
// hfConfig.native (refusing every key whose value the native model does
// not compute), its tensor names in Model.hfParts, and write its
// config.json back in SaveHF; a numerical feature the Config cannot
// express yet goes into the forward (forward.go, backward.go, infer.go,
// sample.go) behind a Config field whose zero value is the old behaviour.
// scripts/hf_logits_torch.py, model/hftest and TestTorchOracle then check
// it against PyTorch.

// hfConfig is the subset of a Hugging Face config.json that describes a
// decoder LoadHF converts. Pointers tell an absent key (the configuration
// class's default) from a zero one.
type hfConfig struct {
	ModelType     string          `json:"model_type"`
	Architectures []string        `json:"architectures,omitempty"`
	HiddenSize    int             `json:"hidden_size"`
	Layers        int             `json:"num_hidden_layers"`
	Heads         int             `json:"num_attention_heads"`
	KVHeads       int             `json:"num_key_value_heads"`
	Intermediate  int             `json:"intermediate_size"`
	Vocab         int             `json:"vocab_size"`
	MaxPositions  int             `json:"max_position_embeddings"`
	RopeTheta     float64         `json:"rope_theta"`
	RMSNormEps    float64         `json:"rms_norm_eps"`
	Tie           *bool           `json:"tie_word_embeddings"`
	HiddenAct     string          `json:"hidden_act,omitempty"`
	AttentionBias *bool           `json:"attention_bias,omitempty"`
	MLPBias       *bool           `json:"mlp_bias,omitempty"`
	HeadDim       int             `json:"head_dim,omitempty"`
	RopeScaling   json.RawMessage `json:"rope_scaling,omitempty"`
	// RopeParameters holds the RoPE settings in the config.json files of
	// transformers 5, which writes rope_theta inside it rather than at the
	// top level (and rope scaling as a rope_type other than "default");
	// for Gemma 3 it has one such entry per layer type.
	RopeParameters json.RawMessage `json:"rope_parameters,omitempty"`
	TorchDtype     string          `json:"torch_dtype,omitempty"`
	Dtype          string          `json:"dtype,omitempty"` // torch_dtype's name since transformers 4.56

	// Sliding windows: Mistral's (every layer), Qwen2's and Qwen3's
	// (use_sliding_window, from layer max_window_layers on), Gemma 3's
	// (layer_types, or every sliding_window_pattern-th layer global).
	SlidingWindow        *int     `json:"sliding_window,omitempty"`
	UseSlidingWindow     bool     `json:"use_sliding_window,omitempty"`
	MaxWindowLayers      *int     `json:"max_window_layers,omitempty"`
	SlidingWindowPattern *int     `json:"sliding_window_pattern,omitempty"`
	LayerTypes           []string `json:"layer_types,omitempty"`

	// Gemma.
	HiddenActivation      string          `json:"hidden_activation,omitempty"`
	QueryPreAttnScalar    *float64        `json:"query_pre_attn_scalar,omitempty"`
	RopeLocalBaseFreq     *float64        `json:"rope_local_base_freq,omitempty"`
	FinalLogitSoftcapping json.RawMessage `json:"final_logit_softcapping,omitempty"`
	AttnLogitSoftcapping  json.RawMessage `json:"attn_logit_softcapping,omitempty"`
	// TextConfig is the text decoder's configuration in an image-text
	// model's config.json (model_type gemma3).
	TextConfig json.RawMessage `json:"text_config,omitempty"`

	// wrapped is set for the text decoder of an image-text checkpoint,
	// whose weights are named model.language_model.* (or, as older
	// transformers saved them, language_model.model.*).
	wrapped bool
}

// hfDefaultNormEps is rms_norm_eps when config.json leaves it out: the
// default of transformers' LlamaConfig, Qwen2Config, Qwen3Config,
// MistralConfig and Gemma3TextConfig (the native default, 1e-5, is not).
const hfDefaultNormEps = 1e-6

// Model types LoadHF converts.
const (
	hfQwen2      = "qwen2"
	hfQwen3      = "qwen3"
	hfLlama      = "llama"
	hfMistral    = "mistral"
	hfGemma3Text = "gemma3_text"
	hfGemma3     = "gemma3" // an image-text model: its text_config is a gemma3_text
)

// LoadHF loads a Hugging Face checkpoint directory of a Qwen2, Qwen3,
// Llama, Mistral or Gemma 3 decoder (docs/training.md, "Bring your own
// model", lists what is refused), widening BF16/F16 weights to float32.
// maxSeq bounds the sequence length (and the RoPE tables); 0 means the
// checkpoint's max_position_embeddings. The model has no value head. The
// tokenizer is not part of this package. Of a Gemma 3 image-text
// checkpoint (model_type gemma3), the text decoder is loaded and the
// vision tower left out.
func LoadHF(dir string, maxSeq int) (*Model, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("native: hf: %w", err)
	}
	hc, err := parseHFConfig(raw)
	if err != nil {
		return nil, err
	}
	cfg, err := hc.native(maxSeq)
	if err != nil {
		return nil, err
	}
	m, err := newZero(cfg)
	if err != nil {
		return nil, fmt.Errorf("native: hf: %w", err)
	}
	files, err := hfWeightFiles(dir)
	if err != nil {
		return nil, err
	}
	byName := map[string]NamedTensor{}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("native: hf: %w", err)
		}
		ts, _, err := readSafetensors(data, true)
		if err != nil {
			return nil, fmt.Errorf("native: hf: %s: %w", f, err)
		}
		for _, t := range ts {
			name := t.Name
			if hc.wrapped {
				var skip bool
				if name, skip = wrappedTensorName(name); skip {
					continue
				}
			}
			if _, dup := byName[name]; dup {
				return nil, fmt.Errorf("native: hf: tensor %q appears in two files (or in both the old and the new layout)", t.Name)
			}
			byName[name] = t
		}
	}
	take := func(name string, shape ...int) ([]float32, error) {
		t, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("native: hf: missing tensor %q", name)
		}
		if !slices.Equal(t.Shape, shape) {
			return nil, fmt.Errorf("native: hf: tensor %q has shape %v, config needs %v", name, t.Shape, shape)
		}
		delete(byName, name)
		return t.Data, nil
	}
	for _, p := range m.hfParts(cfg.modulePrefix()) {
		dst := m.Tensor(p.tensor)
		off := 0
		for _, src := range p.sources {
			data, err := take(src.name, src.shape...)
			if err != nil {
				return nil, err
			}
			copy(dst[off:], data)
			off += len(data)
		}
	}
	for name := range byName {
		if strings.HasSuffix(name, "rotary_emb.inv_freq") {
			continue // recomputed from rope_theta
		}
		if name == "lm_head.weight" && cfg.TieEmbeddings {
			continue // some tied checkpoints store the copy anyway
		}
		return nil, fmt.Errorf("native: hf: unexpected tensor %q (unsupported architecture?)", name)
	}
	return m, nil
}

// wrappedTensorName returns the name under which LoadHF looks for a tensor
// of a Gemma 3 image-text checkpoint: the text decoder's weights as
// transformers names them since 4.52 (model.language_model.*, lm_head.*),
// also when the file has them in the older layout
// (language_model.model.*, language_model.lm_head.*), or skip for the
// vision tower's and the projector's.
func wrappedTensorName(name string) (string, bool) {
	for _, p := range []string{"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."} {
		if strings.HasPrefix(name, p) {
			return "", true
		}
	}
	if rest, ok := strings.CutPrefix(name, "language_model.model."); ok {
		return "model.language_model." + rest, false
	}
	if rest, ok := strings.CutPrefix(name, "language_model."); ok {
		return rest, false // language_model.lm_head.weight
	}
	return name, false
}

// hfArchitectures are the config.json architectures LoadHF converts, by
// model type: the causal language models of the supported model types
// (and, for gemma3, the image-text model whose text decoder is loaded).
// Any other head (a classifier, a reward model) has tensors the native
// model lacks, and is named in the error rather than reported as an
// unexpected tensor.
var hfArchitectures = map[string][]string{
	hfQwen2:      {"Qwen2ForCausalLM"},
	hfQwen3:      {"Qwen3ForCausalLM"},
	hfLlama:      {"LlamaForCausalLM"},
	hfMistral:    {"MistralForCausalLM"},
	hfGemma3Text: {"Gemma3ForCausalLM"},
	hfGemma3:     {"Gemma3ForConditionalGeneration", "Gemma3ForCausalLM"},
}

// parseHFConfig reads config.json: the keys that are absent take the
// defaults of the model type's configuration class where they differ
// from the zero value (Gemma3TextConfig's, for gemma3_text and a gemma3
// model's text_config). For a gemma3 model it returns the text decoder's
// configuration, marked wrapped.
func parseHFConfig(raw []byte) (hfConfig, error) {
	var head struct {
		ModelType     string          `json:"model_type"`
		Architectures []string        `json:"architectures"`
		TextConfig    json.RawMessage `json:"text_config"`
		TorchDtype    string          `json:"torch_dtype"`
		Dtype         string          `json:"dtype"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return hfConfig{}, fmt.Errorf("native: hf: config.json: %w", err)
	}
	var hc hfConfig
	wrapped := head.ModelType == hfGemma3
	if wrapped {
		if isEmptyJSON(head.TextConfig) {
			return hfConfig{}, errors.New("native: hf: config.json: model_type gemma3 without a text_config")
		}
		for _, a := range head.Architectures {
			if !slices.Contains(hfArchitectures[hfGemma3], a) {
				return hfConfig{}, fmt.Errorf("native: hf: architecture %q is not supported (want one of %s)", a, strings.Join(hfArchitectures[hfGemma3], ", "))
			}
		}
		raw = head.TextConfig
	}
	var mt struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(raw, &mt); err != nil {
		return hfConfig{}, fmt.Errorf("native: hf: config.json: %w", err)
	}
	if wrapped && mt.ModelType == "" {
		mt.ModelType = hfGemma3Text
	}
	if mt.ModelType == hfGemma3Text {
		// Gemma3TextConfig's defaults (transformers 4.50 to 5), which a
		// gemma3 model's text_config relies on for most keys.
		hc = hfConfig{Vocab: 262208, HiddenSize: 2304, Intermediate: 9216, Layers: 26, Heads: 8, KVHeads: 4, HeadDim: 256,
			HiddenActivation: "gelu_pytorch_tanh", MaxPositions: 131072, RopeTheta: 1e6,
			QueryPreAttnScalar: ptr(256.0), SlidingWindow: ptr(4096), RopeLocalBaseFreq: ptr(1e4), SlidingWindowPattern: ptr(6)}
	}
	if err := json.Unmarshal(raw, &hc); err != nil {
		return hfConfig{}, fmt.Errorf("native: hf: config.json: %w", err)
	}
	if wrapped {
		if hc.ModelType != "" && hc.ModelType != hfGemma3Text {
			return hfConfig{}, fmt.Errorf("native: hf: config.json: a gemma3 model's text_config has model_type %q, want gemma3_text", hc.ModelType)
		}
		hc.ModelType, hc.Architectures, hc.wrapped = hfGemma3, head.Architectures, true
		hc.TorchDtype = cmp.Or(hc.TorchDtype, hc.Dtype, head.TorchDtype, head.Dtype)
	}
	return hc, nil
}

func ptr[T any](v T) *T { return &v }

// ParseHFConfig returns the configuration LoadHF gives the model of a
// Hugging Face config.json (maxSeq as LoadHF's), or why it refuses it,
// without reading weights.
func ParseHFConfig(raw []byte, maxSeq int) (Config, error) {
	hc, err := parseHFConfig(raw)
	if err != nil {
		return Config{}, err
	}
	return hc.native(maxSeq)
}

// native converts the Hugging Face configuration.
func (hc hfConfig) native(maxSeq int) (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("native: hf: "+format, args...)
	}
	archs, ok := hfArchitectures[hc.ModelType]
	if !ok {
		return bad("model_type %q is not supported (want qwen2, qwen3, llama, mistral, gemma3_text or gemma3)", hc.ModelType)
	}
	for _, a := range hc.Architectures {
		if !slices.Contains(archs, a) {
			return bad("architecture %q is not supported for model_type %s (want %s)", a, hc.ModelType, strings.Join(archs, " or "))
		}
	}
	gemma := hc.ModelType == hfGemma3Text || hc.ModelType == hfGemma3
	rope, err := hc.ropeSettings(gemma)
	if err != nil {
		return Config{}, err
	}
	eps := hc.RMSNormEps
	if eps == 0 {
		eps = hfDefaultNormEps
	}
	cfg := Config{
		Vocab: hc.Vocab, DModel: hc.HiddenSize, Layers: hc.Layers, Heads: hc.Heads, KVHeads: hc.KVHeads,
		DFF: hc.Intermediate, MaxSeq: hc.MaxPositions, RopeTheta: rope.theta, NormEps: float32(eps),
		RopeScaling: rope.scaling, TieEmbeddings: hc.Tie != nil && *hc.Tie,
	}
	attnBias := hc.AttentionBias != nil && *hc.AttentionBias
	if hc.MLPBias != nil && *hc.MLPBias {
		return bad("mlp_bias (biases on the MLP's projections) is not supported")
	}
	headDim := 0 // the head width when it is not hidden_size/heads
	if hc.HeadDim != 0 && (hc.Heads == 0 || hc.HeadDim*hc.Heads != hc.HiddenSize) {
		headDim = hc.HeadDim
	}
	act := hc.HiddenAct
	switch hc.ModelType {
	case hfQwen2:
		cfg.QKVBias = true
	case hfQwen3:
		if attnBias {
			return bad("attention_bias (biases on q/k/v/o_proj) is not supported for qwen3")
		}
		cfg.QKNorm = true
		if hc.HeadDim == 0 {
			headDim = 128 // Qwen3Config's default
		}
	case hfLlama, hfMistral:
		if attnBias {
			return bad("attention_bias (biases on q/k/v/o_proj) is not supported")
		}
	case hfGemma3Text, hfGemma3:
		if attnBias {
			return bad("attention_bias is not supported for Gemma 3")
		}
		if hc.Tie == nil {
			cfg.TieEmbeddings = true // Gemma3TextConfig's default
		}
		cfg.QKNorm, cfg.NormPlusOne, cfg.SandwichNorm = true, true, true
		act = cmp.Or(hc.HiddenActivation, act)
		if act != "gelu_pytorch_tanh" {
			return bad("hidden_activation %q is not supported for Gemma 3 (want gelu_pytorch_tanh)", act)
		}
		cfg.Activation, act = ActGELUTanh, ""
		for _, c := range []struct {
			key string
			v   json.RawMessage
		}{{"final_logit_softcapping", hc.FinalLogitSoftcapping}, {"attn_logit_softcapping", hc.AttnLogitSoftcapping}} {
			if !isEmptyJSON(c.v) {
				return bad("%s %s is not supported (Gemma 3 has none; Gemma 2 is not supported)", c.key, c.v)
			}
		}
		if hc.QueryPreAttnScalar == nil || !(*hc.QueryPreAttnScalar > 0) {
			return bad("query_pre_attn_scalar must be positive")
		}
		cfg.QueryPreAttnScalar = *hc.QueryPreAttnScalar
		scale, err := gemmaEmbedScale(hc.HiddenSize, hc.TorchDtype, hc.Dtype)
		if err != nil {
			return Config{}, err
		}
		cfg.EmbedScale = scale
		cfg.RopeLocalTheta = rope.localTheta
		if hc.wrapped {
			cfg.ModulePrefix = "model.language_model"
		}
	}
	if act != "" && act != "silu" {
		return bad("hidden_act %q is not supported (want silu)", act)
	}
	cfg.HeadSize = headDim
	types, window, err := hc.slidingLayers()
	if err != nil {
		return Config{}, err
	}
	cfg.LayerTypes, cfg.SlidingWindow = types, window
	if !strings.Contains(types, "s") {
		cfg.RopeLocalTheta = 0 // no sliding layer to use it
	}
	if maxSeq > 0 {
		cfg.MaxSeq = maxSeq
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("native: hf: %w", err)
	}
	return cfg.withDefaults(), nil // as the model reports it
}

// slidingLayers returns the layers' attention types, one letter each ('g'
// global, 's' sliding window; "" when every layer is global) and the
// window, as transformers' modeling code applies them: Gemma 3's
// layer_types, or every sliding_window_pattern-th layer global; Mistral's
// sliding_window on every layer (or as layer_types says); Qwen2's and
// Qwen3's with use_sliding_window, on the layers from max_window_layers on
// (or as layer_types says); none on Llama. A window at least as long as
// the context changes nothing and is dropped.
func (hc hfConfig) slidingLayers() (string, int, error) {
	window := 0
	if hc.SlidingWindow != nil {
		window = *hc.SlidingWindow
	}
	maxPos := hc.MaxPositions
	letters := make([]byte, hc.Layers)
	for i := range letters {
		letters[i] = 'g'
	}
	fromTypes := func() error {
		if len(hc.LayerTypes) != hc.Layers {
			return fmt.Errorf("native: hf: layer_types has %d entries for %d layers", len(hc.LayerTypes), hc.Layers)
		}
		for i, t := range hc.LayerTypes {
			switch t {
			case "full_attention":
			case "sliding_attention":
				letters[i] = 's'
			default:
				return fmt.Errorf("native: hf: layer_types[%d] %q is not supported (full_attention or sliding_attention)", i, t)
			}
		}
		return nil
	}
	switch hc.ModelType {
	case hfGemma3Text, hfGemma3:
		if hc.LayerTypes != nil {
			if err := fromTypes(); err != nil {
				return "", 0, err
			}
		} else {
			p := 6
			if hc.SlidingWindowPattern != nil {
				p = *hc.SlidingWindowPattern
			}
			if p < 1 {
				return "", 0, fmt.Errorf("native: hf: sliding_window_pattern %d must be positive", p)
			}
			for i := range letters {
				if (i+1)%p != 0 {
					letters[i] = 's'
				}
			}
		}
	case hfMistral, hfLlama:
		if hc.LayerTypes != nil {
			// transformers 5 may write the layer types of any model.
			if err := fromTypes(); err != nil {
				return "", 0, err
			}
		} else if hc.ModelType == hfMistral && window > 0 {
			for i := range letters {
				letters[i] = 's'
			}
		}
		if hc.ModelType == hfLlama && strings.Contains(string(letters), "s") {
			return "", 0, errors.New("native: hf: sliding-window attention is not supported for llama")
		}
	case hfQwen2, hfQwen3:
		if !hc.UseSlidingWindow {
			break
		}
		if hc.LayerTypes != nil {
			if err := fromTypes(); err != nil {
				return "", 0, err
			}
			break
		}
		from := hc.Layers
		if hc.MaxWindowLayers != nil {
			from = *hc.MaxWindowLayers
		}
		for i := from; i < hc.Layers; i++ {
			letters[i] = 's'
		}
	}
	types := string(letters)
	if !strings.Contains(types, "s") {
		return "", 0, nil
	}
	if window < 1 {
		return "", 0, fmt.Errorf("native: hf: sliding layers need a positive sliding_window (got %d)", window)
	}
	if maxPos > 0 && window >= maxPos {
		return "", 0, nil // the window covers every position
	}
	return types, window, nil
}

// gemmaEmbedScale returns Gemma's embedding scale: √hidden_size as a
// float32, rounded to the checkpoint's dtype (torch_dtype, or dtype) as
// transformers rounds it (embed_scale.to(weight.dtype)) when it runs the
// model in that dtype, as it and vLLM do by default.
func gemmaEmbedScale(hidden int, dtypes ...string) (float32, error) {
	s := float32(math.Sqrt(float64(hidden)))
	switch dt := cmp.Or(dtypes...); dt {
	case "", "float32":
		return s, nil
	case "bfloat16":
		return roundBF16(s), nil
	case "float16":
		return roundF16(s), nil
	default:
		return 0, fmt.Errorf("native: hf: torch_dtype %q is not supported", dt)
	}
}

// roundBF16 rounds x to the nearest bfloat16 (ties to even).
func roundBF16(x float32) float32 {
	b := math.Float32bits(x)
	b = (b + 0x7fff + (b>>16)&1) &^ 0xffff
	return math.Float32frombits(b)
}

// roundF16 rounds x, a normal float16 value's magnitude, to the nearest
// float16 (ties to even).
func roundF16(x float32) float32 {
	e := math.Floor(math.Log2(math.Abs(float64(x))))
	ulp := math.Ldexp(1, int(e)-10)
	return float32(math.RoundToEven(float64(x)/ulp) * ulp)
}

// ropeSettings is the RoPE of a configuration: the base and scaling of
// the global layers and the base of the sliding ones.
type ropeSettings struct {
	theta      float64
	scaling    RopeScaling
	localTheta float64
}

// ropeSettings reads the RoPE settings: rope_parameters when present
// (transformers 5, which reads them there first; for Gemma 3 one entry
// per layer type), else rope_theta and rope_scaling (transformers 4;
// Gemma 3's rope_local_base_freq for the sliding layers, which transformers
// does not rescale). Absent, rope_theta is the native default 10000, as
// transformers' default (Gemma 3's 1e6 is set by parseHFConfig). It
// refuses rope types other than default, linear and llama3, and keys it
// does not know, naming them.
func (hc hfConfig) ropeSettings(gemma bool) (ropeSettings, error) {
	rs := ropeSettings{theta: hc.RopeTheta}
	if hc.RopeLocalBaseFreq != nil {
		rs.localTheta = *hc.RopeLocalBaseFreq
	}
	raw := bytes.TrimSpace(hc.RopeParameters)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		var err error
		rs.scaling, _, err = parseRope("rope_scaling", hc.RopeScaling, 0, false)
		return rs, err
	}
	if !isEmptyJSON(hc.RopeScaling) {
		// transformers 5 moves rope_scaling into rope_parameters; a file
		// with both is ambiguous.
		var a, b any
		if json.Unmarshal(hc.RopeScaling, &a) != nil || json.Unmarshal(raw, &b) != nil || !reflect.DeepEqual(a, b) {
			return rs, errors.New("native: hf: both rope_scaling and rope_parameters are set, differently")
		}
	}
	var byType map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byType); err != nil {
		return rs, fmt.Errorf("native: hf: rope_parameters: %w", err)
	}
	if _, ok := byType["full_attention"]; ok && gemma {
		for k := range byType {
			if k != "full_attention" && k != "sliding_attention" {
				return rs, fmt.Errorf("native: hf: rope_parameters key %q is not supported", k)
			}
		}
		var err error
		if rs.scaling, rs.theta, err = parseRope("rope_parameters full_attention", byType["full_attention"], rs.theta, true); err != nil {
			return rs, err
		}
		if sl, ok := byType["sliding_attention"]; ok {
			var local RopeScaling
			if local, rs.localTheta, err = parseRope("rope_parameters sliding_attention", sl, rs.localTheta, true); err != nil {
				return rs, err
			}
			if local != (RopeScaling{}) {
				return rs, errors.New("native: hf: rope_parameters sliding_attention: a scaled RoPE on the sliding layers is not supported")
			}
		}
		return rs, nil
	}
	var err error
	rs.scaling, rs.theta, err = parseRope("rope_parameters", raw, rs.theta, true)
	return rs, err
}

// parseRope reads one RoPE description (what names it in errors): its
// scaling, and, with withTheta, its rope_theta (theta when absent).
func parseRope(what string, raw json.RawMessage, theta float64, withTheta bool) (RopeScaling, float64, error) {
	if isEmptyJSON(raw) {
		return RopeScaling{}, theta, nil
	}
	var rp map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rp); err != nil {
		return RopeScaling{}, 0, fmt.Errorf("native: hf: %s: %w", what, err)
	}
	var rt string
	for _, k := range []string{"rope_type", "type"} {
		if v, ok := rp[k]; ok {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return RopeScaling{}, 0, fmt.Errorf("native: hf: %s %s: %w", what, k, err)
			}
			if rt != "" && s != rt {
				return RopeScaling{}, 0, fmt.Errorf("native: hf: %s: rope_type %q and type %q differ", what, rt, s)
			}
			rt = s
		}
	}
	keys := map[string]bool{"rope_type": true, "type": true}
	if withTheta {
		keys["rope_theta"] = true
	}
	var sc RopeScaling
	num := func(k string, dst *float64) error {
		v, ok := rp[k]
		if !ok {
			return fmt.Errorf("native: hf: %s: rope type %s needs %s", what, rt, k)
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("native: hf: %s %s: %w", what, k, err)
		}
		keys[k] = true
		return nil
	}
	switch rt {
	case "", "default":
	case "linear":
		sc.Type = "linear"
		if err := num("factor", &sc.Factor); err != nil {
			return RopeScaling{}, 0, err
		}
	case "llama3":
		sc.Type = "llama3"
		var orig float64
		for _, f := range []struct {
			key string
			dst *float64
		}{{"factor", &sc.Factor}, {"low_freq_factor", &sc.LowFreqFactor}, {"high_freq_factor", &sc.HighFreqFactor},
			{"original_max_position_embeddings", &orig}} {
			if err := num(f.key, f.dst); err != nil {
				return RopeScaling{}, 0, err
			}
		}
		if orig != math.Trunc(orig) || orig < 1 || orig > maxSeqLimit {
			return RopeScaling{}, 0, fmt.Errorf("native: hf: %s: original_max_position_embeddings %v is not a positive integer", what, orig)
		}
		sc.OriginalMaxPositions = int(orig)
	default:
		return RopeScaling{}, 0, fmt.Errorf("native: hf: %s: rope type %q is not supported (want default, linear or llama3)", what, rt)
	}
	if withTheta {
		if v, ok := rp["rope_theta"]; ok {
			if err := json.Unmarshal(v, &theta); err != nil {
				return RopeScaling{}, 0, fmt.Errorf("native: hf: %s rope_theta: %w", what, err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rp)) {
		if !keys[k] {
			return RopeScaling{}, 0, fmt.Errorf("native: hf: %s key %q is not supported (rope type %s)", what, k, cmp.Or(rt, "default"))
		}
	}
	if err := sc.validate(); err != nil {
		return RopeScaling{}, 0, fmt.Errorf("native: hf: %s: %w", what, err)
	}
	return sc, theta, nil
}

// hfWeightFiles lists the safetensors files of a checkpoint.
func hfWeightFiles(dir string) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	if errors.Is(err, os.ErrNotExist) {
		return []string{"model.safetensors"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("native: hf: %w", err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("native: hf: model.safetensors.index.json: %w", err)
	}
	var files []string
	for _, f := range idx.WeightMap {
		if f != filepath.Base(f) {
			return nil, fmt.Errorf("native: hf: index names file %q outside the checkpoint", f)
		}
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files, nil
}

// hfPart maps one native tensor to the Hugging Face tensors whose rows,
// concatenated in order, make it up.
type hfPart struct {
	tensor  string
	sources []hfSource
}

type hfSource struct {
	name  string
	shape []int
}

// hfParts maps the model's tensors to a checkpoint's, the decoder's named
// under prefix ("model", or a Gemma 3 image-text model's
// "model.language_model").
func (m *Model) hfParts(prefix string) []hfPart {
	c := m.cfg
	d, f, hd := c.DModel, c.DFF, c.HeadDim()
	q, kv := c.Heads*hd, c.KVHeads*hd
	src := func(name string, shape ...int) hfSource { return hfSource{name, shape} }
	one := func(tensor, name string, shape ...int) hfPart { return hfPart{tensor, []hfSource{src(name, shape...)}} }
	parts := []hfPart{one("embed", prefix+".embed_tokens.weight", c.Vocab, d)}
	for l := 0; l < c.Layers; l++ {
		hp := fmt.Sprintf("%s.layers.%d.", prefix, l)
		np := fmt.Sprintf("layers.%d.", l)
		parts = append(parts,
			one(np+"attn_norm", hp+"input_layernorm.weight", d),
			hfPart{np + "wqkv", []hfSource{src(hp+"self_attn.q_proj.weight", q, d), src(hp+"self_attn.k_proj.weight", kv, d), src(hp+"self_attn.v_proj.weight", kv, d)}},
		)
		if c.QKVBias {
			parts = append(parts, hfPart{np + "bqkv", []hfSource{src(hp+"self_attn.q_proj.bias", q), src(hp+"self_attn.k_proj.bias", kv), src(hp+"self_attn.v_proj.bias", kv)}})
		}
		if c.QKNorm {
			parts = append(parts, one(np+"q_norm", hp+"self_attn.q_norm.weight", hd), one(np+"k_norm", hp+"self_attn.k_norm.weight", hd))
		}
		parts = append(parts, one(np+"wo", hp+"self_attn.o_proj.weight", d, q))
		if c.SandwichNorm {
			// Gemma's post_attention_layernorm norms the attention's
			// output; pre_feedforward_layernorm is the MLP's input norm.
			parts = append(parts,
				one(np+"attn_post_norm", hp+"post_attention_layernorm.weight", d),
				one(np+"mlp_norm", hp+"pre_feedforward_layernorm.weight", d))
		} else {
			parts = append(parts, one(np+"mlp_norm", hp+"post_attention_layernorm.weight", d))
		}
		parts = append(parts,
			hfPart{np + "wgu", []hfSource{src(hp+"mlp.gate_proj.weight", f, d), src(hp+"mlp.up_proj.weight", f, d)}},
			one(np+"wdown", hp+"mlp.down_proj.weight", d, f),
		)
		if c.SandwichNorm {
			parts = append(parts, one(np+"mlp_post_norm", hp+"post_feedforward_layernorm.weight", d))
		}
	}
	parts = append(parts, one("final_norm", prefix+".norm.weight", d))
	if !c.TieEmbeddings {
		parts = append(parts, one("lm_head", "lm_head.weight", c.Vocab, d))
	}
	return parts
}

// modulePrefix is the decoder's module path in Hugging Face's naming.
func (c Config) modulePrefix() string { return cmp.Or(c.ModulePrefix, "model") }

// SaveHF writes the model as a Hugging Face checkpoint (config.json and a
// float32 model.safetensors) into dir: as model_type gemma3_text when it
// has Gemma's layout (norms scaling by 1+w, four a block, GeGLU), qwen3
// with query/key norms, qwen2 with QKV biases, mistral when every layer
// has a sliding window, and llama otherwise; a configuration none of them
// has is an error. The text decoder of a Gemma 3 image-text model is
// written as a gemma3_text model. LoadHF reads the directory back as the
// same model. A value head is not exported, and a model with adapters is
// refused (SavePEFT writes them). The files are written in place; the
// tokenizer files are the caller's.
func SaveHF(dir string, m *Model) error {
	if m.lora != nil {
		return errLoRACheckpoint
	}
	hc, err := m.cfg.hfConfig()
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(hc, "", "  ")
	if err != nil {
		return fmt.Errorf("native: hf: %w", err)
	}
	var tensors []NamedTensor
	for _, p := range m.hfParts("model") {
		data := m.Tensor(p.tensor)
		off := 0
		for _, s := range p.sources {
			n, _ := numel(s.shape)
			tensors = append(tensors, NamedTensor{Name: s.name, Shape: s.shape, Data: data[off : off+n]})
			off += n
		}
	}
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, tensors, map[string]string{"format": "pt"}); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("native: hf: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("native: hf: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("native: hf: %w", err)
	}
	return nil
}

// hfConfig returns the config.json of c as a Hugging Face model (see
// SaveHF), or why none describes it.
func (c Config) hfConfig() (hfConfig, error) {
	hc := hfConfig{
		HiddenSize: c.DModel, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
		Intermediate: c.DFF, Vocab: c.Vocab, MaxPositions: c.MaxSeq, RopeTheta: c.RopeTheta,
		RMSNormEps: float64(c.NormEps), Tie: ptr(c.TieEmbeddings), HiddenAct: "silu", TorchDtype: "float32",
	}
	bad := func(why string) (hfConfig, error) {
		return hfConfig{}, fmt.Errorf("native: hf: no Hugging Face architecture LoadHF reads has %s", why)
	}
	if rs := c.RopeScaling; rs.Type != "" {
		m := map[string]any{"rope_type": rs.Type, "factor": rs.Factor}
		if rs.Type == "llama3" {
			m["low_freq_factor"], m["high_freq_factor"] = rs.LowFreqFactor, rs.HighFreqFactor
			m["original_max_position_embeddings"] = rs.OriginalMaxPositions
		}
		hc.RopeScaling, _ = json.Marshal(m)
	}
	if c.HeadSize != 0 {
		hc.HeadDim = c.HeadSize
	}
	sliding := strings.Contains(c.LayerTypes, "s")
	var layerTypes []string
	for i := range c.Layers {
		layerTypes = append(layerTypes, map[bool]string{false: "full_attention", true: "sliding_attention"}[c.sliding(i)])
	}
	gemma := c.NormPlusOne || c.SandwichNorm || c.gelu() || c.EmbedScale != 0 || c.QueryPreAttnScalar != 0 || c.RopeLocalTheta != 0
	switch {
	case gemma:
		if !c.NormPlusOne || !c.SandwichNorm || !c.gelu() || !c.QKNorm || c.QKVBias {
			return bad("Gemma's norms, GeGLU or embedding scale without the rest of Gemma 3's layout (1+w norms, four a block, query/key norms, GeGLU, no biases)")
		}
		hc.ModelType, hc.Architectures, hc.HiddenAct = hfGemma3Text, []string{"Gemma3ForCausalLM"}, ""
		hc.HiddenActivation, hc.HeadDim = "gelu_pytorch_tanh", c.HeadDim()
		hc.QueryPreAttnScalar = ptr(cmp.Or(c.QueryPreAttnScalar, float64(c.HeadDim())))
		hc.FinalLogitSoftcapping, hc.AttnLogitSoftcapping = json.RawMessage("null"), json.RawMessage("null")
		hc.TorchDtype = ""
		for _, dt := range []string{"float32", "bfloat16", "float16"} {
			if s, _ := gemmaEmbedScale(c.DModel, dt); s == c.EmbedScale {
				hc.TorchDtype = dt
				break
			}
		}
		if hc.TorchDtype == "" {
			return bad(fmt.Sprintf("an embedding scale %g other than √hidden_size in float32, bfloat16 or float16", c.EmbedScale))
		}
		local := c.RopeLocalTheta
		if local == 0 {
			if sliding && c.RopeScaling.Type != "" {
				return bad("sliding layers with a rescaled RoPE (Gemma 3's sliding layers are not rescaled)")
			}
			local = c.RopeTheta
		}
		hc.RopeLocalBaseFreq = ptr(local)
		hc.SlidingWindow = ptr(c.SlidingWindow)
		if !sliding {
			hc.SlidingWindow = ptr(c.MaxSeq)
		}
		hc.LayerTypes = layerTypes
		// transformers before 4.53 reads sliding_window_pattern instead.
		for p := 1; p <= c.Layers+1; p++ {
			match := true
			for i := range c.Layers {
				match = match && c.sliding(i) == ((i+1)%p != 0)
			}
			if match {
				hc.SlidingWindowPattern = ptr(p)
				break
			}
		}
	case c.QKNorm && c.QKVBias:
		return bad("both query/key norms and QKV biases")
	case c.QKNorm:
		hc.ModelType, hc.Architectures, hc.HeadDim = hfQwen3, []string{"Qwen3ForCausalLM"}, c.HeadDim()
		hc.AttentionBias = ptr(false)
	case c.QKVBias:
		hc.ModelType, hc.Architectures = hfQwen2, []string{"Qwen2ForCausalLM"}
	case sliding && !strings.Contains(c.LayerTypes, "g"):
		hc.ModelType, hc.Architectures, hc.SlidingWindow = hfMistral, []string{"MistralForCausalLM"}, ptr(c.SlidingWindow)
	default:
		hc.ModelType, hc.Architectures = hfLlama, []string{"LlamaForCausalLM"}
	}
	if sliding && (hc.ModelType == hfQwen2 || hc.ModelType == hfQwen3) {
		hc.UseSlidingWindow, hc.SlidingWindow, hc.LayerTypes = true, ptr(c.SlidingWindow), layerTypes
		hc.MaxWindowLayers = ptr(strings.Index(c.LayerTypes, "s"))
	}
	if sliding && hc.ModelType == hfLlama {
		return bad("sliding-window attention on some layers only, without Gemma's or Qwen's layout")
	}
	return hc, nil
}
