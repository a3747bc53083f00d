// Command attn generates the AVX2 and AVX-512 decode-attention kernels of
// package simd (attn_amd64.s and attn_stubs_amd64.go):
//
//	go run ./attn -out ../attn_amd64.s -stubs ../attn_stubs_amd64.go -pkg simd
//
// Both kernels compute every output element as a chain of fused
// multiply-adds over one index in increasing order, each element in a
// lane of its own: the scores over the head dimension from zero, the
// weighted sum of value rows over the key positions from the output's
// previous value. The register blocking (how many positions, rows or
// columns are in flight) differs between the instruction sets and never
// changes a result, so AVX2 and AVX-512 agree bit for bit, and a caller
// may split the key positions into any spans.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

type isa struct {
	name  string
	w     int // float32 lanes per register
	bytes int
	regs  []VecPhysical
}

var (
	avx2 = isa{"AVX2", 8, 32, []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}}
	// Only the first 16 ZMM registers are used, which is plenty here.
	avx512 = isa{"AVX512", 16, 64, []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}}
)

func (a isa) is512() bool { return a.w == 16 }

// tailMask holds 8 all-ones words then 8 zero words: the AVX2 mask of the
// first r lanes starts at word 8-r.
var tailMask Mem

func constants() {
	tailMask = GLOBL("attnTailMask", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		DATA(4*i, U32(v))
	}
}

// avx2Mask loads into m the mask of the first r lanes (1 ≤ r ≤ 8), using t
// as scratch.
func avx2Mask(r, t GPPhysical, m VecPhysical) {
	MOVQ(U32(8), t)
	SUBQ(r, t)
	LEAQ(tailMask, r)
	VMOVDQU(Mem{Base: r, Index: t, Scale: 4}, m)
}

// avx512Mask sets k to the mask of the first r lanes (1 ≤ r ≤ 16); r must
// be CX, t is scratch.
func avx512Mask(t GPPhysical, k Op) {
	MOVQ(U32(1), t)
	SHLQ(CL, t)
	DECQ(t)
	KMOVW(t.As32(), k)
}

var labels int

func uniq(s string) string {
	labels++
	return fmt.Sprintf("%s_%d", s, labels)
}

// scores generates
//
//	s[r*lds+j] = Σ_{d<hd} q[r*ldq+d]·k[r*krow+d*ldk+j]  (r < rows, j < n)
//
// one row at a time: positions in blocks of 8, 4, 2 and 1 vectors, then a
// masked vector, each block a loop over d of one FMA per vector into
// accumulators that start at zero.
func scores(a isa) {
	TEXT("attnScores"+a.name, NOSPLIT, "func(rows, n, hd int, q *float32, ldq int, k *float32, ldk, krow int, s *float32, lds int)")
	Doc(fmt.Sprintf("attnScores%s computes rows×n attention scores against keys stored transposed; see attn.go.", a.name))
	rows, qr, kr, sr := R8, R9, R10, R11
	ldk, rem, kj, sj := R12, R13, R14, RDX
	qd, kd, cnt, hd := RSI, RDI, RBX, RAX
	Load(Param("rows"), rows)
	Load(Param("q"), qr)
	Load(Param("k"), kr)
	Load(Param("s"), sr)
	Load(Param("ldk"), ldk)
	SHLQ(U8(2), ldk)
	Load(Param("hd"), hd)
	bq := a.regs[15]
	tmp, msk := a.regs[13], a.regs[14]

	rowLoop, done := uniq("rows"), uniq("done")
	Label(rowLoop)
	TESTQ(rows, rows)
	JZ(LabelRef(done))
	Load(Param("n"), rem)
	MOVQ(kr, kj)
	MOVQ(sr, sj)

	block := func(nv int, masked bool) {
		for i := 0; i < nv; i++ {
			VXORPS(a.regs[i], a.regs[i], a.regs[i])
		}
		loop, store := uniq("d"), uniq("store")
		MOVQ(qr, qd)
		MOVQ(kj, kd)
		MOVQ(hd, cnt)
		TESTQ(cnt, cnt)
		JZ(LabelRef(store))
		Label(loop)
		VBROADCASTSS(Mem{Base: qd}, bq)
		for i := 0; i < nv; i++ {
			m := Mem{Base: kd, Disp: i * a.bytes}
			switch {
			case !masked:
				VFMADD231PS(m, bq, a.regs[i])
			case a.is512():
				VFMADD231PS(m, bq, K1, a.regs[i])
			default:
				VMASKMOVPS(m, msk, tmp)
				VFMADD231PS(tmp, bq, a.regs[i])
			}
		}
		ADDQ(U8(4), qd)
		ADDQ(ldk, kd)
		DECQ(cnt)
		JNZ(LabelRef(loop))
		Label(store)
		for i := 0; i < nv; i++ {
			m := Mem{Base: sj, Disp: i * a.bytes}
			switch {
			case !masked:
				VMOVUPS(a.regs[i], m)
			case a.is512():
				VMOVUPS(a.regs[i], K1, m)
			default:
				VMASKMOVPS(a.regs[i], msk, m)
			}
		}
	}
	for _, nv := range []int{8, 4, 2, 1} {
		top, next := uniq(fmt.Sprintf("blk%d", nv)), uniq("next")
		Label(top)
		CMPQ(rem, U32(nv*a.w))
		JL(LabelRef(next))
		block(nv, false)
		ADDQ(U32(nv*a.bytes), kj)
		ADDQ(U32(nv*a.bytes), sj)
		SUBQ(U32(nv*a.w), rem)
		if nv == 8 {
			JMP(LabelRef(top))
		}
		Label(next)
	}
	rowEnd := uniq("rowend")
	TESTQ(rem, rem)
	JZ(LabelRef(rowEnd))
	if a.is512() {
		MOVQ(rem, RCX)
		avx512Mask(cnt, K1)
	} else {
		avx2Mask(rem, cnt, msk)
	}
	block(1, true)
	Label(rowEnd)
	for _, x := range []struct {
		param string
		ptr   GPPhysical
	}{{"ldq", qr}, {"krow", kr}, {"lds", sr}} {
		Load(Param(x.param), RCX)
		LEAQ(Mem{Base: x.ptr, Index: RCX, Scale: 4}, x.ptr)
	}
	DECQ(rows)
	JMP(LabelRef(rowLoop))
	Label(done)
	VZEROUPPER()
	RET()
}

// accum generates one variant of
//
//	o[r*ldo+c] = fma(p[r*ldp+j], v[r*vrow+j*ldv+c], o[r*ldo+c])  (j = 0, 1, …, n-1)
//
// for nr rows and nv vectors of columns; with masked, the last vector
// holds the first last columns only (AVX-512 variants always mask it,
// with last up to 16). The accumulators are loaded from o, kept in
// registers across the n positions, and stored back.
func accum(a isa, nr, nv int, masked bool) {
	name := fmt.Sprintf("attnAccum%sR%dC%d", a.name, nr, nv)
	if masked && !a.is512() {
		name += "M"
	}
	TEXT(name, NOSPLIT, "func(n int, p *float32, ldp int, v *float32, ldv, vrow int, o *float32, ldo, last int)")
	Doc(fmt.Sprintf("%s accumulates %d rows of %d vectors of weighted value rows; see attn_amd64.go.", name, nr, nv))
	n, pj, ldp, ldp3 := RCX, RSI, R8, R9
	vj, ldv, vrow, vrow3 := RDI, R10, R11, R12
	op, ldo, t := RDX, RBX, R13
	Load(Param("n"), n)
	Load(Param("p"), pj)
	Load(Param("v"), vj)
	Load(Param("o"), op)
	for _, x := range []struct {
		param string
		r     GPPhysical
	}{{"ldp", ldp}, {"ldv", ldv}, {"vrow", vrow}, {"ldo", ldo}} {
		Load(Param(x.param), x.r)
		SHLQ(U8(2), x.r)
	}
	LEAQ(Mem{Base: ldp, Index: ldp, Scale: 2}, ldp3)
	LEAQ(Mem{Base: vrow, Index: vrow, Scale: 2}, vrow3)
	tmp, msk := a.regs[14], a.regs[15]
	if masked {
		if a.is512() {
			Load(Param("last"), RCX)
			avx512Mask(t, K1)
			Load(Param("n"), n)
		} else {
			Load(Param("last"), t)
			avx2Mask(t, R14, msk)
		}
	}
	acc := func(r, c int) VecPhysical { return a.regs[r*nv+c] }
	bc := func(r int) VecPhysical { return a.regs[8+r] }
	isLast := func(c int) bool { return masked && c == nv-1 }
	rowMem := func(base, stride, stride3 GPPhysical, r, disp int) Mem {
		switch r {
		case 1:
			return Mem{Base: base, Index: stride, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: base, Index: stride, Scale: 2, Disp: disp}
		case 3:
			return Mem{Base: base, Index: stride3, Scale: 1, Disp: disp}
		}
		return Mem{Base: base, Disp: disp}
	}
	// The rows of o, one after another through t.
	eachO := func(f func(r, c int, m Mem)) {
		MOVQ(op, t)
		for r := 0; r < nr; r++ {
			for c := 0; c < nv; c++ {
				f(r, c, Mem{Base: t, Disp: c * a.bytes})
			}
			if r < nr-1 {
				ADDQ(ldo, t)
			}
		}
	}
	eachO(func(r, c int, m Mem) {
		switch {
		case !isLast(c):
			VMOVUPS(m, acc(r, c))
		case a.is512():
			VMOVUPS_Z(m, K1, acc(r, c))
		default:
			VMASKMOVPS(m, msk, acc(r, c))
		}
	})
	loop := uniq("pos")
	Label(loop)
	for r := 0; r < nr; r++ {
		VBROADCASTSS(rowMem(pj, ldp, ldp3, r, 0), bc(r))
	}
	for r := 0; r < nr; r++ {
		for c := 0; c < nv; c++ {
			m := rowMem(vj, vrow, vrow3, r, c*a.bytes)
			switch {
			case !isLast(c):
				VFMADD231PS(m, bc(r), acc(r, c))
			case a.is512():
				VFMADD231PS(m, bc(r), K1, acc(r, c))
			default:
				VMASKMOVPS(m, msk, tmp)
				VFMADD231PS(tmp, bc(r), acc(r, c))
			}
		}
	}
	ADDQ(U8(4), pj)
	ADDQ(ldv, vj)
	DECQ(n)
	JNZ(LabelRef(loop))
	eachO(func(r, c int, m Mem) {
		switch {
		case !isLast(c):
			VMOVUPS(acc(r, c), m)
		case a.is512():
			VMOVUPS(acc(r, c), K1, m)
		default:
			VMASKMOVPS(acc(r, c), msk, m)
		}
	})
	VZEROUPPER()
	RET()
}

func main() {
	ConstraintExpr("amd64")
	constants()
	for _, a := range []isa{avx2, avx512} {
		scores(a)
	}
	// AVX2: up to 2 rows of up to 4 vectors (32 columns), the last one
	// masked or not. AVX-512: up to 4 rows of 1 or 2 vectors, the last one
	// always masked.
	for r := 1; r <= 2; r++ {
		for c := 1; c <= 4; c++ {
			accum(avx2, r, c, false)
			accum(avx2, r, c, true)
		}
	}
	for r := 1; r <= 4; r++ {
		for c := 1; c <= 2; c++ {
			accum(avx512, r, c, true)
		}
	}
	Generate()
}
