package native

import (
	"errors"
	"fmt"
)

// Config describes the architecture of a Model. It is saved as config.json in
// checkpoints, so field names are part of the file format.
type Config struct {
	Vocab     int     `json:"vocab"`      // number of token ids
	DModel    int     `json:"d_model"`    // width of the residual stream
	Layers    int     `json:"layers"`     // transformer blocks
	Heads     int     `json:"heads"`      // query heads; head dim = DModel/Heads
	KVHeads   int     `json:"kv_heads"`   // key/value heads (GQA); 0 means Heads
	DFF       int     `json:"d_ff"`       // SwiGLU hidden width
	MaxSeq    int     `json:"max_seq"`    // longest sequence (prompt + generation)
	RopeTheta float64 `json:"rope_theta"` // RoPE base; 0 means 10000
	NormEps   float32 `json:"norm_eps"`   // RMSNorm epsilon; 0 means 1e-5

	QKVBias       bool `json:"qkv_bias"`       // bias on the Q/K/V projections (Qwen2)
	TieEmbeddings bool `json:"tie_embeddings"` // LM head shares the embedding matrix
	ValueHead     bool `json:"value_head"`     // add a scalar value head for PPO critics
}

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
	return c
}

// HeadDim is DModel/Heads.
func (c Config) HeadDim() int { return c.DModel / c.Heads }

// Validate reports the first inconsistency in c (after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Vocab < 1:
		return errors.New("native: config: vocab must be positive")
	case c.DModel < 2 || c.Layers < 1 || c.Heads < 1 || c.DFF < 1 || c.MaxSeq < 1:
		return fmt.Errorf("native: config: d_model, layers, heads, d_ff and max_seq must be positive (got %d, %d, %d, %d, %d)",
			c.DModel, c.Layers, c.Heads, c.DFF, c.MaxSeq)
	case c.DModel%c.Heads != 0:
		return fmt.Errorf("native: config: d_model %d is not divisible by heads %d", c.DModel, c.Heads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("native: config: head dim %d must be even for RoPE", c.HeadDim())
	case c.KVHeads < 1 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("native: config: heads %d is not a multiple of kv_heads %d", c.Heads, c.KVHeads)
	case c.RopeTheta <= 1:
		return fmt.Errorf("native: config: rope_theta %g must exceed 1", c.RopeTheta)
	case c.NormEps < 0:
		return fmt.Errorf("native: config: norm_eps %g is negative", c.NormEps)
	case c.MaxSeq > maxSeqLimit:
		return fmt.Errorf("native: config: max_seq %d exceeds %d", c.MaxSeq, maxSeqLimit)
	case c.paramCount() > maxParams:
		return fmt.Errorf("native: config: %.0f parameters exceed the limit of %d", c.paramCount(), int64(maxParams))
	}
	return nil
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
	hd := float64(c.DModel / c.Heads)
	qkv := (float64(c.Heads) + 2*float64(c.KVHeads)) * hd
	perLayer := 2*d + qkv*d + float64(c.Heads)*hd*d + 2*f*d + f*d
	if c.QKVBias {
		perLayer += qkv
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
