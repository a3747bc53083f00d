package native

import (
	"strings"
	"testing"
	"time"
)

// timedKernels times each kernel call of the CPU kernels it wraps, by
// kernel, in wall time on the calling goroutine.
type timedKernels struct {
	*CPU
	t map[string]time.Duration
}

func (tk timedKernels) add(name string, t0 time.Time) { tk.t[name] += time.Since(t0) }

func (tk timedKernels) Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	defer tk.add("Gemm", time.Now())
	tk.CPU.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
func (tk timedKernels) RMSNorm(out, rstd, x, w []float32, rows, dim int, eps float32) {
	defer tk.add("RMSNorm", time.Now())
	tk.CPU.RMSNorm(out, rstd, x, w, rows, dim, eps)
}
func (tk timedKernels) RMSNormBackward(dx, dw, dout, x, w, rstd []float32, rows, dim int) {
	defer tk.add("RMSNormBackward", time.Now())
	tk.CPU.RMSNormBackward(dx, dw, dout, x, w, rstd, rows, dim)
}
func (tk timedKernels) RoPE(x []float32, rows, ld, col0, heads, headDim int, pos []int32, cos, sin []float32, inverse bool) {
	defer tk.add("RoPE", time.Now())
	tk.CPU.RoPE(x, rows, ld, col0, heads, headDim, pos, cos, sin, inverse)
}
func (tk timedKernels) SwiGLU(out, gu []float32, rows, dff int) {
	defer tk.add("SwiGLU", time.Now())
	tk.CPU.SwiGLU(out, gu, rows, dff)
}
func (tk timedKernels) SwiGLUBackward(dgu, dout, gu []float32, rows, dff int) {
	defer tk.add("SwiGLUBackward", time.Now())
	tk.CPU.SwiGLUBackward(dgu, dout, gu, rows, dff)
}
func (tk timedKernels) GeGLU(out, gu []float32, rows, dff int) {
	defer tk.add("GeGLU", time.Now())
	tk.CPU.GeGLU(out, gu, rows, dff)
}
func (tk timedKernels) GeGLUBackward(dgu, dout, gu []float32, rows, dff int) {
	defer tk.add("GeGLUBackward", time.Now())
	tk.CPU.GeGLUBackward(dgu, dout, gu, rows, dff)
}
func (tk timedKernels) Attention(out []float32, ldo int, lse, qkv []float32, ldqkv int, seg Segments, a AttnSpec) {
	defer tk.add("Attention", time.Now())
	tk.CPU.Attention(out, ldo, lse, qkv, ldqkv, seg, a)
}
func (tk timedKernels) AttentionBackward(dqkv, dout []float32, ldo int, qkv []float32, ldqkv int, lse []float32, seg Segments, a AttnSpec) {
	defer tk.add("AttentionBackward", time.Now())
	tk.CPU.AttentionBackward(dqkv, dout, ldo, qkv, ldqkv, lse, seg, a)
}
func (tk timedKernels) TokenLogProbs(logits []float32, rows, vocab int, targets []int32, logp, entropy, lse []float32) {
	defer tk.add("TokenLogProbs", time.Now())
	tk.CPU.TokenLogProbs(logits, rows, vocab, targets, logp, entropy, lse)
}
func (tk timedKernels) TokenLogProbsBackward(logits []float32, rows, vocab int, targets []int32, lse, entropy, dlogp, dentropy []float32) {
	defer tk.add("TokenLogProbsBackward", time.Now())
	tk.CPU.TokenLogProbsBackward(logits, rows, vocab, targets, lse, entropy, dlogp, dentropy)
}
func (tk timedKernels) AdamW(p, g, m, v []float32, lr, beta1, beta2, eps, wd, bc1, bc2 float32) {
	defer tk.add("AdamW", time.Now())
	tk.CPU.AdamW(p, g, m, v, lr, beta1, beta2, eps, wd, bc1, bc2)
}

// BenchmarkTrainStepKernels breaks BenchmarkTrainStep's step down by
// kernel: the wall time per step each kernel's calls take (`<kernel>-ms`,
// parallel ones counted once, as the step waits for them) and the rest of
// the step outside any kernel (`other-ms`: the loss, gradient clipping,
// packing the batch). The timing wrapper costs a few µs a step.
func BenchmarkTrainStepKernels(b *testing.B) {
	cfg := benchConfig()
	m, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	tk := timedKernels{m.kern.(*CPU), map[string]time.Duration{}}
	m.SetKernels(tk)
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.01)
	step := sftStep(b, m, opt, trainBatch(cfg, 8, 256), 1e-3)
	step() // warm the workspace
	clear(tk.t)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		step()
	}
	total := time.Since(start)
	b.StopTimer()
	perStep := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
	inKernels := time.Duration(0)
	for name, d := range tk.t {
		inKernels += d
		b.ReportMetric(perStep(d), strings.ToLower(name)+"-ms")
	}
	b.ReportMetric(perStep(total-inKernels), "other-ms")
	b.ReportMetric(perStep(total), "ms/step")
}
