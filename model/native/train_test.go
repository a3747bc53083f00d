package native

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/hugemem"
)

// copyBatch returns sequences BOS x1..xk SEP x1..xk with the loss on the
// second copy. Predicting it requires an induction head (find the previous
// occurrence of the current token, copy its successor), which needs two
// attention layers working together, so the test exercises the attention
// backward end to end.
func copyBatch(rng *rand.Rand, batch, k, vocab int) Batch {
	const bos, sep = 0, 1
	var b Batch
	for range batch {
		s := []int{bos}
		for range k {
			s = append(s, 2+rng.IntN(vocab-2))
		}
		s = append(s, sep)
		s = append(s, s[1:k+1]...)
		b.Tokens = append(b.Tokens, s)
		b.PromptLen = append(b.PromptLen, k+2)
	}
	return b
}

func TestLearnsCopyTask(t *testing.T) {
	cfg := Config{Vocab: 16, DModel: 32, Layers: 2, Heads: 2, DFF: 64, MaxSeq: 32, TieEmbeddings: true}
	m, err := New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0)
	sched := Schedule{Peak: 1e-2, Warmup: 20}
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	var g OutputGrads
	start := time.Now()
	first, loss := 0.0, 0.0
	step := 0
	for ; step < 600; step++ {
		b := copyBatch(rng, 16, 8, cfg.Vocab)
		out, err := m.Forward(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		mask := make([][]bool, len(b.Tokens))
		for i, s := range b.Tokens {
			mask[i] = make([]bool, len(s))
			for p := b.PromptLen[i]; p < len(s); p++ {
				mask[i][p] = true
			}
		}
		st, err := sftGrads(out, mask, &g)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = st.Loss
		}
		loss = 0.9*loss + 0.1*st.Loss
		if step > 20 && loss < 0.05 {
			break
		}
		m.ZeroGrad()
		if err := m.Backward(ctx, g); err != nil {
			t.Fatal(err)
		}
		ClipGradNorm(m, 1)
		if err := opt.Update(m, float32(sched.LR(step))); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("copy task: loss %.3f → %.3f in %d steps, %v", first, loss, step, time.Since(start))
	if loss > 0.1 {
		t.Fatalf("copy task not learned: smoothed loss %.3f after %d steps", loss, step)
	}
}

// TestNoSelectedPositions: a batch whose mask selects nothing runs forward
// and backward and yields zero gradients.
func TestNoSelectedPositions(t *testing.T) {
	m, err := New(tinyConfig(true), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := Batch{Tokens: [][]int{{1}, {2, 3, 4}}, Mask: [][]bool{{false}, {false, false, false}}}
	out, err := m.Forward(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var g OutputGrads
	st, err := sftGrads(out, b.Mask, &g)
	if err != nil || st.Tokens != 0 || st.Loss != 0 {
		t.Fatalf("stats %+v, err %v", st, err)
	}
	if err := m.Backward(ctx, g); err != nil {
		t.Fatal(err)
	}
	for i, x := range m.Grads() {
		if x != 0 {
			t.Fatalf("grad[%d] = %g, want 0", i, x)
		}
	}
	if err := m.Backward(ctx, g); err == nil {
		t.Error("second Backward without Forward accepted")
	}
	c := m.Clone()
	c.Params()[0]++
	if m.Params()[0] == c.Params()[0] {
		t.Error("Clone shares parameters")
	}
}

// TestTrainingDeterministic: the same seed gives bit-identical weights after
// several updates, whatever GOMAXPROCS is (every reduction runs in a fixed
// order on one goroutine).
func TestTrainingDeterministic(t *testing.T) {
	run := func(procs int) []float32 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		cfg := tinyConfig(false)
		cfg.MaxSeq = 100
		m, err := New(cfg, 9)
		if err != nil {
			t.Fatal(err)
		}
		opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.1)
		rng := rand.New(rand.NewPCG(4, 4))
		for range 3 {
			b := randomBatch(rng, cfg.Vocab, 90, 3, 70)
			// Supervised loss plus an entropy and a value term, so every
			// output's backward takes part.
			sftUpdate(t, m, opt, b, 1e-2, func(g *OutputGrads) {
				g.Entropy, g.Value = ragged(rng, b, -0.01, 0.01), ragged(rng, b, -0.5, 0.5)
			})
		}
		return m.Params()
	}
	if netlibGemm {
		// OpenBLAS gets row chunks sized by GOMAXPROCS and may round them
		// differently; only same-configuration reruns are guaranteed equal.
		if !bitsEqual(run(2), run(2)) {
			t.Error("training is not bit-reproducible")
		}
		return
	}
	a, b, c := run(1), run(2), run(4)
	if !bitsEqual(a, b) || !bitsEqual(a, c) {
		t.Error("training is not bit-reproducible across GOMAXPROCS 1, 2, 4")
	}
}

// sftUpdate runs one supervised update on b: Forward, the loss gradients
// (then extra, if not nil, may add others), Backward, clipping to norm 1
// and AdamW at learning rate lr. It returns the loss.
func sftUpdate(t testing.TB, m *Model, opt *AdamW, b Batch, lr float32, extra func(*OutputGrads)) float64 {
	t.Helper()
	out, err := m.Forward(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	var g OutputGrads
	st, err := sftGrads(out, b.Mask, &g)
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(&g)
	}
	m.ZeroGrad()
	if err := m.Backward(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	ClipGradNorm(m, 1)
	if err := opt.Update(m, lr); err != nil {
		t.Fatal(err)
	}
	return st.Loss
}

// TestGradientAccumulation: two micro-batches whose losses are weighted by
// the whole batch's token count give the gradient of the whole batch in one
// piece.
func TestGradientAccumulation(t *testing.T) {
	ctx := context.Background()
	m, err := New(tinyConfig(false), 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	whole := randomBatch(rng, 11, 6, 9, 4, 7)
	adv := ragged(rng, whole, -1, 1)
	grad := func(parts ...[2]int) []float32 {
		total := 0
		for _, mk := range whole.Mask {
			for _, x := range mk {
				if x {
					total++
				}
			}
		}
		m.ZeroGrad()
		for _, p := range parts {
			b := Batch{Tokens: whole.Tokens[p[0]:p[1]], Mask: whole.Mask[p[0]:p[1]]}
			_, err := m.Forward(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			// L = Σ_masked (−A·logp − 0.1·H) / total: the policy gradient
			// with an entropy bonus, token-mean over the whole batch.
			g := OutputGrads{LogProb: make([][]float32, len(b.Tokens)), Entropy: make([][]float32, len(b.Tokens))}
			for i, mk := range b.Mask {
				g.LogProb[i] = make([]float32, len(mk))
				g.Entropy[i] = make([]float32, len(mk))
				for t, x := range mk {
					if x {
						g.LogProb[i][t] = -adv[p[0]+i][t] / float32(total)
						g.Entropy[i][t] = -0.1 / float32(total)
					}
				}
			}
			if err := m.Backward(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		return append([]float32(nil), m.Grads()...)
	}
	one := grad([2]int{0, 4})
	two := grad([2]int{0, 1}, [2]int{1, 4})
	for i := range one {
		if !close(float64(one[i]), float64(two[i]), 1e-4, 1e-7) {
			t.Fatalf("grad %d: whole %g, accumulated %g", i, one[i], two[i])
		}
	}
}

func TestWorkspaceBytesEstimate(t *testing.T) {
	m, err := New(DefaultConfig(512), 1)
	if err != nil {
		t.Fatal(err)
	}
	b := trainBatch(m.Config(), 4, 128)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := m.Forward(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(context.Background(), OutputGrads{LogProb: out.LogProb}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	got := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	est := m.WorkspaceBytes(4*128, 4*127)
	t.Logf("workspace %d bytes, estimate %d", got, est)
	// Each buffer keeps 25% headroom, so the real size is up to 1.25× the
	// estimate, plus the slab's huge-page alignment when it is on huge pages.
	align := 0.0
	if hugemem.Enabled() {
		align = 2 * hugemem.PageBytes
	}
	if float64(got) < 0.8*float64(est) || float64(got) > 1.5*float64(est)+align {
		t.Errorf("workspace uses %d bytes, estimate %d", got, est)
	}
}
