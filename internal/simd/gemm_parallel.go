package simd

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel products run on long-lived helper goroutines, so that fanning
// out does not allocate. The caller queues the job for up to workers-1
// helpers and works on it itself; blocks are claimed from a shared counter
// (which goroutine computes a block has no effect on its bits), and the
// caller waits until every block is done. The blocks are split into one
// range per goroutine, which each goroutine works through first (so that
// in a series of products the same goroutine, usually on the same CPU,
// keeps computing the same part of C and reading the same part of B)
// before it helps with the others. A B
// to be packed is packed first, in groups of panels claimed from a
// counter; the blocks wait for all of them.
//
// Waking a parked goroutine on another CPU can take longer than a whole
// product (around 0.1 ms on virtual machines), so nothing parks while a
// burst of products runs: a helper that finished a job polls for the next
// one for helperPoll before it parks, and the caller polls for the last
// blocks for up to callerPoll before it parks; the bounds keep a loaded
// machine from losing much to polling. The polling does not yield to the
// scheduler (a helper yields once every helperYield): a goroutine that
// yields goes through the global run queue and can end up sharing the
// caller's P while the other Ps go idle. A helper that arrives after all
// blocks were claimed just drops the job.

// gemmJob is a product, or a loop of Parallel, shared by the goroutines
// computing it.
type gemmJob struct {
	op     gemmOp
	loopT  Tasks // a Parallel loop instead of a product
	tasks  int64
	ranges []atomic.Int64 // blocks claimed in each range
	slots  atomic.Int32   // goroutines that joined
	done   atomic.Int64   // blocks finished
	refs   atomic.Int32   // the caller and the queued copies
	// finished receives one value from whoever finishes the last block.
	finished chan struct{}

	packTasks int64
	packNext  atomic.Int64 // packing groups claimed
	packDone  atomic.Int64 // packing groups finished
	mu        sync.Mutex
	packed    sync.Cond // signalled when the last group is finished
}

// work packs groups of B, then computes blocks, until none is left.
func (j *gemmJob) work() {
	slot := int(j.slots.Add(1)-1) % len(j.ranges)
	if j.packTasks > 0 {
		for {
			t := j.packNext.Add(1) - 1
			if t >= j.packTasks {
				break
			}
			j.op.packGroup(int(t), int(j.packTasks))
			if j.packDone.Add(1) == j.packTasks {
				j.mu.Lock()
				j.packed.Broadcast()
				j.mu.Unlock()
			}
		}
		start := time.Now()
		for i := 1; j.packDone.Load() < j.packTasks; i++ {
			if i%64 == 0 && time.Since(start) > callerPoll {
				j.mu.Lock()
				for j.packDone.Load() < j.packTasks {
					j.packed.Wait()
				}
				j.mu.Unlock()
				break
			}
		}
	}
	if j.loopT != nil {
		j.loop(slot)
		return
	}
	s := scratchPool.Get().(*gemmScratch)
	// Ranges run down the columns of blocks: the goroutines share rows of
	// A and split B.
	rb := int64(j.op.rowBlocks)
	j.claim(slot, func(t int64) { j.op.task(int(t%rb)*j.op.colBlocks+int(t/rb), s) })
	scratchPool.Put(s)
}

// loop runs the iterations of a Parallel loop.
func (j *gemmJob) loop(slot int) {
	j.claim(slot, func(t int64) { j.loopT.RunTask(slot, int(t)) })
}

// claim runs do for every task not yet claimed, this goroutine's own range
// first, and signals finished after the last task of the job.
func (j *gemmJob) claim(slot int, do func(t int64)) {
	n := int64(len(j.ranges))
	for i := range n {
		r := (int64(slot) + i) % n
		lo, hi := r*j.tasks/n, (r+1)*j.tasks/n
		for {
			t := lo + j.ranges[r].Add(1) - 1
			if t >= hi {
				break
			}
			do(t)
			if j.done.Add(1) == j.tasks {
				j.finished <- struct{}{}
			}
		}
	}
}

// release drops a reference to j, recycling it after the last one.
func (j *gemmJob) release() {
	if j.refs.Add(-1) == 0 {
		j.op, j.loopT = gemmOp{}, nil
		jobPool.Put(j)
	}
}

var jobPool = sync.Pool{New: func() any {
	j := &gemmJob{finished: make(chan struct{}, 1)}
	j.packed.L = &j.mu
	return j
}}

// helpers is the pool of helper goroutines.
var helpers struct {
	mu      sync.Mutex
	started int
	queue   chan *gemmJob
}

// maxHelpers bounds the number of helper goroutines.
const maxHelpers = 256

// helperPoll is how long a helper keeps polling for a job before it
// parks (yielding every helperYield), callerPoll how long a caller polls
// for the last blocks.
const (
	helperPoll  = 200 * time.Microsecond
	helperYield = 50 * time.Microsecond
	callerPoll  = 100 * time.Microsecond
)

func ensureHelpers(n int) {
	n = min(n, maxHelpers)
	helpers.mu.Lock()
	if helpers.queue == nil {
		helpers.queue = make(chan *gemmJob, maxHelpers)
	}
	for helpers.started < n {
		helpers.started++
		go helper(helpers.queue)
	}
	helpers.mu.Unlock()
}

func helper(queue chan *gemmJob) {
	for j := range queue {
		for j != nil {
			j.work()
			j.release()
			j = poll(queue)
		}
	}
}

// poll waits up to helperPoll for a job from queue.
func poll(queue chan *gemmJob) *gemmJob {
	start := time.Now()
	last := start
	for i := 1; ; i++ {
		select {
		case j := <-queue:
			return j
		default:
		}
		if i%64 == 0 {
			now := time.Now()
			if now.Sub(start) > helperPoll {
				return nil
			}
			if now.Sub(last) > helperYield {
				runtime.Gosched()
				last = now
			}
		}
	}
}

// Tasks is a loop body for ParallelTasks: RunTask(worker, i) runs
// iteration i on the goroutine with slot worker.
type Tasks interface {
	RunTask(worker, i int)
}

// funcTasks adapts a function to Tasks (a func value fits in an interface
// without allocating).
type funcTasks func(worker, i int)

func (f funcTasks) RunTask(worker, i int) { f(worker, i) }

// Parallel runs fn(worker, i) for every i in [0, n) on up to workers
// goroutines, the caller and the helper goroutines that run parallel
// GEMMs, and returns when all are done. worker is in [0, workers) and
// distinct among the goroutines running at once, so it can index
// per-worker scratch space. Each goroutine first works through a
// contiguous range of i, then helps with the others; a goroutine may also
// find nothing left to do, so iterations must not wait for one another.
// Using the GEMMs' goroutines for the work between products keeps them
// polling rather than parked across a sequence of kernels, which saves
// their wake-up (about 0.1 ms on virtual machines) at every product. With
// workers ≤ 1 or n ≤ 1 it runs inline.
func Parallel(workers, n int, fn func(worker, i int)) {
	ParallelTasks(workers, n, funcTasks(fn))
}

// ParallelTasks is Parallel with the body as an interface value, for hot
// loops that must not allocate a closure per call.
func ParallelTasks(workers, n int, t Tasks) {
	workers = min(workers, n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			t.RunTask(0, i)
		}
		return
	}
	startJob(nil, t, workers, 0, n)
}

// parallelTasks packs B in packTasks groups, if any, and computes the
// blocks of g on workers goroutines.
func parallelTasks(g *gemmOp, workers, packTasks, tasks int) {
	startJob(g, nil, workers, packTasks, tasks)
}

// startJob runs a product (g) or a loop (t) on workers goroutines.
func startJob(g *gemmOp, t Tasks, workers, packTasks, tasks int) {
	ensureHelpers(workers - 1)
	j := jobPool.Get().(*gemmJob)
	if g != nil {
		j.op = *g
	}
	j.loopT = t
	j.tasks = int64(tasks)
	if cap(j.ranges) < workers {
		j.ranges = make([]atomic.Int64, workers)
	}
	j.ranges = j.ranges[:workers]
	for i := range j.ranges {
		j.ranges[i].Store(0)
	}
	j.slots.Store(0)
	j.done.Store(0)
	j.packTasks = int64(packTasks)
	j.packNext.Store(0)
	j.packDone.Store(0)
	j.refs.Store(1)
	for i := 0; i < workers-1; i++ {
		j.refs.Add(1)
		select {
		case helpers.queue <- j:
		default:
			j.refs.Add(-1)
		}
	}
	j.work()
	start := time.Now()
	for i := 1; j.done.Load() < j.tasks; i++ {
		if i%64 == 0 && time.Since(start) > callerPoll {
			break
		}
	}
	<-j.finished
	j.release()
}
