package native

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peftDir saves adapters of rank 4 on q_proj and v_proj of base into a
// fresh directory, their parameters changed by params and their
// adapter_config.json by cfg (each when not nil).
func peftDir(t *testing.T, base *Model, cfg func(map[string]any), params func([]float32)) string {
	t.Helper()
	m := withLoRA(t, base, LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}, 0.1)
	if params != nil {
		params(m.LoRA().Params())
	}
	dir := t.TempDir()
	if err := SavePEFT(dir, m, "base"); err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		return dir
	}
	raw, err := os.ReadFile(filepath.Join(dir, PEFTConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	cfg(c)
	js, _ := json.Marshal(c)
	if err := os.WriteFile(filepath.Join(dir, PEFTConfigFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPEFTRankIsBounded: an adapter_config.json whose r asks for more than
// the model's projections can use (r: 10^9 once made LoadPEFT allocate
// until the process died) is refused before anything is allocated, by
// LoadPEFT, CheckPEFT and EnableLoRA alike.
func TestPEFTRankIsBounded(t *testing.T) {
	base := testModel(t, sampleConfig(), 3) // v_proj: 32 → 16, the narrowest
	for _, r := range []float64{1e9, 1 << 40, 17} {
		dir := peftDir(t, base, func(cfg map[string]any) { cfg["r"] = r }, nil)
		fresh := base.Clone()
		err := LoadPEFT(dir, fresh)
		if err == nil || !strings.Contains(err.Error(), "exceeds 16") {
			t.Fatalf("r = %g: LoadPEFT error %v", r, err)
		}
		if fresh.LoRA() != nil {
			t.Fatal("a refused adapter changed the model")
		}
		if err := CheckPEFT(dir, base); err == nil || !strings.Contains(err.Error(), "exceeds 16") {
			t.Fatalf("r = %g: CheckPEFT error %v", r, err)
		}
	}
	if err := base.Clone().EnableLoRA(LoRAConfig{Rank: 17, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}); err == nil || !strings.Contains(err.Error(), "v_proj") {
		t.Fatalf("EnableLoRA of rank 17: %v", err)
	}
	// The bound itself is allowed: r = 16, and 32 where only q_proj (32×32)
	// is adapted.
	if err := base.Clone().EnableLoRA(LoRAConfig{Rank: 16, Alpha: 8, Targets: []string{"q_proj", "v_proj"}}); err != nil {
		t.Fatal(err)
	}
	if err := base.Clone().EnableLoRA(LoRAConfig{Rank: 32, Alpha: 8, Targets: []string{"q_proj"}}); err != nil {
		t.Fatal(err)
	}
}

// TestPEFTFileIsBounded: a weights file larger than the adapters its
// configuration describes is refused before it is read.
func TestPEFTFileIsBounded(t *testing.T) {
	base := testModel(t, sampleConfig(), 3)
	dir := peftDir(t, base, nil, nil)
	path := filepath.Join(dir, PEFTWeightsFile)
	if err := os.Truncate(path, 64<<20); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	err := LoadPEFT(dir, base.Clone())
	if err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("LoadPEFT of a 64 MiB weights file: %v", err)
	}
	if err := CheckPEFT(dir, base); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("CheckPEFT: %v", err)
	}
}

// TestPEFTNonFiniteWeights: an adapter with a NaN or infinite weight (one
// all NaN once loaded and served a constant token without a word) is a
// load error that names the tensor.
func TestPEFTNonFiniteWeights(t *testing.T) {
	base := testModel(t, sampleConfig(), 3)
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		dir := peftDir(t, base, nil, func(params []float32) { params[len(params)-1] = bad })
		fresh := base.Clone()
		err := LoadPEFT(dir, fresh)
		if err == nil || !strings.Contains(err.Error(), "finite") || !strings.Contains(err.Error(), "lora_") {
			t.Fatalf("%v weight: LoadPEFT error %v", bad, err)
		}
		if fresh.LoRA() != nil {
			t.Fatal("a refused adapter changed the model")
		}
	}
}

// FuzzPEFTConfig parses arbitrary adapter_config.json contents: no
// input may panic, and a configuration accepted for a model never asks
// for more adapter parameters than twice the weights it adapts, which is
// what loading it then allocates (twice: parameters and gradients).
func FuzzPEFTConfig(f *testing.F) {
	m := testModel(f, sampleConfig(), 3)
	for _, seed := range []string{
		`{"peft_type":"LORA","task_type":"CAUSAL_LM","r":4,"lora_alpha":8,"target_modules":["q_proj","v_proj"],"bias":"none"}`,
		`{"peft_type":"LORA","r":1000000000,"lora_alpha":16,"target_modules":"all-linear"}`,
		`{"peft_type":"LORA","r":-1,"lora_alpha":16,"target_modules":["q_proj","q_proj"]}`,
		`{"peft_type":"LORA","r":16,"lora_alpha":1e309,"target_modules":["down_proj"],"lora_dropout":0.1}`,
		`{"peft_type":"LORA","r":8,"lora_alpha":8,"target_modules":".*","rank_pattern":{"q":2}}`,
		`{"peft_type":"LORA","r":4.5,"lora_alpha":8,"target_modules":[]}`,
		`[]`, `null`, `{"r":9223372036854775807}`,
	} {
		f.Add([]byte(seed))
	}
	var adapted int64 // the weights of every projection that can be adapted
	for ti := range loraTargetNames {
		_, in, out, _ := m.loraGeom(ti)
		adapted += int64(in) * int64(out) * int64(m.cfg.Layers)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, err := parsePEFTConfig(raw)
		if err != nil {
			return
		}
		if m.CheckLoRA(cfg) != nil {
			return
		}
		ts, _ := cfg.targets()
		var n int64
		for _, ti := range ts {
			_, in, out, _ := m.loraGeom(ti)
			n += int64(cfg.Rank) * int64(in+out) * int64(m.cfg.Layers)
		}
		if n > 2*adapted {
			t.Fatalf("rank %d on %v accepted: %d adapter parameters for %d adapted weights", cfg.Rank, cfg.Targets, n, adapted)
		}
		lo, err := newLoRA(m, cfg)
		if err != nil || int64(len(lo.params)) != n {
			t.Fatalf("newLoRA: %v", err)
		}
	})
}
