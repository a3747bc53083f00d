package native

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// This file tests the architecture variants of Config (Qwen3, Llama 3.1,
// Gemma 3) beyond what their entries in inferConfigs and the torch oracle
// (torch_oracle_test.go) check: gradients, the cached decoding against
// the training forward, Hugging Face and PEFT files.

// archConfigs returns small models of each architecture variant:
// the Qwen3 and Gemma 3 ones have heads wider than d_model/heads, and
// sliding windows shorter than the tests' sequences.
func archConfigs() map[string]Config {
	// Qwen3 with multi-head attention and use_sliding_window (on the
	// second layer), so that the single-row decoding of every head at
	// once (attendHeads) meets a window too.
	qwen3 := Config{Vocab: 37, DModel: 24, Layers: 2, Heads: 4, KVHeads: 4, HeadSize: 10, DFF: 40, MaxSeq: 64,
		RopeTheta: 1e6, NormEps: 1e-6, QKNorm: true, TieEmbeddings: true, LayerTypes: "gs", SlidingWindow: 6}
	llama31 := Config{Vocab: 37, DModel: 32, Layers: 2, Heads: 4, KVHeads: 2, DFF: 48, MaxSeq: 64, RopeTheta: 5e5,
		RopeScaling: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 32}}
	gemma3 := Config{Vocab: 37, DModel: 64, Layers: 3, Heads: 4, KVHeads: 2, HeadSize: 16, DFF: 64, MaxSeq: 64,
		RopeTheta: 1e6, NormEps: 1e-6, QKNorm: true, NormPlusOne: true, SandwichNorm: true, Activation: ActGELUTanh,
		EmbedScale: 8, QueryPreAttnScalar: 12, LayerTypes: "sgs", SlidingWindow: 7, RopeLocalTheta: 1e4,
		RopeScaling: RopeScaling{Type: "linear", Factor: 8}, TieEmbeddings: true}
	gemmaMQA := gemma3
	gemmaMQA.DModel, gemmaMQA.Layers, gemmaMQA.KVHeads, gemmaMQA.HeadSize, gemmaMQA.LayerTypes = 32, 2, 1, 8, "sg"
	gemmaMQA.TieEmbeddings, gemmaMQA.RopeScaling, gemmaMQA.QueryPreAttnScalar = false, RopeScaling{}, 0
	gemmaMQA.EmbedScale = float32(math.Sqrt(32))
	return map[string]Config{"qwen3": qwen3, "llama31": llama31, "gemma3": gemma3, "gemma3-mqa": gemmaMQA}
}

// tinyArch returns archConfigs' configuration of name at gradient-check
// size, with a value head, a window of 3 and an untied head if asked.
func tinyArch(name string, tied bool) Config {
	c := archConfigs()[name]
	c.Vocab, c.MaxSeq, c.ValueHead, c.TieEmbeddings = 11, 16, true, tied
	c.DModel, c.DFF = 16, 24
	if c.HeadSize != 0 {
		c.HeadSize = 6 // heads·6 = 24 ≠ 16
	}
	if c.SlidingWindow != 0 {
		c.SlidingWindow = 3
	}
	if c.EmbedScale != 0 {
		c.EmbedScale = 4 // √16
	}
	return c
}

// TestArchGradients checks Backward against finite differences for each
// architecture (the query/key norms, the 1+w norms, the norms on the
// attention's and the MLP's outputs, GeGLU, the embedding scale, the
// score scale, sliding windows shorter than the sequences, scaled RoPE),
// through every output at once, with and without a shared prefix.
func TestArchGradients(t *testing.T) {
	for _, name := range []string{"qwen3", "llama31", "gemma3", "gemma3-mqa"} {
		for _, tied := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/tied=%v", name, tied), func(t *testing.T) {
				m, err := New(tinyArch(name, tied), 1)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(3, 3))
				for i := range m.Params() {
					m.Params()[i] += float32(rng.NormFloat64() * 0.15)
				}
				b := randomBatch(rng, 11, 5, 9, 7)
				if tied {
					b.Prefixes = [][]int{randTokens(rng, 4, 11)}
					b.Prefix = []int{0, -1, 0}
				}
				checkGradientsOpt(t, m, b, allOutputsLoss(rng, b), true)
			})
		}
	}
}

// allOutputsLoss returns a loss that weighs every output (log-prob,
// entropy, value) of every position by a random coefficient.
func allOutputsLoss(rng *rand.Rand, b Batch) lossFunc {
	cl, ce, cv := ragged(rng, b, -1, 1), ragged(rng, b, -1, 1), ragged(rng, b, -1, 1)
	return func(out *Outputs, g *OutputGrads) float64 {
		*g = OutputGrads{LogProb: cl, Entropy: ce, Value: cv}
		var l float64
		for i := range out.LogProb {
			for t := range out.LogProb[i] {
				l += float64(cl[i][t])*float64(out.LogProb[i][t]) + float64(ce[i][t])*float64(out.Entropy[i][t]) +
					float64(cv[i][t])*float64(out.Value[i][t])
			}
		}
		return l
	}
}

// TestArchLoRAGradient checks the adapters' gradients on every projection
// of the Qwen3 and Gemma 3 layouts, whose o_proj input (heads·head_dim)
// differs from d_model and whose attention and MLP outputs are normed.
func TestArchLoRAGradient(t *testing.T) {
	for _, name := range []string{"qwen3", "gemma3"} {
		t.Run(name, func(t *testing.T) {
			base, err := New(tinyArch(name, false), 1)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 3))
			for i := range base.Params() {
				base.Params()[i] += float32(rng.NormFloat64() * 0.15)
			}
			m := withLoRA(t, base, LoRAConfig{Rank: 2, Alpha: 3, Targets: LoRATargets(), Seed: 4}, 0.3)
			b := randomBatch(rng, 11, 5, 9, 7)
			checkGradientsOpt(t, m, b, allOutputsLoss(rng, b), true)
		})
	}
}

// TestArchKVCacheMatchesForward compares cached decoding (a prompt, then
// a token at a time, well past the sliding window) with the training
// forward of the whole sequence, and the inference prefill of it: the
// two inference paths bit for bit, the training path to rounding.
func TestArchKVCacheMatchesForward(t *testing.T) {
	for name, cfg := range archConfigs() {
		t.Run(name, func(t *testing.T) {
			m := testModel(t, cfg, 3)
			rng := rand.New(rand.NewPCG(1, 1))
			seq := randTokens(rng, 40, cfg.Vocab)
			train, err := m.TrainLogits([][]int{seq})
			if err != nil {
				t.Fatal(err)
			}
			prefill := m.PrefillLogits([][]int{seq})
			st := m.newInferState()
			kc := newKVCache(m, len(seq), kvRef{})
			const prompt = 7
			got := slices.Clone(stepLogits(st, repeat(kc, prompt), seq[:prompt]))
			for p := prompt; p < len(seq); p++ {
				got = append(got, stepLogits(st, []*kvCache{kc}, seq[p:p+1])...)
			}
			v := cfg.Vocab
			var worst, scale float64
			for p := range seq {
				if !slices.Equal(got[p*v:(p+1)*v], prefill[0][p]) {
					t.Fatalf("position %d: decoded logits differ from the prefill's", p)
				}
				for j, x := range train[0][p] {
					worst = max(worst, math.Abs(float64(x-got[p*v+j])))
					scale = max(scale, math.Abs(float64(x)))
				}
			}
			if worst > 1e-5*scale {
				t.Errorf("cached vs training logits differ by %g (logits up to %g)", worst, scale)
			}
		})
	}
}

// TestArchWindowMatters: a model whose every layer has a sliding window
// computes the first Window positions as the same model without one, and
// differs after them; the window restricts the training path and the
// inference path alike (TestArchKVCacheMatchesForward).
func TestArchWindowMatters(t *testing.T) {
	cfg := archConfigs()["gemma3"]
	cfg.LayerTypes = "sss"
	m := testModel(t, cfg, 5)
	global := cfg
	global.LayerTypes, global.SlidingWindow = "", 0
	g, err := newZero(global)
	if err != nil {
		t.Fatal(err)
	}
	copy(g.Params(), m.Params())
	// The local RoPE is the sliding layers': give the global model the same.
	g.ropeCos, g.ropeSin = m.ropeLocalCos, m.ropeLocalSin
	seq := randTokens(rand.New(rand.NewPCG(2, 2)), 20, cfg.Vocab)
	a, b := m.PrefillLogits([][]int{seq})[0], g.PrefillLogits([][]int{seq})[0]
	for p := range seq {
		same := slices.Equal(a[p], b[p])
		if p < cfg.SlidingWindow && !same {
			t.Errorf("position %d, inside the window, differs", p)
		}
		if p >= cfg.SlidingWindow && same {
			t.Errorf("position %d, past the window, is the same", p)
		}
	}
}

// TestArchNewNorms: New starts a 1+w norm at w = 0, so that it scales by
// 1, as the other norms do at w = 1.
func TestArchNewNorms(t *testing.T) {
	m, err := New(archConfigs()["gemma3"], 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range m.Tensors() {
		if isNorm(ti.Name) && slices.ContainsFunc(m.Tensor(ti.Name), func(x float32) bool { return x != 0 }) {
			t.Errorf("%s is not zero", ti.Name)
		}
	}
}

// TestArchHFRoundTrip: SaveHF writes each architecture as the Hugging Face
// model it is (model_type, keys), and LoadHF reads it back as the same
// configuration and weights.
func TestArchHFRoundTrip(t *testing.T) {
	want := map[string]string{"qwen3": "qwen3", "llama31": "llama", "gemma3": "gemma3_text", "gemma3-mqa": "gemma3_text",
		"mistral-window": "mistral", "qwen2-window": "qwen2"}
	cfgs := archConfigs()
	// Sliding windows outside Gemma: Mistral's on every layer, Qwen2's
	// from max_window_layers on.
	mistral := sampleConfig()
	mistral.QKVBias, mistral.LayerTypes, mistral.SlidingWindow = false, "ss", 5
	qwen2 := sampleConfig()
	qwen2.LayerTypes, qwen2.SlidingWindow = "gs", 5
	cfgs["mistral-window"], cfgs["qwen2-window"] = mistral, qwen2
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			m := testModel(t, cfg, 7)
			dir := t.TempDir()
			if err := SaveHF(dir, m); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var hc map[string]any
			if err := json.Unmarshal(raw, &hc); err != nil {
				t.Fatal(err)
			}
			if hc["model_type"] != want[name] {
				t.Errorf("model_type %v, want %s", hc["model_type"], want[name])
			}
			got, err := LoadHF(dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Config() != m.Config() {
				t.Errorf("config %+v, want %+v", got.Config(), m.Config())
			}
			if !bitsEqual(got.Params(), m.Params()) {
				t.Error("parameters differ")
			}
		})
	}
	// A configuration no Hugging Face architecture has is refused.
	odd := archConfigs()["gemma3"]
	odd.SandwichNorm = false
	m := testModel(t, odd, 1)
	if err := SaveHF(t.TempDir(), m); err == nil || !strings.Contains(err.Error(), "no Hugging Face architecture") {
		t.Errorf("SaveHF of Gemma without its sandwich norms: error %v", err)
	}
}

// TestArchPEFTNames: adapters export under the module names of the
// checkpoint's decoder (model.layers.N…, or model.language_model.layers.N…
// for a Gemma 3 image-text model, as PEFT names them on transformers 4.52
// and later), round-trip through SavePEFT and LoadPEFT, and LoadPEFT also
// reads the older language_model.model.layers.N… names.
func TestArchPEFTNames(t *testing.T) {
	for _, c := range []struct {
		prefix, want string
	}{
		{"", "base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"},
		{"model.language_model", "base_model.model.model.language_model.layers.1.self_attn.q_proj.lora_A.weight"},
	} {
		cfg := archConfigs()["gemma3"]
		cfg.ModulePrefix = c.prefix
		m := withLoRA(t, testModel(t, cfg, 1), allTargets(), 0.1)
		if m.LoRA().Tensor(c.want) == nil {
			var names []string
			for _, ti := range m.LoRA().Tensors() {
				names = append(names, ti.Name)
			}
			t.Fatalf("prefix %q: no tensor %s among %v", c.prefix, c.want, names[:4])
		}
		for _, ti := range m.LoRA().Tensors() {
			if !strings.HasPrefix(ti.Name, "base_model.model."+cmp.Or(c.prefix, "model")+".layers.") {
				t.Errorf("prefix %q: tensor %s", c.prefix, ti.Name)
			}
		}
		dir := t.TempDir()
		if err := SavePEFT(dir, m, "base"); err != nil {
			t.Fatal(err)
		}
		other := testModel(t, cfg, 1)
		if err := LoadPEFT(dir, other); err != nil {
			t.Fatal(err)
		}
		if !bitsEqual(other.LoRA().Params(), m.LoRA().Params()) {
			t.Errorf("prefix %q: adapters differ after SavePEFT and LoadPEFT", c.prefix)
		}
		if c.prefix == "" {
			continue
		}
		// The names PEFT gave the same modules before transformers 4.52.
		var legacy []NamedTensor
		lo := m.LoRA()
		for _, ti := range lo.Tensors() {
			name := strings.Replace(ti.Name, "base_model.model.model.language_model.", "base_model.model.language_model.model.", 1)
			legacy = append(legacy, NamedTensor{Name: name, Shape: ti.Shape, Data: lo.Params()[ti.Offset : ti.Offset+ti.Size]})
		}
		f, err := os.Create(filepath.Join(dir, PEFTWeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSafetensors(f, legacy, nil); err != nil {
			t.Fatal(err)
		}
		f.Close()
		third := testModel(t, cfg, 1)
		if err := LoadPEFT(dir, third); err != nil {
			t.Fatal(err)
		}
		if !bitsEqual(third.LoRA().Params(), m.LoRA().Params()) {
			t.Error("adapters with the older names differ")
		}
	}
}

// TestArchTrains: a few AdamW steps on one batch lower its loss, in full
// and with adapters, for the Gemma 3 layout (the one whose every piece is
// new).
func TestArchTrains(t *testing.T) {
	for _, lora := range []bool{false, true} {
		m := testModel(t, archConfigs()["gemma3"], 9)
		if lora {
			m = withLoRA(t, m, allTargets(), 0)
		}
		opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0)
		rng := rand.New(rand.NewPCG(4, 4))
		b := Batch{Tokens: [][]int{randTokens(rng, 30, 37), randTokens(rng, 20, 37)}}
		ctx := context.Background()
		var first, last float64
		for step := range 8 {
			out, err := m.Forward(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			var loss float64
			g := OutputGrads{LogProb: make([][]float32, len(out.LogProb))}
			for i, row := range out.LogProb {
				g.LogProb[i] = make([]float32, len(row))
				for p, x := range row {
					loss -= float64(x)
					g.LogProb[i][p] = -1
				}
			}
			if step == 0 {
				first = loss
			}
			last = loss
			m.ZeroGrad()
			if err := m.Backward(ctx, g); err != nil {
				t.Fatal(err)
			}
			if err := opt.Update(m, 3e-3); err != nil {
				t.Fatal(err)
			}
		}
		if !(last < 0.9*first) {
			t.Errorf("lora=%v: loss %g after 8 steps, from %g", lora, last, first)
		}
	}
}

// TestArchHFErrors: what LoadHF refuses of these architectures is named
// in the error.
func TestArchHFErrors(t *testing.T) {
	dirs := map[string]string{}
	for _, name := range []string{"qwen3", "llama31", "gemma3"} {
		dirs[name] = t.TempDir()
		if err := SaveHF(dirs[name], testModel(t, archConfigs()[name], 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, arch string
		set        map[string]any
		want       string
	}{
		{"yarn", "llama31", map[string]any{"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 4}}, `rope_scaling: rope type "yarn" is not supported`},
		{"dynamic", "llama31", map[string]any{"rope_scaling": map[string]any{"type": "dynamic", "factor": 2}}, `rope type "dynamic"`},
		{"longrope in rope_parameters", "llama31", map[string]any{"rope_scaling": nil, "rope_parameters": map[string]any{"rope_type": "longrope", "rope_theta": 1e4}},
			`rope_parameters: rope type "longrope"`},
		{"llama3 without low_freq_factor", "llama31", map[string]any{"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8,
			"high_freq_factor": 4, "original_max_position_embeddings": 8192}}, "llama3 needs low_freq_factor"},
		{"llama3 with an unknown key", "llama31", map[string]any{"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8,
			"low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192, "attention_factor": 2}}, `"attention_factor"`},
		{"sliding window on llama", "llama31", map[string]any{"layer_types": []string{"sliding_attention", "full_attention"}}, "sliding-window attention is not supported for llama"},
		{"qwen3 sliding layer type", "qwen3", map[string]any{"use_sliding_window": true, "sliding_window": 4,
			"layer_types": []string{"full_attention", "chunked_attention"}}, `layer_types[1] "chunked_attention"`},
		{"mlp bias", "llama31", map[string]any{"mlp_bias": true}, "mlp_bias"},
		{"qwen3 attention bias", "qwen3", map[string]any{"attention_bias": true}, "attention_bias"},
		{"qwen3 architecture", "qwen3", map[string]any{"architectures": []string{"Qwen3ForSequenceClassification"}}, `architecture "Qwen3ForSequenceClassification"`},
		{"gemma2", "gemma3", map[string]any{"model_type": "gemma2"}, `model_type "gemma2" is not supported`},
		{"final logit softcapping", "gemma3", map[string]any{"final_logit_softcapping": 30}, "final_logit_softcapping 30 is not supported"},
		{"attention logit softcapping", "gemma3", map[string]any{"attn_logit_softcapping": 50}, "attn_logit_softcapping 50 is not supported"},
		{"gemma activation", "gemma3", map[string]any{"hidden_activation": "gelu"}, `hidden_activation "gelu"`},
		{"gemma layer type", "gemma3", map[string]any{"layer_types": []string{"sliding_attention", "chunked_attention", "sliding_attention"}}, `"chunked_attention"`},
		{"gemma layer_types length", "gemma3", map[string]any{"layer_types": []string{"sliding_attention"}}, "layer_types has 1 entries for 3 layers"},
		{"gemma without a window", "gemma3", map[string]any{"sliding_window": json.RawMessage("null")}, "sliding layers need a positive sliding_window"},
		{"gemma dtype", "gemma3", map[string]any{"torch_dtype": "float8_e4m3fn"}, `torch_dtype "float8_e4m3fn"`},
		{"scaled sliding layers", "gemma3", map[string]any{"rope_scaling": nil, "rope_parameters": map[string]any{
			"full_attention":    map[string]any{"rope_type": "default", "rope_theta": 1e6},
			"sliding_attention": map[string]any{"rope_type": "linear", "factor": 2, "rope_theta": 1e4}}}, "scaled RoPE on the sliding layers"},
		{"image-text without text_config", "gemma3", map[string]any{"model_type": "gemma3"}, "gemma3 without a text_config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"config.json", "model.safetensors"} {
				raw, err := os.ReadFile(filepath.Join(dirs[c.arch], f))
				if err != nil {
					t.Fatal(err)
				}
				if f == "config.json" {
					var m map[string]any
					json.Unmarshal(raw, &m)
					for k, v := range c.set {
						if v == nil {
							delete(m, k)
						} else {
							m[k] = v
						}
					}
					raw, _ = json.Marshal(m)
				}
				if err := os.WriteFile(filepath.Join(dir, f), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := LoadHF(dir, 0); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one mentioning %q", err, c.want)
			}
		})
	}
}

// TestArchWorkspaceBytes: WorkspaceBytes counts the buffers Forward sizes
// for each architecture (the float32 ones exactly, beside a few int32s a
// token and position).
func TestArchWorkspaceBytes(t *testing.T) {
	cfgs := archConfigs()
	cfgs["qwen2"] = sampleConfig()
	for name, cfg := range cfgs {
		for _, lora := range []bool{false, true} {
			m := testModel(t, cfg, 1)
			if lora {
				m = withLoRA(t, m, allTargets(), 0)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			b := randomBatch(rng, cfg.Vocab, 20, 9)
			n, sel, err := m.validate(&b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Forward(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			floats := 0
			for _, sb := range m.ws.bufs {
				floats += sb.n
			}
			got := m.WorkspaceBytes(n, sel)
			if lo, hi := 4*int64(floats), 4*int64(floats+2*n+4*sel); got < lo || got > hi {
				t.Errorf("%s lora=%v: WorkspaceBytes %d, the buffers take %d (+ %d of int32s at most)", name, lora, got, lo, hi-lo)
			}
		}
	}
}

// TestArchCheckpoint: a native checkpoint (a critic's, say) of each
// architecture reads back as the same model.
func TestArchCheckpoint(t *testing.T) {
	for name, cfg := range archConfigs() {
		cfg.ValueHead = true
		m := testModel(t, cfg, 2)
		dir := filepath.Join(t.TempDir(), name)
		if err := SaveCheckpoint(dir, m, nil, nil); err != nil {
			t.Fatal(err)
		}
		ck, err := LoadCheckpoint(dir)
		if err != nil {
			t.Fatal(err)
		}
		if ck.Model.Config() != m.Config() || !bitsEqual(ck.Model.Params(), m.Params()) {
			t.Errorf("%s: the checkpoint reads back as another model", name)
		}
	}
}
