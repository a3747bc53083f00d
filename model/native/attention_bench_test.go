package native

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/simd"
)

// BenchmarkAttention runs the training attention forward and backward on
// the train step's shape (8 sequences of 256 tokens, 4 heads of 32) and
// reports its GEMM FLOP rate and its share of the measured peak.
func BenchmarkAttention(b *testing.B) {
	const seqs, T, heads, hd = 8, 256, 4, 32
	n, ld := seqs*T, 3*heads*hd
	rng := rand.New(rand.NewPCG(1, 1))
	qkv, dout := make([]float32, n*ld), make([]float32, n*heads*hd)
	for i := range qkv {
		qkv[i] = float32(rng.NormFloat64())
	}
	for i := range dout {
		dout[i] = float32(rng.NormFloat64())
	}
	out, lse, dqkv := make([]float32, n*heads*hd), make([]float32, n*heads), make([]float32, n*ld)
	seg := Segments{Start: make([]int, seqs+1)}
	for s := range seg.Start {
		seg.Start[s] = s * T
	}
	k := &CPU{}
	stop := recordGemms()
	k.Attention(out, heads*hd, lse, qkv, ld, seg, AttnSpec{Heads: heads, KVHeads: heads, HeadDim: hd})
	k.AttentionBackward(dqkv, dout, heads*hd, qkv, ld, lse, seg, AttnSpec{Heads: heads, KVHeads: heads, HeadDim: hd})
	var flops float64
	for _, c := range stop() {
		flops += c.flops()
	}
	peak := simd.PeakGFLOPS(runtime.GOMAXPROCS(0))
	b.ResetTimer()
	var fwd, bwd time.Duration
	for range b.N {
		t0 := time.Now()
		k.Attention(out, heads*hd, lse, qkv, ld, seg, AttnSpec{Heads: heads, KVHeads: heads, HeadDim: hd})
		t1 := time.Now()
		k.AttentionBackward(dqkv, dout, heads*hd, qkv, ld, lse, seg, AttnSpec{Heads: heads, KVHeads: heads, HeadDim: hd})
		fwd, bwd = fwd+t1.Sub(t0), bwd+time.Since(t1)
	}
	sec := (fwd + bwd).Seconds() / float64(b.N)
	b.ReportMetric(flops/sec/1e9, "GFLOP/s")
	b.ReportMetric(100*flops/sec/1e9/peak, "%peak")
	b.ReportMetric(fwd.Seconds()*1e3/float64(b.N), "fwd-ms")
	b.ReportMetric(bwd.Seconds()*1e3/float64(b.N), "bwd-ms")
}
