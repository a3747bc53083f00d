package native

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"sync"
)

// ArithmeticID identifies the bits this package's training computes on
// this machine: a short hash of the parameters after two AdamW updates of
// a small fixed model on a fixed packed batch (a shared prefix, sequences
// longer than one attention block, grouped-query attention, the gradients
// of every output; products large enough to be packed and split over
// the cores). Builds with the same ID train alike as far as the probe
// reaches: a kernel change that alters the rounding of what it exercises
// changes it, and so does a CPU whose kernels round differently (the
// portable path on a machine without AVX2), but a change confined to
// shapes it does not reach (a blocking rule for very long k, say) can go
// unnoticed. Caches of trained models key on it — the warm start's — so
// that code which would not have trained a cached model rebuilds it
// instead of reusing it. Computed once per process, in about 12 ms; an
// error means the probe itself failed to train, which no working build
// does.
func ArithmeticID() (string, error) { return arithmeticID() }

var arithmeticID = sync.OnceValues(computeArithmeticID)

func computeArithmeticID() (string, error) {
	cfg := Config{
		Vocab: 37, DModel: 64, Layers: 2, Heads: 4, KVHeads: 2, DFF: 160, MaxSeq: 320,
		RopeTheta: 10000, QKVBias: true, ValueHead: true,
	}
	m, err := New(cfg, 1)
	if err != nil {
		return "", err
	}
	opt := NewAdamW(m, 0.9, 0.95, 1e-8, 0.1)
	rng := rand.New(rand.NewPCG(2, 3))
	seq := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = rng.IntN(cfg.Vocab)
		}
		return s
	}
	b := Batch{
		Tokens:   [][]int{seq(200), seq(9), seq(300)},
		Prefixes: [][]int{seq(70)},
		Prefix:   []int{0, 0, -1},
	}
	ctx := context.Background()
	for range 2 {
		out, err := m.Forward(ctx, b)
		if err != nil {
			return "", err
		}
		g := OutputGrads{LogProb: probeGrads(out.LogProb, rng), Entropy: probeGrads(out.Entropy, rng), Value: probeGrads(out.Value, rng)}
		m.ZeroGrad()
		if err := m.Backward(ctx, g); err != nil {
			return "", err
		}
		ClipGradNorm(m, 1)
		if err := opt.Update(m, 1e-2); err != nil {
			return "", err
		}
	}
	h := sha256.New()
	var w [4]byte
	for _, p := range m.Params() {
		binary.LittleEndian.PutUint32(w[:], math.Float32bits(p))
		h.Write(w[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// probeGrads returns gradients shaped like like, drawn from rng in [-1, 1), or
// nil for nil.
func probeGrads(like [][]float32, rng *rand.Rand) [][]float32 {
	if like == nil {
		return nil
	}
	g := make([][]float32, len(like))
	for i, row := range like {
		g[i] = make([]float32, len(row))
		for t := range g[i] {
			g[i][t] = float32(2*rng.Float64() - 1)
		}
	}
	return g
}
