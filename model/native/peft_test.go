package native

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPEFTRoundTrip: SavePEFT writes PEFT's layout (adapter_config.json
// with the keys PEFT and vLLM read, tensors named and shaped as PEFT
// names and shapes them), and LoadPEFT reads it back into the base model
// exactly, as new adapters or over existing ones.
func TestPEFTRoundTrip(t *testing.T) {
	base := testModel(t, sampleConfig(), 3)
	m := withLoRA(t, base, LoRAConfig{Rank: 4, Alpha: 16, Targets: []string{"v_proj", "q_proj", "down_proj", "gate_proj"}, Seed: 3}, 0.1)
	dir := t.TempDir()
	if err := SavePEFT(dir, m, "/models/base"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, PEFTConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{
		"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": "/models/base",
		"r": 4.0, "lora_alpha": 16.0, "lora_dropout": 0.0, "bias": "none", "fan_in_fan_out": false,
		"use_rslora": false, "use_dora": false, "modules_to_save": nil,
	} {
		if got, ok := cfg[k]; !ok || got != want {
			t.Errorf("adapter_config.json: %s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if tm, _ := json.Marshal(cfg["target_modules"]); string(tm) != `["q_proj","v_proj","gate_proj","down_proj"]` {
		t.Errorf("target_modules %s", tm)
	}
	if !strings.Contains(string(raw), `"lora_alpha": 16,`) {
		t.Errorf("lora_alpha is not written as an integer:\n%s", raw)
	}
	wraw, err := os.ReadFile(filepath.Join(dir, PEFTWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	tensors, _, err := ReadSafetensors(wraw)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config()
	shapes := map[string][]int{}
	for _, ts := range tensors {
		shapes[ts.Name] = ts.Shape
	}
	hd := c.DModel / c.Heads
	for name, want := range map[string][]int{
		"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": {4, c.DModel},
		"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": {c.Heads * hd, 4},
		"base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight": {c.KVHeads * hd, 4},
		"base_model.model.model.layers.1.mlp.gate_proj.lora_B.weight":    {c.DFF, 4},
		"base_model.model.model.layers.1.mlp.down_proj.lora_A.weight":    {4, c.DFF},
		"base_model.model.model.layers.1.mlp.down_proj.lora_B.weight":    {c.DModel, 4},
	} {
		if !slices.Equal(shapes[name], want) {
			t.Errorf("%s: shape %v, want %v", name, shapes[name], want)
		}
	}
	if want := 2 * 4 * c.Layers; len(tensors) != want {
		t.Errorf("%d tensors, want %d", len(tensors), want)
	}

	rng := rand.New(rand.NewPCG(1, 1))
	b := Batch{Tokens: [][]int{randTokens(rng, 12, 37)}}
	lp, _, _ := forwardCopy(t, m, b, false)
	fresh := base.Clone()
	if err := LoadPEFT(dir, fresh); err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(fresh.LoRA().Params(), m.LoRA().Params()) {
		t.Fatal("adapters did not round-trip")
	}
	if lp2, _, _ := forwardCopy(t, fresh, b, false); !rowsBitsEqual(lp, lp2) {
		t.Error("outputs after the round trip differ")
	}
	// Over existing adapters of the same configuration.
	over := withLoRA(t, base, LoRAConfig{Rank: 4, Alpha: 16, Targets: []string{"q_proj", "v_proj", "gate_proj", "down_proj"}, Seed: 9}, 0)
	if err := LoadPEFT(dir, over); err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(over.LoRA().Params(), m.LoRA().Params()) {
		t.Error("adapters loaded over existing ones differ")
	}
	// Over existing adapters of another rank.
	other := withLoRA(t, base, LoRAConfig{Rank: 2, Alpha: 16, Targets: []string{"q_proj", "v_proj", "gate_proj", "down_proj"}}, 0)
	if err := LoadPEFT(dir, other); err == nil || !strings.Contains(err.Error(), "rank mismatch") {
		t.Errorf("loading rank 4 over rank 2 adapters: %v", err)
	}

	// bfloat16 tensors without the base_model.model. prefix, as other
	// tools write them.
	half := t.TempDir()
	copyFile(t, filepath.Join(dir, PEFTConfigFile), filepath.Join(half, PEFTConfigFile))
	writeBF16(t, filepath.Join(half, PEFTWeightsFile), tensors, "base_model.model.")
	hm := base.Clone()
	if err := LoadPEFT(half, hm); err != nil {
		t.Fatal(err)
	}
	for i, x := range m.LoRA().Params() {
		if want := math.Float32frombits(math.Float32bits(x) &^ 0xffff); hm.LoRA().Params()[i] != want {
			t.Fatalf("bf16 value %d: %g, want %g", i, hm.LoRA().Params()[i], want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeBF16 writes tensors as a bfloat16 safetensors file (truncating),
// with trim cut from the front of each name.
func writeBF16(t *testing.T, path string, tensors []NamedTensor, trim string) {
	t.Helper()
	header := map[string]any{}
	var data []byte
	for _, ts := range tensors {
		start := len(data)
		for _, x := range ts.Data {
			data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(x)>>16))
		}
		header[strings.TrimPrefix(ts.Name, trim)] = map[string]any{"dtype": "BF16", "shape": ts.Shape, "data_offsets": []int{start, len(data)}}
	}
	js, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	buf.Write(js)
	buf.Write(data)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPEFTImportErrors: every unsupported or inconsistent adapter is
// refused with a message that names the problem, and the model is left
// without adapters.
func TestPEFTImportErrors(t *testing.T) {
	base := testModel(t, sampleConfig(), 3)
	m := withLoRA(t, base, LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}, 0.1)
	good := t.TempDir()
	if err := SavePEFT(good, m, "base"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(good, PEFTWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	tensors, _, err := ReadSafetensors(raw)
	if err != nil {
		t.Fatal(err)
	}
	other := testModel(t, Config{Vocab: 37, DModel: 48, Layers: 2, Heads: 4, KVHeads: 2, DFF: 48, MaxSeq: 64, QKVBias: true, TieEmbeddings: true}, 1)
	otherLoRA := withLoRA(t, other, LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}, 0)

	for _, c := range []struct {
		name    string
		config  func(map[string]any)
		tensors func([]NamedTensor) []NamedTensor
		want    string
	}{
		{name: "rank in config differs from the tensors", config: func(c map[string]any) { c["r"] = 8 }, want: "rank mismatch"},
		{name: "unknown target", config: func(c map[string]any) { c["target_modules"] = []string{"q_proj", "lm_head"} }, want: `unknown target module "lm_head"`},
		{name: "regex target", config: func(c map[string]any) { c["target_modules"] = ".*proj" }, want: "regular expression"},
		{name: "rslora", config: func(c map[string]any) { c["use_rslora"] = true }, want: "use_rslora"},
		{name: "dora", config: func(c map[string]any) { c["use_dora"] = true }, want: "use_dora"},
		{name: "bias", config: func(c map[string]any) { c["bias"] = "lora_only" }, want: `bias "lora_only" is not supported`},
		{name: "modules_to_save", config: func(c map[string]any) { c["modules_to_save"] = []string{"lm_head"} }, want: "modules_to_save"},
		{name: "fan_in_fan_out", config: func(c map[string]any) { c["fan_in_fan_out"] = true }, want: "fan_in_fan_out"},
		{name: "rank_pattern", config: func(c map[string]any) { c["rank_pattern"] = map[string]int{"q_proj": 2} }, want: "rank_pattern"},
		{name: "layers_to_transform", config: func(c map[string]any) { c["layers_to_transform"] = []int{0} }, want: "layers_to_transform"},
		{name: "peft type", config: func(c map[string]any) { c["peft_type"] = "IA3" }, want: `peft_type "IA3"`},
		{name: "task type", config: func(c map[string]any) { c["task_type"] = "SEQ_CLS" }, want: `task_type "SEQ_CLS"`},
		{name: "no r", config: func(c map[string]any) { delete(c, "r") }, want: "r is missing"},
		{name: "missing tensor", tensors: func(ts []NamedTensor) []NamedTensor { return ts[1:] }, want: "missing tensor"},
		{name: "extra tensor", tensors: func(ts []NamedTensor) []NamedTensor {
			x := ts[0]
			x.Name = "base_model.model.lm_head.lora_A.weight"
			return append(ts, x)
		}, want: `unexpected tensor "base_model.model.lm_head.lora_A.weight"`},
		{name: "shape mismatch", tensors: func([]NamedTensor) []NamedTensor {
			return namedTensors(otherLoRA.LoRA().Tensors(), "", otherLoRA.LoRA().Params())
		}, want: "an adapter for another base model"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var cfg map[string]any
			craw, err := os.ReadFile(filepath.Join(good, PEFTConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(craw, &cfg); err != nil {
				t.Fatal(err)
			}
			if c.config != nil {
				c.config(cfg)
			}
			js, _ := json.Marshal(cfg)
			if err := os.WriteFile(filepath.Join(dir, PEFTConfigFile), js, 0o644); err != nil {
				t.Fatal(err)
			}
			ts := slices.Clone(tensors)
			if c.tensors != nil {
				ts = c.tensors(ts)
			}
			var buf bytes.Buffer
			if err := WriteSafetensors(&buf, ts, nil); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, PEFTWeightsFile), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			fresh := base.Clone()
			err = LoadPEFT(dir, fresh)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			t.Log(err)
			if fresh.LoRA() != nil || fresh.Grads() == nil {
				t.Error("a failed import changed the model")
			}
		})
	}
	// all-linear and a dropout load (the dropout is dropped).
	cfgRaw, _ := os.ReadFile(filepath.Join(good, PEFTConfigFile))
	var cfg map[string]any
	json.Unmarshal(cfgRaw, &cfg)
	cfg["target_modules"], cfg["lora_dropout"] = "all-linear", 0.05
	dir := t.TempDir()
	js, _ := json.Marshal(cfg)
	os.WriteFile(filepath.Join(dir, PEFTConfigFile), js, 0o644)
	lc, baseName, err := ReadPEFTConfig(dir)
	if err != nil || !slices.Equal(lc.Targets, LoRATargets()) || lc.Dropout != 0 || baseName != "base" {
		t.Errorf("all-linear: %+v %q %v", lc, baseName, err)
	}
	if err := SavePEFT(t.TempDir(), base, ""); err == nil {
		t.Error("SavePEFT of a model without adapters accepted")
	}
}
