package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveAttention is a float64 reference for packed causal GQA attention
// with shared prefixes, a score scale and a sliding window, and its
// backward.
func naiveAttention(qkv, dout []float32, seg Segments, spec AttnSpec) (out, dqkv []float64) {
	heads, kvHeads, hd := spec.Heads, spec.KVHeads, spec.HeadDim
	ld := (heads + 2*kvHeads) * hd
	n := seg.Start[len(seg.Start)-1]
	out = make([]float64, n*heads*hd)
	dqkv = make([]float64, n*ld)
	scale := 1 / math.Sqrt(float64(hd))
	if spec.Scale != 0 {
		scale = float64(spec.Scale)
	}
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
				if w := spec.Window; w > 0 && len(keys) > w {
					keys = keys[len(keys)-w:] // the keys are in position order
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
// attention block, GQA, shared prefixes, and a score scale and sliding
// windows (Gemma's) shorter than a block, than a prefix, and longer than
// a block.
func TestAttentionMatchesNaive(t *testing.T) {
	const heads, kvHeads, hd = 4, 2, 8
	type tc struct {
		seg    Segments
		scale  float32
		window int
	}
	prefixed := Segments{Start: []int{0, 40, 41, 111, 261, 266, 336}, Prefix: []int{-1, -1, 0, 0, -1, 4}}
	for _, c := range []tc{
		{Segments{Start: []int{0, 1, 71, 221}}, 0, 0},
		{prefixed, 0, 0},
		{prefixed, 0.3, 7},
		{prefixed, 0, 55},
		{Segments{Start: []int{0, 1, 71, 221}}, 0.2, 100},
	} {
		seg := c.seg
		spec := AttnSpec{Heads: heads, KVHeads: kvHeads, HeadDim: hd, Scale: c.scale, Window: c.window}
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
		k := &CPU{}
		out := make([]float32, n*heads*hd)
		lse := make([]float32, n*heads)
		k.Attention(out, heads*hd, lse, qkv, ld, seg, spec)
		dqkv := make([]float32, n*ld)
		for i := range dqkv {
			dqkv[i] = 123 // must be overwritten
		}
		k.AttentionBackward(dqkv, dout, heads*hd, qkv, ld, lse, seg, spec)
		wantOut, wantD := naiveAttention(qkv, dout, seg, spec)
		for i := range out {
			if math.Abs(float64(out[i])-wantOut[i]) > 1e-4 {
				t.Fatalf("%v %+v: out[%d] = %g, want %g", seg, spec, i, out[i], wantOut[i])
			}
		}
		for i := range dqkv {
			if math.Abs(float64(dqkv[i])-wantD[i]) > 1e-3 {
				t.Fatalf("%v %+v: dqkv[%d] (row %d col %d) = %g, want %g", seg, spec, i, i/ld, i%ld, dqkv[i], wantD[i])
			}
		}
	}
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
