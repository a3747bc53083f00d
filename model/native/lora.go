package native

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// This file holds LoRA adapters (Hu et al., 2021) as PEFT defines them: an
// adapted projection computes y = W·x + (Alpha/Rank)·B·(A·x), A ∈ R^{r×in}
// initialised Kaiming-uniform (a = √5, so U(±1/√in)), B ∈ R^{out×r} zero,
// so that a fresh adapter leaves the model as it was. While a model has
// adapters, its base weights are frozen: Backward computes gradients for
// the adapters only (no weight gradient of any base tensor is computed or
// stored), and AdamW and ClipGradNorm act on the adapters.
//
// The fused projections keep one adapter per PEFT module: q_proj, k_proj
// and v_proj each have their own A and B, applied to their own row block of
// wqkv's output (gate_proj and up_proj likewise within wgu), so that the
// adapters export to PEFT's layout exactly (peft.go).

// loraTargetNames are PEFT's module names of the projections of a
// Llama/Qwen2 decoder layer, in the order the model applies them; a
// target's index in this list identifies it.
var loraTargetNames = [...]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// LoRATargets returns the names of the projections that can take an
// adapter, PEFT's target module names for Llama/Qwen2: q_proj, k_proj,
// v_proj, o_proj, gate_proj, up_proj, down_proj.
func LoRATargets() []string { return slices.Clone(loraTargetNames[:]) }

// Groups of targets that read the same input (and so share one product for
// their A matrices), in forward order.
const (
	groupQKV  = iota // q, k, v: reads the normed attention input, writes wqkv's output
	groupO           // o: reads the attention output, adds into the residual
	groupGU          // gate, up: reads the normed MLP input, writes wgu's output
	groupDown        // down: reads the SwiGLU output, adds into the residual
	numGroups
)

// LoRAConfig describes a model's adapters.
type LoRAConfig struct {
	// Rank is r, the inner width of every adapter (A is r×in, B is out×r).
	Rank int `json:"rank"`
	// Alpha scales the adapters' contribution by Alpha/Rank (PEFT's
	// lora_alpha; rank-stabilised scaling is not supported).
	Alpha float64 `json:"alpha"`
	// Dropout is PEFT's lora_dropout on the adapters' input. Only 0 is
	// supported.
	Dropout float64 `json:"dropout"`
	// Targets names the adapted projections (see LoRATargets), in any
	// order; Config reports them in LoRATargets' order.
	Targets []string `json:"targets"`
	// Seed seeds the initialisation of the A matrices (PCG).
	Seed uint64 `json:"seed"`
}

// Validate reports the first problem with c.
func (c LoRAConfig) Validate() error {
	if _, err := c.targets(); err != nil {
		return fmt.Errorf("native: lora: %w", err)
	}
	return nil
}

// targets validates c and returns the indices of its targets, ascending.
func (c LoRAConfig) targets() ([]int, error) {
	switch {
	case c.Rank < 1:
		return nil, fmt.Errorf("rank must be at least 1, got %d", c.Rank)
	case !(c.Alpha > 0) || math.IsInf(c.Alpha, 0):
		return nil, fmt.Errorf("alpha must be positive and finite, got %v", c.Alpha)
	case c.Dropout != 0:
		return nil, fmt.Errorf("dropout %v is not supported (only 0)", c.Dropout)
	case len(c.Targets) == 0:
		return nil, errors.New("no target modules")
	}
	var ts []int
	for _, name := range c.Targets {
		t := slices.Index(loraTargetNames[:], name)
		if t < 0 {
			return nil, fmt.Errorf("unknown target module %q (want some of %s)", name, strings.Join(loraTargetNames[:], ", "))
		}
		if slices.Contains(ts, t) {
			return nil, fmt.Errorf("target module %q is listed twice", name)
		}
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts, nil
}

// LoRA is a model's set of adapters (Model.LoRA): for each layer and each
// target, A and B. Their parameters and gradients live in flat vectors of
// their own, laid out as Tensors lists them (named as in PEFT's
// adapter_model.safetensors). Writing to Params changes the model at once.
type LoRA struct {
	cfg     LoRAConfig
	targets []int
	scale   float32 // Alpha/Rank
	params  []float32
	grads   []float32
	tensors []TensorInfo
	layers  []loraLayer
}

// loraLayer holds one layer's adapters by group.
type loraLayer struct {
	groups [numGroups]loraGroup
}

// loraGroup is the adapters of the targets that read one input. Their A
// matrices are stored one after the other, so together they are one
// [k·r, in] matrix applied in one product.
type loraGroup struct {
	in     int       // input width
	ld     int       // row stride of the output the group adds into
	a, ga  []float32 // [k·r, in]: the targets' A (and gradients), stacked
	blocks []loraBlock
}

// loraBlock is one target's B: it writes columns [off, off+out) of its
// group's output.
type loraBlock struct {
	target int
	out    int
	off    int
	b, gb  []float32 // [out, r]
}

// loraGeom returns the group of target t, the widths of its projection and
// the first column of its block in the group's output.
func (m *Model) loraGeom(t int) (group, in, out, off int) {
	d, qd, kvd, _, f, _ := m.dims()
	switch t {
	case 0:
		return groupQKV, d, qd, 0
	case 1:
		return groupQKV, d, kvd, qd
	case 2:
		return groupQKV, d, kvd, qd + kvd
	case 3:
		return groupO, qd, d, 0
	case 4:
		return groupGU, d, f, 0
	case 5:
		return groupGU, d, f, f
	default:
		return groupDown, f, d, 0
	}
}

// loraLD returns the row stride of group g's output.
func (m *Model) loraLD(g int) int {
	d, _, _, qkvd, f, _ := m.dims()
	switch g {
	case groupQKV:
		return qkvd
	case groupGU:
		return 2 * f
	}
	return d
}

// peftModuleName returns the module path of target t in layer l as
// transformers names it, the decoder's being prefix: e.g.
// model.layers.0.self_attn.q_proj (or, in a Gemma 3 image-text model,
// model.language_model.layers.0.self_attn.q_proj).
func peftModuleName(prefix string, l, t int) string {
	block := "mlp"
	if t <= 3 {
		block = "self_attn"
	}
	return fmt.Sprintf("%s.layers.%d.%s.%s", prefix, l, block, loraTargetNames[t])
}

// peftTensorName is the name of a target's A ("A") or B ("B") in PEFT's
// adapter_model.safetensors.
func peftTensorName(prefix string, l, t int, ab string) string {
	return "base_model.model." + peftModuleName(prefix, l, t) + ".lora_" + ab + ".weight"
}

// maxRank returns the largest rank that adapters on targets ts may have
// in m: the narrowest width, input or output, of the adapted projections,
// and the name of one projection that has it. B·A cannot have a higher
// rank than that, so a larger r only adds parameters (r·(in+out) per
// projection and layer); bounding it also bounds what a configuration
// read from a file can make newLoRA allocate, to at most twice the
// adapted weights.
func (m *Model) maxRank(ts []int) (int, string) {
	bound, name := math.MaxInt, ""
	for _, t := range ts {
		_, in, out, _ := m.loraGeom(t)
		if w := min(in, out); w < bound {
			bound, name = w, loraTargetNames[t]
		}
	}
	return bound, name
}

// CheckLoRA reports, without allocating anything, why adapters as cfg
// describes cannot go on m: an invalid configuration (see
// LoRAConfig.Validate), or a rank above the narrowest width of the
// adapted projections (see EnableLoRA).
func (m *Model) CheckLoRA(cfg LoRAConfig) error {
	ts, err := cfg.targets()
	if err != nil {
		return fmt.Errorf("native: lora: %w", err)
	}
	if bound, name := m.maxRank(ts); cfg.Rank > bound {
		return fmt.Errorf("native: lora: rank %d exceeds %d, the narrowest width of the adapted projections (%s): adapters of a higher rank only add parameters", cfg.Rank, bound, name)
	}
	return nil
}

// newLoRA lays out zero adapters for m as cfg describes.
func newLoRA(m *Model, cfg LoRAConfig) (*LoRA, error) {
	if err := m.CheckLoRA(cfg); err != nil {
		return nil, err
	}
	ts, _ := cfg.targets()
	cfg.Targets = make([]string, len(ts))
	for i, t := range ts {
		cfg.Targets[i] = loraTargetNames[t]
	}
	r := cfg.Rank
	lo := &LoRA{cfg: cfg, targets: ts, scale: float32(cfg.Alpha / float64(r)), layers: make([]loraLayer, m.cfg.Layers)}
	add := func(name string, shape ...int) TensorInfo {
		off := 0
		if k := len(lo.tensors); k > 0 {
			off = lo.tensors[k-1].Offset + lo.tensors[k-1].Size
		}
		t := TensorInfo{Name: name, Shape: shape, Offset: off, Size: shape[0] * shape[1], Decay: true}
		lo.tensors = append(lo.tensors, t)
		return t
	}
	type slot struct {
		t    int
		info TensorInfo
	}
	type pending struct {
		l, g int
		a, b []slot
	}
	var groups []pending
	prefix := m.cfg.modulePrefix()
	for l := 0; l < m.cfg.Layers; l++ {
		for g := 0; g < numGroups; g++ {
			p := pending{l: l, g: g}
			for _, t := range ts {
				if tg, in, _, _ := m.loraGeom(t); tg == g {
					p.a = append(p.a, slot{t, add(peftTensorName(prefix, l, t, "A"), r, in)})
				}
			}
			for _, t := range ts {
				if tg, _, out, _ := m.loraGeom(t); tg == g {
					p.b = append(p.b, slot{t, add(peftTensorName(prefix, l, t, "B"), out, r)})
				}
			}
			groups = append(groups, p)
		}
	}
	last := lo.tensors[len(lo.tensors)-1]
	n := last.Offset + last.Size
	lo.params = make([]float32, n)
	lo.grads = make([]float32, n)
	view := func(flat []float32, a, size int) []float32 { return flat[a : a+size : a+size] }
	for _, p := range groups {
		grp := &lo.layers[p.l].groups[p.g]
		grp.ld = m.loraLD(p.g)
		if len(p.a) == 0 {
			continue
		}
		_, grp.in, _, _ = m.loraGeom(p.a[0].t)
		first, size := p.a[0].info.Offset, len(p.a)*r*grp.in
		grp.a, grp.ga = view(lo.params, first, size), view(lo.grads, first, size)
		for _, s := range p.b {
			_, _, out, off := m.loraGeom(s.t)
			grp.blocks = append(grp.blocks, loraBlock{target: s.t, out: out, off: off,
				b: view(lo.params, s.info.Offset, s.info.Size), gb: view(lo.grads, s.info.Offset, s.info.Size)})
		}
	}
	return lo, nil
}

// init draws every A from U(-1/√in, 1/√in), PEFT's kaiming_uniform_(a=√5),
// in storage order from a PCG generator seeded by the config, and zeroes B.
func (lo *LoRA) init() {
	rng := rand.New(rand.NewPCG(lo.cfg.Seed, 0x4c6f5241646170)) // "LoRAdap"
	for _, t := range lo.tensors {
		x := lo.params[t.Offset : t.Offset+t.Size]
		if !strings.HasSuffix(t.Name, ".lora_A.weight") {
			clear(x)
			continue
		}
		bound := 1 / math.Sqrt(float64(t.Shape[1]))
		for i := range x {
			x[i] = float32((2*rng.Float64() - 1) * bound)
		}
	}
}

// Config returns the adapters' configuration, targets in LoRATargets'
// order.
func (lo *LoRA) Config() LoRAConfig {
	c := lo.cfg
	c.Targets = slices.Clone(c.Targets)
	return c
}

// Scale returns Alpha/Rank, the factor on every adapter's output.
func (lo *LoRA) Scale() float32 { return lo.scale }

// Params returns the adapters' flat parameter vector.
func (lo *LoRA) Params() []float32 { return lo.params }

// Grads returns the adapters' flat gradient vector, laid out like Params.
func (lo *LoRA) Grads() []float32 { return lo.grads }

// Tensors lists the adapter tensors in storage order, named as in PEFT's
// adapter_model.safetensors (base_model.model.model.layers.L.self_attn.
// q_proj.lora_A.weight, [r, in]; ….lora_B.weight, [out, r]). The returned
// slice must not be modified.
func (lo *LoRA) Tensors() []TensorInfo { return lo.tensors }

// Tensor returns the values of the named adapter tensor, or nil.
func (lo *LoRA) Tensor(name string) []float32 {
	for _, t := range lo.tensors {
		if t.Name == name {
			return lo.params[t.Offset : t.Offset+t.Size]
		}
	}
	return nil
}

// NumParams returns the number of adapter parameters.
func (lo *LoRA) NumParams() int { return len(lo.params) }

// EnableLoRA adds adapters to the model as cfg describes (A drawn from
// cfg.Seed, B zero, so the model computes what it did; the rank at most
// the narrowest width, input or output, of the adapted projections, see
// CheckLoRA) and freezes the base weights: from now on Backward computes
// the adapters' gradients
// only, Grads is nil, and optimizers made by NewAdamW, and ClipGradNorm,
// act on the adapters. An optimizer made before is for the base weights
// and no longer fits. Sample and Score compute with the merged weights
// W + (Alpha/Rank)·B·A.
func (m *Model) EnableLoRA(cfg LoRAConfig) error {
	if m.lora != nil {
		return errors.New("native: lora: the model already has adapters")
	}
	lo, err := newLoRA(m, cfg)
	if err != nil {
		return err
	}
	lo.init()
	m.setLoRA(lo)
	return nil
}

// setLoRA installs adapters and drops the base weights' gradient.
func (m *Model) setLoRA(lo *LoRA) {
	m.lora = lo
	m.grads, m.g = nil, weights{}
	m.ws.ready = false
	m.version++
}

// LoRA returns the model's adapters, or nil when it has none.
func (m *Model) LoRA() *LoRA { return m.lora }

// MergeLoRA folds the adapters into the base weights, W ← W +
// (Alpha/Rank)·B·A, and removes them: the model is then a plain model,
// trained in full again (with a fresh zero gradient). The merged model's
// outputs equal the adapted model's to float rounding.
func (m *Model) MergeLoRA() error {
	lo := m.lora
	if lo == nil {
		return errors.New("native: lora: the model has no adapters to merge")
	}
	for l := range lo.layers {
		for g := 0; g < numGroups; g++ {
			lo.mergeInto(m.kern, m.baseMatrix(l, g), l, g)
		}
	}
	m.lora = nil
	m.grads = make([]float32, len(m.params))
	m.g = m.views(m.grads)
	m.ws.ready = false
	m.version++
	return nil
}

// baseMatrix returns the base weight that group g of layer l adapts.
func (m *Model) baseMatrix(l, g int) []float32 {
	p := &m.p.layers[l]
	switch g {
	case groupQKV:
		return p.wqkv
	case groupO:
		return p.wo
	case groupGU:
		return p.wgu
	}
	return p.wdown
}

// mergeInto adds (Alpha/Rank)·B·A of group g of layer l into w, the
// group's [ld, in] weight, block by block.
func (lo *LoRA) mergeInto(kern Kernels, w []float32, l, g int) {
	grp := &lo.layers[l].groups[g]
	r := lo.cfg.Rank
	for i, bk := range grp.blocks {
		kern.Gemm(false, false, bk.out, grp.in, r, lo.scale, bk.b, r, grp.a[i*r*grp.in:], grp.in, 1, w[bk.off*grp.in:], grp.in)
	}
}

// clone copies the adapters for model c (of the same configuration).
func (lo *LoRA) clone(c *Model) *LoRA {
	n, err := newLoRA(c, lo.cfg)
	if err != nil {
		panic("native: lora: clone of a valid configuration: " + err.Error())
	}
	copy(n.params, lo.params)
	copy(n.grads, lo.grads)
	return n
}

// groupWidth returns k·r, the width of group g's inner activation (the
// product of its stacked A with the input), in every layer the same.
func (lo *LoRA) groupWidth(g int) int {
	return len(lo.layers[0].groups[g].blocks) * lo.cfg.Rank
}

// forward adds group g's adapters of layer l to y (n rows of stride ld)
// for the input x [n, in]: u = x·Aᵀ (kept in u [n, k·r] for the backward),
// then y[:, block] += scale·u_block·Bᵀ for each target.
func (lo *LoRA) forward(kern Kernels, l, g int, y, x, u []float32, n int) {
	grp := &lo.layers[l].groups[g]
	if len(grp.blocks) == 0 {
		return
	}
	r := lo.cfg.Rank
	kr := len(grp.blocks) * r
	kern.Gemm(false, true, n, kr, grp.in, 1, x, grp.in, grp.a, grp.in, 0, u, kr)
	for i, bk := range grp.blocks {
		kern.Gemm(false, true, n, bk.out, r, lo.scale, u[i*r:], kr, bk.b, r, 1, y[bk.off:], grp.ld)
	}
}
