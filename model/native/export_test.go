package native

import (
	"context"
	"slices"
)

// This file gives the external tests (package native_test) the raw
// logits, which the API only exposes as log-probabilities.

// PrefillLogits returns the logits after every prefix of each sequence,
// out[b][t] after seqs[b][:t+1], from the inference path (the prefill of
// Sample and Score): all sequences in one step, each with its own cache.
func (m *Model) PrefillLogits(seqs [][]int) [][][]float32 {
	st := m.newInferState()
	var caches []*kvCache
	var toks []int32
	var rows []int
	type at struct{ b, t int }
	var dest []at
	out := make([][][]float32, len(seqs))
	for b, s := range seqs {
		kc := newKVCache(m, len(s), kvRef{})
		out[b] = make([][]float32, len(s))
		for t, tok := range s {
			caches = append(caches, kc)
			toks = append(toks, int32(tok))
			rows = append(rows, len(toks)-1)
			dest = append(dest, at{b, t})
		}
	}
	st.forward(caches, toks, rows, func(i int, z []float32) {
		out[dest[i].b][dest[i].t] = slices.Clone(z)
	})
	return out
}

// TrainLogits returns PrefillLogits' logits from the training path
// (Forward), whose kernels and packing are its own.
func (m *Model) TrainLogits(seqs [][]int) ([][][]float32, error) {
	// Forward computes the logits at the positions that predict tokens
	// 1..n-1; a dummy token after each sequence makes them all of them.
	b := Batch{}
	for _, s := range seqs {
		b.Tokens = append(b.Tokens, append(slices.Clone(s), 0))
	}
	if _, err := m.Forward(context.Background(), b); err != nil {
		return nil, err
	}
	v := m.cfg.Vocab
	out := make([][][]float32, len(seqs))
	k := 0 // selected positions are in sequence, then position, order
	for i, s := range seqs {
		out[i] = make([][]float32, len(s))
		for t := range s {
			out[i][t] = slices.Clone(m.ws.logits[k*v : (k+1)*v])
			k++
		}
	}
	return out, nil
}
