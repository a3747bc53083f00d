package simd

import (
	"sync"
	"sync/atomic"
)

// Parallel products run on long-lived helper goroutines, so that fanning
// out does not allocate: the caller queues the job for up to workers-1
// helpers, works on it itself, and waits for the helpers it queued. Blocks
// are claimed from a shared counter; which goroutine computes a block has
// no effect on its bits.

// gemmJob is a product shared by the goroutines computing it.
type gemmJob struct {
	op    gemmOp
	tasks int64
	next  atomic.Int64
	wg    sync.WaitGroup
}

func (j *gemmJob) work() {
	s := scratchPool.Get().(*gemmScratch)
	for {
		t := j.next.Add(1) - 1
		if t >= j.tasks {
			break
		}
		j.op.task(int(t), s)
	}
	scratchPool.Put(s)
}

var jobPool = sync.Pool{New: func() any { return new(gemmJob) }}

// helpers is the pool of helper goroutines.
var helpers struct {
	mu      sync.Mutex
	started int
	queue   chan *gemmJob
}

// maxHelpers bounds the number of helper goroutines.
const maxHelpers = 256

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
		j.work()
		j.wg.Done()
	}
}

// parallelTasks computes the blocks of g on workers goroutines.
func parallelTasks(g *gemmOp, workers, tasks int) {
	ensureHelpers(workers - 1)
	j := jobPool.Get().(*gemmJob)
	j.op = *g
	j.tasks = int64(tasks)
	j.next.Store(0)
	for i := 0; i < workers-1; i++ {
		j.wg.Add(1)
		select {
		case helpers.queue <- j:
		default:
			j.wg.Done()
		}
	}
	j.work()
	j.wg.Wait()
	j.op = gemmOp{}
	jobPool.Put(j)
}
