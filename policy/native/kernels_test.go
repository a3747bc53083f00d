package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveAttention is a float64 reference for packed causal GQA attention
// with shared prefixes, and its backward.
func naiveAttention(qkv, dout []float32, seg Segments, heads, kvHeads, hd int) (out, dqkv []float64) {
	ld := (heads + 2*kvHeads) * hd
	n := seg.Start[len(seg.Start)-1]
	out = make([]float64, n*heads*hd)
	dqkv = make([]float64, n*ld)
	scale := 1 / math.Sqrt(float64(hd))
	at := func(r, c int) float64 { return float64(qkv[r*ld+c]) }
	for s := 0; s < seg.count(); s++ {
		a, e := seg.Start[s], seg.Start[s+1]
		for h := 0; h < heads; h++ {
			g := h / (heads / kvHeads)
			qc, kc, vc := h*hd, heads*hd+g*hd, (heads+kvHeads)*hd+g*hd
			for i := a; i < e; i++ {
				var keys []int // rows visible to query row i
				if p := seg.prefixOf(s); p >= 0 {
					for j := seg.Start[p]; j < seg.Start[p+1]; j++ {
						keys = append(keys, j)
					}
				}
				for j := a; j <= i; j++ {
					keys = append(keys, j)
				}
				p := make([]float64, len(keys))
				mx := math.Inf(-1)
				for x, j := range keys {
					var d float64
					for c := 0; c < hd; c++ {
						d += at(i, qc+c) * at(j, kc+c)
					}
					p[x] = d * scale
					mx = math.Max(mx, p[x])
				}
				var sum float64
				for x := range p {
					p[x] = math.Exp(p[x] - mx)
					sum += p[x]
				}
				for x := range p {
					p[x] /= sum
				}
				do := dout[i*heads*hd+h*hd : i*heads*hd+(h+1)*hd]
				dp := make([]float64, len(p))
				var dd float64
				for x, j := range keys {
					for c := 0; c < hd; c++ {
						out[i*heads*hd+h*hd+c] += p[x] * at(j, vc+c)
						dp[x] += float64(do[c]) * at(j, vc+c)
						dqkv[j*ld+vc+c] += p[x] * float64(do[c])
					}
					dd += p[x] * dp[x]
				}
				for x, j := range keys {
					ds := p[x] * (dp[x] - dd) * scale
					for c := 0; c < hd; c++ {
						dqkv[i*ld+qc+c] += ds * at(j, kc+c)
						dqkv[j*ld+kc+c] += ds * at(i, qc+c)
					}
				}
			}
		}
	}
	return out, dqkv
}

// TestAttentionMatchesNaive covers segments shorter and longer than one
// attention block, an empty one, GQA and shared prefixes, with the
// backward recomputing the probabilities and reading them from the store
// the forward kept.
func TestAttentionMatchesNaive(t *testing.T) {
	const heads, kvHeads, hd = 4, 2, 8
	for _, seg := range []Segments{
		{Start: []int{0, 1, 71, 221}},
		{Start: []int{0, 3, 3, 70}},
		{Start: []int{0, 40, 41, 111, 261, 266, 336}, Prefix: []int{-1, -1, 0, 0, -1, 4}},
	} {
		n := seg.Start[len(seg.Start)-1]
		ld := (heads + 2*kvHeads) * hd
		rng := rand.New(rand.NewPCG(1, 1))
		qkv := make([]float32, n*ld)
		dout := make([]float32, n*heads*hd)
		for i := range qkv {
			qkv[i] = float32(rng.NormFloat64())
		}
		for i := range dout {
			dout[i] = float32(rng.NormFloat64())
		}
		wantOut, wantD := naiveAttention(qkv, dout, seg, heads, kvHeads, hd)
		k := &CPU{}
		for _, keep := range []bool{false, true} {
			var probs []float32
			need := k.AttentionProbsLen(seg, heads)
			if keep {
				// NaN everywhere: an entry the forward does not write
				// reaches the gradient; the tail past need must stay NaN.
				probs = make([]float32, need+7)
				for i := range probs {
					probs[i] = float32(math.NaN())
				}
			}
			out := make([]float32, n*heads*hd)
			lse := make([]float32, n*heads)
			k.Attention(out, heads*hd, lse, probs, qkv, ld, seg, heads, kvHeads, hd)
			dqkv := make([]float32, n*ld)
			for i := range dqkv {
				dqkv[i] = 123 // must be overwritten
			}
			k.AttentionBackward(dqkv, dout, heads*hd, qkv, ld, lse, probs, seg, heads, kvHeads, hd)
			for i := range out {
				if math.Abs(float64(out[i])-wantOut[i]) > 1e-4 {
					t.Fatalf("%v keep=%v: out[%d] = %g, want %g", seg, keep, i, out[i], wantOut[i])
				}
			}
			for i := range dqkv {
				if !(math.Abs(float64(dqkv[i])-wantD[i]) <= 1e-3) {
					t.Fatalf("%v keep=%v: dqkv[%d] (row %d col %d) = %g, want %g", seg, keep, i, i/ld, i%ld, dqkv[i], wantD[i])
				}
			}
			for i := need; i < len(probs); i++ {
				if !math.IsNaN(float64(probs[i])) {
					t.Fatalf("%v: the forward wrote probs[%d], past AttentionProbsLen = %d", seg, i, need)
				}
			}
		}
	}
}

// TestAttentionProbsLen checks the store's size against its definition
// (every query row over the prefix and the own keys of its block) and that
// a store too short is refused.
func TestAttentionProbsLen(t *testing.T) {
	seg := Segments{Start: []int{0, 40, 41, 111, 261}, Prefix: []int{-1, -1, 0, 0}}
	const heads = 3
	want := 0
	for s := range seg.count() {
		pn, tl := seg.prefixLen(s), seg.Start[s+1]-seg.Start[s]
		for i := 0; i < tl; i++ {
			blockEnd := min((i/attnBlock+1)*attnBlock, tl)
			want += heads * (pn + blockEnd)
		}
	}
	k := &CPU{}
	if got := k.AttentionProbsLen(seg, heads); got != want {
		t.Fatalf("AttentionProbsLen = %d, want %d", got, want)
	}
	if got := k.AttentionProbsLen(Segments{Start: []int{0}}, heads); got != 0 {
		t.Fatalf("AttentionProbsLen of no segments = %d, want 0", got)
	}
	n, ld := seg.Start[len(seg.Start)-1], 3*heads*4
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "len(probs)") {
			t.Fatalf("short store: recovered %v, want a panic naming len(probs)", r)
		}
	}()
	k.Attention(make([]float32, n*heads*4), heads*4, make([]float32, n*heads), make([]float32, want-1), make([]float32, n*ld), ld, seg, heads, heads, 4)
}

func TestRoPEInverse(t *testing.T) {
	m, err := New(Config{Vocab: 4, DModel: 16, Layers: 1, Heads: 2, DFF: 4, MaxSeq: 10}, 1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	x := make([]float32, 3*20)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	orig := append([]float32(nil), x...)
	pos := []int32{0, 5, 9}
	k := &CPU{}
	k.RoPE(x, 3, 20, 2, 2, 8, pos, m.ropeCos, m.ropeSin, false)
	if x[0] != orig[0] || x[1] != orig[1] || x[2] != orig[2] {
		t.Error("position 0 or columns before col0 changed")
	}
	k.RoPE(x, 3, 20, 2, 2, 8, pos, m.ropeCos, m.ropeSin, true)
	for i := range x {
		if math.Abs(float64(x[i]-orig[i])) > 1e-6 {
			t.Fatalf("inverse RoPE: x[%d] = %g, want %g", i, x[i], orig[i])
		}
	}
}

func TestLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	const n, in, out = 37, 150, 70
	x := make([]float32, n*in)
	w := make([]float32, out*in)
	bias := make([]float32, out)
	for _, s := range [][]float32{x, w, bias} {
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
	}
	y := make([]float32, n*out)
	linear(&CPU{}, y, x, w, bias, n, in, out, false)
	for r := 0; r < n; r++ {
		for c := 0; c < out; c++ {
			want := float64(bias[c])
			for k := 0; k < in; k++ {
				want += float64(x[r*in+k]) * float64(w[c*in+k])
			}
			if math.Abs(float64(y[r*out+c])-want) > 1e-3 {
				t.Fatalf("y[%d,%d] = %g, want %g", r, c, y[r*out+c], want)
			}
		}
	}
}

func TestScheduleAndClip(t *testing.T) {
	s := Schedule{Peak: 1, Min: 0.1, Warmup: 10, Total: 110, Cosine: true}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		step int
		want float64
	}{{0, 0.1}, {9, 1}, {10, 1}, {60, 0.55}, {110, 0.1}, {500, 0.1}} {
		if got := s.LR(c.step); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("LR(%d) = %g, want %g", c.step, got, c.want)
		}
	}
	if got := (Schedule{Peak: 2, Warmup: 0}).LR(1000); got != 2 {
		t.Errorf("constant LR = %g", got)
	}
	if (Schedule{Peak: 1, Warmup: 5, Total: 3, Cosine: true}).Validate() == nil {
		t.Error("bad schedule accepted")
	}
	m, _ := New(Config{Vocab: 4, DModel: 4, Layers: 1, Heads: 1, DFF: 4, MaxSeq: 4}, 1)
	for i := range m.Grads() {
		m.Grads()[i] = 1
	}
	want := math.Sqrt(float64(m.NumParams()))
	if got := ClipGradNorm(m, 1); math.Abs(got-want) > 1e-6*want {
		t.Errorf("pre-clip norm %g, want %g", got, want)
	}
	if got := ClipGradNorm(m, 0); math.Abs(got-1) > 1e-5 {
		t.Errorf("post-clip norm %g, want 1", got)
	}
}

func TestLogSoftmaxAndAdamW(t *testing.T) {
	k := &CPU{}
	x := []float32{1, 2, 3, -1000, 0, 0}
	out := make([]float32, 6)
	k.LogSoftmax(out, x, 2, 3)
	want := []float64{1 - 3.40760596, 2 - 3.40760596, 3 - 3.40760596, -1000 - math.Log(2), -math.Log(2), -math.Log(2)}
	for i := range out {
		if math.Abs(float64(out[i])-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
			t.Errorf("logsoftmax[%d] = %g, want %g", i, out[i], want[i])
		}
	}
	p, g, m, v := []float32{1}, []float32{0.5}, []float32{0.1}, []float32{0.2}
	k.AdamW(p, g, m, v, 0.01, 0.9, 0.99, 1e-8, 0.1, 0.19, 0.0199)
	wm, wv := 0.9*0.1+0.1*0.5, 0.99*0.2+0.01*0.25
	wp := 1 - 0.01*((wm/0.19)/(math.Sqrt(wv/0.0199)+1e-8)+0.1*1)
	if math.Abs(float64(m[0])-wm) > 1e-7 || math.Abs(float64(v[0])-wv) > 1e-7 || math.Abs(float64(p[0])-wp) > 1e-6 {
		t.Errorf("AdamW: p %g m %g v %g, want %g %g %g", p[0], m[0], v[0], wp, wm, wv)
	}
}

// TestForwardKeepsAttnProbsWithinBudget checks when Forward keeps the
// attention probabilities: within attnProbsBudget (summed over layers),
// not past it, and not for ForwardBase, which Backward cannot follow.
func TestForwardKeepsAttnProbsWithinBudget(t *testing.T) {
	m, err := New(tinyConfig(true), 1)
	if err != nil {
		t.Fatal(err)
	}
	b := randomBatch(rand.New(rand.NewPCG(1, 1)), 11, 5, 16, 7)
	ctx := context.Background()
	if _, err := m.Forward(ctx, b); err != nil {
		t.Fatal(err)
	}
	need := m.kern.AttentionProbsLen(m.ws.seg, m.cfg.Heads)
	if need == 0 || m.ws.nprobs != need {
		t.Fatalf("Forward kept %d probabilities per layer, want %d", m.ws.nprobs, need)
	}
	defer func(b int) { attnProbsBudget = b }(attnProbsBudget)
	for _, c := range []struct {
		budget int
		want   int
	}{{need * m.cfg.Layers, need}, {need*m.cfg.Layers - 1, 0}} {
		attnProbsBudget = c.budget
		if _, err := m.Forward(ctx, b); err != nil {
			t.Fatal(err)
		}
		if m.ws.nprobs != c.want {
			t.Errorf("budget %d: Forward kept %d per layer, want %d", c.budget, m.ws.nprobs, c.want)
		}
	}
	attnProbsBudget = need * m.cfg.Layers
	if _, err := m.ForwardBase(ctx, b); err != nil {
		t.Fatal(err)
	}
	if m.ws.nprobs != 0 {
		t.Errorf("ForwardBase kept %d probabilities per layer, want none", m.ws.nprobs)
	}
}
