package native

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file converts between the native layout and Hugging Face
// Llama/Qwen2 checkpoints (config.json + model.safetensors, or shards listed
// in model.safetensors.index.json). The architectures match; only names
// differ, and Q/K/V and gate/up are fused here: our wqkv is the row-wise
// concatenation of q_proj, k_proj and v_proj, our wgu that of gate_proj and
// up_proj.

// hfConfig is the subset of a Hugging Face config.json that describes a
// Llama/Qwen2 decoder.
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
	Tie           bool            `json:"tie_word_embeddings"`
	HiddenAct     string          `json:"hidden_act"`
	AttentionBias *bool           `json:"attention_bias,omitempty"`
	HeadDim       int             `json:"head_dim,omitempty"`
	RopeScaling   json.RawMessage `json:"rope_scaling,omitempty"`
	// RopeParameters holds the RoPE settings in the config.json files of
	// transformers 5, which writes rope_theta inside it rather than at the
	// top level (and rope scaling as a rope_type other than "default").
	RopeParameters json.RawMessage `json:"rope_parameters,omitempty"`
	TorchDtype     string          `json:"torch_dtype,omitempty"`
}

// hfDefaultNormEps is rms_norm_eps when config.json leaves it out: the
// default of transformers' LlamaConfig, Qwen2Config and MistralConfig
// (the native default, 1e-5, is not).
const hfDefaultNormEps = 1e-6

// LoadHF loads a Hugging Face Llama or Qwen2 checkpoint directory, widening
// BF16/F16 weights to float32. maxSeq bounds the sequence length (and the
// RoPE tables); 0 means the checkpoint's max_position_embeddings. The model
// has no value head. The tokenizer is not part of this package.
func LoadHF(dir string, maxSeq int) (*Model, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("native: hf: %w", err)
	}
	var hc hfConfig
	if err := json.Unmarshal(raw, &hc); err != nil {
		return nil, fmt.Errorf("native: hf: config.json: %w", err)
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
			if _, dup := byName[t.Name]; dup {
				return nil, fmt.Errorf("native: hf: tensor %q appears in two files", t.Name)
			}
			byName[t.Name] = t
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
	for _, p := range m.hfParts() {
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

// hfArchitectures are the config.json architectures LoadHF converts: the
// causal language models of the supported model types. Any other head (a
// classifier, a reward model) has tensors the native model lacks, and is
// named in the error rather than reported as an unexpected tensor.
var hfArchitectures = []string{"Qwen2ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM"}

// native converts the Hugging Face configuration.
func (hc hfConfig) native(maxSeq int) (Config, error) {
	theta, err := hc.ropeTheta()
	if err != nil {
		return Config{}, err
	}
	eps := hc.RMSNormEps
	if eps == 0 {
		eps = hfDefaultNormEps
	}
	cfg := Config{
		Vocab: hc.Vocab, DModel: hc.HiddenSize, Layers: hc.Layers, Heads: hc.Heads, KVHeads: hc.KVHeads,
		DFF: hc.Intermediate, MaxSeq: hc.MaxPositions, RopeTheta: theta, NormEps: float32(eps),
		TieEmbeddings: hc.Tie,
	}
	switch hc.ModelType {
	case "qwen2":
		cfg.QKVBias = true
	case "llama", "mistral":
		cfg.QKVBias = hc.AttentionBias != nil && *hc.AttentionBias
	default:
		return Config{}, fmt.Errorf("native: hf: model_type %q is not supported (want qwen2, llama or mistral)", hc.ModelType)
	}
	for _, a := range hc.Architectures {
		if !slices.Contains(hfArchitectures, a) {
			return Config{}, fmt.Errorf("native: hf: architecture %q is not supported (want one of %s)", a, strings.Join(hfArchitectures, ", "))
		}
	}
	if hc.HiddenAct != "" && hc.HiddenAct != "silu" {
		return Config{}, fmt.Errorf("native: hf: hidden_act %q is not supported (want silu)", hc.HiddenAct)
	}
	if len(hc.RopeScaling) > 0 && !bytes.Equal(bytes.TrimSpace(hc.RopeScaling), []byte("null")) {
		return Config{}, errors.New("native: hf: rope_scaling is not supported")
	}
	if hc.Heads > 0 && hc.HeadDim != 0 && hc.HeadDim*hc.Heads != hc.HiddenSize {
		return Config{}, fmt.Errorf("native: hf: head_dim %d × heads %d ≠ hidden_size %d is not supported", hc.HeadDim, hc.Heads, hc.HiddenSize)
	}
	if maxSeq > 0 {
		cfg.MaxSeq = maxSeq
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("native: hf: %w", err)
	}
	return cfg, nil
}

// ropeTheta returns the RoPE base: rope_parameters' rope_theta when it has
// one (transformers 5 reads it there first), else rope_theta (0, the
// native default 10000, as transformers' default, when absent too). It
// refuses rope_parameters that ask for anything but the default RoPE.
func (hc hfConfig) ropeTheta() (float64, error) {
	raw := bytes.TrimSpace(hc.RopeParameters)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return hc.RopeTheta, nil
	}
	var rp map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rp); err != nil {
		return 0, fmt.Errorf("native: hf: rope_parameters: %w", err)
	}
	theta := hc.RopeTheta
	for _, k := range slices.Sorted(maps.Keys(rp)) {
		switch k {
		case "rope_type", "type":
			var s string
			if err := json.Unmarshal(rp[k], &s); err != nil || s != "default" {
				return 0, fmt.Errorf("native: hf: rope_parameters %s %s is not supported (only the default RoPE, without scaling)", k, rp[k])
			}
		case "rope_theta":
			if err := json.Unmarshal(rp[k], &theta); err != nil {
				return 0, fmt.Errorf("native: hf: rope_parameters rope_theta: %w", err)
			}
		default:
			return 0, fmt.Errorf("native: hf: rope_parameters key %q is not supported", k)
		}
	}
	return theta, nil
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

func (m *Model) hfParts() []hfPart {
	c := m.cfg
	d, f, hd := c.DModel, c.DFF, c.HeadDim()
	q, kv := c.Heads*hd, c.KVHeads*hd
	src := func(name string, shape ...int) hfSource { return hfSource{name, shape} }
	parts := []hfPart{{"embed", []hfSource{src("model.embed_tokens.weight", c.Vocab, d)}}}
	for l := 0; l < c.Layers; l++ {
		hp := fmt.Sprintf("model.layers.%d.", l)
		np := fmt.Sprintf("layers.%d.", l)
		parts = append(parts,
			hfPart{np + "attn_norm", []hfSource{src(hp+"input_layernorm.weight", d)}},
			hfPart{np + "wqkv", []hfSource{src(hp+"self_attn.q_proj.weight", q, d), src(hp+"self_attn.k_proj.weight", kv, d), src(hp+"self_attn.v_proj.weight", kv, d)}},
		)
		if c.QKVBias {
			parts = append(parts, hfPart{np + "bqkv", []hfSource{src(hp+"self_attn.q_proj.bias", q), src(hp+"self_attn.k_proj.bias", kv), src(hp+"self_attn.v_proj.bias", kv)}})
		}
		parts = append(parts,
			hfPart{np + "wo", []hfSource{src(hp+"self_attn.o_proj.weight", d, q)}},
			hfPart{np + "mlp_norm", []hfSource{src(hp+"post_attention_layernorm.weight", d)}},
			hfPart{np + "wgu", []hfSource{src(hp+"mlp.gate_proj.weight", f, d), src(hp+"mlp.up_proj.weight", f, d)}},
			hfPart{np + "wdown", []hfSource{src(hp+"mlp.down_proj.weight", d, f)}},
		)
	}
	parts = append(parts, hfPart{"final_norm", []hfSource{src("model.norm.weight", d)}})
	if !c.TieEmbeddings {
		parts = append(parts, hfPart{"lm_head", []hfSource{src("lm_head.weight", c.Vocab, d)}})
	}
	return parts
}

// SaveHF writes the model as a Hugging Face checkpoint (config.json and a
// float32 model.safetensors) into dir, as model_type "qwen2" when it has QKV
// biases and "llama" otherwise. A value head is not exported, and a model
// with adapters is refused (SavePEFT writes them). The files are written in
// place; the tokenizer files are the caller's.
func SaveHF(dir string, m *Model) error {
	if m.lora != nil {
		return errLoRACheckpoint
	}
	c := m.cfg
	hc := hfConfig{
		HiddenSize: c.DModel, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
		Intermediate: c.DFF, Vocab: c.Vocab, MaxPositions: c.MaxSeq, RopeTheta: c.RopeTheta,
		RMSNormEps: float64(c.NormEps), Tie: c.TieEmbeddings, HiddenAct: "silu", TorchDtype: "float32",
	}
	if c.QKVBias {
		hc.ModelType, hc.Architectures = "qwen2", []string{"Qwen2ForCausalLM"}
	} else {
		hc.ModelType, hc.Architectures = "llama", []string{"LlamaForCausalLM"}
	}
	js, err := json.MarshalIndent(hc, "", "  ")
	if err != nil {
		return fmt.Errorf("native: hf: %w", err)
	}
	var tensors []NamedTensor
	for _, p := range m.hfParts() {
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
