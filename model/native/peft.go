package native

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file writes and reads adapters as a PEFT LoRA adapter directory
// (what PeftModel.save_pretrained writes and PeftModel.from_pretrained and
// vLLM's LoRA loader read): adapter_config.json and
// adapter_model.safetensors with one lora_A ([r, in]) and one lora_B
// ([out, r]) per adapted module, named
// base_model.model.model.layers.L.self_attn.q_proj.lora_A.weight (for the
// text decoder of a Gemma 3 image-text model,
// base_model.model.model.language_model.layers.L.…, as PEFT names it on
// transformers 4.52 and later and vLLM maps it).

// Files of a PEFT adapter directory.
const (
	PEFTConfigFile  = "adapter_config.json"
	PEFTWeightsFile = "adapter_model.safetensors"
)

// peftConfigOut is the adapter_config.json SavePEFT writes: PEFT's LoraConfig
// fields with what this package supports (vLLM's PEFTHelper requires r,
// lora_alpha and target_modules and refuses modules_to_save and DoRA).
type peftConfigOut struct {
	PeftType          string          `json:"peft_type"`
	TaskType          string          `json:"task_type"`
	BaseModel         string          `json:"base_model_name_or_path"`
	R                 int             `json:"r"`
	LoraAlpha         float64         `json:"lora_alpha"`
	LoraDropout       float64         `json:"lora_dropout"`
	TargetModules     []string        `json:"target_modules"`
	Bias              string          `json:"bias"`
	FanInFanOut       bool            `json:"fan_in_fan_out"`
	UseRSLoRA         bool            `json:"use_rslora"`
	UseDoRA           bool            `json:"use_dora"`
	ModulesToSave     []string        `json:"modules_to_save"`
	InitLoraWeights   bool            `json:"init_lora_weights"`
	InferenceMode     bool            `json:"inference_mode"`
	RankPattern       map[string]int  `json:"rank_pattern"`
	AlphaPattern      map[string]int  `json:"alpha_pattern"`
	LayersToTransform json.RawMessage `json:"layers_to_transform"`
	LayersPattern     json.RawMessage `json:"layers_pattern"`
	Revision          json.RawMessage `json:"revision"`
}

// SavePEFT writes m's adapters into dir (created if needed) as a PEFT LoRA
// adapter directory: adapter_config.json (peft_type LORA, task_type
// CAUSAL_LM, r, lora_alpha, lora_dropout, target_modules, bias "none",
// base_model_name_or_path baseModel) and float32 adapter_model.safetensors.
// The files are written in place, not fsynced: write into a directory that
// is then synced and swapped in (internal/atomicdir), as the trainer's
// checkpoints are.
func SavePEFT(dir string, m *Model, baseModel string) error {
	lo := m.lora
	if lo == nil {
		return errors.New("native: peft: the model has no adapters")
	}
	null := json.RawMessage("null")
	cfg := peftConfigOut{
		PeftType: "LORA", TaskType: "CAUSAL_LM", BaseModel: baseModel,
		R: lo.cfg.Rank, LoraAlpha: lo.cfg.Alpha, LoraDropout: lo.cfg.Dropout, TargetModules: slices.Clone(lo.cfg.Targets),
		Bias: "none", InitLoraWeights: true, InferenceMode: true,
		RankPattern: map[string]int{}, AlphaPattern: map[string]int{},
		LayersToTransform: null, LayersPattern: null, Revision: null,
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("native: peft: %w", err)
	}
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, namedTensors(lo.tensors, "", lo.params), map[string]string{"format": "pt"}); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("native: peft: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PEFTConfigFile), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("native: peft: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PEFTWeightsFile), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("native: peft: %w", err)
	}
	return nil
}

// peftConfigIn is adapter_config.json as read: every field that changes
// what the adapter computes, so that an unsupported one is refused rather
// than ignored.
type peftConfigIn struct {
	PeftType      string          `json:"peft_type"`
	TaskType      *string         `json:"task_type"`
	BaseModel     *string         `json:"base_model_name_or_path"`
	R             *int            `json:"r"`
	LoraAlpha     *float64        `json:"lora_alpha"`
	LoraDropout   float64         `json:"lora_dropout"`
	TargetModules json.RawMessage `json:"target_modules"`
	Bias          *string         `json:"bias"`
	FanInFanOut   bool            `json:"fan_in_fan_out"`
	UseRSLoRA     bool            `json:"use_rslora"`
	UseDoRA       bool            `json:"use_dora"`
	LoraBias      bool            `json:"lora_bias"`
	ModulesToSave json.RawMessage `json:"modules_to_save"`
	// Options that, set, select layers or ranks per module, or change the
	// model outside the adapted projections.
	RankPattern           json.RawMessage `json:"rank_pattern"`
	AlphaPattern          json.RawMessage `json:"alpha_pattern"`
	LayersToTransform     json.RawMessage `json:"layers_to_transform"`
	LayerReplication      json.RawMessage `json:"layer_replication"`
	ExcludeModules        json.RawMessage `json:"exclude_modules"`
	TrainableTokenIndices json.RawMessage `json:"trainable_token_indices"`
	TargetParameters      json.RawMessage `json:"target_parameters"`
}

// isEmptyJSON reports whether a JSON value is absent, null, or an empty
// list, object or string.
func isEmptyJSON(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "[]", "{}", `""`:
		return true
	}
	return false
}

// ReadPEFTConfig reads dir's adapter_config.json and returns the adapters'
// configuration (Seed 0) and its base_model_name_or_path. It refuses what
// this package does not implement, naming it: a peft_type other than LORA,
// a task_type other than CAUSAL_LM, rsLoRA (use_rslora), DoRA (use_dora),
// biases (bias other than "none", lora_bias), modules_to_save,
// fan_in_fan_out, per-module ranks or alphas (rank_pattern,
// alpha_pattern), layer selection (layers_to_transform, exclude_modules),
// layer_replication, trainable_token_indices, target_parameters, and
// target modules other than LoRATargets (given as a list, or as the
// string "all-linear"; a regular expression is refused). lora_dropout is
// accepted and dropped: it acts only in training, which here runs without
// dropout.
func ReadPEFTConfig(dir string) (LoRAConfig, string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, PEFTConfigFile))
	if err != nil {
		return LoRAConfig{}, "", fmt.Errorf("native: peft: %w", err)
	}
	return parsePEFTConfig(raw)
}

// parsePEFTConfig is ReadPEFTConfig on the file's contents.
func parsePEFTConfig(raw []byte) (LoRAConfig, string, error) {
	var pc peftConfigIn
	if err := json.Unmarshal(raw, &pc); err != nil {
		return LoRAConfig{}, "", fmt.Errorf("native: peft: %s: %w", PEFTConfigFile, err)
	}
	bad := func(format string, args ...any) (LoRAConfig, string, error) {
		return LoRAConfig{}, "", fmt.Errorf("native: peft: %s: "+format, append([]any{PEFTConfigFile}, args...)...)
	}
	switch {
	case pc.PeftType != "LORA":
		return bad("peft_type %q is not supported (want LORA)", pc.PeftType)
	case pc.TaskType != nil && *pc.TaskType != "CAUSAL_LM":
		return bad("task_type %q is not supported (want CAUSAL_LM)", *pc.TaskType)
	case pc.R == nil:
		return bad("r is missing")
	case pc.LoraAlpha == nil:
		return bad("lora_alpha is missing")
	case pc.UseRSLoRA:
		return bad("use_rslora (rank-stabilised scaling alpha/√r) is not supported")
	case pc.UseDoRA:
		return bad("use_dora (DoRA) is not supported")
	case pc.Bias != nil && *pc.Bias != "none":
		return bad("bias %q is not supported (want \"none\")", *pc.Bias)
	case pc.LoraBias:
		return bad("lora_bias is not supported")
	case !isEmptyJSON(pc.ModulesToSave):
		return bad("modules_to_save %s is not supported (want null): only LoRA adapters are loaded, no fully trained modules", pc.ModulesToSave)
	case pc.FanInFanOut:
		return bad("fan_in_fan_out is not supported (the projections are nn.Linear)")
	case !isEmptyJSON(pc.RankPattern):
		return bad("rank_pattern %s is not supported: every adapter has rank r", pc.RankPattern)
	case !isEmptyJSON(pc.AlphaPattern):
		return bad("alpha_pattern %s is not supported: every adapter has lora_alpha", pc.AlphaPattern)
	case !isEmptyJSON(pc.LayersToTransform):
		return bad("layers_to_transform %s is not supported: every layer is adapted", pc.LayersToTransform)
	case !isEmptyJSON(pc.ExcludeModules):
		return bad("exclude_modules %s is not supported", pc.ExcludeModules)
	case !isEmptyJSON(pc.LayerReplication):
		return bad("layer_replication is not supported")
	case !isEmptyJSON(pc.TrainableTokenIndices):
		return bad("trainable_token_indices is not supported")
	case !isEmptyJSON(pc.TargetParameters):
		return bad("target_parameters is not supported")
	}
	var targets []string
	var s string
	if err := json.Unmarshal(pc.TargetModules, &s); err == nil {
		if s != "all-linear" {
			return bad("target_modules %q: a regular expression is not supported (list the modules, or all-linear)", s)
		}
		targets = LoRATargets()
	} else if err := json.Unmarshal(pc.TargetModules, &targets); err != nil || len(targets) == 0 {
		return bad("target_modules must be a non-empty list of module names (got %s)", string(pc.TargetModules))
	}
	cfg := LoRAConfig{Rank: *pc.R, Alpha: *pc.LoraAlpha, Targets: targets}
	if _, err := cfg.targets(); err != nil {
		return bad("%w", err)
	}
	cfg.Targets = canonicalTargets(cfg.Targets)
	base := ""
	if pc.BaseModel != nil {
		base = *pc.BaseModel
	}
	return cfg, base, nil
}

// canonicalTargets returns valid target names in LoRATargets' order.
func canonicalTargets(names []string) []string {
	var out []string
	for _, t := range loraTargetNames {
		if slices.Contains(names, t) {
			out = append(out, t)
		}
	}
	return out
}

// peftFileLimit bounds the size of an adapter_model.safetensors for
// adapters of n float32 parameters in k tensors: the data (as float32,
// the widest dtype read), the 8-byte length, and a header of up to 1 KiB
// a tensor with 1 MiB to spare. A file over it is refused before it is
// read, so that what LoadPEFT reads and expands stays proportional to the
// model, whatever file it is pointed at.
func peftFileLimit(n, k int) int64 { return 4*int64(n) + 8 + int64(k)<<10 + 1<<20 }

// CheckPEFT reports, without loading weights, why the PEFT adapter
// directory dir cannot go on m: its configuration (ReadPEFTConfig), a
// rank or targets m cannot take (Model.CheckLoRA), or an
// adapter_model.safetensors larger than such adapters need. A server
// calls it before it copies the base model to load the adapter on.
func CheckPEFT(dir string, m *Model) error {
	cfg, _, err := ReadPEFTConfig(dir)
	if err != nil {
		return err
	}
	if err := m.CheckLoRA(cfg); err != nil {
		return fmt.Errorf("%w (%s)", err, filepath.Join(dir, PEFTConfigFile))
	}
	return checkPEFTFile(dir, m, cfg)
}

// checkPEFTFile checks the size of dir's adapter_model.safetensors
// against what adapters as cfg describes on m take.
func checkPEFTFile(dir string, m *Model, cfg LoRAConfig) error {
	ts, _ := cfg.targets()
	n, k := 0, 0
	for _, t := range ts {
		_, in, out, _ := m.loraGeom(t)
		n += cfg.Rank * (in + out) * m.cfg.Layers
		k += 2 * m.cfg.Layers
	}
	st, err := os.Stat(filepath.Join(dir, PEFTWeightsFile))
	if err != nil {
		return fmt.Errorf("native: peft: %w", err)
	}
	if limit := peftFileLimit(n, k); st.Size() > limit {
		return fmt.Errorf("native: peft: %s is %d bytes, more than the %d that %d adapter parameters of rank %d take",
			PEFTWeightsFile, st.Size(), limit, n, cfg.Rank)
	}
	return nil
}

// LoadPEFT loads the PEFT LoRA adapter directory dir (see
// ReadPEFTConfig for the configurations it refuses) into m: as new
// adapters when m has none, or over m's adapters, which must then have the
// same rank, alpha and target modules. Tensors may be float32, bfloat16 or
// float16, named with or without the base_model.model. prefix; every
// adapted module of every layer needs its lora_A ([r, in]) and lora_B
// ([out, r]), and any other tensor is an error. The rank is bounded by
// the model (Model.CheckLoRA) and the file by what such adapters take,
// before anything is allocated for them; a weight that is not finite (NaN
// or ±Inf) is an error, as such an adapter could only sample nonsense.
// The base model is not checked beyond its shapes. On error, m is
// unchanged.
func LoadPEFT(dir string, m *Model) error {
	cfg, _, err := ReadPEFTConfig(dir)
	if err != nil {
		return err
	}
	if lo := m.lora; lo != nil {
		have := lo.cfg
		switch {
		case have.Rank != cfg.Rank:
			return fmt.Errorf("native: peft: %s: rank mismatch: r is %d, the model's adapters have rank %d", dir, cfg.Rank, have.Rank)
		case have.Alpha != cfg.Alpha:
			return fmt.Errorf("native: peft: %s: lora_alpha is %v, the model's adapters have alpha %v", dir, cfg.Alpha, have.Alpha)
		case !slices.Equal(have.Targets, cfg.Targets):
			return fmt.Errorf("native: peft: %s: target_modules are %v, the model's adapters are on %v", dir, cfg.Targets, have.Targets)
		}
	}
	if err := m.CheckLoRA(cfg); err != nil {
		return fmt.Errorf("%w (%s)", err, filepath.Join(dir, PEFTConfigFile))
	}
	if err := checkPEFTFile(dir, m, cfg); err != nil {
		return err
	}
	lo, err := newLoRA(m, cfg)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, PEFTWeightsFile))
	if err != nil {
		return fmt.Errorf("native: peft: %w", err)
	}
	tensors, _, err := readSafetensors(raw, true)
	if err != nil {
		return fmt.Errorf("native: peft: %s: %w", PEFTWeightsFile, err)
	}
	byName := make(map[string]NamedTensor, len(tensors))
	for _, t := range tensors {
		name := t.Name
		if !strings.HasPrefix(name, "base_model.model.") {
			name = "base_model.model." + name
		}
		if m.cfg.ModulePrefix == "model.language_model" {
			// A Gemma 3 image-text model's decoder, as PEFT named it
			// before transformers 4.52 moved it.
			if rest, ok := strings.CutPrefix(name, "base_model.model.language_model.model."); ok {
				name = "base_model.model.model.language_model." + rest
			}
		}
		if _, dup := byName[name]; dup {
			return fmt.Errorf("native: peft: %s: tensor %q appears twice (with and without the base_model.model. prefix)", PEFTWeightsFile, t.Name)
		}
		byName[name] = t
	}
	for _, t := range lo.tensors {
		got, ok := byName[t.Name]
		if !ok {
			return fmt.Errorf("native: peft: %s: missing tensor %q", PEFTWeightsFile, t.Name)
		}
		if !slices.Equal(got.Shape, t.Shape) {
			isA := strings.HasSuffix(t.Name, ".lora_A.weight")
			if len(got.Shape) == 2 && (isA && got.Shape[1] == t.Shape[1] && got.Shape[0] != cfg.Rank ||
				!isA && got.Shape[0] == t.Shape[0] && got.Shape[1] != cfg.Rank) {
				return fmt.Errorf("native: peft: %s: rank mismatch: tensor %q has shape %v, r = %d needs %v", PEFTWeightsFile, got.Name, got.Shape, cfg.Rank, t.Shape)
			}
			return fmt.Errorf("native: peft: %s: tensor %q has shape %v, the model needs %v (an adapter for another base model?)", PEFTWeightsFile, got.Name, got.Shape, t.Shape)
		}
		for i, x := range got.Data {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("native: peft: %s: tensor %q holds %v at index %d: an adapter's weights must be finite", PEFTWeightsFile, got.Name, x, i)
			}
		}
		copy(lo.params[t.Offset:t.Offset+t.Size], got.Data)
		delete(byName, t.Name)
	}
	if len(byName) > 0 {
		names := make([]string, 0, len(byName))
		for _, t := range byName {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		return fmt.Errorf("native: peft: %s: unexpected tensor %q (a module outside target_modules %v, a layer the model lacks, or an unsupported kind of adapter weight)",
			PEFTWeightsFile, names[0], cfg.Targets)
	}
	if m.lora != nil {
		copy(m.lora.params, lo.params)
		clear(m.lora.grads)
		m.ws.ready = false
		m.version++
		return nil
	}
	m.setLoRA(lo)
	return nil
}
