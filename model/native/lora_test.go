package native

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func allTargets() LoRAConfig {
	return LoRAConfig{Rank: 3, Alpha: 6, Targets: LoRATargets(), Seed: 1}
}

// withLoRA returns a clone of base with adapters as cfg describes, their B
// drawn at random (std bStd) so that the adapters change the outputs.
func withLoRA(t testing.TB, base *Model, cfg LoRAConfig, bStd float64) *Model {
	t.Helper()
	m := base.Clone()
	if err := m.EnableLoRA(cfg); err != nil {
		t.Fatal(err)
	}
	if bStd > 0 {
		rng := rand.New(rand.NewPCG(cfg.Seed, 5))
		lo := m.LoRA()
		for _, ti := range lo.Tensors() {
			if strings.HasSuffix(ti.Name, ".lora_B.weight") {
				for i := range lo.Params()[ti.Offset : ti.Offset+ti.Size] {
					lo.Params()[ti.Offset+i] = float32(rng.NormFloat64() * bStd)
				}
			}
		}
	}
	return m
}

func forwardCopy(t testing.TB, m *Model, b Batch, base bool) (logp, ent, val [][]float32) {
	t.Helper()
	f := m.Forward
	if base {
		f = m.ForwardBase
	}
	out, err := f(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	cp := func(x [][]float32) [][]float32 {
		var r [][]float32
		for _, row := range x {
			r = append(r, slices.Clone(row))
		}
		return r
	}
	return cp(out.LogProb), cp(out.Entropy), cp(out.Value)
}

func rowsBitsEqual(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, bitsEqual)
}

func TestLoRAConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  LoRAConfig
		want string
	}{
		{LoRAConfig{Rank: 0, Alpha: 1, Targets: []string{"q_proj"}}, "rank"},
		{LoRAConfig{Rank: 2, Alpha: 0, Targets: []string{"q_proj"}}, "alpha"},
		{LoRAConfig{Rank: 2, Alpha: 1, Dropout: 0.1, Targets: []string{"q_proj"}}, "dropout 0.1 is not supported (only 0)"},
		{LoRAConfig{Rank: 2, Alpha: 1}, "no target modules"},
		{LoRAConfig{Rank: 2, Alpha: 1, Targets: []string{"lm_head"}}, `unknown target module "lm_head"`},
		{LoRAConfig{Rank: 2, Alpha: 1, Targets: []string{"q_proj", "q_proj"}}, "twice"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
	m := testModel(t, tinyConfig(true), 1)
	if err := m.EnableLoRA(LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"down_proj", "q_proj"}}); err != nil {
		t.Fatal(err)
	}
	if got := m.LoRA().Config().Targets; !slices.Equal(got, []string{"q_proj", "down_proj"}) {
		t.Errorf("targets %v, want canonical order", got)
	}
	if err := m.EnableLoRA(allTargets()); err == nil {
		t.Error("second EnableLoRA accepted")
	}
}

// TestLoRAZeroBIsBase: fresh adapters (B = 0) leave every output of
// Forward, Sample and Score bit-identical to the base model's.
func TestLoRAZeroBIsBase(t *testing.T) {
	base := testModel(t, tinyConfig(false), 2)
	rng := rand.New(rand.NewPCG(1, 1))
	b := randomBatch(rng, 11, 5, 9, 7)
	lp0, e0, v0 := forwardCopy(t, base, b, false)
	m := withLoRA(t, base, allTargets(), 0)
	lp1, e1, v1 := forwardCopy(t, m, b, false)
	if !rowsBitsEqual(lp0, lp1) || !rowsBitsEqual(e0, e1) || !rowsBitsEqual(v0, v1) {
		t.Error("Forward with B = 0 differs from the base model")
	}
	for _, ti := range m.LoRA().Tensors() {
		x := m.LoRA().Params()[ti.Offset : ti.Offset+ti.Size]
		isA := strings.HasSuffix(ti.Name, ".lora_A.weight")
		bound := float32(1 / math.Sqrt(float64(ti.Shape[1])))
		for _, v := range x {
			if isA && (v == 0 || v < -bound || v > bound) || !isA && v != 0 {
				t.Fatalf("%s: value %g outside the PEFT initialisation", ti.Name, v)
			}
		}
	}
	reqs := []SampleRequest{{Prompt: []int{1, 2, 3}, MaxNewTokens: 6, Temperature: 1, Seed: 3}}
	s0, err := base.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := m.Sample(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s0[0].Tokens, s1[0].Tokens) || !bitsEqual(s0[0].LogProbs, s1[0].LogProbs) {
		t.Error("Sample with B = 0 differs from the base model")
	}
}

// TestLoRAGradient checks the adapters' gradients against finite
// differences through every output, for all targets and for subsets that
// leave gaps inside the fused projections, and that no base gradient
// exists.
func TestLoRAGradient(t *testing.T) {
	for _, c := range []struct {
		name    string
		tied    bool
		targets []string
	}{
		{"all", false, LoRATargets()},
		{"q,v,down tied", true, []string{"q_proj", "v_proj", "down_proj"}},
		{"k,o,up", false, []string{"k_proj", "o_proj", "up_proj"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, err := New(tinyConfig(c.tied), 1)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 3))
			for i := range base.Params() {
				base.Params()[i] += float32(rng.NormFloat64() * 0.15)
			}
			m := withLoRA(t, base, LoRAConfig{Rank: 2, Alpha: 3, Targets: c.targets, Seed: 4}, 0.3)
			if m.Grads() != nil || m.NumTrainable() != m.LoRA().NumParams() {
				t.Fatalf("grads %d, trainable %d, adapters %d", len(m.Grads()), m.NumTrainable(), m.LoRA().NumParams())
			}
			b := randomBatch(rng, 11, 5, 9, 7)
			coef := ragged(rng, b, -1, 1)
			for _, which := range []string{"logprob", "entropy", "value"} {
				t.Run(which, func(t *testing.T) {
					checkGradients(t, m, b, func(out *Outputs, g *OutputGrads) float64 {
						src := map[string][][]float32{"logprob": out.LogProb, "entropy": out.Entropy, "value": out.Value}[which]
						switch which {
						case "logprob":
							g.LogProb = coef
						case "entropy":
							g.Entropy = coef
						case "value":
							g.Value = coef
						}
						var l float64
						for i := range src {
							for t2, x := range src[i] {
								l += float64(coef[i][t2]) * float64(x)
							}
						}
						return l
					})
				})
			}
		})
	}
}

// TestLoRAGradientSharedPrefix: the adapters' gradient through a batch
// whose sequences share a prompt equals the flat batch's.
func TestLoRAGradientSharedPrefix(t *testing.T) {
	base := testModel(t, tinyConfig(true), 3)
	m := withLoRA(t, base, allTargets(), 0.2)
	rng := rand.New(rand.NewPCG(5, 5))
	prompt := randTokens(rng, 6, 11)
	var shared, flat Batch
	shared.Prefixes = [][]int{prompt}
	for range 3 {
		reply := randTokens(rng, 4, 11)
		shared.Tokens = append(shared.Tokens, reply)
		shared.Prefix = append(shared.Prefix, 0)
		flat.Tokens = append(flat.Tokens, append(slices.Clone(prompt), reply...))
		flat.PromptLen = append(flat.PromptLen, len(prompt))
	}
	grad := func(b Batch, off int) []float32 {
		out, err := m.Forward(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		g := OutputGrads{LogProb: make([][]float32, len(out.LogProb))}
		for i, row := range out.LogProb {
			g.LogProb[i] = make([]float32, len(row))
			for t2 := off; t2 < len(row); t2++ {
				g.LogProb[i][t2] = 1
			}
		}
		m.ZeroGrad()
		if err := m.Backward(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(m.LoRA().Grads())
	}
	a, b := grad(shared, 0), grad(flat, len(prompt))
	for i := range a {
		if !close(float64(a[i]), float64(b[i]), 1e-4, 1e-6) {
			t.Fatalf("grad %d: shared %g, flat %g", i, a[i], b[i])
		}
	}
}

// TestLoRAMerge: folding the adapters into the weights gives the adapted
// model's logits to float rounding, and Sample and Score of the adapted
// model (which compute with merged weights) bit for bit.
func TestLoRAMerge(t *testing.T) {
	base := testModel(t, sampleConfig(), 4)
	m := withLoRA(t, base, LoRAConfig{Rank: 4, Alpha: 8, Targets: LoRATargets(), Seed: 2}, 0.2)
	merged := m.Clone()
	if err := merged.MergeLoRA(); err != nil {
		t.Fatal(err)
	}
	if merged.LoRA() != nil || m.LoRA() == nil || len(merged.Grads()) != merged.NumParams() {
		t.Fatal("MergeLoRA left adapters, or Clone shared them")
	}
	rng := rand.New(rand.NewPCG(2, 2))
	b := Batch{Tokens: [][]int{randTokens(rng, 20, 37), randTokens(rng, 7, 37)}}
	lp0, e0, _ := forwardCopy(t, base, b, false)
	lp1, e1, _ := forwardCopy(t, m, b, false)
	lp2, e2, _ := forwardCopy(t, merged, b, false)
	var maxDiff, change float64
	for i := range lp1 {
		for k := range lp1[i] {
			maxDiff = max(maxDiff, math.Abs(float64(lp1[i][k]-lp2[i][k])), math.Abs(float64(e1[i][k]-e2[i][k])))
			change = max(change, math.Abs(float64(lp1[i][k]-lp0[i][k])), math.Abs(float64(e1[i][k]-e0[i][k])))
		}
	}
	t.Logf("adapters change outputs by up to %.3g; merged differs from adapted by %.2g", change, maxDiff)
	if change < 1e-2 {
		t.Fatalf("the adapters barely change the outputs (%g): the test would not see a wrong merge", change)
	}
	if maxDiff > 1e-4 {
		t.Errorf("merged outputs differ from the adapter path by %g", maxDiff)
	}
	ctx := context.Background()
	reqs := []SampleRequest{{Prompt: randTokens(rng, 5, 37), MaxNewTokens: 10, Temperature: 1, Seed: 1},
		{Prompt: randTokens(rng, 9, 37), MaxNewTokens: 8, Temperature: 0.7, Seed: 2}}
	s1, err := m.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := merged.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range s1 {
		if !slices.Equal(s1[i].Tokens, s2[i].Tokens) || !bitsEqual(s1[i].LogProbs, s2[i].LogProbs) {
			t.Errorf("request %d: Sample of the adapted model differs from the merged model's", i)
		}
	}
	sc, err := m.Score(ctx, []ScoreRequest{{Prompt: reqs[0].Prompt, Continuations: [][]int{s1[0].Tokens}}})
	if err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(sc[0][0], s1[0].LogProbs) {
		t.Error("Score of the adapted model differs from its Sample")
	}
	// Other kernels than the CPU's compute with merged copies of the weights.
	other := m.Clone()
	other.SetKernels(plainKernels{&CPU{}})
	s3, err := other.Sample(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s1[0].Tokens, s3[0].Tokens) {
		t.Error("Sample with other kernels differs")
	}
}

// plainKernels hides the CPU type, so inference takes the generic path.
type plainKernels struct{ *CPU }

// TestLoRATrainsOnlyAdapters: AdamW steps change the adapters and leave
// every base weight bit-identical; ForwardBase still gives the base
// model's outputs, and training is bit-reproducible across GOMAXPROCS.
func TestLoRATrainsOnlyAdapters(t *testing.T) {
	run := func(procs int) (*Model, []float32, []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		base := testModel(t, tinyConfig(true), 6)
		before := slices.Clone(base.Params())
		m := withLoRA(t, base, allTargets(), 0)
		opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.01)
		rng := rand.New(rand.NewPCG(4, 4))
		b := randomBatch(rng, 11, 9, 12, 7)
		var losses []float64
		var g OutputGrads
		for range 8 {
			out, err := m.Forward(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			st, err := sftGrads(out, b.Mask, &g)
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, st.Loss)
			m.ZeroGrad()
			if err := m.Backward(context.Background(), g); err != nil {
				t.Fatal(err)
			}
			ClipGradNorm(m, 1)
			if err := opt.Update(m, 1e-2); err != nil {
				t.Fatal(err)
			}
		}
		if !bitsEqual(before, m.Params()) {
			t.Error("training the adapters changed a base weight")
		}
		lp0, _, _ := forwardCopy(t, base, b, false)
		lpb, _, _ := forwardCopy(t, m, b, true)
		if !rowsBitsEqual(lp0, lpb) {
			t.Error("ForwardBase after training differs from the base model")
		}
		if err := m.Backward(context.Background(), g); err == nil {
			t.Error("Backward after ForwardBase accepted")
		}
		return m, slices.Clone(m.LoRA().Params()), losses
	}
	m, p1, losses := run(1)
	t.Logf("losses %.4f", losses)
	if losses[len(losses)-1] >= losses[0] {
		t.Errorf("loss did not fall: %v", losses)
	}
	for _, ti := range m.LoRA().Tensors() {
		x := p1[ti.Offset : ti.Offset+ti.Size]
		if strings.HasSuffix(ti.Name, ".lora_B.weight") && !slices.ContainsFunc(x, func(v float32) bool { return v != 0 }) {
			t.Errorf("%s did not train", ti.Name)
		}
	}
	if netlibGemm {
		return
	}
	if _, p2, _ := run(2); !bitsEqual(p1, p2) {
		t.Error("adapter training is not bit-reproducible across GOMAXPROCS 1 and 2")
	}
}

// TestLoRAOptimizerState: the AdamW state of the adapters round-trips
// under the adapters' PEFT names, and full checkpoints refuse a model
// with adapters.
func TestLoRAOptimizerState(t *testing.T) {
	m := withLoRA(t, testModel(t, tinyConfig(true), 7), LoRAConfig{Rank: 2, Alpha: 2, Targets: []string{"q_proj", "up_proj"}}, 0.1)
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.1)
	out, err := m.Forward(context.Background(), Batch{Tokens: [][]int{{1, 2, 3, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(context.Background(), OutputGrads{LogProb: out.LogProb}); err != nil {
		t.Fatal(err)
	}
	if err := opt.Update(m, 1e-3); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteOptimizer(dir, m, opt); err != nil {
		t.Fatal(err)
	}
	got, err := LoadOptimizer(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	m1, v1 := opt.Moments()
	m2, v2 := got.Moments()
	if got.Steps() != 1 || !bitsEqual(m1, m2) || !bitsEqual(v1, v2) || len(m1) != m.LoRA().NumParams() {
		t.Error("optimizer state did not round-trip")
	}
	// The base model's optimizer does not fit the adapters.
	if _, err := LoadOptimizer(dir, testModel(t, tinyConfig(true), 7)); err == nil {
		t.Error("adapter optimizer state loaded into a model without adapters")
	}
	if err := WriteCheckpoint(t.TempDir(), m, opt, nil); err == nil || !strings.Contains(err.Error(), "SavePEFT") {
		t.Errorf("WriteCheckpoint of a model with adapters: %v", err)
	}
	if err := SaveHF(t.TempDir(), m); err == nil {
		t.Error("SaveHF of a model with adapters accepted")
	}
}

func TestLoRAWorkspaceBytes(t *testing.T) {
	m := testModel(t, tinyConfig(true), 1)
	full := m.WorkspaceBytes(100, 90)
	if err := m.EnableLoRA(allTargets()); err != nil {
		t.Fatal(err)
	}
	if got := m.WorkspaceBytes(100, 90); got <= full {
		t.Errorf("workspace with adapters %d, without %d", got, full)
	}
	if err := m.MergeLoRA(); err != nil {
		t.Fatal(err)
	}
	if err := m.MergeLoRA(); err == nil {
		t.Error("MergeLoRA without adapters accepted")
	}
}
