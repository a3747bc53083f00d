package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// TensorInfo names one parameter tensor and its place in the flat parameter
// vector (Model.Params) and gradient vector (Model.Grads).
type TensorInfo struct {
	Name   string // e.g. "layers.0.wqkv"
	Shape  []int  // row-major; linear weights are [out, in] so y = x·Wᵀ
	Offset int    // first element in Params()/Grads()
	Size   int    // number of elements
	Decay  bool   // AdamW applies weight decay (matrices yes, norms and biases no)
}

// layer holds views into one block's parameters (or gradients).
type layer struct {
	attnNorm     []float32 // [D]
	wqkv         []float32 // [Q+2KV, D], rows [Q heads | K heads | V heads]
	bqkv         []float32 // [Q+2KV] or nil
	qNorm, kNorm []float32 // [HeadDim] each, with QKNorm; else nil
	wo           []float32 // [D, Q]
	attnPost     []float32 // [D], with SandwichNorm; else nil
	mlpNorm      []float32 // [D]
	wgu          []float32 // [2F, D], rows [gate | up]
	wdown        []float32 // [D, F]
	mlpPost      []float32 // [D], with SandwichNorm; else nil
}

// weights holds views of every tensor into one flat vector; the same layout
// is used for parameters and gradients.
type weights struct {
	embed     []float32 // [V, D]
	layers    []layer
	finalNorm []float32 // [D]
	lmHead    []float32 // [V, D], nil when tied
	valueW    []float32 // [D], nil without value head
	valueB    []float32 // [1]
}

// Model is a Llama/Qwen2-style decoder: token embedding, Layers blocks of
// (RMSNorm → causal GQA self-attention with RoPE → residual, RMSNorm →
// SwiGLU MLP → residual), a final RMSNorm, an LM head and an optional value
// head. All parameters live in one flat float32 vector.
//
// Forward, Backward, ZeroGrad and optimizer steps use the model's training
// workspace and must not run concurrently with each other or with Sample and
// Score. Sample and Score only read the weights and may run concurrently with
// each other.
type Model struct {
	cfg     Config
	kern    Kernels
	params  []float32
	grads   []float32
	tensors []TensorInfo
	p, g    weights
	ropeCos []float32 // [MaxSeq, HeadDim/2]: the global layers' RoPE
	ropeSin []float32
	// The sliding layers' RoPE, when it differs from the global layers'
	// (RopeLocalTheta, RopeScaling); nil otherwise.
	ropeLocalCos, ropeLocalSin []float32
	ws                         trainWorkspace
	version                    uint64 // bumped by every optimizer update
	pcache                     prefixCache
	infer                      inferWeights // packed copies of the weights for Sample and Score (infer.go)
	lora                       *LoRA        // adapters (lora.go); nil when training in full
}

// New builds a model with deterministic random weights drawn from a PCG
// generator seeded by seed: N(0, 0.02) for embeddings and projections, the
// residual output projections (wo, wdown) scaled by 1/√(2·Layers) as in
// GPT-2, norms at 1 (their weights at 0 with NormPlusOne, which scales by
// 1+w) and biases and the value head's bias at 0.
func New(cfg Config, seed uint64) (*Model, error) {
	m, err := newZero(cfg)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	resid := 1 / math.Sqrt(2*float64(m.cfg.Layers))
	for _, t := range m.tensors {
		x := m.params[t.Offset : t.Offset+t.Size]
		switch {
		case len(t.Shape) == 1 && isNorm(t.Name):
			if !cfg.NormPlusOne {
				for i := range x {
					x[i] = 1
				}
			}
		case len(t.Shape) == 1 && t.Name != "value_w":
			// biases stay zero
		default:
			std := 0.02
			if hasSuffix(t.Name, ".wo") || hasSuffix(t.Name, ".wdown") {
				std *= resid
			}
			for i := range x {
				x[i] = float32(rng.NormFloat64() * std)
			}
		}
	}
	return m, nil
}

func isNorm(name string) bool {
	return hasSuffix(name, "norm")
}

func hasSuffix(s, suf string) bool {
	return len(s) >= len(suf) && s[len(s)-len(suf):] == suf
}

// newZero allocates a model with all-zero parameters and the layout of cfg.
func newZero(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m := &Model{cfg: cfg, kern: &CPU{}}
	m.pcache.limit = DefaultPrefixCacheBytes
	m.pcache.posSize = 4 * 2 * cfg.Layers * cfg.KVHeads * cfg.HeadDim()
	d, v, f, hd := cfg.DModel, cfg.Vocab, cfg.DFF, cfg.HeadDim()
	qkv := (cfg.Heads + 2*cfg.KVHeads) * cfg.HeadDim()
	qd := cfg.Heads * cfg.HeadDim()
	add := func(name string, decay bool, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		off := 0
		if k := len(m.tensors); k > 0 {
			off = m.tensors[k-1].Offset + m.tensors[k-1].Size
		}
		m.tensors = append(m.tensors, TensorInfo{Name: name, Shape: shape, Offset: off, Size: n, Decay: decay})
	}
	add("embed", true, v, d)
	for l := 0; l < cfg.Layers; l++ {
		pre := fmt.Sprintf("layers.%d.", l)
		add(pre+"attn_norm", false, d)
		add(pre+"wqkv", true, qkv, d)
		if cfg.QKVBias {
			add(pre+"bqkv", false, qkv)
		}
		if cfg.QKNorm {
			add(pre+"q_norm", false, hd)
			add(pre+"k_norm", false, hd)
		}
		add(pre+"wo", true, d, qd)
		if cfg.SandwichNorm {
			add(pre+"attn_post_norm", false, d)
		}
		add(pre+"mlp_norm", false, d)
		add(pre+"wgu", true, 2*f, d)
		add(pre+"wdown", true, d, f)
		if cfg.SandwichNorm {
			add(pre+"mlp_post_norm", false, d)
		}
	}
	add("final_norm", false, d)
	if !cfg.TieEmbeddings {
		add("lm_head", true, v, d)
	}
	if cfg.ValueHead {
		add("value_w", false, d)
		add("value_b", false, 1)
	}
	last := m.tensors[len(m.tensors)-1]
	n := last.Offset + last.Size
	m.params, m.grads = residentPair(n)
	m.p = m.views(m.params)
	m.g = m.views(m.grads)
	m.buildRoPE()
	return m, nil
}

// views slices flat into the tensors of the model's layout.
func (m *Model) views(flat []float32) weights {
	get := func(name string) []float32 {
		for _, t := range m.tensors {
			if t.Name == name {
				return flat[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
			}
		}
		return nil
	}
	w := weights{
		embed:     get("embed"),
		finalNorm: get("final_norm"),
		lmHead:    get("lm_head"),
		valueW:    get("value_w"),
		valueB:    get("value_b"),
	}
	for l := 0; l < m.cfg.Layers; l++ {
		pre := fmt.Sprintf("layers.%d.", l)
		w.layers = append(w.layers, layer{
			attnNorm: get(pre + "attn_norm"),
			wqkv:     get(pre + "wqkv"),
			bqkv:     get(pre + "bqkv"),
			qNorm:    get(pre + "q_norm"),
			kNorm:    get(pre + "k_norm"),
			wo:       get(pre + "wo"),
			attnPost: get(pre + "attn_post_norm"),
			mlpNorm:  get(pre + "mlp_norm"),
			wgu:      get(pre + "wgu"),
			wdown:    get(pre + "wdown"),
			mlpPost:  get(pre + "mlp_post_norm"),
		})
	}
	return w
}

// buildRoPE fills the cos/sin tables: angle(pos, i) = pos·f_i with the
// frequency f_i = θ^(-2i/headDim) (rescaled as RopeScaling says), for the
// global layers and, when they differ, for the sliding layers (base
// RopeLocalTheta, not rescaled). Without RopeLocalTheta, every layer has
// the global layers' RoPE.
func (m *Model) buildRoPE() {
	c := m.cfg
	m.ropeCos, m.ropeSin = ropeTable(c.MaxSeq, c.HeadDim(), ropeFreqs(c.RopeTheta, c.HeadDim(), c.RopeScaling))
	if local := c.RopeLocalTheta; local != 0 && strings.Contains(c.LayerTypes, "s") &&
		(local != c.RopeTheta || c.RopeScaling != (RopeScaling{})) {
		m.ropeLocalCos, m.ropeLocalSin = ropeTable(c.MaxSeq, c.HeadDim(), ropeFreqs(local, c.HeadDim(), RopeScaling{}))
	}
}

// ropeFreqs returns RoPE's headDim/2 frequencies θ^(-2i/headDim), in
// float64, rescaled as s says (transformers' "linear" and "llama3" rope
// types; s is valid).
func ropeFreqs(theta float64, headDim int, s RopeScaling) []float64 {
	f := make([]float64, headDim/2)
	for i := range f {
		f[i] = math.Pow(theta, -2*float64(i)/float64(headDim))
	}
	switch s.Type {
	case "linear":
		for i := range f {
			f[i] /= s.Factor
		}
	case "llama3":
		// Wavelengths shorter than the original context over
		// high_freq_factor keep their frequency, those longer than it
		// over low_freq_factor are stretched by factor, and those
		// between are interpolated.
		orig := float64(s.OriginalMaxPositions)
		lowWavelen, highWavelen := orig/s.LowFreqFactor, orig/s.HighFreqFactor
		for i, x := range f {
			wavelen := 2 * math.Pi / x
			switch {
			case wavelen < highWavelen:
			case wavelen > lowWavelen:
				f[i] = x / s.Factor
			default:
				smooth := (orig/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				f[i] = (1-smooth)*x/s.Factor + smooth*x
			}
		}
	}
	return f
}

// ropeTable returns the cos and sin tables [maxSeq, headDim/2] of the
// frequencies f.
func ropeTable(maxSeq, headDim int, f []float64) (cos, sin []float32) {
	half := headDim / 2
	cos = make([]float32, maxSeq*half)
	sin = make([]float32, maxSeq*half)
	for p := 0; p < maxSeq; p++ {
		for i := 0; i < half; i++ {
			a := float64(p) * f[i]
			cos[p*half+i] = float32(math.Cos(a))
			sin[p*half+i] = float32(math.Sin(a))
		}
	}
	return cos, sin
}

// rope returns the RoPE tables of layer l.
func (m *Model) rope(l int) (cos, sin []float32) {
	if m.ropeLocalCos != nil && m.cfg.sliding(l) {
		return m.ropeLocalCos, m.ropeLocalSin
	}
	return m.ropeCos, m.ropeSin
}

// Config returns the model's configuration with defaults filled in.
func (m *Model) Config() Config { return m.cfg }

// SetKernels replaces the numeric backend (the default is &CPU{}).
func (m *Model) SetKernels(k Kernels) { m.kern = k }

// Params returns the flat parameter vector. Writing to it changes the model
// for Forward at once; Sample and Score compute from a cached copy of the
// weights (and reuse cached prefixes), so after writing parameters other
// than through AdamW.Update call ClearPrefixCache.
func (m *Model) Params() []float32 { return m.params }

// Grads returns the flat gradient vector, laid out like Params. Backward adds
// into it; ZeroGrad clears it. It is nil while the model has adapters
// (EnableLoRA): the base weights are frozen, and the gradients are the
// adapters' (LoRA.Grads).
func (m *Model) Grads() []float32 { return m.grads }

// Tensors lists the parameter tensors in storage order. The returned slice
// must not be modified.
func (m *Model) Tensors() []TensorInfo { return m.tensors }

// Tensor returns the parameter values of the named tensor, or nil.
func (m *Model) Tensor(name string) []float32 {
	for _, t := range m.tensors {
		if t.Name == name {
			return m.params[t.Offset : t.Offset+t.Size]
		}
	}
	return nil
}

// NumParams returns the number of parameters of the base model (adapters
// not included).
func (m *Model) NumParams() int { return len(m.params) }

// NumTrainable returns the number of parameters that Backward computes
// gradients for and optimizers update: the adapters' while the model has
// them, otherwise every parameter.
func (m *Model) NumTrainable() int {
	p, _, _ := m.trainable()
	return len(p)
}

// trainable returns the trained parameters, their gradients and their
// tensors: the adapters' while the model has them, the base model's
// otherwise.
func (m *Model) trainable() (params, grads []float32, tensors []TensorInfo) {
	if lo := m.lora; lo != nil {
		return lo.params, lo.grads, lo.tensors
	}
	return m.params, m.grads, m.tensors
}

// ZeroGrad clears the gradient of the trained parameters (the adapters'
// while the model has them).
func (m *Model) ZeroGrad() {
	_, g, _ := m.trainable()
	clear(g)
}

// dims returns frequently used sizes.
func (m *Model) dims() (d, qd, kvd, qkv, f, v int) {
	c := m.cfg
	hd := c.HeadDim()
	return c.DModel, c.Heads * hd, c.KVHeads * hd, (c.Heads + 2*c.KVHeads) * hd, c.DFF, c.Vocab
}

// head returns the LM head as a [V, D] matrix: the embedding when tied.
func (m *Model) head() []float32 {
	if m.cfg.TieEmbeddings {
		return m.p.embed
	}
	return m.p.lmHead
}

// headGrad returns the gradient of the LM head, laid out like head().
func (m *Model) headGrad() []float32 {
	if m.cfg.TieEmbeddings {
		return m.g.embed
	}
	return m.g.lmHead
}

// checkTokens validates token ids against the vocabulary.
func (m *Model) checkTokens(what string, toks []int) error {
	for i, t := range toks {
		if t < 0 || t >= m.cfg.Vocab {
			return fmt.Errorf("native: %s: token %d at position %d is outside the vocabulary [0, %d)", what, t, i, m.cfg.Vocab)
		}
	}
	return nil
}

// Clone returns an independent copy of the model's configuration and
// parameters, adapters included (gradients, workspace and prefix cache
// start fresh), e.g. a frozen reference policy for the KL penalty or the
// behaviour policy of an asynchronous rollout worker.
func (m *Model) Clone() *Model {
	c, err := newZero(m.cfg)
	if err != nil {
		panic("native: Clone of an invalid model: " + err.Error()) // m was validated when built
	}
	c.kern = m.kern
	copy(c.params, m.params)
	if m.lora != nil {
		lo := m.lora.clone(c)
		clear(lo.grads)
		c.setLoRA(lo)
	}
	return c
}
