package simd

import "fmt"

//go:generate sh -c "cd _asm && go run ./attn -out ../attn_amd64.s -stubs ../attn_stubs_amd64.go -pkg simd"

// The attention kernels of decoding and prefill with a KV cache. A query
// attends to keys and values that may be held in several spans of
// positions (a shared prompt's cache, an earlier turn's, its own), so both
// kernels work on one span at a time, and compute every output element in
// a way that does not depend on how the positions are split into spans or
// on which other rows are in the call:
//
//   - AttnScores computes each score as its own chain of fused
//     multiply-adds over the head dimension, starting from zero, like a
//     Gemm with k = hd and alpha = 1;
//   - AttnAccum continues each output element's chain of fused
//     multiply-adds over the positions of the span in increasing order,
//     from the value the output holds, so calling it span after span on
//     the same output gives the same bits as one call over all positions.
//
// The AVX2 and AVX-512 kernels agree bit for bit (the register blocking
// differs, the arithmetic per element does not); the portable kernels
// write a*b + s, which the compiler may or may not fuse.

// AttnScores computes, for r < rows and j < n,
//
//	s[r*lds+j] = Σ_{d<hd} q[r*ldq+d]·k[r*krow+d*ldk+j]
//
// where k holds keys transposed (row d of a head's keys is its d-th
// component at every position, ldk apart) and krow is the offset between
// the keys of consecutive rows (0 when every row attends to the same
// keys). Each sum is fma(q[d], k[d][j], s) for d = 0, 1, …, hd-1 from s = 0.
// s must not overlap q or k. It panics if a slice is too short for its
// shape.
func AttnScores(rows, n, hd int, q []float32, ldq int, k []float32, ldk, krow int, s []float32, lds int) {
	if rows < 0 || n < 0 || hd < 0 || ldq < 0 || ldk < 0 || krow < 0 || lds < 0 {
		panic(fmt.Sprintf("simd: AttnScores: negative size (rows=%d n=%d hd=%d ldq=%d ldk=%d krow=%d lds=%d)", rows, n, hd, ldq, ldk, krow, lds))
	}
	if rows == 0 || n == 0 {
		return
	}
	if rows > 1 && lds < n {
		panic(fmt.Sprintf("simd: AttnScores: lds = %d, want ≥ n = %d", lds, n))
	}
	attnNeed("AttnScores", "s", len(s), (rows-1)*lds+n)
	if hd == 0 {
		for r := 0; r < rows; r++ {
			clear(s[r*lds : r*lds+n])
		}
		return
	}
	attnNeed("AttnScores", "q", len(q), (rows-1)*ldq+hd)
	attnNeed("AttnScores", "k", len(k), (rows-1)*krow+(hd-1)*ldk+n)
	if kern := attnKernels[level]; kern != nil {
		kern.scores(rows, n, hd, &q[0], ldq, &k[0], ldk, krow, &s[0], lds)
		return
	}
	attnScoresGo(rows, n, hd, q, ldq, k, ldk, krow, s, lds)
}

// AttnAccum adds to each of rows outputs the weighted sum of n value rows:
// for r < rows and c < hd, in increasing j,
//
//	o[r*ldo+c] = fma(p[r*ldp+j], v[r*vrow+j*ldv+c], o[r*ldo+c])
//
// where vrow is the offset between the values of consecutive rows (0 when
// every row reads the same values). o must not overlap p or v, and rows
// of o must not overlap (ldo ≥ hd). It panics if a slice is too short for
// its shape.
func AttnAccum(rows, n, hd int, p []float32, ldp int, v []float32, ldv, vrow int, o []float32, ldo int) {
	if rows < 0 || n < 0 || hd < 0 || ldp < 0 || ldv < 0 || vrow < 0 || ldo < 0 {
		panic(fmt.Sprintf("simd: AttnAccum: negative size (rows=%d n=%d hd=%d ldp=%d ldv=%d vrow=%d ldo=%d)", rows, n, hd, ldp, ldv, vrow, ldo))
	}
	if rows == 0 || n == 0 || hd == 0 {
		return
	}
	if rows > 1 && ldo < hd {
		panic(fmt.Sprintf("simd: AttnAccum: ldo = %d, want ≥ hd = %d", ldo, hd))
	}
	attnNeed("AttnAccum", "p", len(p), (rows-1)*ldp+n)
	attnNeed("AttnAccum", "v", len(v), (rows-1)*vrow+(n-1)*ldv+hd)
	attnNeed("AttnAccum", "o", len(o), (rows-1)*ldo+hd)
	if kern := attnKernels[level]; kern != nil {
		kern.accum(rows, n, hd, p, ldp, v, ldv, vrow, o, ldo)
		return
	}
	attnAccumGo(rows, n, hd, p, ldp, v, ldv, vrow, o, ldo)
}

func attnNeed(fn, name string, have, want int) {
	if have < want {
		panic(fmt.Sprintf("simd: %s: len(%s) = %d, want ≥ %d", fn, name, have, want))
	}
}

// attnKernel is one level's assembly for the attention kernels; the
// arguments have been checked.
type attnKernel struct {
	scores func(rows, n, hd int, q *float32, ldq int, k *float32, ldk, krow int, s *float32, lds int)
	accum  func(rows, n, hd int, p []float32, ldp int, v []float32, ldv, vrow int, o []float32, ldo int)
}

// attnKernels holds the kernels of each level; nil means portable.
var attnKernels [AVX512 + 1]*attnKernel

func attnScoresGo(rows, n, hd int, q []float32, ldq int, k []float32, ldk, krow int, s []float32, lds int) {
	for r := 0; r < rows; r++ {
		sr := s[r*lds : r*lds+n]
		clear(sr)
		kr := k[r*krow:]
		for d, x := range q[r*ldq : r*ldq+hd] {
			kd := kr[d*ldk : d*ldk+n]
			for j := range sr {
				sr[j] = x*kd[j] + sr[j]
			}
		}
	}
}

func attnAccumGo(rows, n, hd int, p []float32, ldp int, v []float32, ldv, vrow int, o []float32, ldo int) {
	for r := 0; r < rows; r++ {
		or := o[r*ldo : r*ldo+hd]
		vr := v[r*vrow:]
		for j, w := range p[r*ldp : r*ldp+n] {
			vj := vr[j*ldv : j*ldv+hd]
			for c := range or {
				or[c] = w*vj[c] + or[c]
			}
		}
	}
}
