// Command vec generates the AVX2 and AVX-512 elementwise and row kernels of
// package simd (vec_amd64.s and vec_stubs_amd64.go).
//
// Every kernel is written once against the isa type below and emitted for
// both instruction sets. Both emit the same sequence of float32 operations
// per lane; reductions use the canonical layout of package simd (element i
// accumulates into lane i mod 32, in element order, then the fixed halving
// tree), held in four YMM or two ZMM registers.
package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// lanes is the canonical number of reduction lanes.
const lanes = 32

type isa struct {
	name  string
	w     int // float32 lanes per register
	bytes int
	vec   func() VecVirtual
}

var (
	avx2   = isa{"AVX2", 8, 32, YMM}
	avx512 = isa{"AVX512", 16, 64, ZMM}
)

func (a isa) is512() bool { return a.w == 16 }

// Constants, 16 copies each so that both widths can use them as memory
// operands.
var (
	cLo, cHi, cLog2e, cLn2Hi, cLn2Lo       Mem
	cC2, cC3, cC4, cC5, cC6, cOne, cNegInf Mem
	cSign, cBias                           Mem
	tailMask, kMask                        Mem
)

func vconst(name string, bits uint32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(bits))
	}
	return m
}

func f32(x float64) uint32 { return math.Float32bits(float32(x)) }

func constants() {
	cLo = vconst("expLo", f32(-104))
	cHi = vconst("expHi", f32(89))
	cLog2e = vconst("expLog2e", f32(1.44269504088896341))
	cLn2Hi = vconst("expLn2Hi", f32(0.693359375))
	cLn2Lo = vconst("expLn2Lo", f32(-2.12194440e-4))
	cC2 = vconst("expC2", f32(0.5))
	cC3 = vconst("expC3", f32(0.16666576266288757))
	cC4 = vconst("expC4", f32(0.04166655242443085))
	cC5 = vconst("expC5", f32(0.00836324691772461))
	cC6 = vconst("expC6", f32(0.001392626785673201))
	cOne = vconst("one", f32(1))
	cNegInf = vconst("negInf", 0xff800000)
	cSign = vconst("signBit", 0x80000000)
	cBias = vconst("bias127", 127)
	// tailMask at byte offset 4·(8−r) holds r all-ones lanes then zeros.
	tailMask = GLOBL("tailMask", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		DATA(4*i, U32(v))
	}
	// kMask[r] = 2^r − 1 for r in [0, 16].
	kMask = GLOBL("kMask", RODATA|NOPTR)
	for r := 0; r <= 16; r++ {
		DATA(2*r, U16(uint16(1<<r-1)))
	}
}

var labels int

func uniq(s string) string {
	labels++
	return fmt.Sprintf("%s%d", s, labels)
}

// access addresses one register-width of every stream at a byte offset,
// with a lane mask for the partial last vector (nil when full).
type access struct {
	a    isa
	off  int
	mask Op
}

func (ac access) mem(p GPVirtual) Mem { return Mem{Base: p, Disp: ac.off} }

func (ac access) ld(p GPVirtual) VecVirtual {
	v := ac.a.vec()
	switch {
	case ac.mask == nil:
		VMOVUPS(ac.mem(p), v)
	case ac.a.is512():
		VMOVUPS_Z(ac.mem(p), ac.mask, v)
	default:
		VMASKMOVPS(ac.mem(p), ac.mask, v)
	}
	return v
}

func (ac access) st(v VecVirtual, p GPVirtual) {
	switch {
	case ac.mask == nil:
		VMOVUPS(v, ac.mem(p))
	case ac.a.is512():
		VMOVUPS(v, ac.mask, ac.mem(p))
	default:
		VMASKMOVPS(v, ac.mask, ac.mem(p))
	}
}

// mask returns the lane mask of the first rem lanes, 0 < rem < w.
func (a isa) mask(rem GPVirtual) Op {
	if a.is512() {
		b := GP64()
		LEAQ(kMask, b)
		k := K()
		KMOVW(Mem{Base: b, Index: rem, Scale: 2}, k)
		return k
	}
	t, b := GP64(), GP64()
	MOVQ(U32(8), t)
	SUBQ(rem, t)
	LEAQ(tailMask, b)
	m := YMM()
	VMOVDQU(Mem{Base: b, Index: t, Scale: 4}, m)
	return m
}

// bcast broadcasts a float32 argument into a register.
func (a isa) bcast(name string) VecVirtual {
	v := a.vec()
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	VBROADCASTSS(b.Addr, v)
	return v
}

func (a isa) load(m Mem) VecVirtual {
	v := a.vec()
	VMOVUPS(m, v)
	return v
}

// exp returns e^x lane-wise and the clamped argument (see Expf).
func (a isa) exp(x VecVirtual) (e, xc VecVirtual) {
	xc = a.load(cLo)
	VMAXPS(x, xc, xc) // lo > x ? lo : x; NaN x passes
	hi := a.load(cHi)
	VMINPS(xc, hi, xc) // hi < xc ? hi : xc; NaN passes
	n := a.vec()
	VMULPS(cLog2e, xc, n)
	if a.is512() {
		VRNDSCALEPS(U8(0), n, n)
	} else {
		VROUNDPS(U8(0), n, n)
	}
	r := a.vec()
	VMOVAPS(xc, r)
	VFNMADD231PS(cLn2Hi, n, r) // exact
	VFNMADD231PS(cLn2Lo, n, r)
	p := a.load(cC6)
	VFMADD213PS(cC5, r, p)
	VFMADD213PS(cC4, r, p)
	VFMADD213PS(cC3, r, p)
	VFMADD213PS(cC2, r, p)
	VFMADD213PS(cOne, r, p)
	VFMADD213PS(cOne, r, p)
	if a.is512() {
		VSCALEFPS(n, p, p)
		return p, xc
	}
	// p·2^(n>>1)·2^(n−n>>1): the first product is exact.
	n2 := a.vec()
	VCVTPS2DQ(n, n2)
	n1 := a.vec()
	VPSRAD(U8(1), n2, n1)
	VPSUBD(n1, n2, n2)
	VPADDD(cBias, n1, n1)
	VPSLLD(U8(23), n1, n1)
	VPADDD(cBias, n2, n2)
	VPSLLD(U8(23), n2, n2)
	VMULPS(n1, p, p)
	VMULPS(n2, p, p)
	return p, xc
}

// elementwise runs body over n elements of the streams: unroll full
// vectors per iteration, then single vectors, then one masked vector.
func (a isa) elementwise(n GPVirtual, ptrs []GPVirtual, unroll int, body func(ac access)) {
	loop, single, tail, done := uniq("loop"), uniq("single"), uniq("tail"), uniq("done")
	Label(loop)
	CMPQ(n, U32(unroll*a.w))
	JL(LabelRef(single))
	for k := 0; k < unroll; k++ {
		body(access{a, k * a.bytes, nil})
	}
	for _, p := range ptrs {
		ADDQ(U32(unroll*a.bytes), p)
	}
	SUBQ(U32(unroll*a.w), n)
	JMP(LabelRef(loop))
	Label(single)
	if unroll > 1 {
		CMPQ(n, U32(a.w))
		JL(LabelRef(tail))
		body(access{a, 0, nil})
		for _, p := range ptrs {
			ADDQ(U32(a.bytes), p)
		}
		SUBQ(U32(a.w), n)
		JMP(LabelRef(single))
	}
	Label(tail)
	TESTQ(n, n)
	JE(LabelRef(done))
	body(access{a, 0, a.mask(n)})
	Label(done)
}

// reduction runs body over n elements in the canonical layout: vector k of
// each block of 32 elements accumulates into accumulator k.
func (a isa) reduction(n GPVirtual, ptrs []GPVirtual, body func(ac access, k int)) {
	v := lanes / a.w
	loop, tail, done := uniq("loop"), uniq("tail"), uniq("done")
	Label(loop)
	CMPQ(n, U32(lanes))
	JL(LabelRef(tail))
	for k := 0; k < v; k++ {
		body(access{a, k * a.bytes, nil}, k)
	}
	for _, p := range ptrs {
		ADDQ(U32(lanes*4), p)
	}
	SUBQ(U32(lanes), n)
	JMP(LabelRef(loop))
	Label(tail)
	parts := make([]string, v)
	for k := 0; k < v; k++ {
		parts[k] = uniq("part")
		CMPQ(n, U32(k*a.w))
		JLE(LabelRef(done))
		CMPQ(n, U32((k+1)*a.w))
		JL(LabelRef(parts[k]))
		body(access{a, k * a.bytes, nil}, k)
	}
	JMP(LabelRef(done))
	for k := 0; k < v; k++ {
		Label(parts[k])
		t := GP64()
		MOVQ(n, t)
		if k > 0 {
			SUBQ(U32(k*a.w), t)
		}
		body(access{a, k * a.bytes, a.mask(t)}, k)
		JMP(LabelRef(done))
	}
	Label(done)
}

func (a isa) accs(init Mem) []VecVirtual {
	acc := make([]VecVirtual, lanes/a.w)
	for i := range acc {
		acc[i] = a.vec()
		if init.Symbol.Name == "" {
			VXORPS(acc[i], acc[i], acc[i])
		} else {
			VMOVUPS(init, acc[i])
		}
	}
	return acc
}

// accAdd adds v into acc on the lanes of mask (all when nil).
func (a isa) accAdd(acc, v VecVirtual, mask Op) {
	switch {
	case mask == nil:
		VADDPS(v, acc, acc)
	case a.is512():
		VADDPS(v, acc, mask, acc)
	default:
		VANDPS(mask, v, v)
		VADDPS(v, acc, acc)
	}
}

// accFMA adds x·y into acc on the lanes of mask.
func (a isa) accFMA(acc, x, y VecVirtual, mask Op) {
	switch {
	case mask == nil:
		VFMADD231PS(y, x, acc)
	case a.is512():
		VFMADD231PS(y, x, mask, acc)
	default:
		VANDPS(mask, x, x)
		VFMADD231PS(y, x, acc)
	}
}

// treeSum combines the accumulators: lane i += lane i+h for h = 16, 8, 4,
// 2, 1. It returns an XMM register holding the result in lane 0.
func (a isa) treeSum(acc []VecVirtual) VecVirtual {
	var y VecVirtual
	if a.is512() {
		VADDPS(acc[1], acc[0], acc[0])
		y = YMM()
		VEXTRACTF64X4(U8(1), acc[0], y)
		VADDPS(acc[0].AsY(), y, y)
	} else {
		VADDPS(acc[2], acc[0], acc[0])
		VADDPS(acc[3], acc[1], acc[1])
		VADDPS(acc[1], acc[0], acc[0])
		y = acc[0]
	}
	x := XMM()
	VEXTRACTF128(U8(1), y, x)
	VADDPS(y.AsX(), x, x)
	t := XMM()
	VMOVHLPS(x, x, t)
	VADDPS(t, x, x)
	VMOVSHDUP(x, t)
	VADDSS(t, x, x)
	return x
}

// treeMax is treeSum with lane i = lane i+h > lane i ? lane i+h : lane i.
func (a isa) treeMax(acc []VecVirtual) VecVirtual {
	var y VecVirtual
	if a.is512() {
		VMAXPS(acc[0], acc[1], acc[0])
		y = YMM()
		VEXTRACTF64X4(U8(1), acc[0], y)
		VMAXPS(acc[0].AsY(), y, y)
	} else {
		VMAXPS(acc[0], acc[2], acc[0])
		VMAXPS(acc[1], acc[3], acc[1])
		VMAXPS(acc[0], acc[1], acc[0])
		y = acc[0]
	}
	x := XMM()
	VEXTRACTF128(U8(1), y, x)
	VMAXPS(y.AsX(), x, x)
	t := XMM()
	VMOVHLPS(x, x, t)
	VMAXPS(x, t, x)
	VMOVSHDUP(x, t)
	VMAXSS(x, t, x)
	return x
}

func ptr(name string) GPVirtual {
	r := GP64()
	Load(Param(name).Base(), r)
	return r
}

func length(name string) GPVirtual {
	r := GP64()
	Load(Param(name).Len(), r)
	return r
}

// ret returns the float32 results held in lane 0 of XMM registers. The
// upper register halves are cleared first, so that the legacy-SSE stores
// of the results (and the caller's SSE code) pay no AVX transition.
func ret(results ...VecVirtual) {
	VZEROUPPER()
	for i, r := range results {
		Store(r, ReturnIndex(i))
	}
	RET()
}

func text(name string, a isa, sig string) {
	TEXT(name+a.name, NOSPLIT, sig)
	Pragma("noescape")
}

func gen(a isa) {
	// Reductions.
	text("dot", a, "func(x, y []float32) float32")
	{
		n, x, y := length("x"), ptr("x"), ptr("y")
		acc := a.accs(Mem{})
		a.reduction(n, []GPVirtual{x, y}, func(ac access, k int) {
			xv, yv := ac.ld(x), ac.ld(y)
			VFMADD231PS(yv, xv, acc[k])
		})
		ret(a.treeSum(acc))
	}

	text("dot3", a, "func(x, y, z []float32) float32")
	{
		n, x, y, z := length("x"), ptr("x"), ptr("y"), ptr("z")
		acc := a.accs(Mem{})
		a.reduction(n, []GPVirtual{x, y, z}, func(ac access, k int) {
			xv, yv, zv := ac.ld(x), ac.ld(y), ac.ld(z)
			VMULPS(yv, xv, xv)
			VFMADD231PS(zv, xv, acc[k])
		})
		ret(a.treeSum(acc))
	}

	text("sum", a, "func(x []float32) float32")
	{
		n, x := length("x"), ptr("x")
		acc := a.accs(Mem{})
		a.reduction(n, []GPVirtual{x}, func(ac access, k int) {
			VADDPS(ac.ld(x), acc[k], acc[k])
		})
		ret(a.treeSum(acc))
	}

	text("max", a, "func(x []float32) float32")
	{
		n, x := length("x"), ptr("x")
		acc := a.accs(cNegInf)
		a.reduction(n, []GPVirtual{x}, func(ac access, k int) {
			v := ac.ld(x)
			switch {
			case ac.mask == nil:
				VMAXPS(acc[k], v, acc[k])
			case a.is512():
				VMAXPS(acc[k], v, ac.mask, acc[k])
			default:
				ni := a.load(cNegInf)
				VBLENDVPS(ac.mask, v, ni, v)
				VMAXPS(acc[k], v, acc[k])
			}
		})
		ret(a.treeMax(acc))
	}

	for _, store := range []bool{true, false} {
		if store {
			text("expSum", a, "func(dst, x []float32, shift float32) float32")
		} else {
			text("expSumNoStore", a, "func(x []float32, shift float32) float32")
		}
		n, x := length("x"), ptr("x")
		var dst GPVirtual
		ptrs := []GPVirtual{x}
		if store {
			dst = ptr("dst")
			ptrs = append(ptrs, dst)
		}
		sh := a.bcast("shift")
		acc := a.accs(Mem{})
		a.reduction(n, ptrs, func(ac access, k int) {
			d := ac.ld(x)
			VSUBPS(sh, d, d)
			e, _ := a.exp(d)
			if store {
				ac.st(e, dst)
			}
			a.accAdd(acc[k], e, ac.mask)
		})
		ret(a.treeSum(acc))
	}

	text("tokStats", a, "func(z []float32, m float32) (s, t float32)")
	{
		n, z := length("z"), ptr("z")
		mv := a.bcast("m")
		sacc, tacc := a.accs(Mem{}), a.accs(Mem{})
		a.reduction(n, []GPVirtual{z}, func(ac access, k int) {
			d := ac.ld(z)
			VSUBPS(mv, d, d)
			e, xc := a.exp(d)
			a.accAdd(sacc[k], e, ac.mask)
			if ac.mask != nil && !a.is512() {
				// accAdd zeroed the masked-out lanes of e already.
				VFMADD231PS(xc, e, tacc[k])
			} else {
				a.accFMA(tacc[k], e, xc, ac.mask)
			}
		})
		ret(a.treeSum(sacc), a.treeSum(tacc))
	}

	text("softmaxTemp", a, "func(dst, z []float32, m, invT float32) (s, s1 float32)")
	{
		n, z, dst := length("z"), ptr("z"), ptr("dst")
		mv, it := a.bcast("m"), a.bcast("invT")
		sacc, s1acc := a.accs(Mem{}), a.accs(Mem{})
		a.reduction(n, []GPVirtual{z, dst}, func(ac access, k int) {
			d := ac.ld(z)
			VSUBPS(mv, d, d)
			dt := a.vec()
			VMULPS(it, d, dt)
			e, _ := a.exp(dt)
			ac.st(e, dst)
			a.accAdd(sacc[k], e, ac.mask)
			e1, _ := a.exp(d)
			a.accAdd(s1acc[k], e1, ac.mask)
		})
		ret(a.treeSum(sacc), a.treeSum(s1acc))
	}

	// Elementwise kernels. n is the length of the first slice; the Go
	// callers check the others.
	text("exp", a, "func(dst, src []float32)")
	{
		n, dst, src := length("dst"), ptr("dst"), ptr("src")
		a.elementwise(n, []GPVirtual{dst, src}, 2, func(ac access) {
			e, _ := a.exp(ac.ld(src))
			ac.st(e, dst)
		})
		ret()
	}

	text("sigmoid", a, "func(dst, src []float32)")
	{
		n, dst, src := length("dst"), ptr("dst"), ptr("src")
		a.elementwise(n, []GPVirtual{dst, src}, 2, func(ac access) {
			x := ac.ld(src)
			VXORPS(cSign, x, x)
			e, _ := a.exp(x)
			VADDPS(cOne, e, e)
			s := a.load(cOne)
			VDIVPS(e, s, s)
			ac.st(s, dst)
		})
		ret()
	}

	text("swiglu", a, "func(out, g, u []float32)")
	{
		n, out, g, u := length("out"), ptr("out"), ptr("g"), ptr("u")
		a.elementwise(n, []GPVirtual{out, g, u}, 2, func(ac access) {
			gv := ac.ld(g)
			x := a.vec()
			VXORPS(cSign, gv, x)
			e, _ := a.exp(x)
			VADDPS(cOne, e, e)
			VDIVPS(e, gv, gv) // g/(1+e^-g)
			VMULPS(ac.ld(u), gv, gv)
			ac.st(gv, out)
		})
		ret()
	}

	text("swigluBack", a, "func(dg, du, dout, g, u []float32)")
	{
		n, dg, du, dout, g, u := length("dg"), ptr("dg"), ptr("du"), ptr("dout"), ptr("g"), ptr("u")
		a.elementwise(n, []GPVirtual{dg, du, dout, g, u}, 1, func(ac access) {
			gv := ac.ld(g)
			x := a.vec()
			VXORPS(cSign, gv, x)
			e, _ := a.exp(x)
			VADDPS(cOne, e, e)
			s := a.load(cOne)
			VDIVPS(e, s, s) // σ = 1/(1+e^-g)
			dov := ac.ld(dout)
			t := a.vec()
			VMULPS(s, gv, t)
			VMULPS(dov, t, t) // du = dout·(g·σ)
			ac.st(t, du)
			VMULPS(ac.ld(u), dov, dov) // dout·u
			b := a.load(cOne)
			VSUBPS(s, b, b)          // 1−σ
			VFMADD213PS(cOne, gv, b) // g·(1−σ)+1
			VMULPS(s, dov, dov)
			VMULPS(b, dov, dov)
			ac.st(dov, dg)
		})
		ret()
	}

	for _, inv := range []bool{false, true} {
		name := "rope"
		if inv {
			name = "ropeInv"
		}
		text(name, a, "func(x, cos, sin []float32, heads int)")
		half, x, cs, sn := length("cos"), ptr("x"), ptr("cos"), ptr("sin")
		h := GP64()
		Load(Param("heads"), h)
		x2 := GP64()
		head := uniq("head")
		Label(head)
		LEAQ(Mem{Base: x, Index: half, Scale: 4}, x2)
		c, s, x1, nn := GP64(), GP64(), GP64(), GP64()
		MOVQ(cs, c)
		MOVQ(sn, s)
		MOVQ(x, x1)
		MOVQ(half, nn)
		a.elementwise(nn, []GPVirtual{x1, x2, c, s}, 1, func(ac access) {
			av, bv := ac.ld(x1), ac.ld(x2)
			cv, sv := ac.ld(c), ac.ld(s)
			t1, t2 := a.vec(), a.vec()
			VMULPS(sv, bv, t1) // x2·s
			VMULPS(sv, av, t2) // x1·s
			if !inv {
				VFMSUB231PS(cv, av, t1) // x1·c − x2·s
				VFMADD231PS(cv, bv, t2) // x2·c + x1·s
			} else {
				VFMADD231PS(cv, av, t1) // x1·c + x2·s
				VFMSUB231PS(cv, bv, t2) // x2·c − x1·s
			}
			ac.st(t1, x1)
			ac.st(t2, x2)
		})
		LEAQ(Mem{Base: x, Index: half, Scale: 8}, x)
		DECQ(h)
		JNZ(LabelRef(head))
		ret()
	}

	// hp = [lr, β1, β2, eps, wd, 1/bc1, 1/bc2, 1−β1, 1−β2].
	text("adamw", a, "func(p, g, m, v []float32, hp *[9]float32)")
	{
		n, p, g, m, v := length("p"), ptr("p"), ptr("g"), ptr("m"), ptr("v")
		hp := GP64()
		Load(Param("hp"), hp)
		hb := func(i int) VecVirtual {
			r := a.vec()
			VBROADCASTSS(Mem{Base: hp, Disp: 4 * i}, r)
			return r
		}
		a.elementwise(n, []GPVirtual{p, g, m, v}, 1, func(ac access) {
			gv, mv, vv, pv := ac.ld(g), ac.ld(m), ac.ld(v), ac.ld(p)
			t := a.vec()
			VMULPS(hb(7), gv, t)
			VFMADD231PS(hb(1), mv, t) // m' = β1·m + (1−β1)·g
			ac.st(t, m)
			u := a.vec()
			VMULPS(hb(8), gv, u)
			VMULPS(gv, u, u)
			VFMADD231PS(hb(2), vv, u) // v' = β2·v + ((1−β2)·g)·g
			ac.st(u, v)
			VMULPS(hb(5), t, t) // m'/bc1
			VMULPS(hb(6), u, u) // v'/bc2
			VSQRTPS(u, u)
			VADDPS(hb(3), u, u)
			VDIVPS(u, t, t)
			VFMADD231PS(hb(4), pv, t)  // + wd·p
			VFNMADD231PS(hb(0), t, pv) // p − lr·(…)
			ac.st(pv, p)
		})
		ret()
	}

	text("axpy", a, "func(alpha float32, x, y []float32)")
	{
		n, x, y := length("x"), ptr("x"), ptr("y")
		al := a.bcast("alpha")
		a.elementwise(n, []GPVirtual{x, y}, 4, func(ac access) {
			yv := ac.ld(y)
			VFMADD231PS(al, ac.ld(x), yv)
			ac.st(yv, y)
		})
		ret()
	}

	text("scale", a, "func(alpha float32, x []float32)")
	{
		n, x := length("x"), ptr("x")
		al := a.bcast("alpha")
		a.elementwise(n, []GPVirtual{x}, 4, func(ac access) {
			xv := ac.ld(x)
			VMULPS(al, xv, xv)
			ac.st(xv, x)
		})
		ret()
	}

	text("add", a, "func(dst, x []float32)")
	{
		n, dst, x := length("dst"), ptr("dst"), ptr("x")
		a.elementwise(n, []GPVirtual{dst, x}, 4, func(ac access) {
			d := ac.ld(dst)
			VADDPS(ac.ld(x), d, d)
			ac.st(d, dst)
		})
		ret()
	}

	text("addScalar", a, "func(dst, x []float32, c float32)")
	{
		n, dst, x := length("dst"), ptr("dst"), ptr("x")
		cv := a.bcast("c")
		a.elementwise(n, []GPVirtual{dst, x}, 4, func(ac access) {
			d := ac.ld(x)
			VADDPS(cv, d, d)
			ac.st(d, dst)
		})
		ret()
	}

	text("rmsScale", a, "func(out, x, w []float32, r float32)")
	{
		n, out, x, w := length("out"), ptr("out"), ptr("x"), ptr("w")
		rv := a.bcast("r")
		a.elementwise(n, []GPVirtual{out, x, w}, 4, func(ac access) {
			xv := ac.ld(x)
			VMULPS(rv, xv, xv)
			VMULPS(ac.ld(w), xv, xv)
			ac.st(xv, out)
		})
		ret()
	}

	text("rmsBack", a, "func(dx, dy, x, w []float32, r, nc float32)")
	{
		n, dx, dy, x, w := length("dx"), ptr("dx"), ptr("dy"), ptr("x"), ptr("w")
		rv, ncv := a.bcast("r"), a.bcast("nc")
		a.elementwise(n, []GPVirtual{dx, dy, x, w}, 2, func(ac access) {
			t := ac.ld(dy)
			VMULPS(ac.ld(w), t, t)
			d := ac.ld(dx)
			VFMADD231PS(rv, t, d)
			VFMADD231PS(ncv, ac.ld(x), d)
			ac.st(d, dx)
		})
		ret()
	}

	text("rmsWGrad", a, "func(dw, dy, x []float32, r float32)")
	{
		n, dw, dy, x := length("dw"), ptr("dw"), ptr("dy"), ptr("x")
		rv := a.bcast("r")
		a.elementwise(n, []GPVirtual{dw, dy, x}, 4, func(ac access) {
			t := ac.ld(dy)
			VMULPS(ac.ld(x), t, t)
			d := ac.ld(dw)
			VFMADD231PS(rv, t, d)
			ac.st(d, dw)
		})
		ret()
	}

	text("softmaxBack", a, "func(p, dp []float32, d, scale float32)")
	{
		n, p, dp := length("p"), ptr("p"), ptr("dp")
		dv, sv := a.bcast("d"), a.bcast("scale")
		a.elementwise(n, []GPVirtual{p, dp}, 4, func(ac access) {
			t := ac.ld(dp)
			VSUBPS(dv, t, t)
			VMULPS(ac.ld(p), t, t)
			VMULPS(sv, t, t)
			ac.st(t, dp)
		})
		ret()
	}

	text("tokBack", a, "func(z []float32, lse, a, b float32)")
	{
		n, z := length("z"), ptr("z")
		lv, av, bv := a.bcast("lse"), a.bcast("a"), a.bcast("b")
		a.elementwise(n, []GPVirtual{z}, 2, func(ac access) {
			d := ac.ld(z)
			VSUBPS(lv, d, d)
			e, lpc := a.exp(d)
			q := a.vec()
			VMOVAPS(bv, q)
			VFMADD231PS(av, lpc, q) // a·lp + b
			VMULPS(q, e, e)
			ac.st(e, z)
		})
		ret()
	}

	// indexEq returns the first index i < len(x) &^ (w−1) with x[i] == v,
	// or −1; the caller scans the rest.
	text("indexEq", a, "func(x []float32, v float32) int")
	{
		n, x := length("x"), ptr("x")
		vv := a.bcast("v")
		i := GP64()
		XORQ(i, i)
		loop, found, none := uniq("loop"), uniq("found"), uniq("none")
		Label(loop)
		t := GP64()
		MOVQ(n, t)
		SUBQ(i, t)
		CMPQ(t, U32(a.w))
		JL(LabelRef(none))
		bits := GP32()
		if a.is512() {
			k := K()
			VCMPPS(U8(0), Mem{Base: x, Index: i, Scale: 4}, vv, k)
			KMOVW(k, bits)
		} else {
			m := YMM()
			VCMPPS(U8(0), Mem{Base: x, Index: i, Scale: 4}, vv, m)
			VMOVMSKPS(m, bits)
		}
		TESTL(bits, bits)
		JNZ(LabelRef(found))
		ADDQ(U32(a.w), i)
		JMP(LabelRef(loop))
		Label(found)
		b := GP64()
		BSFL(bits, b.As32())
		ADDQ(b, i)
		Store(i, ReturnIndex(0))
		ret()
		Label(none)
		MOVQ(I64(-1), i)
		Store(i, ReturnIndex(0))
		ret()
	}
}

func main() {
	ConstraintExpr("amd64")
	constants()
	gen(avx2)
	gen(avx512)
	// One lane of the AVX2 exponential, for Expf.
	x128 := isa{"", 4, 16, XMM}
	TEXT("expf1AVX2", NOSPLIT, "func(x float32) float32")
	x := XMM()
	Load(Param("x"), x)
	e, _ := x128.exp(x)
	Store(e, ReturnIndex(0))
	RET()
	Generate()
}
