package native

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHFRoundTrip(t *testing.T) {
	for _, bias := range []bool{true, false} {
		for _, tied := range []bool{true, false} {
			cfg := sampleConfig()
			cfg.QKVBias, cfg.TieEmbeddings = bias, tied
			m := testModel(t, cfg, 21)
			dir := t.TempDir()
			if err := SaveHF(dir, m); err != nil {
				t.Fatal(err)
			}
			got, err := LoadHF(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Config() != m.Config() {
				t.Errorf("bias=%v tied=%v: config %+v, want %+v", bias, tied, got.Config(), m.Config())
			}
			if !bitsEqual(got.Params(), m.Params()) {
				t.Errorf("bias=%v tied=%v: parameters differ", bias, tied)
			}
		}
	}
}

// writeBF16Shards rewrites a float32 HF checkpoint as two BF16 shards with
// an index, as large Hugging Face checkpoints are stored.
func writeBF16Shards(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := ReadSafetensors(data)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "model.safetensors"))
	weightMap := map[string]string{}
	for shard, part := range [][]NamedTensor{ts[:len(ts)/2], ts[len(ts)/2:]} {
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[shard]
		header := map[string]any{}
		var body []byte
		for _, x := range part {
			start := len(body)
			for _, v := range x.Data {
				body = binary.LittleEndian.AppendUint16(body, uint16(math.Float32bits(v)>>16))
			}
			header[x.Name] = map[string]any{"dtype": "BF16", "shape": x.Shape, "data_offsets": []int{start, len(body)}}
			weightMap[x.Name] = name
		}
		js, _ := json.Marshal(header)
		file := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
		file = append(append(file, js...), body...)
		if err := os.WriteFile(filepath.Join(dir, name), file, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, _ := json.Marshal(map[string]any{"weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHFShardedBF16(t *testing.T) {
	cfg := sampleConfig()
	m := testModel(t, cfg, 22)
	dir := t.TempDir()
	if err := SaveHF(dir, m); err != nil {
		t.Fatal(err)
	}
	writeBF16Shards(t, dir)
	got, err := LoadHF(dir, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got.Config().MaxSeq != 32 {
		t.Errorf("MaxSeq %d, want the override 32", got.Config().MaxSeq)
	}
	for i, v := range m.Params() {
		want := math.Float32frombits(math.Float32bits(v) &^ 0xffff)
		if got.Params()[i] != want {
			t.Fatalf("param %d = %g, want %g (bf16 of %g)", i, got.Params()[i], want, v)
		}
	}
}

func TestHFErrors(t *testing.T) {
	m := testModel(t, sampleConfig(), 23)
	edit := func(t *testing.T, f func(dir string)) error {
		dir := t.TempDir()
		if err := SaveHF(dir, m); err != nil {
			t.Fatal(err)
		}
		f(dir)
		_, err := LoadHF(dir, 0)
		return err
	}
	editConfig := func(key string, val any) func(string) {
		return func(dir string) {
			p := filepath.Join(dir, "config.json")
			raw, _ := os.ReadFile(p)
			var c map[string]any
			json.Unmarshal(raw, &c)
			c[key] = val
			raw, _ = json.Marshal(c)
			os.WriteFile(p, raw, 0o644)
		}
	}
	for _, c := range []struct {
		name string
		f    func(string)
		want string
	}{
		{"model type", editConfig("model_type", "gpt2"), "model_type"},
		{"architecture", editConfig("architectures", []string{"Qwen2ForSequenceClassification"}), `architecture "Qwen2ForSequenceClassification"`},
		{"rope scaling", editConfig("rope_scaling", map[string]any{"type": "yarn"}), "rope_scaling"},
		{"rope scaling in rope_parameters", editConfig("rope_parameters", map[string]any{"rope_type": "yarn", "rope_theta": 5e5, "factor": 8}), "rope_parameters"},
		{"partial rotary factor", editConfig("rope_parameters", map[string]any{"rope_type": "default", "partial_rotary_factor": 0.5}), `"partial_rotary_factor"`},
		{"activation", editConfig("hidden_act", "gelu"), "hidden_act"},
		{"shape", editConfig("intermediate_size", 40), "shape"},
		{"untied without head", editConfig("tie_word_embeddings", false), "lm_head"},
		{"no weights", func(dir string) { os.Remove(filepath.Join(dir, "model.safetensors")) }, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := edit(t, c.f); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestHFConfigDefaults checks the keys transformers 5 moved or a
// config.json may leave out: rope_theta inside rope_parameters, and
// rms_norm_eps absent (the configuration classes' 1e-6).
func TestHFConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	if err := SaveHF(dir, testModel(t, sampleConfig(), 23)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.json")
	raw, _ := os.ReadFile(p)
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	delete(c, "rope_theta")
	delete(c, "rms_norm_eps")
	c["rope_parameters"] = map[string]any{"rope_theta": 5e5, "rope_type": "default"}
	raw, _ = json.Marshal(c)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadHF(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Config(); got.RopeTheta != 5e5 || got.NormEps != 1e-6 {
		t.Errorf("rope_theta %g, rms_norm_eps %g; want 500000 (from rope_parameters) and 1e-6", got.RopeTheta, got.NormEps)
	}
}

func TestHalfToFloat(t *testing.T) {
	for h, want := range map[uint16]float64{
		0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: math.Pow(2, -24), 0x8000: 0,
		0x7c00: math.Inf(1), 0xfc00: math.Inf(-1), 0x3555: 0.333251953125,
	} {
		if got := halfToFloat(h); float64(got) != want {
			t.Errorf("halfToFloat(%#04x) = %g, want %g", h, got, want)
		}
	}
	if v := halfToFloat(0x7e00); v == v {
		t.Error("NaN not preserved")
	}
}

// TestHFReferenceDump writes tiny Hugging Face checkpoints and the native
// model's log-probs and entropies for testdata/hf_reference.py, an
// independent Python implementation of the Hugging Face forward. It runs only
// when NATIVE_HF_DUMP names an output directory.
func TestHFReferenceDump(t *testing.T) {
	dir := os.Getenv("NATIVE_HF_DUMP")
	if dir == "" {
		t.Skip("set NATIVE_HF_DUMP to write the reference checkpoints")
	}
	for _, tied := range []bool{true, false} {
		cfg := Config{Vocab: 37, DModel: 32, Layers: 2, Heads: 4, KVHeads: 2, DFF: 48, MaxSeq: 64,
			RopeTheta: 10000, NormEps: 1e-6, QKVBias: true, TieEmbeddings: tied}
		m := testModel(t, cfg, 5)
		sub := filepath.Join(dir, map[bool]string{true: "tied", false: "untied"}[tied])
		if err := SaveHF(sub, m); err != nil {
			t.Fatal(err)
		}
		seq := []int{1, 5, 9, 3, 36, 0, 12, 7, 7, 20, 31, 2} // must match hf_reference.py
		out, err := m.Forward(context.Background(), Batch{Tokens: [][]int{seq}})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for p := 1; p < len(seq); p++ {
			fmt.Fprintf(&sb, "%.7f %.7f\n", out.LogProb[0][p], out.Entropy[0][p])
		}
		if err := os.WriteFile(filepath.Join(sub, "go.txt"), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
