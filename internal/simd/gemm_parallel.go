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
// caller waits until every block is done. A B to be packed is packed
// first, in groups of panels claimed the same way; the blocks wait for
// all of them.
//
// Waking a parked goroutine on another CPU can take longer than a whole
// product (around 0.1 ms on virtual machines), so nothing parks while a
// burst of products runs: a helper that finished a job polls for the next
// one for helperPoll before it parks, and the caller polls for the last
// blocks for up to callerPoll before it parks; both yield while they
// poll, and the bounds keep a loaded machine from losing much to polling.
// A helper that arrives after all blocks were claimed just drops the job.

// gemmJob is a product shared by the goroutines computing it.
type gemmJob struct {
	op    gemmOp
	tasks int64
	next  atomic.Int64 // blocks claimed
	done  atomic.Int64 // blocks finished
	refs  atomic.Int32 // the caller and the queued copies
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
			if i%16 == 0 && time.Since(start) > callerPoll {
				j.mu.Lock()
				for j.packDone.Load() < j.packTasks {
					j.packed.Wait()
				}
				j.mu.Unlock()
				break
			}
			runtime.Gosched()
		}
	}
	s := scratchPool.Get().(*gemmScratch)
	for {
		t := j.next.Add(1) - 1
		if t >= j.tasks {
			break
		}
		j.op.task(int(t), s)
		if j.done.Add(1) == j.tasks {
			j.finished <- struct{}{}
		}
	}
	scratchPool.Put(s)
}

// release drops a reference to j, recycling it after the last one.
func (j *gemmJob) release() {
	if j.refs.Add(-1) == 0 {
		j.op = gemmOp{}
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
// parks, callerPoll how long a caller polls for the last blocks.
const (
	helperPoll = 200 * time.Microsecond
	callerPoll = 100 * time.Microsecond
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

// poll waits up to helperPoll for a job from queue, yielding in between.
func poll(queue chan *gemmJob) *gemmJob {
	start := time.Now()
	for i := 1; ; i++ {
		select {
		case j := <-queue:
			return j
		default:
		}
		if i%16 == 0 && time.Since(start) > helperPoll {
			return nil
		}
		runtime.Gosched()
	}
}

// parallelTasks packs B in packTasks groups, if any, and computes the
// blocks of g on workers goroutines.
func parallelTasks(g *gemmOp, workers, packTasks, tasks int) {
	ensureHelpers(workers - 1)
	j := jobPool.Get().(*gemmJob)
	j.op = *g
	j.tasks = int64(tasks)
	j.next.Store(0)
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
		if i%16 == 0 && time.Since(start) > callerPoll {
			break
		}
		runtime.Gosched()
	}
	<-j.finished
	j.release()
}
