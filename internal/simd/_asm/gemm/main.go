// Command gemm generates the GEMM micro-kernels (gemm_amd64.s) and the FMA
// peak loops (peak_amd64.s) of package simd.
//
//	go run ./gemm -kind gemm -out ../gemm_amd64.s
//	go run ./gemm -kind peak -out ../peak_amd64.s
package main

import (
	"flag"
	"fmt"
	"log"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var kind = flag.String("kind", "gemm", "what to generate: gemm or peak")

// prefetchDist is how many k steps ahead the kernels prefetch A (when it
// is read by columns) and B: it matters for operands read in place with
// a large stride, such as both operands of a TN product (measured: 8 to
// 24 steps do equally well, 64 steps or one piece of k ahead worse).
const prefetchDist = 16

// unroll is how many k steps the kernels' loops do per iteration
// (measured: 4 gains 2 to 4 % over 1 with both kernels).
const unroll = 4

// farEvery is how many k steps apart the kernels issue the far prefetch
// (of the next piece of a transposed A, which they pack).
const farEvery = 4

// prefetchDistance sets dst to the prefetch distance for rows stride
// apart.
func prefetchDistance(stride, dst Register) {
	IMUL3Q(U32(prefetchDist), stride, dst)
}

func main() {
	flag.Parse()
	ConstraintExpr("amd64,!purego")
	switch *kind {
	case "gemm":
		gemm()
	case "peak":
		peak()
	default:
		log.Fatalf("unknown -kind %q", *kind)
	}
	Generate()
}

// Flag bits of the kernels' flags argument; gemm_driver.go defines the
// same values.
const (
	flagLoad    = 1 // start from the raw sums in acc instead of zero
	flagPartial = 2 // store the raw sums to acc instead of finishing C
	flagBeta0   = 4 // beta == 0: write C without reading it
	flagRows    = 8 // A element (r, p) at a[r*astride+p], else a[r+p*astride]
	// prefetch the tile's C before the k loop (a last piece only)
	flagPrefetchC = 16
)

// spec is one micro-kernel family: mr rows of nv vectors of vl lanes.
type spec struct {
	name string
	zmm  bool
	mr   int
	nv   int
	vl   int
}

func (s spec) nr() int { return s.nv * s.vl }

func (s spec) vreg(i int) VecPhysical {
	if s.zmm {
		return zregs[i]
	}
	return yregs[i]
}

// acc is the accumulator of row r, vector v.
func (s spec) acc(r, v int) VecPhysical { return s.vreg(r*s.nv + v) }

// bvec is the register that holds vector v of the current row of B.
func (s spec) bvec(v int) VecPhysical { return s.vreg(s.mr*s.nv + v) }

// bcast is the register for the broadcast of row r's element of A.
func (s spec) bcast(r int) VecPhysical {
	first := s.mr*s.nv + s.nv
	n := len(yregs)
	if s.zmm {
		n = 30 // Z30, Z31 hold alpha and beta in the epilogue only
	}
	return s.vreg(first + r%(n-first))
}

var (
	zregs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	yregs = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
)

// Register use inside a panel (the state of the strip and panel loops is
// kept in the frame, so that the k loop has registers to spare).
var (
	aPtr    = RSI // A in the k loop (rows 0-3 in rows mode)
	aPtr1   = R11 // rows 4-7 in rows mode
	aPtr2   = R12 // rows 8-11 in rows mode
	aStr3   = R13 // 3·aStride in rows mode
	aStride = R8  // A stride (bytes)
	bPtr    = RDI // B in the k loop
	bStride = R9  // B row stride (bytes)
	bHalf   = RAX // offset of B's second vector (AVX-512)
	kLeft   = R10 // k steps left
	pfA     = RDX // prefetch distance of A (panel mode)
	pfB     = RBX // prefetch distance of B
	pfB2    = RCX // prefetch distance of B's second vector (AVX-512)
)

const kernelSig = "func(m, n, k int, a *float32, apanel, astride int, b *float32, bs, bhalf, bstrip int, c *float32, ldc int, acc *float32, accstrip, flags int, alpha, beta float32, pa, pf *float32, pfcols, pfrows int)"

func gemm() {
	maskTable = GLOBL("gemmMaskAVX2", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(0xffffffff))
	}
	for i := 16; i < 32; i++ {
		DATA(4*i, U32(0))
	}
	kernel(spec{name: "gemmKernelAVX2", mr: 6, nv: 2, vl: 8})
	kernel(spec{name: "gemmKernelAVX512", zmm: true, mr: 12, nv: 2, vl: 16})
	transpose8()
}

// transpose8 generates the packing of a transposed B: up to 8 rows of B,
// k floats each, become 8 columns of a packed panel (row stride packW).
func transpose8() {
	TEXT("gemmTranspose8AVX", NOSPLIT, "func(dst, src *float32, rows, k, lds int)")
	Doc("gemmTranspose8AVX stores dst[p*16+i] = src[i*lds+p] for p < k, i < 8,",
		"with zeros for i ≥ rows (1 ≤ rows ≤ 8, k ≥ 1).")
	const ld = 4 * 16 // packW floats
	ptr := []Register{RAX, RBX, RCX, RDX, R8, R9, R10, R11}
	dst, off, n, mask := RDI, RSI, R12, R13
	Load(Param("src"), ptr[0])
	Load(Param("lds"), mask)
	SHLQ(U8(2), mask)
	Load(Param("rows"), n)
	// Rows past the last are read again from the last one, then masked.
	for i := 1; i < 8; i++ {
		LEAQ(Mem{Base: ptr[i-1], Index: mask, Scale: 1}, ptr[i])
		CMPQ(n, U32(i))
		CMOVQLE(ptr[i-1], ptr[i])
	}
	MOVQ(U32(16), off)
	SUBQ(n, off)
	LEAQ(maskTable, mask)
	LEAQ(Mem{Base: mask, Index: off, Scale: 4}, mask)
	Load(Param("dst"), dst)
	XORQ(off, off)
	Load(Param("k"), n)
	SHRQ(U8(3), n)
	JZ(LabelRef("transpose8_tail"))

	r := yregs[:8]
	o := yregs[8:]
	load := func(m Op) {
		for i := 0; i < 8; i++ {
			if m == nil {
				VMOVUPS(Mem{Base: ptr[i], Index: off, Scale: 1}, r[i])
			} else {
				VMASKMOVPS(Mem{Base: ptr[i], Index: off, Scale: 1}, m, r[i])
			}
		}
	}
	transpose := func() {
		for i := 0; i < 4; i++ {
			VUNPCKLPS(r[2*i+1], r[2*i], o[2*i])
			VUNPCKHPS(r[2*i+1], r[2*i], o[2*i+1])
		}
		// o: t0..t7; r: s0..s7.
		for _, h := range []int{0, 4} {
			VSHUFPS(U8(0x44), o[h+2], o[h], r[h])
			VSHUFPS(U8(0xee), o[h+2], o[h], r[h+1])
			VSHUFPS(U8(0x44), o[h+3], o[h+1], r[h+2])
			VSHUFPS(U8(0xee), o[h+3], o[h+1], r[h+3])
		}
		for i := 0; i < 4; i++ {
			VPERM2F128(U8(0x20), r[i+4], r[i], o[i])
			VPERM2F128(U8(0x31), r[i+4], r[i], o[i+4])
		}
		for i := 0; i < 8; i++ {
			VANDPS(Mem{Base: mask}, o[i], o[i])
		}
	}
	Label("transpose8_loop")
	load(nil)
	transpose()
	for i := 0; i < 8; i++ {
		VMOVUPS(o[i], Mem{Base: dst, Disp: i * ld})
	}
	ADDQ(U32(32), off)
	ADDQ(U32(8*ld), dst)
	DECQ(n)
	JNZ(LabelRef("transpose8_loop"))

	// The last k%8 columns of the rows, with masked loads.
	Label("transpose8_tail")
	Load(Param("k"), n)
	ANDQ(U32(7), n)
	JZ(LabelRef("transpose8_done"))
	// Mask of the first k%8 lanes: at mask + 4·(rows - k%8).
	spill := AllocLocal(8)
	MOVQ(dst, spill)
	Load(Param("rows"), dst)
	SUBQ(n, dst)
	VMOVUPS(Mem{Base: mask, Index: dst, Scale: 4}, Y15)
	MOVQ(spill, dst)
	load(Y15)
	transpose()
	for i := 0; i < 8; i++ {
		if i > 0 {
			CMPQ(n, U32(i))
			JLE(LabelRef("transpose8_done"))
		}
		VMOVUPS(o[i], Mem{Base: dst, Disp: i * ld})
	}
	Label("transpose8_done")
	VZEROUPPER()
	RET()
}

// maskTable holds 16 all-ones words followed by 16 zero words: the mask of
// the first n lanes starts at word 16-n.
var maskTable Mem

// paramAddr is the frame address of a scalar parameter.
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		log.Fatal(err)
	}
	return b.Addr
}

// frame holds the loop state of a kernel call.
type frame struct {
	a, c, acc, m   Mem // current panel of rows, rows left
	b, cs, accs, n Mem // current strip, columns left
	nr             Mem // columns of the current strip
	// A of the strip: its start, panel and row strides (bytes).
	abase, apan, astr Mem
	// Packing (the first strip, while pk is not 0): the packed panel
	// being written.
	pk, pkp Mem
	// The far prefetch (pfon: pf was given): rows of pflb bytes, pflda
	// apart, from pfr up to pfend; the next line at pfr + pfc; zero
	// holds 0.
	pfon, pfr, pfc, pfend, pflb, pflda, zero Mem
}

// wideRows is the most rows for which the kernel sweeps two strips at
// once, keeping twice the accumulators of a row (so that a call with few
// rows is not bound by the FMA latency).
func (s spec) wideRows() int {
	if s.zmm {
		return 6
	}
	return 2
}

func kernel(s spec) {
	TEXT(s.name, NOSPLIT, kernelSig)
	Doc(fmt.Sprintf("%s computes C rows [0,m) × columns [0,n) in strips of %d columns", s.name, s.nr()),
		fmt.Sprintf("and panels of %d rows; see gemm_amd64.go.", s.mr))
	f := frame{
		a: AllocLocal(8), c: AllocLocal(8), acc: AllocLocal(8), m: AllocLocal(8),
		b: AllocLocal(8), cs: AllocLocal(8), accs: AllocLocal(8), n: AllocLocal(8),
		nr: AllocLocal(8), abase: AllocLocal(8), apan: AllocLocal(8), astr: AllocLocal(8),
		pk: AllocLocal(8), pkp: AllocLocal(8),
		pfr: AllocLocal(8), pfc: AllocLocal(8), pfend: AllocLocal(8), pflb: AllocLocal(8),
		pflda: AllocLocal(8), zero: AllocLocal(8), pfon: AllocLocal(8),
	}
	name := func(what string) string { return s.name + "_" + what }
	for _, x := range []struct {
		param string
		to    Mem
	}{{"b", f.b}, {"c", f.cs}, {"acc", f.accs}, {"n", f.n}} {
		Load(Param(x.param), R11)
		MOVQ(R11, x.to)
	}
	for _, x := range []struct {
		param string
		to    Mem
	}{{"a", f.abase}, {"apanel", f.apan}, {"astride", f.astr}, {"pa", f.pk}} {
		Load(Param(x.param), R11)
		if x.param == "apanel" || x.param == "astride" {
			SHLQ(U8(2), R11)
		}
		MOVQ(R11, x.to)
	}
	// The far prefetch: the lines of pfrows rows of pfcols floats from pf,
	// astride apart. Without one, a first strip that packs A prefetches
	// the first line of A over and over.
	MOVQ(U32(0), f.zero)
	MOVQ(U32(0), f.pfc)
	Load(Param("pf"), R11)
	MOVQ(R11, f.pfon)
	Load(Param("pfrows"), R13)
	TESTQ(R11, R11)
	JNZ(LabelRef(name("pf")))
	Load(Param("a"), R11)
	XORQ(R13, R13)
	Label(name("pf"))
	MOVQ(R13, f.pfend)
	MOVQ(R11, R12)
	ANDQ(U32(63), R12)
	ANDQ(I32(-64), R11)
	MOVQ(R11, f.pfr)
	Load(Param("pfcols"), R13)
	LEAQ(Mem{Base: R12, Index: R13, Scale: 4, Disp: 63}, R12)
	ANDQ(I32(-64), R12)
	MOVQ(R12, f.pflb)
	MOVQ(f.astr, R12)
	MOVQ(R12, f.pflda)
	MOVQ(f.pfend, R13)
	IMULQ(R12, R13)
	ADDQ(R11, R13)
	MOVQ(R13, f.pfend)
	// setMasks sets the column masks of a strip from the columns in RCX.
	setMasks := func(k1, k2 Op) {
		MOVQ(U32(1), R11)
		SHLQ(CL, R11)
		DECQ(R11)
		KMOVW(R11.As32(), k1)
		SHRQ(U8(16), R11)
		KMOVW(R11.As32(), k2)
	}

	Label(name("strip"))
	// Columns of this strip: min(nr, n left).
	MOVQ(f.n, RCX)
	MOVQ(U32(s.nr()), R11)
	CMPQ(RCX, R11)
	CMOVQGT(R11, RCX)
	MOVQ(RCX, f.nr)
	if s.zmm {
		// K1, K2: the strip's columns, for B's loads and C's stores.
		setMasks(K1, K2)
	}
	MOVQ(f.abase, R11)
	MOVQ(R11, f.a)
	MOVQ(f.pk, R11)
	MOVQ(R11, f.pkp)
	MOVQ(f.cs, R11)
	MOVQ(R11, f.c)
	MOVQ(f.accs, R11)
	MOVQ(R11, f.acc)
	Load(Param("m"), R11)
	MOVQ(R11, f.m)

	// Few rows and a next strip (a whole one for AVX2): two strips at once.
	CMPQ(R11, U32(s.wideRows()))
	JA(LabelRef(name("panel")))
	MOVQ(f.n, RCX)
	SUBQ(U32(s.nr()), RCX)
	if s.zmm {
		JLE(LabelRef(name("panel")))
		MOVQ(U32(s.nr()), R12)
		CMPQ(RCX, R12)
		CMOVQGT(R12, RCX)
		setMasks(K3, K4)
	} else {
		CMPQ(RCX, U32(s.nr()))
		JL(LabelRef(name("panel")))
	}
	MOVQ(f.m, R11)
	for mr := 1; mr <= s.wideRows(); mr++ {
		CMPQ(R11, U32(mr))
		JE(LabelRef(fmt.Sprintf("%s_w%d", s.name, mr)))
	}

	Label(name("panel"))
	CMPQ(f.m, U32(s.mr))
	JB(LabelRef(name("edge")))
	body(s, f, s.mr, false)
	// Next panel of rows.
	MOVQ(f.apan, R11)
	ADDQ(R11, f.a)
	Load(Param("k"), R11)
	IMUL3Q(U32(4*s.mr), R11, R11)
	ADDQ(R11, f.pkp)
	Load(Param("ldc"), R11)
	IMUL3Q(U32(4*s.mr), R11, R11)
	ADDQ(R11, f.c)
	ADDQ(U32(4*s.mr*s.nr()), f.acc)
	SUBQ(U32(s.mr), f.m)
	JNZ(LabelRef(name("panel")))
	JMP(LabelRef(name("next")))

	Label(name("edge"))
	MOVQ(f.m, R11)
	for mr := 1; mr < s.mr; mr++ {
		CMPQ(R11, U32(mr))
		JE(LabelRef(fmt.Sprintf("%s_m%d", s.name, mr)))
	}
	JMP(LabelRef(name("next")))
	for mr := 1; mr < s.mr; mr++ {
		Label(fmt.Sprintf("%s_m%d", s.name, mr))
		body(s, f, mr, false)
		JMP(LabelRef(name("next")))
	}
	for mr := 1; mr <= s.wideRows(); mr++ {
		Label(fmt.Sprintf("%s_w%d", s.name, mr))
		body(s, f, mr, true)
		JMP(LabelRef(name("next2")))
	}

	// Next strip (next2: the strip after next).
	Label(name("next2"))
	advanceStrip(s, f)
	Label(name("next"))
	advanceStrip(s, f)
	JG(LabelRef(name("strip")))
	VZEROUPPER()
	RET()
}

// advanceStrip moves the strip state of f to the next strip and leaves
// the flags of the columns left.
func advanceStrip(s spec, f frame) {
	Load(Param("bstrip"), R11)
	SHLQ(U8(2), R11)
	ADDQ(R11, f.b)
	ADDQ(U32(4*s.nr()), f.cs)
	Load(Param("accstrip"), R11)
	SHLQ(U8(2), R11)
	ADDQ(R11, f.accs)
	// After a first strip that packed A, the others read the packed
	// panels: mr·k floats apart, mr floats a row.
	MOVQ(f.pk, R11)
	TESTQ(R11, R11)
	JZ(LabelRef(fmt.Sprintf("%s_adv%d", s.name, advanceLabels)))
	MOVQ(R11, f.abase)
	Load(Param("k"), R11)
	IMUL3Q(U32(4*s.mr), R11, R11)
	MOVQ(R11, f.apan)
	MOVQ(U32(4*s.mr), f.astr)
	MOVQ(U32(0), f.pk)
	Label(fmt.Sprintf("%s_adv%d", s.name, advanceLabels))
	advanceLabels++
	SUBQ(U32(s.nr()), f.n)
}

// advanceLabels numbers the labels of advanceStrip.
var advanceLabels int

// Registers of the wide bodies.
var (
	bStr = R12 // offset of the next strip of B
	bSH  = RDX // bStr + bHalf (AVX-512)
	pkP  = R11 // packed panel being written (panel bodies)
	pfR  = R12 // far prefetch: row (panel bodies)
	pfC  = R13 // its line offset in the row
	pfT  = RDX // scratch
)

// farPrefetch prefetches the next line of the far prefetch into L2 and
// moves to the one after: the next in the row, else the first of the
// next row, unless the rows are done (then the last row's lines repeat).
func farPrefetch(f frame) {
	PREFETCHT1(Mem{Base: pfR, Index: pfC, Scale: 1})
	ADDQ(U32(64), pfC)
	XORL(pfT.As32(), pfT.As32())
	CMPQ(pfC, f.pflb)
	CMOVQCC(f.zero, pfC)
	CMOVQCC(f.pflda, pfT)
	CMPQ(pfR, f.pfend)
	CMOVQCC(f.zero, pfT)
	ADDQ(pfT, pfR)
}

// copyA copies the mr floats at src to dst, through Z30 (AVX-512, with
// the mask K5 of mr lanes) or the first broadcast register (AVX2, which
// the step loads next).
func copyA(s spec, mr int, src, dst Register) {
	if s.zmm {
		VMOVUPS_Z(Mem{Base: src}, K5, Z30)
		VMOVUPS(Z30, K5, Mem{Base: dst})
		return
	}
	t := s.bcast(0)
	for off := 0; off < mr; {
		switch {
		case mr-off >= 4:
			VMOVUPS(Mem{Base: src, Disp: 4 * off}, t.(Vec).AsX())
			VMOVUPS(t.(Vec).AsX(), Mem{Base: dst, Disp: 4 * off})
			off += 4
		case mr-off >= 2:
			VMOVSD(Mem{Base: src, Disp: 4 * off}, t.(Vec).AsX())
			VMOVSD(t.(Vec).AsX(), Mem{Base: dst, Disp: 4 * off})
			off += 2
		default:
			VMOVSS(Mem{Base: src, Disp: 4 * off}, t.(Vec).AsX())
			VMOVSS(t.(Vec).AsX(), Mem{Base: dst, Disp: 4 * off})
			off++
		}
	}
}

// panelShape describes the vectors of a body: nv per row, two per strip.
type panelShape struct {
	s    spec
	wide bool
	nv   int
}

func (p panelShape) acc(r, v int) VecPhysical {
	if p.wide {
		return p.s.vreg(r*4 + v)
	}
	return p.s.acc(r, v)
}

func (p panelShape) bvec(v int) VecPhysical {
	if p.wide {
		return p.s.vreg(p.s.wideRows()*4 + v)
	}
	return p.s.bvec(v)
}

func (p panelShape) bcast(r int) VecPhysical {
	if p.wide {
		return p.s.vreg(p.s.wideRows()*4 + 4 + r%2)
	}
	return p.s.bcast(r)
}

// bmem is vector v of the current row of B.
func (p panelShape) bmem(v int) Mem {
	switch {
	case !p.s.zmm && v < 2:
		return Mem{Base: bPtr, Disp: 32 * v}
	case !p.s.zmm:
		return Mem{Base: bPtr, Index: bStr, Scale: 1, Disp: 32 * (v - 2)}
	case v == 0:
		return Mem{Base: bPtr}
	case v == 1:
		return Mem{Base: bPtr, Index: bHalf, Scale: 1}
	case v == 2:
		return Mem{Base: bPtr, Index: bStr, Scale: 1}
	}
	return Mem{Base: bPtr, Index: bSH, Scale: 1}
}

func (p panelShape) mask(v int) Op { return []Op{K1, K2, K3, K4}[v] }

// body computes one panel of mr rows of the current strip, or of the
// current and the next strip when wide.
func body(s spec, f frame, mr int, wide bool) {
	p := panelShape{s: s, wide: wide, nv: 2}
	suffix := ""
	if wide {
		p.nv, suffix = 4, "w"
	}
	l := func(what string) string { return fmt.Sprintf("%s_%s%d%s", s.name, what, mr, suffix) }
	vbytes := 4 * s.vl
	accRow := 4 * s.nr()
	accPtr, accPtr2 := RDX, RBX
	accMem := func(r, v int) Mem {
		if v < 2 {
			return Mem{Base: accPtr, Disp: r*accRow + v*vbytes}
		}
		return Mem{Base: accPtr2, Disp: r*accRow + (v-2)*vbytes}
	}
	setAcc := func() {
		MOVQ(f.acc, accPtr)
		if wide {
			Load(Param("accstrip"), accPtr2)
			LEAQ(Mem{Base: accPtr, Index: accPtr2, Scale: 4}, accPtr2)
		}
	}

	// Initial sums: zero or the raw sums of the previous piece of k.
	Load(Param("flags"), R11)
	TESTQ(U32(flagLoad), R11)
	JZ(LabelRef(l("zero")))
	setAcc()
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			VMOVUPS(accMem(r, v), p.acc(r, v))
		}
	}
	JMP(LabelRef(l("init")))
	Label(l("zero"))
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			a := p.acc(r, v)
			VXORPS(a, a, a)
		}
	}
	Label(l("init"))
	// With flagPrefetchC (the last piece of a short k, into a C larger
	// than L2), prefetch the tile's lines of C before the k loop, so that
	// their misses overlap it instead of stalling the stores after it. A
	// row of the tile spans p.nv vectors, and one more line if it is not
	// aligned: its last float is prefetched too.
	TESTQ(U32(flagPrefetchC), R11)
	JZ(LabelRef(l("nopfc")))
	MOVQ(f.c, aPtr)
	Load(Param("ldc"), aStride)
	SHLQ(U8(2), aStride)
	for r := 0; r < mr; r++ {
		for off := 0; off < p.nv*vbytes; off += 64 {
			PREFETCHT0(Mem{Base: aPtr, Disp: off})
		}
		PREFETCHT0(Mem{Base: aPtr, Disp: p.nv*vbytes - 4})
		if r < mr-1 {
			ADDQ(aStride, aPtr)
		}
	}
	Label(l("nopfc"))

	Load(Param("k"), kLeft)
	MOVQ(f.b, bPtr)
	Load(Param("bs"), bStride)
	SHLQ(U8(2), bStride)
	MOVQ(f.astr, aStride)
	MOVQ(f.a, aPtr)
	prefetchDistance(bStride, pfB)
	if s.zmm {
		Load(Param("bhalf"), bHalf)
		SHLQ(U8(2), bHalf)
	}
	if wide {
		Load(Param("bstrip"), bStr)
		SHLQ(U8(2), bStr)
		LEAQ(Mem{Base: pfB, Index: bStr, Scale: 1}, pfB2)
		if s.zmm {
			LEAQ(Mem{Base: bStr, Index: bHalf, Scale: 1}, bSH)
		}
	} else if s.zmm {
		LEAQ(Mem{Base: pfB, Index: bHalf, Scale: 1}, pfB2)
	}
	prefetch := func() {
		PREFETCHT0(Mem{Base: bPtr, Index: pfB, Scale: 1})
		if s.zmm || wide {
			PREFETCHT0(Mem{Base: bPtr, Index: pfB2, Scale: 1})
		}
	}
	// The k loops, in two versions with AVX-512: a strip narrower than nr
	// (the second one of a wide body) loads B through the column masks,
	// so that it reads no column past n; the loads of a whole strip are
	// not masked (a masked load costs an extra uop).
	loops := func(masked bool) {
		lv := func(what string) string {
			if what == "epi" {
				return l(what)
			}
			if masked {
				what += "m"
			}
			return l(what)
		}
		loadB := func() {
			for v := 0; v < p.nv; v++ {
				if masked {
					VMOVUPS_Z(p.bmem(v), p.mask(v), p.bvec(v))
				} else {
					VMOVUPS(p.bmem(v), p.bvec(v))
				}
			}
		}
		TESTQ(U32(flagRows), R11)
		JNZ(LabelRef(lv("rows")))

		// The k loops run unrolled by unroll steps, then one step at a time.
		loopTo := func(name, to string, step func(u int), advance func(n int)) {
			Label(lv(name + "_u"))
			CMPQ(kLeft, U32(unroll))
			JB(LabelRef(lv(name + "_t")))
			for u := 0; u < unroll; u++ {
				step(u)
			}
			advance(unroll)
			SUBQ(U32(unroll), kLeft)
			JMP(LabelRef(lv(name + "_u")))
			Label(lv(name + "_t"))
			TESTQ(kLeft, kLeft)
			JZ(LabelRef(lv(to)))
			Label(lv(name + "_1"))
			step(0)
			advance(1)
			DECQ(kLeft)
			JNZ(LabelRef(lv(name + "_1")))
			JMP(LabelRef(lv(to)))
		}
		loop := func(name string, step func(u int), advance func(n int)) { loopTo(name, "epi", step, advance) }

		// A panel mode: row r of step p at aPtr + 4r, aPtr advancing by aStride.
		step := func() {
			prefetch()
			loadB()
			for r := 0; r < mr; r++ {
				VBROADCASTSS(Mem{Base: aPtr, Disp: 4 * r}, p.bcast(r))
				for v := 0; v < p.nv; v++ {
					VFMADD231PS(p.bvec(v), p.bcast(r), p.acc(r, v))
				}
			}
			ADDQ(aStride, aPtr)
			ADDQ(bStride, bPtr)
		}
		if !wide {
			// The first strip of a call that packs A (pk not 0) copies, at
			// each step, the mr floats of A to the packed panel at pkP;
			// it and the other strips, with a far prefetch, prefetch a
			// line every farEvery steps.
			far := func(u int) {
				if u%farEvery == farEvery-1 {
					farPrefetch(f)
				}
			}
			MOVQ(f.pfr, pfR)
			MOVQ(f.pfc, pfC)
			MOVQ(f.pk, pkP)
			TESTQ(pkP, pkP)
			JNZ(LabelRef(lv("pack")))
			CMPQ(f.pfon, U32(0))
			JNE(LabelRef(lv("far")))
			JMP(LabelRef(lv("nopf")))
			Label(lv("pack"))
			MOVQ(f.pkp, pkP)
			if s.zmm {
				MOVQ(U32(1<<mr-1), pfT)
				KMOVW(pfT.As32(), K5)
			}
			loopTo("kpack", "pfdone", func(u int) {
				far(u)
				copyA(s, mr, aPtr, pkP)
				ADDQ(U32(4*s.mr), pkP)
				step()
			}, func(int) {})
			Label(lv("far"))
			loopTo("kfar", "pfdone", func(u int) {
				far(u)
				step()
			}, func(int) {})
			Label(lv("pfdone"))
			MOVQ(pfR, f.pfr)
			MOVQ(pfC, f.pfc)
			JMP(LabelRef(l("epi")))
			Label(lv("nopf"))
			prefetchDistance(aStride, pfA)
		}
		loop("kpanel", func(int) {
			if !wide {
				PREFETCHT0(Mem{Base: aPtr, Index: pfA, Scale: 1})
			}
			step()
		}, func(int) {})

		// A rows mode: row r of step p at row r's pointer + 4p.
		Label(lv("rows"))
		if mr > 4 {
			LEAQ(Mem{Base: aPtr, Index: aStride, Scale: 4}, aPtr1)
		}
		if mr > 8 {
			LEAQ(Mem{Base: aPtr1, Index: aStride, Scale: 4}, aPtr2)
		}
		if mr >= 4 {
			LEAQ(Mem{Base: aStride, Index: aStride, Scale: 2}, aStr3)
		}
		rowMem := func(r, disp int) Mem {
			base := []Register{aPtr, aPtr1, aPtr2}[r/4]
			switch r % 4 {
			case 1:
				return Mem{Base: base, Index: aStride, Scale: 1, Disp: disp}
			case 2:
				return Mem{Base: base, Index: aStride, Scale: 2, Disp: disp}
			case 3:
				return Mem{Base: base, Index: aStr3, Scale: 1, Disp: disp}
			}
			return Mem{Base: base, Disp: disp}
		}
		loop("krows", func(u int) {
			prefetch()
			loadB()
			for r := 0; r < mr; r++ {
				VBROADCASTSS(rowMem(r, 4*u), p.bcast(r))
				for v := 0; v < p.nv; v++ {
					VFMADD231PS(p.bvec(v), p.bcast(r), p.acc(r, v))
				}
			}
			ADDQ(bStride, bPtr)
		}, func(n int) {
			ADDQ(U32(4*n), aPtr)
			if mr > 4 {
				ADDQ(U32(4*n), aPtr1)
			}
			if mr > 8 {
				ADDQ(U32(4*n), aPtr2)
			}
		})

		JMP(LabelRef(l("epi")))
	}
	if s.zmm {
		if wide {
			CMPQ(f.n, U32(2*s.nr()))
			JL(LabelRef(l("masked")))
		} else {
			CMPQ(f.nr, U32(s.nr()))
			JNE(LabelRef(l("masked")))
		}
		loops(false)
		Label(l("masked"))
		loops(true)
	} else {
		loops(false)
	}

	Label(l("epi"))
	Load(Param("flags"), R11)
	TESTQ(U32(flagPartial), R11)
	JZ(LabelRef(l("final")))
	setAcc()
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			VMOVUPS(p.acc(r, v), accMem(r, v))
		}
	}
	JMP(LabelRef(l("done")))

	// C = alpha·acc (beta == 0) or fma(alpha, acc, beta·C). The strips of
	// a wide body are adjacent in C.
	Label(l("final"))
	cPtr, ldc := aPtr, aStride
	MOVQ(f.c, cPtr)
	Load(Param("ldc"), ldc)
	SHLQ(U8(2), ldc)
	nextRow := func(r int) {
		if r < mr-1 {
			ADDQ(ldc, cPtr)
		}
	}
	if s.zmm {
		alpha, beta, t := Z30, Z31, Z24
		VBROADCASTSS(paramAddr("alpha"), alpha)
		VBROADCASTSS(paramAddr("beta"), beta)
		TESTQ(U32(flagBeta0), R11)
		JZ(LabelRef(l("beta")))
		for r := 0; r < mr; r++ {
			for v := 0; v < p.nv; v++ {
				VMULPS(alpha, p.acc(r, v), p.acc(r, v))
				VMOVUPS(p.acc(r, v), p.mask(v), Mem{Base: cPtr, Disp: v * vbytes})
			}
			nextRow(r)
		}
		JMP(LabelRef(l("done")))
		Label(l("beta"))
		for r := 0; r < mr; r++ {
			for v := 0; v < p.nv; v++ {
				VMOVUPS_Z(Mem{Base: cPtr, Disp: v * vbytes}, p.mask(v), t)
				VMULPS(beta, t, t)
				VFMADD231PS(alpha, p.acc(r, v), t)
				VMOVUPS(t, p.mask(v), Mem{Base: cPtr, Disp: v * vbytes})
			}
			nextRow(r)
		}
		Label(l("done"))
		return
	}

	alpha, beta, t, mk := Y12, Y13, Y14, Y15
	nr, tbl := aPtr2, aStr3
	VBROADCASTSS(paramAddr("alpha"), alpha)
	VBROADCASTSS(paramAddr("beta"), beta)
	if !wide {
		MOVQ(f.nr, nr)
		CMPQ(nr, U32(s.nr()))
		JNE(LabelRef(l("masked")))
	}
	TESTQ(U32(flagBeta0), R11)
	JZ(LabelRef(l("beta")))
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			VMULPS(alpha, p.acc(r, v), p.acc(r, v))
			VMOVUPS(p.acc(r, v), Mem{Base: cPtr, Disp: v * vbytes})
		}
		nextRow(r)
	}
	JMP(LabelRef(l("done")))
	Label(l("beta"))
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			VMULPS(Mem{Base: cPtr, Disp: v * vbytes}, beta, t)
			VFMADD231PS(alpha, p.acc(r, v), t)
			VMOVUPS(t, Mem{Base: cPtr, Disp: v * vbytes})
		}
		nextRow(r)
	}
	if wide {
		Label(l("done"))
		return
	}
	JMP(LabelRef(l("done")))

	// Fewer than nr columns: VMASKMOVPS with masks from maskTable.
	Label(l("masked"))
	NEGQ(nr)
	ADDQ(U32(s.nr()), nr)
	LEAQ(maskTable, tbl)
	maskAt := func(v int) Mem { return Mem{Base: tbl, Index: nr, Scale: 4, Disp: v * vbytes} }
	TESTQ(U32(flagBeta0), R11)
	JZ(LabelRef(l("mbeta")))
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			VMOVUPS(maskAt(v), mk)
			VMULPS(alpha, p.acc(r, v), p.acc(r, v))
			VMASKMOVPS(p.acc(r, v), mk, Mem{Base: cPtr, Disp: v * vbytes})
		}
		nextRow(r)
	}
	JMP(LabelRef(l("done")))
	Label(l("mbeta"))
	for r := 0; r < mr; r++ {
		for v := 0; v < p.nv; v++ {
			VMOVUPS(maskAt(v), mk)
			VMASKMOVPS(Mem{Base: cPtr, Disp: v * vbytes}, mk, t)
			VMULPS(beta, t, t)
			VFMADD231PS(alpha, p.acc(r, v), t)
			VMASKMOVPS(t, mk, Mem{Base: cPtr, Disp: v * vbytes})
		}
		nextRow(r)
	}
	Label(l("done"))
}

// peak generates the FMA throughput loops: n iterations of independent
// multiply-add chains, enough of them to cover the FMA latency on every
// port.
func peak() {
	peakLoop("peakFMA512", zregs[:24], Z30, Z31)
	peakLoop("peakFMA256", yregs[:12], Y14, Y15)
	mixLoop("peakMix512", spec{zmm: true, mr: 12, nv: 2, vl: 16})
	mixLoop("peakMix256", spec{mr: 6, nv: 2, vl: 8})
}

// mixSteps is the number of k steps of a mixLoop iteration.
const mixSteps = 64

// mixLoop generates the micro-kernel's instruction mix alone: n
// iterations of mixSteps k steps of an mr×nr tile (nv vector loads of B,
// mr broadcasts of A, mr·nv FMAs a step, unrolled like the kernels), on a
// packed A panel (mr floats a step) and B (nr floats a step) that stay in
// L1. It is the rate a kernel that feeds its FMAs from memory can reach
// on this CPU, without packing, edges, prefetching or the epilogue.
func mixLoop(name string, s spec) {
	TEXT(name, NOSPLIT, "func(n int, a, b *float32)")
	Doc(fmt.Sprintf("%s runs n iterations of %d k steps of the %d×%d micro-kernel's loads and FMAs on L1-resident operands.", name, mixSteps, s.mr, s.nr()))
	Load(Param("n"), RCX)
	for r := 0; r < s.mr; r++ {
		for v := 0; v < s.nv; v++ {
			a := s.acc(r, v)
			VXORPS(a, a, a)
		}
	}
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	Label(name + "_outer")
	Load(Param("a"), RSI)
	Load(Param("b"), RDI)
	MOVQ(U32(mixSteps/unroll), RDX)
	Label(name + "_loop")
	vbytes := 4 * s.vl
	for u := 0; u < unroll; u++ {
		for v := 0; v < s.nv; v++ {
			VMOVUPS(Mem{Base: RDI, Disp: u*4*s.nr() + v*vbytes}, s.bvec(v))
		}
		for r := 0; r < s.mr; r++ {
			VBROADCASTSS(Mem{Base: RSI, Disp: 4 * (u*s.mr + r)}, s.bcast(r))
			for v := 0; v < s.nv; v++ {
				VFMADD231PS(s.bvec(v), s.bcast(r), s.acc(r, v))
			}
		}
	}
	ADDQ(U32(4*unroll*s.mr), RSI)
	ADDQ(U32(4*unroll*s.nr()), RDI)
	DECQ(RDX)
	JNZ(LabelRef(name + "_loop"))
	DECQ(RCX)
	JNZ(LabelRef(name + "_outer"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

func peakLoop(name string, accs []VecPhysical, x, y VecPhysical) {
	TEXT(name, NOSPLIT, "func(n int)")
	Doc(fmt.Sprintf("%s runs n iterations of %d independent vector FMA chains.", name, len(accs)))
	Load(Param("n"), RCX)
	for _, r := range append([]VecPhysical{x, y}, accs...) {
		VXORPS(r, r, r)
	}
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	Label(name + "_loop")
	for _, r := range accs {
		VFMADD231PS(x, y, r)
	}
	DECQ(RCX)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
