package simd

import (
	"runtime"
	"sync"
)

// The GEMM driver follows BLIS: C is cut into blocks of at most mc rows
// and nc columns (the unit of work of a goroutine), and k into pieces of
// at most kc steps. For each block and piece, one kernel call sweeps the
// block strip by strip (nr columns of B, which stay in L1) and, within a
// strip, panel by panel (mr rows of A, read from the block's rows, which
// stay in L2), keeping an mr×nr tile of C in registers.
//
// A is read in place: its row-major form (NN, NT) by rows, its transposed
// form (TN, TT) by columns, which is already the layout of a packed A
// panel, but one that takes a step to another row, and page, of A: the
// kernels that can copy the panels of a transposed A they read in their
// first strip to a buffer, for the others, and the products are then cut
// differently (see planRegions). B is read in place when it is not transposed (a last strip
// narrower than nr is read through masks, or copied into a zero-padded
// buffer by the kernels without masked loads); a transposed B is packed
// whole, first, into panels of packW columns (the layout PackedB keeps).
// Rows past m are never read or computed: the kernels have a variant for
// each smaller number of rows. Columns past n are computed in padding
// lanes and never stored; a lane's value does not depend on other lanes.
//
// When k is cut, the raw sums s of a block are kept in a scratch buffer
// between pieces and the next piece continues from them, so the
// arithmetic of every element is the same whatever kc: a plain sequence of
// FMAs over k. Only the last piece applies alpha and beta. mc, nc and kc
// (and the split of C among goroutines) thus only affect speed.

// packW is the column width of the panels of a packed B.
const packW = 16

// Flag bits of a kernel call (the same values as in the generator).
const (
	flagLoad    = 1 // start from the raw sums in acc instead of zero
	flagPartial = 2 // store the raw sums to acc instead of finishing C
	flagBeta0   = 4 // beta == 0: write C without reading it
	flagRows    = 8 // A element (r, p) at a[r*astride+p], else a[r+p*astride]
	// prefetch the tile's C before the k loop (a last piece only)
	flagPrefetchC = 16
)

// A tile whose k loop is short stores its C soon after loading it, and
// when C is larger than L2 those stores miss: measured on Zen 4, AVX-512,
// one core, medians of 9 rounds, an NT product 2048×704×128 ran at 73–77%
// of the FMA peak with C beyond L2 and at 93–99% with C in L2 (m = 96).
// Prefetching the tile's lines of C before its k loop brought the first to
// 77–90%. With a longer k or a C that fits L2 the prefetch only displaces
// operands: NN products with k = 384–704 and C = 1 MiB lost 3–10 points.
// So the kernels prefetch C for products with k ≤ prefetchCMaxK into a C
// of more than prefetchCMinBytes.
const (
	prefetchCMaxK     = 256
	prefetchCMinBytes = 1 << 20
)

// kernelCall is one call of a kernel: it computes C[r][j] for r in [0,m)
// and j in [0,n) at c[coff+r*ldc+j], over k steps, in strips of the
// kernel's nr columns and panels of its mr rows.
type kernelCall struct {
	m, n, k int
	// A element (r, p) is at a[aoff + (r%mr) + p*astride + (r/mr)*apanel],
	// or, with flagRows, at a[aoff + (r%mr)*astride + p + (r/mr)*apanel].
	a                     []float32
	aoff, apanel, astride int
	// B element (p, j) is at b[boff + p*bs + j] when panel is 0, and at
	// b[boff + (j/packW)*panel + p*packW + j%packW] (bs = packW) in a
	// packed B.
	b               []float32
	boff, bs, panel int
	c               []float32
	coff, ldc       int
	acc             []float32 // raw sums, see gemmKernel.accSize
	flags           int
	alpha, beta     float32
	// With pa (a kernel with packsA, A by columns, more than wide rows
	// and one strip), the first strip copies its panels of A to pa,
	// mr·k floats apart, mr floats a step, and the others read them
	// there. pf ≥ 0: the kernel prefetches, into L2, pfrows rows of
	// pfcols floats at a[pf:], astride apart (the A of the next call).
	pa             []float32
	pf             int
	pfcols, pfrows int
}

// gemmKernel is a micro-kernel and the blocking that suits it.
type gemmKernel struct {
	mr, nr int // register tile
	kc     int // longest piece of k
	mc     int // rows of a block of C (a multiple of mr)
	nc     int // columns of a block of C (a multiple of nr and packW)
	// packsA: the kernel packs an A read by columns and prefetches the
	// next one (kernelCall.pa), in calls with more than wide rows.
	packsA bool
	wide   int // the most rows of a call that sweeps two strips at once
	// run performs a call, with s as scratch memory.
	run func(x *kernelCall, s *gemmScratch)
}

// accSize is the length of the raw sums of an m×n block: strip after
// strip of nr columns, each roundUp(m, mr)·nr long, row after row.
func (kern *gemmKernel) accSize(m, n int) int {
	return ceilDiv(n, kern.nr) * kern.accStrip(m)
}

func (kern *gemmKernel) accStrip(m int) int { return roundUp(m, kern.mr) * kern.nr }

// kernels holds the kernel of each level; levels without one use the
// portable kernel.
var kernels [AVX512 + 1]*gemmKernel

func kernelFor(l Level) *gemmKernel {
	if l >= 0 && int(l) < len(kernels) && kernels[l] != nil {
		return kernels[l]
	}
	return kernels[Portable]
}

// Products with fewer multiply-adds than this run on one goroutine.
const parallelMinWork = 1 << 20

// gemmOp is one product being computed.
type gemmOp struct {
	kern           *gemmKernel
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	packed         []float32 // op(B) in panels, or nil to read b in place
	c              []float32
	ldc            int

	kc, mc, nc           int
	rowBlocks, colBlocks int
	// prefetchC: the last piece of each block prefetches its tiles' C.
	prefetchC bool
	// regions: the blocks are regions of C, each computed by regionTask.
	regions bool
}

// gemmScratch is one goroutine's working memory.
type gemmScratch struct {
	call  kernelCall
	acc   []float32 // raw sums of a block when k is cut
	bEdge []float32 // zero-padded copy of a narrow last strip of B
	apack []float32 // packed panels of A
}

var scratchPool = sync.Pool{New: func() any { return new(gemmScratch) }}

// packedPool holds buffers for a transposed B packed per call.
var packedPool = sync.Pool{New: func() any { return new([]float32) }}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// run computes the product on up to workers goroutines.
func (g *gemmOp) run(workers int) {
	work := g.m * g.n * g.k
	if workers > 1 && work < parallelMinWork {
		workers = 1
	}
	workers = min(workers, runtime.GOMAXPROCS(0))
	workers = max(workers, 1)

	var pbuf *[]float32
	pack := g.packed == nil && g.transB
	if pack {
		pbuf = packedPool.Get().(*[]float32)
		*pbuf = grow(*pbuf, packedBSize(g.k, g.n))
		g.packed = *pbuf
	}
	g.plan(workers)
	tasks := g.rowBlocks * g.colBlocks
	if workers == 1 || tasks == 1 {
		if pack {
			packB(g.packed, true, g.k, g.n, g.b, g.ldb, 0, g.n)
		}
		s := scratchPool.Get().(*gemmScratch)
		for t := 0; t < tasks; t++ {
			g.task(t, s)
		}
		scratchPool.Put(s)
	} else {
		workers = min(workers, tasks)
		packTasks := 0
		if pack {
			// The packing is shared out too: written once, it is mostly
			// bound by memory.
			packTasks = min(ceilDiv(g.n, packW), 2*workers)
		}
		parallelTasks(g, workers, packTasks, tasks)
	}
	if pbuf != nil {
		packedPool.Put(pbuf)
	}
}

// plan chooses the pieces of k and the blocks of C.
func (g *gemmOp) plan(workers int) {
	kern := g.kern
	// Pieces of k of equal length (a multiple of 8) of at most kc steps.
	pieces := ceilDiv(g.k, kern.kc)
	g.kc = roundUp(ceilDiv(g.k, pieces), 8)
	g.prefetchC = g.k <= prefetchCMaxK && 4*g.m*g.n > prefetchCMinBytes
	g.regions = false
	if g.transA && kern.packsA && g.m > kern.wide && g.n > kern.nr {
		g.planRegions(workers)
		return
	}

	colUnit := max(kern.nr, packW)
	g.mc = min(kern.mc, roundUp(g.m, kern.mr))
	g.nc = min(kern.nc, roundUp(g.n, colUnit))
	g.rowBlocks = ceilDiv(g.m, g.mc)
	g.colBlocks = ceilDiv(g.n, g.nc)
	if workers == 1 {
		return
	}
	// At least two blocks per goroutine, and a multiple of the number of
	// goroutines, of about equal size. A product with many rows is split
	// by rows; otherwise the split into rb×cb blocks minimises the
	// operand traffic (A is read cb times, B rb times) times the load
	// imbalance.
	want := 2 * workers
	maxRB, maxCB := ceilDiv(g.m, kern.mr), ceilDiv(g.n, colUnit)
	rb, cb := min(roundUp(max(g.rowBlocks, want), workers), maxRB), g.colBlocks
	if g.rowBlocks < want {
		best := -1.0
		for r := 1; r <= min(2*want, maxRB); r++ {
			for c := 1; c <= min(2*want, maxCB); c++ {
				if r*c < want && (r < maxRB || c < maxCB) {
					continue
				}
				rows := min(roundUp(ceilDiv(g.m, r), kern.mr), g.m)
				cols := min(roundUp(ceilDiv(g.n, c), colUnit), g.n)
				blocks := ceilDiv(g.m, rows) * ceilDiv(g.n, cols)
				imbalance := float64(ceilDiv(blocks, workers)*rows*cols) * float64(workers) / float64(g.m*g.n)
				cost := float64(c*g.m+r*g.n) * imbalance
				if best < 0 || cost < best {
					best, rb, cb = cost, r, c
				}
			}
		}
	}
	g.mc = roundUp(ceilDiv(g.m, rb), kern.mr)
	g.rowBlocks = ceilDiv(g.m, g.mc)
	g.nc = roundUp(ceilDiv(g.n, cb), colUnit)
	g.colBlocks = ceilDiv(g.n, g.nc)
}

// A transposed A (TN, TT) is read by columns: every step of a panel
// reads mr floats from another row of A, lda apart, and so from another
// page. With a kernel that packs A, such a product is cut into one region
// of C per goroutine (by rows when there are enough, sharing B, else by
// columns, sharing A), and each region is computed piece of k by piece of
// k, and block of mc rows by block within a piece, so that the piece of B
// stays in L2 for all the blocks. The first strip of each kernel call
// packs the panels of A it reads for the other strips, and the call
// prefetches the A of the next one into L2 (measured, AVX-512, 2048-step
// weight gradients: +15 to 25 % on one core, +10 to 30 % on two).

// planRegions cuts C into regions for workers goroutines.
func (g *gemmOp) planRegions(workers int) {
	kern := g.kern
	g.regions = true
	colUnit := max(kern.nr, packW)
	g.mc, g.nc = g.m, g.n
	g.rowBlocks, g.colBlocks = 1, 1
	if workers == 1 {
		return
	}
	if g.m >= workers*2*kern.mr {
		g.mc = roundUp(ceilDiv(g.m, workers), 4)
	} else {
		g.nc = roundUp(ceilDiv(g.n, workers), colUnit)
	}
	g.rowBlocks = ceilDiv(g.m, g.mc)
	g.colBlocks = ceilDiv(g.n, g.nc)
}

// regionTask computes the rows [i0, i0+rows) and columns [j0, j0+cols)
// of C.
func (g *gemmOp) regionTask(i0, j0, rows, cols int, s *gemmScratch) {
	kern := g.kern
	mc := min(kern.mc, roundUp(rows, kern.mr))
	nc := min(kern.nc, roundUp(cols, max(kern.nr, packW)))
	rowBlocks := ceilDiv(rows, mc)
	blockAcc := kern.accSize(mc, nc)
	x := &s.call
	*x = kernelCall{
		c: g.c, ldc: g.ldc,
		alpha: g.alpha, beta: g.beta,
		a: g.a, astride: g.lda, apanel: kern.mr,
	}
	if g.k > g.kc {
		s.acc = grow(s.acc, rowBlocks*blockAcc)
	}
	s.apack = grow(s.apack, roundUp(mc, kern.mr)*g.kc)
	x.pa = s.apack
	// The calls, in order: column blocks, pieces of k, row blocks.
	calls := ceilDiv(cols, nc) * ceilDiv(g.k, g.kc) * rowBlocks
	at := func(c int) (ib, j, pc int) {
		ib = c % rowBlocks
		c /= rowBlocks
		pieces := ceilDiv(g.k, g.kc)
		return ib, j0 + (c/pieces)*nc, (c % pieces) * g.kc
	}
	for c := 0; c < calls; c++ {
		ib, j, pc := at(c)
		i := i0 + ib*mc
		x.m, x.n, x.k = min(mc, i0+rows-i), min(nc, j0+cols-j), min(g.kc, g.k-pc)
		x.coff = i*g.ldc + j
		if g.k > g.kc {
			x.acc = s.acc[ib*blockAcc : (ib+1)*blockAcc]
		}
		x.flags = 0
		if pc > 0 {
			x.flags |= flagLoad
		}
		if pc+x.k < g.k {
			x.flags |= flagPartial
		} else if g.prefetchC {
			x.flags |= flagPrefetchC
		}
		if g.beta == 0 {
			x.flags |= flagBeta0
		}
		x.aoff = pc*g.lda + i
		x.pf = -1
		if c+1 < calls {
			nib, _, npc := at(c + 1)
			ni := i0 + nib*mc
			x.pf, x.pfcols, x.pfrows = npc*g.lda+ni, min(mc, i0+rows-ni), min(g.kc, g.k-npc)
		}
		if g.packed != nil {
			x.b, x.boff, x.bs, x.panel = g.packed, (j/packW)*g.k*packW+pc*packW, packW, g.k*packW
		} else {
			x.b, x.boff, x.bs, x.panel = g.b, pc*g.ldb+j, g.ldb, 0
		}
		kern.run(x, s)
	}
	*x = kernelCall{}
}

// task computes block t of C (row-major order of blocks).
func (g *gemmOp) task(t int, s *gemmScratch) {
	kern := g.kern
	i0 := (t / g.colBlocks) * g.mc
	j0 := (t % g.colBlocks) * g.nc
	if g.regions {
		g.regionTask(i0, j0, min(g.mc, g.m-i0), min(g.nc, g.n-j0), s)
		return
	}
	x := &s.call
	*x = kernelCall{
		m: min(g.mc, g.m-i0), n: min(g.nc, g.n-j0),
		c: g.c, coff: i0*g.ldc + j0, ldc: g.ldc,
		alpha: g.alpha, beta: g.beta,
		a: g.a, astride: g.lda,
		pf: -1,
	}
	if g.k > g.kc {
		s.acc = grow(s.acc, kern.accSize(x.m, x.n))
		x.acc = s.acc
	}
	for pc := 0; pc < g.k; pc += g.kc {
		x.k = min(g.kc, g.k-pc)
		x.flags = 0
		if pc > 0 {
			x.flags |= flagLoad
		}
		if pc+x.k < g.k {
			x.flags |= flagPartial
		} else if g.prefetchC {
			x.flags |= flagPrefetchC
		}
		if g.beta == 0 {
			x.flags |= flagBeta0
		}
		if g.transA {
			x.aoff, x.apanel = pc*g.lda+i0, kern.mr
		} else {
			x.aoff, x.apanel = i0*g.lda+pc, kern.mr*g.lda
			x.flags |= flagRows
		}
		if g.packed != nil {
			x.b, x.boff, x.bs, x.panel = g.packed, (j0/packW)*g.k*packW+pc*packW, packW, g.k*packW
		} else {
			x.b, x.boff, x.bs, x.panel = g.b, pc*g.ldb+j0, g.ldb, 0
		}
		kern.run(x, s)
	}
	*x = kernelCall{}
}

// transposeGroups holds, per level, an assembly transposition of up to 8
// rows of B into 8 columns of a panel (see gemmTranspose8AVX), or nil.
var transposeGroups [AVX512 + 1]func(dst, src []float32, rows, k, lds int)

// packGroup packs group t of groups groups of the panels of g's
// transposed B.
func (g *gemmOp) packGroup(t, groups int) {
	panels := ceilDiv(g.n, packW)
	q0, q1 := t*panels/groups, (t+1)*panels/groups
	packB(g.packed, true, g.k, g.n, g.b, g.ldb, q0*packW, min(q1*packW, g.n))
}

// packedBSize is the length of a packed k×n B.
func packedBSize(k, n int) int { return ceilDiv(n, packW) * packW * k }

// packB stores the columns [j0,j1) of op(B) (k×n) in dst in panels of
// packW columns: panel q holds columns [q·packW, (q+1)·packW) at
// dst[q·k·packW:], row p at offset p·packW, zero-padded past n. j0 is a
// multiple of packW.
func packB(dst []float32, transB bool, k, n int, b []float32, ldb int, j0, j1 int) {
	for q := j0 / packW; q*packW < j1; q++ {
		c0 := q * packW
		w := min(packW, n-c0)
		panel := dst[q*k*packW : (q+1)*k*packW]
		if !transB {
			for p := 0; p < k; p++ {
				row := panel[p*packW : p*packW+packW]
				copy(row, b[p*ldb+c0:p*ldb+c0+w])
				clear(row[w:])
			}
			continue
		}
		if w < packW {
			clear(panel)
		}
		if tg := transposeGroups[Current()]; tg != nil && k > 0 {
			for g := 0; g < w; g += 8 {
				tg(panel[g:], b[(c0+g)*ldb:], min(8, w-g), k, ldb)
			}
			continue
		}
		for jj := 0; jj < w; jj++ {
			src := b[(c0+jj)*ldb : (c0+jj)*ldb+k]
			for p, v := range src {
				panel[p*packW+jj] = v
			}
		}
	}
}

// packEdge copies a k×w block of a row-major B (leading dimension ldb) into
// dst with row stride width, zero-padding each row.
func packEdge(dst []float32, width int, b []float32, ldb, k, w int) {
	for p := 0; p < k; p++ {
		row := dst[p*width : p*width+width]
		copy(row, b[p*ldb:p*ldb+w])
		clear(row[w:])
	}
}
