package native

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Config describes the architecture of a Model. It is saved as config.json in
// checkpoints, so field names are part of the file format.
//
// The fields after ValueHead describe the variants of the decoder that
// Qwen3, Llama 3.1/3.2 and Gemma 3 need. Their zero values are the
// Llama/Qwen2 decoder, and they are left out of config.json when zero, so
// that a checkpoint of that decoder is written as before and computes the
// same bits.
type Config struct {
	Vocab     int     `json:"vocab"`      // number of token ids
	DModel    int     `json:"d_model"`    // width of the residual stream
	Layers    int     `json:"layers"`     // transformer blocks
	Heads     int     `json:"heads"`      // query heads; head dim = DModel/Heads unless HeadSize is set
	KVHeads   int     `json:"kv_heads"`   // key/value heads (GQA); 0 means Heads
	DFF       int     `json:"d_ff"`       // gated MLP hidden width
	MaxSeq    int     `json:"max_seq"`    // longest sequence (prompt + generation)
	RopeTheta float64 `json:"rope_theta"` // RoPE base; 0 means 10000
	NormEps   float32 `json:"norm_eps"`   // RMSNorm epsilon; 0 means 1e-5

	QKVBias       bool `json:"qkv_bias"`       // bias on the Q/K/V projections (Qwen2)
	TieEmbeddings bool `json:"tie_embeddings"` // LM head shares the embedding matrix
	ValueHead     bool `json:"value_head"`     // add a scalar value head for PPO critics

	// HeadSize is the width of a head (Hugging Face's head_dim); 0 means
	// DModel/Heads. Qwen3 and Gemma 3 have heads·head_dim ≠ DModel.
	HeadSize int `json:"head_dim,omitempty"`
	// QKNorm applies an RMSNorm over each query and key head (weights of
	// head_dim, shared by the heads) after the projections and before
	// RoPE (Qwen3's and Gemma 3's q_norm and k_norm).
	QKNorm bool `json:"qk_norm,omitempty"`
	// NormPlusOne makes every RMSNorm scale by 1+w instead of w (Gemma):
	// the stored weight w is Hugging Face's, and (1+w) is computed in
	// float32 where it is used.
	NormPlusOne bool `json:"norm_plus_one,omitempty"`
	// SandwichNorm normalises the outputs of attention and of the MLP too,
	// before they are added to the residual stream (Gemma 2 and 3: four
	// norms a block).
	SandwichNorm bool `json:"sandwich_norm,omitempty"`
	// Activation is the MLP's gate activation: "" (or "silu") for SwiGLU,
	// "gelu_tanh" for GeGLU with GELU's tanh approximation (Gemma's
	// gelu_pytorch_tanh).
	Activation string `json:"activation,omitempty"`
	// EmbedScale multiplies the token embeddings on their way into the
	// first block (Gemma: √hidden_size, rounded as Hugging Face rounds it);
	// the LM head of a tied model uses them unscaled. 0 means 1.
	EmbedScale float32 `json:"embed_scale,omitempty"`
	// QueryPreAttnScalar sets the attention scale to 1/√QueryPreAttnScalar
	// (Gemma's query_pre_attn_scalar); 0 means the head width.
	QueryPreAttnScalar float64 `json:"query_pre_attn_scalar,omitempty"`
	// RopeScaling rescales the RoPE frequencies of the global layers
	// (Llama 3.1's "llama3", Gemma 3's "linear"); zero means none.
	RopeScaling RopeScaling `json:"rope_scaling,omitzero"`
	// LayerTypes has one letter per layer, 'g' for global attention and
	// 's' for sliding-window attention over the last SlidingWindow
	// positions (the query's own included), as Gemma 3 interleaves them;
	// "" means every layer global.
	LayerTypes string `json:"layer_types,omitempty"`
	// SlidingWindow is the number of positions a sliding layer attends to.
	SlidingWindow int `json:"sliding_window,omitempty"`
	// RopeLocalTheta, if set, is the RoPE base of the sliding layers,
	// which are then not rescaled (Gemma 3's rope_local_base_freq); 0
	// means the global layers' RoPE, base and scaling (Mistral's, Qwen's).
	RopeLocalTheta float64 `json:"rope_local_theta,omitempty"`
	// ModulePrefix is the Hugging Face module path of the decoder, which
	// names its weights and adapters: "" means "model" (a *ForCausalLM);
	// a Gemma 3 image-text checkpoint's text decoder is
	// "model.language_model".
	ModulePrefix string `json:"module_prefix,omitempty"`
}

// RopeScaling is a frequency-dependent rescaling of RoPE, as transformers'
// rope_scaling (rope_parameters) describes it.
type RopeScaling struct {
	// Type is "linear" (every frequency divided by Factor) or "llama3"
	// (transformers' _compute_llama3_parameters: wavelengths above
	// OriginalMaxPositions/LowFreqFactor divided by Factor, below
	// OriginalMaxPositions/HighFreqFactor kept, interpolated between).
	Type                 string  `json:"type"`
	Factor               float64 `json:"factor"`
	LowFreqFactor        float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor       float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositions int     `json:"original_max_position_embeddings,omitempty"`
}

// Activations of Config.Activation.
const (
	ActSiLU     = "silu"
	ActGELUTanh = "gelu_tanh"
)

// DefaultConfig returns the size the project trains by default (see
// reference/warm-start-feasibility.md): d_model 128, 2 layers, 4 heads.
func DefaultConfig(vocab int) Config {
	return Config{
		Vocab: vocab, DModel: 128, Layers: 2, Heads: 4, KVHeads: 4, DFF: 352,
		MaxSeq: 512, RopeTheta: 10000, NormEps: 1e-5, TieEmbeddings: true,
	}
}

// withDefaults fills the zero-means-default fields.
func (c Config) withDefaults() Config {
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.NormEps == 0 {
		c.NormEps = 1e-5
	}
	// The explicit values of defaults read as their zero: one model, one
	// configuration.
	if c.Heads > 0 && c.HeadSize*c.Heads == c.DModel {
		c.HeadSize = 0
	}
	if c.QueryPreAttnScalar != 0 && c.Heads > 0 && c.QueryPreAttnScalar == float64(c.HeadDim()) {
		c.QueryPreAttnScalar = 0
	}
	return c
}

// HeadDim is the width of a head: HeadSize, or DModel/Heads.
func (c Config) HeadDim() int {
	if c.HeadSize != 0 {
		return c.HeadSize
	}
	return c.DModel / c.Heads
}

// sliding reports whether layer l attends through a sliding window.
func (c Config) sliding(l int) bool {
	return l < len(c.LayerTypes) && c.LayerTypes[l] == 's'
}

// window returns the sliding window of layer l, or 0 for global attention.
func (c Config) window(l int) int {
	if c.sliding(l) {
		return c.SlidingWindow
	}
	return 0
}

// gelu reports whether the MLP is GeGLU.
func (c Config) gelu() bool { return c.Activation == ActGELUTanh }

// attnScale is the factor on the attention scores: 1/√head_dim, or
// 1/√QueryPreAttnScalar.
func (c Config) attnScale() float32 {
	if c.QueryPreAttnScalar != 0 {
		return float32(1 / math.Sqrt(c.QueryPreAttnScalar))
	}
	return float32(1 / math.Sqrt(float64(c.HeadDim())))
}

// Validate reports the first inconsistency in c (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Vocab < 1:
		return errors.New("native: config: vocab must be positive")
	case c.DModel < 2 || c.Layers < 1 || c.Heads < 1 || c.DFF < 1 || c.MaxSeq < 1:
		return fmt.Errorf("native: config: d_model, layers, heads, d_ff and max_seq must be positive (got %d, %d, %d, %d, %d)",
			c.DModel, c.Layers, c.Heads, c.DFF, c.MaxSeq)
	case c.HeadSize < 0 || c.HeadSize > c.DModel*8:
		return fmt.Errorf("native: config: head_dim %d outside [0, 8·d_model]", c.HeadSize)
	case c.HeadSize == 0 && c.DModel%c.Heads != 0:
		return fmt.Errorf("native: config: d_model %d is not divisible by heads %d", c.DModel, c.Heads)
	case c.HeadDim() < 2 || c.HeadDim()%2 != 0:
		return fmt.Errorf("native: config: head dim %d must be even for RoPE", c.HeadDim())
	case c.KVHeads < 1 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("native: config: heads %d is not a multiple of kv_heads %d", c.Heads, c.KVHeads)
	case c.RopeTheta <= 1 || c.RopeLocalTheta != 0 && !(c.RopeLocalTheta > 1):
		return fmt.Errorf("native: config: rope_theta %g and rope_local_theta %g must exceed 1", c.RopeTheta, c.RopeLocalTheta)
	case c.NormEps < 0:
		return fmt.Errorf("native: config: norm_eps %g is negative", c.NormEps)
	case c.MaxSeq > maxSeqLimit:
		return fmt.Errorf("native: config: max_seq %d exceeds %d", c.MaxSeq, maxSeqLimit)
	case c.Activation != "" && c.Activation != ActSiLU && c.Activation != ActGELUTanh:
		return fmt.Errorf("native: config: activation %q is not supported (want %s or %s)", c.Activation, ActSiLU, ActGELUTanh)
	case !(c.EmbedScale >= 0) || math.IsInf(float64(c.EmbedScale), 0):
		return fmt.Errorf("native: config: embed_scale %g must be finite and not negative", c.EmbedScale)
	case !(c.QueryPreAttnScalar >= 0) || math.IsInf(c.QueryPreAttnScalar, 0):
		return fmt.Errorf("native: config: query_pre_attn_scalar %g must be finite and not negative", c.QueryPreAttnScalar)
	case c.LayerTypes != "" && len(c.LayerTypes) != c.Layers:
		return fmt.Errorf("native: config: layer_types has %d letters for %d layers", len(c.LayerTypes), c.Layers)
	case strings.Trim(c.LayerTypes, "gs") != "":
		return fmt.Errorf("native: config: layer_types %q: want one letter per layer, g (global) or s (sliding window)", c.LayerTypes)
	case strings.Contains(c.LayerTypes, "s") && c.SlidingWindow < 1:
		return fmt.Errorf("native: config: sliding layers need a positive sliding_window (got %d)", c.SlidingWindow)
	case c.SlidingWindow < 0:
		return fmt.Errorf("native: config: sliding_window %d is negative", c.SlidingWindow)
	case c.paramCount() > maxParams:
		return fmt.Errorf("native: config: %.0f parameters exceed the limit of %d", c.paramCount(), int64(maxParams))
	}
	if err := c.RopeScaling.validate(); err != nil {
		return fmt.Errorf("native: config: rope_scaling: %w", err)
	}
	return nil
}

// validate checks the scaling's parameters.
func (s RopeScaling) validate() error {
	switch s.Type {
	case "":
		if s != (RopeScaling{}) {
			return errors.New("parameters without a type")
		}
		return nil
	case "linear":
		if !(s.Factor > 0) || math.IsInf(s.Factor, 0) {
			return fmt.Errorf("linear: factor %g must be positive and finite", s.Factor)
		}
		if s.LowFreqFactor != 0 || s.HighFreqFactor != 0 || s.OriginalMaxPositions != 0 {
			return errors.New("linear: only factor applies")
		}
		return nil
	case "llama3":
		switch {
		case !(s.Factor > 0) || math.IsInf(s.Factor, 0):
			return fmt.Errorf("llama3: factor %g must be positive and finite", s.Factor)
		case !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) || math.IsInf(s.HighFreqFactor, 0):
			return fmt.Errorf("llama3: want 0 < low_freq_factor < high_freq_factor (got %g, %g)", s.LowFreqFactor, s.HighFreqFactor)
		case s.OriginalMaxPositions < 1:
			return fmt.Errorf("llama3: original_max_position_embeddings %d must be positive", s.OriginalMaxPositions)
		}
		return nil
	}
	return fmt.Errorf("type %q is not supported (linear or llama3)", s.Type)
}

// Limits that keep a corrupt or mistyped config from asking for absurd
// allocations: 2^31 float32 parameters (8 GiB) and 2^20 positions.
const (
	maxParams   = 1 << 31
	maxSeqLimit = 1 << 20
)

// paramCount returns the number of parameters of c (defaults applied),
// computed in float64 so that absurd values cannot overflow.
func (c Config) paramCount() float64 {
	d, v, f := float64(c.DModel), float64(c.Vocab), float64(c.DFF)
	hd := float64(c.HeadSize)
	if c.HeadSize == 0 {
		hd = float64(c.DModel / c.Heads)
	}
	qkv := (float64(c.Heads) + 2*float64(c.KVHeads)) * hd
	perLayer := 2*d + qkv*d + float64(c.Heads)*hd*d + 2*f*d + f*d
	if c.QKVBias {
		perLayer += qkv
	}
	if c.QKNorm {
		perLayer += 2 * hd
	}
	if c.SandwichNorm {
		perLayer += 2 * d
	}
	n := v*d + float64(c.Layers)*perLayer + d
	if !c.TieEmbeddings {
		n += v * d
	}
	if c.ValueHead {
		n += d + 1
	}
	return n
}
