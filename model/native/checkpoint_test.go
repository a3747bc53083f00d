package native

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// trainedPair returns a model and optimizer after one real update, so the
// moments are nonzero.
func trainedPair(t *testing.T, cfg Config) (*Model, *AdamW) {
	t.Helper()
	m := testModel(t, cfg, 8)
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.1)
	out, err := m.Forward(context.Background(), Batch{Tokens: [][]int{{1, 2, 3, 4}, {5, 6}}})
	if err != nil {
		t.Fatal(err)
	}
	var g OutputGrads
	if _, err := sftGrads(out, [][]bool{{false, true, true, true}, {false, true}}, &g); err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := opt.Update(m, 1e-3); err != nil {
		t.Fatal(err)
	}
	return m, opt
}

func TestCheckpointRoundTrip(t *testing.T) {
	cfg := sampleConfig()
	cfg.TieEmbeddings, cfg.ValueHead = false, true
	m, opt := trainedPair(t, cfg)
	dir := filepath.Join(t.TempDir(), "ckpt")
	extra := map[string][]byte{"tokenizer.json": []byte(`{"v":1}`), "trainer.json": {}}
	for range 2 { // the second save replaces the first
		if err := SaveCheckpoint(dir, m, opt, extra); err != nil {
			t.Fatal(err)
		}
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Model.Config() != m.Config() {
		t.Errorf("config %+v, want %+v", ck.Model.Config(), m.Config())
	}
	if !bitsEqual(ck.Model.Params(), m.Params()) {
		t.Error("parameters differ after load")
	}
	gm, gv := ck.Optimizer.Moments()
	wm, wv := opt.Moments()
	if !bitsEqual(gm, wm) || !bitsEqual(gv, wv) || ck.Optimizer.Steps() != 1 ||
		ck.Optimizer.Beta2 != opt.Beta2 || ck.Optimizer.WeightDecay != opt.WeightDecay {
		t.Error("optimizer state differs after load")
	}
	if len(ck.Extra) != 2 || !bytes.Equal(ck.Extra["tokenizer.json"], extra["tokenizer.json"]) {
		t.Errorf("extra files %v", ck.Extra)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("leftover temporary files: %v", entries)
	}
	if err := SaveCheckpoint(dir, m, nil, map[string][]byte{"../x": nil}); err == nil {
		t.Error("path-like extra name accepted")
	}
}

func TestCheckpointCorruption(t *testing.T) {
	m, opt := trainedPair(t, sampleConfig())
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := SaveCheckpoint(dir, m, opt, nil); err != nil {
		t.Fatal(err)
	}
	weights := filepath.Join(dir, WeightsFile)
	good, _ := os.ReadFile(weights)
	hlen := binary.LittleEndian.Uint64(good)
	header := string(good[8 : 8+hlen])

	huge := slices.Clone(good)
	binary.LittleEndian.PutUint64(huge, 1<<40)
	badJSON := slices.Clone(good)
	badJSON[8] = 'x'
	f16 := slices.Clone(good)
	copy(f16[8:], strings.Replace(header, `"F32"`, `"F16"`, 1))
	gap := slices.Clone(good)
	// Shift one tensor's start so the offsets are no longer contiguous.
	i := strings.Index(header, `"data_offsets":[0,`)
	if i < 0 {
		t.Fatal("no tensor at offset 0")
	}
	copy(gap[8+i:], `"data_offsets":[4,`)

	other := sampleConfig()
	other.DFF = 40
	m2 := testModel(t, other, 1)
	dir2 := filepath.Join(t.TempDir(), "other")
	if err := SaveCheckpoint(dir2, m2, nil, nil); err != nil {
		t.Fatal(err)
	}
	wrongShape, _ := os.ReadFile(filepath.Join(dir2, WeightsFile))

	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated data", good[:len(good)-10], "past the data section"},
		{"truncated header", good[:20], "header length"},
		{"tiny", good[:3], "shorter than"},
		{"huge header length", huge, "header length"},
		{"corrupt JSON", badJSON, "header"},
		{"wrong dtype", f16, "dtype"},
		{"gap", gap, "offsets"},
		{"wrong shapes", wrongShape, "shape"},
		{"extra bytes", append(slices.Clone(good), 0, 0, 0, 0), "data section"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(weights, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadCheckpoint(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
	os.WriteFile(weights, good, 0o644)
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"vocab": -1}`), 0o644)
	if _, err := LoadCheckpoint(dir); err == nil {
		t.Error("invalid config accepted")
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	in := []NamedTensor{
		{Name: "a", Shape: []int{2, 3}, Data: []float32{1, -2, 3, float32(math.Inf(1)), 5, 6}},
		{Name: "scalar", Shape: []int{}, Data: []float32{7}},
		{Name: "empty", Shape: []int{0, 4}, Data: []float32{}},
	}
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if hl := binary.LittleEndian.Uint64(buf.Bytes()); hl%8 != 0 {
		t.Errorf("header length %d not 8-aligned", hl)
	}
	out, meta, err := ReadSafetensors(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if meta["k"] != "v" || len(out) != 3 {
		t.Fatalf("meta %v, %d tensors", meta, len(out))
	}
	for i := range in {
		if out[i].Name != in[i].Name || !slices.Equal(out[i].Shape, in[i].Shape) || !bitsEqual(out[i].Data, in[i].Data) {
			t.Errorf("tensor %d: got %+v, want %+v", i, out[i], in[i])
		}
	}
	if err := WriteSafetensors(&buf, []NamedTensor{{Name: "x", Shape: []int{2}, Data: []float32{1}}}, nil); err == nil {
		t.Error("shape/data mismatch accepted")
	}
}

func TestConfigLimits(t *testing.T) {
	for _, c := range []Config{
		{Vocab: 1 << 40, DModel: 1 << 20, Layers: 1, Heads: 1, DFF: 1, MaxSeq: 1},
		{Vocab: 10, DModel: 8, Layers: 1 << 40, Heads: 1, DFF: 1, MaxSeq: 1},
		{Vocab: 10, DModel: 8, Layers: 1, Heads: 1, DFF: 1, MaxSeq: 1 << 30},
		{Vocab: 10, DModel: 1 << 62, Layers: 1, Heads: 2, DFF: 1, MaxSeq: 4},
		{Vocab: 10, DModel: 8, Layers: 1, Heads: 3, DFF: 1, MaxSeq: 4},
		{Vocab: 10, DModel: 8, Layers: 1, Heads: 4, KVHeads: 3, DFF: 1, MaxSeq: 4},
	} {
		if _, err := New(c, 1); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	for _, c := range []Config{tinyConfig(true), tinyConfig(false), sampleConfig(), DefaultConfig(512)} {
		m, err := New(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.withDefaults().paramCount(); got != float64(m.NumParams()) {
			t.Errorf("paramCount %g, model has %d", got, m.NumParams())
		}
	}
}

// TestOptimizerBesideHF: the optimizer state of a model saved in Hugging
// Face layout round-trips on its own.
func TestOptimizerBesideHF(t *testing.T) {
	cfg := sampleConfig()
	cfg.QKVBias = true
	m, opt := trainedPair(t, cfg)
	dir := t.TempDir()
	if err := SaveHF(dir, m); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOptimizer(dir, m); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadOptimizer without the file: %v, want fs.ErrNotExist", err)
	}
	if err := WriteOptimizer(dir, m, opt); err != nil {
		t.Fatal(err)
	}
	got, err := LoadHF(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	gotOpt, err := LoadOptimizer(dir, got)
	if err != nil {
		t.Fatal(err)
	}
	gm, gv := gotOpt.Moments()
	wm, wv := opt.Moments()
	if !bitsEqual(gm, wm) || !bitsEqual(gv, wv) || gotOpt.Steps() != opt.Steps() || gotOpt.WeightDecay != opt.WeightDecay {
		t.Error("optimizer state differs after load")
	}
	other := sampleConfig()
	other.DFF += 2
	if _, err := LoadOptimizer(dir, testModel(t, other, 1)); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("optimizer of another shape: %v", err)
	}
}
