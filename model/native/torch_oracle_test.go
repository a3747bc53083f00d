package native_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/model/hftest"
	"github.com/agentrl/agentrl/model/native"
)

// The torch oracle: scripts/hf_logits_torch.py is an independent PyTorch
// implementation of the Qwen2 and Llama forward passes as Hugging Face's
// modeling_qwen2.py and modeling_llama.py define them, reading config.json
// and the safetensors files itself. TestTorchOracle compares the logits of
// LoadHF's model with it on tiny random directories (model/hftest).
//
// It needs a python3 that imports torch and numpy (Debian: apt-get install
// python3-torch). Without one it skips, unless AGENTRL_REQUIRE_TORCH=1 (as
// in .ci/run), when it fails.

// torchScript is the oracle, relative to this package's directory.
const torchScript = "../../scripts/hf_logits_torch.py"

// needTorch returns a python3 that imports torch and numpy, or skips.
func needTorch(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/python3", "python3"} {
		p, err := exec.LookPath(name)
		if err == nil && exec.Command(p, "-c", "import torch, numpy").Run() == nil {
			return p
		}
	}
	msg := "no python3 with torch and numpy found (apt-get install python3-torch)"
	if os.Getenv("AGENTRL_REQUIRE_TORCH") == "1" {
		t.Fatal(msg + " [AGENTRL_REQUIRE_TORCH=1]")
	}
	t.Skip(msg)
	return ""
}

type torchRequest struct {
	Dir   string  `json:"dir"`
	IDs   [][]int `json:"ids"`
	Dtype string  `json:"dtype"`
}

type torchResult struct {
	Dtype  string        `json:"dtype"`
	Logits [][][]float64 `json:"logits"`
}

// runTorch runs the oracle on reqs in one process.
func runTorch(t *testing.T, python string, reqs []torchRequest) []torchResult {
	t.Helper()
	in, err := json.Marshal(map[string]any{"requests": reqs})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, torchScript, "--batch")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", torchScript, err, stderr.String())
	}
	var res struct {
		Results []torchResult `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s: output: %v", torchScript, err)
	}
	if len(res.Results) != len(reqs) {
		t.Fatalf("%s: %d results for %d requests", torchScript, len(res.Results), len(reqs))
	}
	return res.Results
}

// diff is the largest absolute difference between two sets of logits and
// the largest magnitude of the reference.
type diff struct{ abs, scale float64 }

// rel is the largest difference relative to the reference's largest
// magnitude: the logits' ∞-norm error, which is scale-free and, unlike an
// element-wise ratio, not inflated by logits near zero.
func (d diff) rel() float64 { return d.abs / d.scale }

func (d diff) String() string { return fmt.Sprintf("max abs %.2e, rel %.2e", d.abs, d.rel()) }

func compare[T float32 | float64](t *testing.T, what string, got [][][]T, want [][][]float64) diff {
	t.Helper()
	var d diff
	if len(got) != len(want) {
		t.Fatalf("%s: %d sequences, want %d", what, len(got), len(want))
	}
	for b := range want {
		if len(got[b]) != len(want[b]) {
			t.Fatalf("%s: sequence %d has %d positions, want %d", what, b, len(got[b]), len(want[b]))
		}
		for p := range want[b] {
			if len(got[b][p]) != len(want[b][p]) {
				t.Fatalf("%s: sequence %d position %d has %d logits, want %d", what, b, p, len(got[b][p]), len(want[b][p]))
			}
			for v, w := range want[b][p] {
				g := float64(got[b][p][v])
				if math.IsNaN(g) || math.IsInf(g, 0) {
					t.Fatalf("%s: sequence %d position %d logit %d is %g", what, b, p, v, g)
				}
				d.abs = max(d.abs, math.Abs(g-w))
				d.scale = max(d.scale, math.Abs(w))
			}
		}
	}
	return d
}

// logSoftmax returns the log-probabilities of the logits, in float64.
func logSoftmax(z []float64) []float64 {
	m := math.Inf(-1)
	for _, x := range z {
		m = max(m, x)
	}
	s := 0.0
	for _, x := range z {
		s += math.Exp(x - m)
	}
	lse := m + math.Log(s)
	out := make([]float64, len(z))
	for i, x := range z {
		out[i] = x - lse
	}
	return out
}

// torchTolerance bounds the logits' difference from the float32 oracle,
// relative to their largest magnitude. Both sides compute in float32
// (unit roundoff u = 2^-24 ≈ 6e-8) from the same float32 weights, summing
// in different orders (blocked SIMD dot products here, BLAS there) over
// at most 64 terms, through one or two blocks whose RMSNorms and softmaxes
// neither amplify nor damp relative errors much: their difference should
// be a few tens of u, and was measured at 1e-7 to 1.1e-6, no more than
// torch's own float32 distance from its float64 result (see
// docs/training.md). 1e-4 leaves two orders of magnitude above that,
// while the defects it guards against (RoPE's pairs interleaved, a query
// head reading the wrong key/value head, a bias dropped, gate and up
// swapped, the RoPE base or the score scale wrong) move the logits by half
// their range or more with the Varied weights, and rms_norm_eps 1e-5 for
// 1e-6 by 2e-2 with the default ones (TestTorchOracleSensitivity; with
// Varied weights, whose activations are large beside eps, only 1.5e-5).
const torchTolerance = 1e-4

type oracleCase struct {
	name string
	o    hftest.Options
	// edit, if set, changes config.json's keys (nil deletes one).
	edit map[string]any
}

var oracleCases = []oracleCase{
	{"qwen2-f32-tied", hftest.Options{Varied: true, Seed: 11}, nil},
	{"qwen2-bf16-tied", hftest.Options{Varied: true, BF16: true, Seed: 12}, nil},
	{"qwen2-f32-untied-2l", hftest.Options{Varied: true, Untied: true, Layers: 2, Seed: 13}, nil},
	{"qwen2-bf16-untied-2l-3shards", hftest.Options{Varied: true, Untied: true, BF16: true, Layers: 2, Shards: 3, Seed: 14}, nil},
	{"qwen2-bf16-default-weights", hftest.Options{BF16: true}, nil},
	{"llama3-f32-untied-2l", hftest.Options{Llama: true, Varied: true, Untied: true, Layers: 2, Seed: 15}, nil},
	{"llama3-bf16-tied", hftest.Options{Llama: true, Varied: true, BF16: true, Seed: 16}, nil},
	{"llama3-f16-untied-2l-2shards", hftest.Options{Llama: true, Varied: true, Untied: true, F16: true, Layers: 2, Shards: 2, Seed: 17}, nil},
	// transformers 5 saves the RoPE base in rope_parameters, not as
	// rope_theta.
	{"qwen2-f32-rope_parameters", hftest.Options{Varied: true, Untied: true, Layers: 2, Seed: 18},
		map[string]any{"rope_theta": nil, "rope_scaling": nil, "rope_parameters": map[string]any{"rope_theta": 1e6, "rope_type": "default"}}},
	{"llama3-bf16-rope_parameters", hftest.Options{Llama: true, Varied: true, BF16: true, Seed: 19},
		map[string]any{"rope_theta": nil, "rope_scaling": nil, "rope_parameters": map[string]any{"rope_theta": 5e5, "rope_type": "default"}}},
	// A config.json without rms_norm_eps means the configuration
	// classes' default, 1e-6; it shows with the small default weights.
	{"qwen2-bf16-default-weights-no-eps", hftest.Options{BF16: true, Seed: 20}, map[string]any{"rms_norm_eps": nil}},

	// Qwen3: query/key norms, head_dim 16 = 2·hidden_size/heads (and once
	// equal to it).
	{"qwen3-f32-tied", hftest.Options{Qwen3: true, Varied: true, Seed: 31}, nil},
	{"qwen3-bf16-untied-2l-2shards", hftest.Options{Qwen3: true, Varied: true, Untied: true, BF16: true, Layers: 2, Shards: 2, Seed: 32}, nil},
	{"qwen3-f32-head_dim-8-2l", hftest.Options{Qwen3: true, Varied: true, HeadDim: 8, Layers: 2, Seed: 33}, nil},
	// Llama 3.1/3.2: rope_scaling llama3, in transformers 4's and 5's
	// keys.
	{"llama31-f32-untied-2l", hftest.Options{Llama31: true, Varied: true, Untied: true, Layers: 2, Seed: 34}, nil},
	{"llama31-bf16-tied-3shards", hftest.Options{Llama31: true, Varied: true, BF16: true, Shards: 3, Seed: 35}, nil},
	{"llama31-f32-rope_parameters", hftest.Options{Llama31: true, Varied: true, Layers: 2, Seed: 36},
		map[string]any{"rope_theta": nil, "rope_scaling": nil, "rope_parameters": map[string]any{"rope_type": "llama3", "rope_theta": 5e5,
			"factor": 8, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 256}}},
	// Gemma 3: sliding layers (window 5) and global ones, in
	// transformers 4.50's keys and 5's, as gemma3_text and as the text
	// decoder of a gemma3 image-text checkpoint (rope_scaling linear on the
	// global layers, the weights named language_model.model.*).
	{"gemma3-f32-tied-2l", hftest.Options{Gemma3: true, Varied: true, Seed: 37}, nil},
	{"gemma3-bf16-untied-3l-2shards", hftest.Options{Gemma3: true, Varied: true, Untied: true, BF16: true, Layers: 3, Shards: 2, Seed: 38}, nil},
	{"gemma3-f16-default-weights", hftest.Options{Gemma3: true, F16: true, Seed: 39}, nil},
	{"gemma3-f32-transformers5-3l", hftest.Options{Gemma3: true, Varied: true, Layers: 3, Seed: 40},
		map[string]any{"rope_theta": nil, "rope_local_base_freq": nil, "sliding_window_pattern": nil,
			"layer_types": []string{"sliding_attention", "full_attention", "sliding_attention"},
			"rope_parameters": map[string]any{"full_attention": map[string]any{"rope_type": "default", "rope_theta": 1e6},
				"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4}}}},
	{"gemma3-image-text-f32", hftest.Options{Gemma3Wrapped: true, Varied: true, Seed: 41}, nil},
	{"gemma3-image-text-bf16-3l-2shards", hftest.Options{Gemma3Wrapped: true, Varied: true, BF16: true, Layers: 3, Shards: 2, Seed: 42}, nil},
}

// oracleSeqs are the token sequences: lengths 1 to 40, ids over the whole
// embedding (the padding rows past the tokenizer's ids included).
func oracleSeqs(vocab int) [][]int {
	rng := rand.New(rand.NewPCG(5, 6))
	var seqs [][]int
	for _, n := range []int{1, 6, 17, 40} {
		s := make([]int, n)
		for i := range s {
			s[i] = rng.IntN(vocab)
		}
		seqs = append(seqs, s)
	}
	return seqs
}

// TestTorchOracle loads each directory with LoadHF and compares the logits
// at every position of a few sequences with the oracle's in float32, from
// the inference path (Sample's and Score's prefill) and the training path
// (Forward), and Score's log-probabilities (a prompt's cache shared by a
// continuation) with the oracle's log-softmax. It also reports both sides'
// distance from the oracle in float64.
func TestTorchOracle(t *testing.T) {
	python := needTorch(t)
	root := t.TempDir()
	var reqs []torchRequest
	dirs := make([]hftest.Dir, len(oracleCases))
	for i, c := range oracleCases {
		d, err := hftest.Write(filepath.Join(root, c.name), c.o)
		if err != nil {
			t.Fatal(err)
		}
		dirs[i] = d
		if c.edit != nil {
			editConfig(t, d.Path, c.edit)
		}
		seqs := oracleSeqs(d.Config.Vocab)
		reqs = append(reqs, torchRequest{d.Path, seqs, "float32"}, torchRequest{d.Path, seqs, "float64"})
	}
	res := runTorch(t, python, reqs)
	ctx := context.Background()
	for i, c := range oracleCases {
		t.Run(c.name, func(t *testing.T) {
			ref32, ref64 := res[2*i].Logits, res[2*i+1].Logits
			seqs := reqs[2*i].IDs
			m, err := native.LoadHF(dirs[i].Path, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Config(); got != dirs[i].Config {
				t.Fatalf("config %+v, want hftest's %+v", got, dirs[i].Config)
			}
			infer := m.PrefillLogits(seqs)
			train, err := m.TrainLogits(seqs)
			if err != nil {
				t.Fatal(err)
			}
			// Score: each sequence after its first token, so its log-probs
			// are those of positions 1.. (the prompt's cache shared).
			var sreqs []native.ScoreRequest
			for _, s := range seqs {
				sreqs = append(sreqs, native.ScoreRequest{Prompt: s[:1], Continuations: [][]int{s[1:]}})
			}
			scored, err := m.Score(ctx, sreqs)
			if err != nil {
				t.Fatal(err)
			}
			var gotLP, wantLP [][][]float64
			for b, s := range seqs {
				var g, w [][]float64
				for p := 1; p < len(s); p++ {
					g = append(g, []float64{float64(scored[b][0][p-1])})
					w = append(w, []float64{logSoftmax(ref32[b][p-1])[s[p]]})
				}
				gotLP, wantLP = append(gotLP, g), append(wantLP, w)
			}

			dInfer := compare(t, "inference logits", infer, ref32)
			dTrain := compare(t, "training logits", train, ref32)
			dScore := compare(t, "Score log-probs", gotLP, wantLP)
			dInfer64 := compare(t, "inference logits vs float64", infer, ref64)
			dTorch64 := compare(t, "torch float32 vs float64", ref32, ref64)
			t.Logf("logit range ±%.3g; vs torch float32: inference %v, training %v; Score log-probs max abs %.2e; "+
				"vs torch float64: inference %v, torch float32 %v",
				dInfer.scale, dInfer, dTrain, dScore.abs, dInfer64, dTorch64)
			for _, x := range []struct {
				what string
				d    diff
			}{{"inference", dInfer}, {"training", dTrain}} {
				if x.d.rel() > torchTolerance {
					t.Errorf("%s logits differ from the torch oracle by %v, above %.0e", x.what, x.d, torchTolerance)
				}
			}
			// A log-prob moves by at most twice the largest logit error.
			if lim := 2 * torchTolerance * dInfer.scale; dScore.abs > lim {
				t.Errorf("Score's log-probs differ from the oracle's log-softmax by %.2e, above %.2e", dScore.abs, lim)
			}
		})
	}
}

// TestTorchOracleSensitivity shows that TestTorchOracle's tolerance would
// catch the defects a reimplementation of these architectures is prone
// to. Each defect of the Go model is equivalent to the correct
// architecture on transformed weights or configuration (RoPE on
// interleaved pairs is rotate-half RoPE on q/k rows permuted within each
// head, and so on), so the test runs the oracle on the transformed
// directory and checks that it is far from the Go model of the original.
func TestTorchOracleSensitivity(t *testing.T) {
	python := needTorch(t)
	root := t.TempDir()
	type variant struct {
		defect string
		base   int // the directory: 0 Varied weights, 1 default weights
		change func(cfg map[string]any, ts map[string][]float32)
	}
	cfgs := []hftest.Options{{Varied: true, Untied: true, Layers: 2, Seed: 21}, {Untied: true, Layers: 2, Seed: 22},
		{Gemma3: true, Varied: true, Untied: true, Layers: 2, Seed: 23}, {Llama31: true, Varied: true, Untied: true, Layers: 2, Seed: 24},
		{Qwen3: true, Varied: true, Untied: true, Layers: 2, Seed: 25}}
	const gemma, llama31, qwen3 = 2, 3, 4
	const heads, kvHeads, hd = 4, 2, 8 // hftest's shape
	rows := func(w []float32, perm []int, width int) {
		// Reorders the blocks of width·(row length) values of w by perm.
		n := len(w) / (len(perm) * width)
		old := append([]float32(nil), w...)
		for i, p := range perm {
			copy(w[i*width*n:(i+1)*width*n], old[p*width*n:(p+1)*width*n])
		}
	}
	variants := []variant{
		{"rms_norm_eps 1e-5 for 1e-6", 1, func(cfg map[string]any, _ map[string][]float32) { cfg["rms_norm_eps"] = 1e-5 }},
		{"rope_theta 1e4 for 1e6", 0, func(cfg map[string]any, _ map[string][]float32) { cfg["rope_theta"] = 1e4 }},
		{"RoPE on interleaved pairs", 0, func(_ map[string]any, ts map[string][]float32) {
			// Interleaved RoPE rotates the pairs (2i, 2i+1) of each head,
			// rotate-half the pairs (i, i+hd/2): the same thing on rows
			// 0, 2, 4, …, 1, 3, 5, … of the head.
			perm := func(n int) []int {
				var p []int
				for h := range n {
					for _, parity := range []int{0, 1} {
						for i := range hd / 2 {
							p = append(p, h*hd+2*i+parity)
						}
					}
				}
				return p
			}
			for l := range 2 {
				for proj, n := range map[string]int{"q_proj": heads, "k_proj": kvHeads} {
					for _, s := range []string{"weight", "bias"} {
						rows(ts[fmt.Sprintf("model.layers.%d.self_attn.%s.%s", l, proj, s)], perm(n), 1)
					}
				}
			}
		}},
		{"query head h reads key/value head h mod kv_heads", 0, func(_ map[string]any, ts map[string][]float32) {
			sigma := []int{0, 2, 1, 3}
			for l := range 2 {
				p := fmt.Sprintf("model.layers.%d.self_attn.", l)
				rows(ts[p+"q_proj.weight"], sigma, hd)
				rows(ts[p+"q_proj.bias"], sigma, hd)
				// o_proj's columns by head: transpose, reorder, transpose.
				o := ts[p+"o_proj.weight"]
				d := len(o) / (heads * hd)
				for r := range d {
					row := o[r*heads*hd : (r+1)*heads*hd]
					rows(row, sigma, hd)
				}
			}
		}},
		{"q_proj's bias dropped", 0, func(_ map[string]any, ts map[string][]float32) {
			clear(ts["model.layers.0.self_attn.q_proj.bias"])
		}},
		{"gate and up swapped", 0, func(_ map[string]any, ts map[string][]float32) {
			g, u := ts["model.layers.0.mlp.gate_proj.weight"], ts["model.layers.0.mlp.up_proj.weight"]
			tmp := append([]float32(nil), g...)
			copy(g, u)
			copy(u, tmp)
		}},
		{"llama3 rope_scaling ignored", llama31, func(cfg map[string]any, _ map[string][]float32) { cfg["rope_scaling"] = nil }},
		{"Qwen3's q_norm and k_norm swapped", qwen3, func(_ map[string]any, ts map[string][]float32) {
			for l := range 2 {
				q, k := ts[fmt.Sprintf("model.layers.%d.self_attn.q_norm.weight", l)], ts[fmt.Sprintf("model.layers.%d.self_attn.k_norm.weight", l)]
				for i := range q {
					q[i], k[i] = k[i], q[i]
				}
			}
		}},
		{"Gemma's norms scaling by w, not 1+w", gemma, func(_ map[string]any, ts map[string][]float32) {
			for name, w := range ts {
				if strings.HasSuffix(name, "norm.weight") {
					for i := range w {
						w[i]--
					}
				}
			}
		}},
		{"Gemma's embeddings not scaled by √hidden_size", gemma, func(_ map[string]any, ts map[string][]float32) {
			for i := range ts["model.embed_tokens.weight"] {
				ts["model.embed_tokens.weight"][i] /= float32(math.Sqrt(32))
			}
		}},
		{"Gemma's sliding window one position longer", gemma, func(cfg map[string]any, _ map[string][]float32) { cfg["sliding_window"] = 6 }},
		{"Gemma's sliding layers with the global RoPE base", gemma, func(cfg map[string]any, _ map[string][]float32) { cfg["rope_local_base_freq"] = 1e6 }},
		{"Gemma's scores scaled by 1/√head_dim, not query_pre_attn_scalar", gemma, func(cfg map[string]any, _ map[string][]float32) {
			cfg["query_pre_attn_scalar"] = 16
		}},
		{"Gemma's post_attention_layernorm taken for the MLP's input norm, as Llama's", gemma, func(_ map[string]any, ts map[string][]float32) {
			for l := range 2 {
				a, b := ts[fmt.Sprintf("model.layers.%d.post_attention_layernorm.weight", l)], ts[fmt.Sprintf("model.layers.%d.pre_feedforward_layernorm.weight", l)]
				for i := range a {
					a[i], b[i] = b[i], a[i]
				}
			}
		}},
		{"attention scores unscaled", 0, func(_ map[string]any, ts map[string][]float32) {
			for l := range 2 {
				for _, s := range []string{"weight", "bias"} {
					for i := range ts[fmt.Sprintf("model.layers.%d.self_attn.q_proj.%s", l, s)] {
						ts[fmt.Sprintf("model.layers.%d.self_attn.q_proj.%s", l, s)][i] *= float32(math.Sqrt(hd))
					}
				}
			}
		}},
	}
	var bases []hftest.Dir
	for i, o := range cfgs {
		d, err := hftest.Write(filepath.Join(root, fmt.Sprint("base", i)), o)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, d)
	}
	var reqs []torchRequest
	for i, v := range variants {
		dir := filepath.Join(root, fmt.Sprint("variant", i))
		writeVariant(t, bases[v.base].Path, dir, v.change)
		reqs = append(reqs, torchRequest{dir, oracleSeqs(bases[v.base].Config.Vocab), "float32"})
	}
	res := runTorch(t, python, reqs)
	for i, v := range variants {
		m, err := native.LoadHF(bases[v.base].Path, 0)
		if err != nil {
			t.Fatal(err)
		}
		d := compare(t, v.defect, m.PrefillLogits(reqs[i].IDs), res[i].Logits)
		t.Logf("%s (%s weights): %v", v.defect, map[bool]string{true: "Varied", false: "default"}[cfgs[v.base].Varied], d)
		if d.rel() < 10*torchTolerance {
			t.Errorf("%s: the oracle moves by %v, within 10× the tolerance %.0e", v.defect, d, torchTolerance)
		}
	}
}

// editConfig sets keys of dir's config.json (nil deletes one).
func editConfig(t *testing.T, dir string, set map[string]any) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	raw, _ = json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeVariant copies the float32 single-file directory src to dst with
// change applied to its config.json and tensors.
func writeVariant(t *testing.T, src, dst string, change func(map[string]any, map[string][]float32)) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	tensors, meta, err := native.ReadSafetensors(data)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]float32{}
	for _, x := range tensors {
		byName[x.Name] = x.Data
	}
	change(cfg, byName)
	var buf bytes.Buffer
	if err := native.WriteSafetensors(&buf, tensors, meta); err != nil {
		t.Fatal(err)
	}
	raw, _ = json.Marshal(cfg)
	for name, b := range map[string][]byte{"config.json": raw, "model.safetensors": buf.Bytes()} {
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
