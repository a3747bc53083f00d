package native

import (
	"math"

	"github.com/agentrl/agentrl/internal/simd"
)

// Segments describes how packed rows form sequences for attention. Segment s
// occupies rows Start[s]..Start[s+1]-1 and attends causally within itself.
// If Prefix is non-nil and Prefix[s] ≥ 0, segment s also attends to every
// row of segment Prefix[s] (a prompt shared by several continuations, placed
// before them in position); a prefix segment must not have a prefix itself.
type Segments struct {
	Start  []int
	Prefix []int
}

// count returns the number of segments.
func (sg Segments) count() int { return len(sg.Start) - 1 }

// prefixOf returns the prefix segment of s, or -1.
func (sg Segments) prefixOf(s int) int {
	if sg.Prefix == nil {
		return -1
	}
	return sg.Prefix[s]
}

// attnBlock is the query-row block of the training attention. Row block
// [i0, i1) of a segment only needs its own keys [0, i1), so working block by
// block skips most of the masked upper triangle (for T = 256, 62% of the
// full T×T work remains).
const attnBlock = 64

// headView addresses one head of the fused QKV (or dQKV) matrix for a range
// of rows: element (i, c) is at data[i·ld + c].
type headView struct {
	data []float32
	ld   int
}

func (v headView) at(row int) []float32 { return v.data[row*v.ld:] }

// AttnSpec describes an attention: its heads, key/value heads (GQA) and
// head width, the factor on the scores, and the sliding window.
type AttnSpec struct {
	Heads, KVHeads, HeadDim int
	// Scale multiplies the scores QKᵀ; 0 means 1/√HeadDim.
	Scale float32
	// Window, if positive, is the number of positions a query sees: its
	// own and the Window-1 before it (Gemma's sliding_window). 0 means
	// every earlier position.
	Window int
}

// attnShape carries the sizes shared by the attention routines.
type attnShape struct {
	heads, kvHeads, headDim int
	ldqkv, ldo              int
	scale                   float32
	window                  int
}

func newAttnShape(a AttnSpec, ldqkv, ldo int) attnShape {
	scale := a.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(a.HeadDim)))
	}
	return attnShape{a.Heads, a.KVHeads, a.HeadDim, ldqkv, ldo, scale, a.Window}
}

// from returns the first of the vis positions a query sees through the
// window (0 without one).
func (a attnShape) from(vis int) int {
	if a.window > 0 && vis > a.window {
		return vis - a.window
	}
	return 0
}

// views returns Q of head h and K, V of its KV head for rows starting at row.
func (a attnShape) views(qkv []float32, row, h int) (q, k, v headView) {
	g := h / (a.heads / a.kvHeads)
	qd, kvd := a.heads*a.headDim, a.kvHeads*a.headDim
	base := row * a.ldqkv
	return headView{qkv[base+h*a.headDim:], a.ldqkv},
		headView{qkv[base+qd+g*a.headDim:], a.ldqkv},
		headView{qkv[base+qd+kvd+g*a.headDim:], a.ldqkv}
}

// Attention implements Kernels.
//
// Each (segment, head) pair is one task. For each block of query rows, the
// scores against the prefix keys and the own keys the block can see are
// GEMMs into per-goroutine scratch laid out [prefix | own]; the causal mask
// inside the diagonal block is applied in the softmax loop, with masked
// entries set to exactly zero so the P·V GEMM skips them.
func (k *CPU) Attention(out []float32, ldo int, lse, qkv []float32, ldqkv int, seg Segments, a AttnSpec) {
	sh := newAttnShape(a, ldqkv, ldo)
	heads, headDim := a.Heads, a.HeadDim
	parallelFor(seg.count()*heads, func(_, task int) {
		s, h := task/heads, task%heads
		a, t := seg.Start[s], seg.Start[s+1]-seg.Start[s]
		pa, pn := 0, 0
		if p := seg.prefixOf(s); p >= 0 {
			pa, pn = seg.Start[p], seg.Start[p+1]-seg.Start[p]
		}
		if t == 0 {
			return
		}
		buf := k.getScratch(attnBlock * (pn + t))
		defer k.scratch.Put(buf)
		_, pk, pv := sh.views(qkv, pa, h)
		_, kk, v := sh.views(qkv, a, h)
		for i0 := 0; i0 < t; i0 += attnBlock {
			i1 := min(i0+attnBlock, t)
			rows, w := i1-i0, pn+i1
			sc := (*buf)[:rows*w]
			q, _, _ := sh.views(qkv, a+i0, h)
			if pn > 0 {
				gemm(false, false, true, rows, pn, headDim, sh.scale, q.data, ldqkv, pk.data, ldqkv, 0, sc, w)
			}
			gemm(false, false, true, rows, i1, headDim, sh.scale, q.data, ldqkv, kk.data, ldqkv, 0, sc[pn:], w)
			for r := 0; r < rows; r++ {
				vis := pn + i0 + r + 1 // visible keys: the prefix and own keys 0..i
				lo := sh.from(vis)     // (or the last window of them)
				row := sc[r*w : (r+1)*w]
				lse[(a+i0+r)*heads+h] = simd.Softmax(row[lo:vis])
				clear(row[:lo])
				clear(row[vis:])
			}
			o := out[(a+i0)*ldo+h*headDim:]
			beta := float32(0)
			if pn > 0 {
				gemm(false, false, false, rows, headDim, pn, 1, sc, w, pv.data, ldqkv, 0, o, ldo)
				beta = 1
			}
			gemm(false, false, false, rows, headDim, i1, 1, sc[pn:], w, v.data, ldqkv, beta, o, ldo)
		}
	})
}

// AttentionBackward implements Kernels.
//
// A task is a family — a segment without prefix together with every
// segment that uses it as prefix — and one key/value head, so that the dK
// and dV of shared prefix rows, and of the query heads sharing a KV head,
// accumulate without races. For each query head and block of query rows:
//
//	P  = exp(S - lse)            (recomputed, S = QKᵀ/√d over visible keys)
//	dV += Pᵀ·dO
//	dP = dO·Vᵀ
//	dS = P ⊙ (dP - rowsum(P ⊙ dP)) / √d
//	dQ = dS·K,  dK += dSᵀ·Q
func (k *CPU) AttentionBackward(dqkv, dout []float32, ldo int, qkv []float32, ldqkv int, lse []float32, seg Segments, a AttnSpec) {
	sh := newAttnShape(a, ldqkv, ldo)
	heads, kvHeads, headDim := a.Heads, a.KVHeads, a.HeadDim
	n := seg.count()
	// Families: roots are segments without prefix; children follow them.
	var roots []int
	children := make([][]int, n)
	for s := 0; s < n; s++ {
		if p := seg.prefixOf(s); p >= 0 {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	group := heads / kvHeads
	parallelFor(len(roots)*kvHeads, func(_, task int) {
		root, g := roots[task/kvHeads], task%kvHeads
		for _, s := range append([]int{root}, children[root]...) {
			a, t := seg.Start[s], seg.Start[s+1]-seg.Start[s]
			_, dk, dv := sh.views(dqkv, a, g*group)
			for i := 0; i < t; i++ {
				clear(dk.at(i)[:headDim])
				clear(dv.at(i)[:headDim])
			}
		}
		for _, s := range append([]int{root}, children[root]...) {
			pa, pn := 0, 0
			if s != root {
				pa, pn = seg.Start[root], seg.Start[root+1]-seg.Start[root]
			}
			k.attnSegmentBackward(sh, dqkv, dout, qkv, lse, seg.Start[s], seg.Start[s+1]-seg.Start[s], pa, pn, g)
		}
	})
}

// attnSegmentBackward runs the attention backward of the query heads of KV
// head g for the t rows of one segment starting at row a, whose keys are the
// pn rows of its prefix at row pa (if any) followed by its own rows.
func (k *CPU) attnSegmentBackward(sh attnShape, dqkv, dout, qkv, lse []float32, a, t, pa, pn, g int) {
	if t == 0 {
		return
	}
	heads, hd, ldqkv, ldo := sh.heads, sh.headDim, sh.ldqkv, sh.ldo
	group := heads / sh.kvHeads
	buf := k.getScratch(2 * attnBlock * (pn + t))
	defer k.scratch.Put(buf)
	for h := g * group; h < (g+1)*group; h++ {
		_, pk, pv := sh.views(qkv, pa, h)
		_, dpk, dpv := sh.views(dqkv, pa, h)
		_, kk, v := sh.views(qkv, a, h)
		_, dk, dv := sh.views(dqkv, a, h)
		for i0 := 0; i0 < t; i0 += attnBlock {
			i1 := min(i0+attnBlock, t)
			rows, w := i1-i0, pn+i1
			p, dp := (*buf)[:rows*w], (*buf)[rows*w:2*rows*w]
			q, _, _ := sh.views(qkv, a+i0, h)
			dq, _, _ := sh.views(dqkv, a+i0, h)
			do := dout[(a+i0)*ldo+h*hd:]
			if pn > 0 {
				gemm(false, false, true, rows, pn, hd, sh.scale, q.data, ldqkv, pk.data, ldqkv, 0, p, w)
			}
			gemm(false, false, true, rows, i1, hd, sh.scale, q.data, ldqkv, kk.data, ldqkv, 0, p[pn:], w)
			for r := 0; r < rows; r++ {
				vis := pn + i0 + r + 1
				lo := sh.from(vis)
				row := p[r*w : (r+1)*w]
				simd.ExpSum(row[lo:vis], lse[(a+i0+r)*heads+h])
				clear(row[:lo])
				clear(row[vis:])
			}
			// dV += Pᵀ·dO and dP = dO·Vᵀ, split over [prefix | own] keys.
			if pn > 0 {
				gemm(false, true, false, pn, hd, rows, 1, p, w, do, ldo, 1, dpv.data, ldqkv)
				gemm(false, false, true, rows, pn, hd, 1, do, ldo, pv.data, ldqkv, 0, dp, w)
			}
			gemm(false, true, false, i1, hd, rows, 1, p[pn:], w, do, ldo, 1, dv.data, ldqkv)
			gemm(false, false, true, rows, i1, hd, 1, do, ldo, v.data, ldqkv, 0, dp[pn:], w)
			for r := 0; r < rows; r++ {
				vis := pn + i0 + r + 1
				lo := sh.from(vis)
				simd.SoftmaxBackward(p[r*w+lo:r*w+vis], dp[r*w+lo:r*w+vis], sh.scale)
				clear(dp[r*w : r*w+lo])
				clear(dp[r*w+vis : (r+1)*w])
			}
			// dQ = dS·K and dK += dSᵀ·Q, split the same way.
			beta := float32(0)
			if pn > 0 {
				gemm(false, false, false, rows, hd, pn, 1, dp, w, pk.data, ldqkv, 0, dq.data, ldqkv)
				gemm(false, true, false, pn, hd, rows, 1, dp, w, q.data, ldqkv, 1, dpk.data, ldqkv)
				beta = 1
			}
			gemm(false, false, false, rows, hd, i1, 1, dp[pn:], w, kk.data, ldqkv, beta, dq.data, ldqkv)
			gemm(false, true, false, i1, hd, rows, 1, dp[pn:], w, q.data, ldqkv, 1, dk.data, ldqkv)
		}
	}
}
