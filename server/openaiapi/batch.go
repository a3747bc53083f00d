package openaiapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/policy"
)

// errClosed is returned to requests that are still waiting when the server
// closes.
var errClosed = errors.New("openaiapi: server closed")

// sampleJob is the sampling work of one HTTP request; its requests stay
// together in one policy.Sample call.
type sampleJob struct {
	ctx   context.Context
	reqs  []policy.Request
	done  chan sampleResult // buffered: the batcher never blocks on it
	leave func()            // ends the request's arrival (see arrive)
}

type sampleResult struct {
	samples []policy.Sample
	err     error
}

// batchShared is what the batchers of one Server (one per served model:
// the base model and each LoRA adapter) share: the arrivals, the call slots
// and the counters.
type batchShared struct {
	// pending counts the requests that arrived (see arrive) and have not
	// reached a loop yet: a loop waits for them, and only for them.
	pending atomic.Int64
	slots   chan struct{} // one per call in flight, across the batchers

	calls atomic.Int64
	seqs  atomic.Int64
}

func newBatchShared(concurrency int) *batchShared {
	return &batchShared{slots: make(chan struct{}, concurrency)}
}

// batcher merges the sampling requests for one policy that arrive close
// together into one policy.Sample call (see the package doc).
type batcher struct {
	*batchShared
	p        policy.Policy
	window   time.Duration
	maxBatch int
	log      *slog.Logger

	jobs chan *sampleJob
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// arrive registers a request that is about to sample: while such requests
// are on their way (reading and checking their body), a batch waits for
// them, up to the window; with none on the way it starts at once, so a
// lone client pays no batching delay. The returned func, idempotent, ends
// the arrival; call it when the request will not sample after all (the
// batcher calls it when the job reaches it).
func (b *batcher) arrive() func() {
	b.pending.Add(1)
	var once sync.Once
	return func() { once.Do(func() { b.pending.Add(-1) }) }
}

func newBatcher(p policy.Policy, shared *batchShared, window time.Duration, maxBatch int, log *slog.Logger) *batcher {
	b := &batcher{
		batchShared: shared,
		p:           p, window: window, maxBatch: maxBatch, log: log,
		jobs: make(chan *sampleJob),
		stop: make(chan struct{}),
	}
	b.wg.Add(1)
	go b.loop()
	return b
}

// close stops the loop, fails the jobs it holds and waits for the calls in
// flight.
func (b *batcher) close() {
	b.once.Do(func() { close(b.stop) })
	b.wg.Wait()
}

// sample runs reqs in the next batch and returns their samples, in order.
// leave is the request's arrival (see arrive), or nil.
func (b *batcher) sample(ctx context.Context, reqs []policy.Request, leave func()) ([]policy.Sample, error) {
	if leave == nil {
		leave = func() {}
	}
	j := &sampleJob{ctx: ctx, reqs: reqs, done: make(chan sampleResult, 1), leave: leave}
	select {
	case b.jobs <- j:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.stop:
		return nil, errClosed
	}
	select {
	case r := <-j.done:
		return r.samples, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// loop gathers jobs into batches and starts a call per batch when a slot is
// free, gathering more jobs while it waits for one.
func (b *batcher) loop() {
	defer b.wg.Done()
	var carry *sampleJob // a job that did not fit in the previous batch
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-b.jobs:
				first.leave()
			case <-b.stop:
				return
			}
		}
		batch := []*sampleJob{first}
		n := len(first.reqs)
		// add takes j into the batch, or keeps it for the next one when
		// the batch would exceed maxBatch.
		add := func(j *sampleJob) {
			j.leave()
			if n+len(j.reqs) > b.maxBatch {
				carry = j
				return
			}
			batch = append(batch, j)
			n += len(j.reqs)
		}
		full := func() bool { return carry != nil || n >= b.maxBatch }

		if b.window > 0 {
			timer := time.NewTimer(b.window)
		gather:
			for !full() && b.pending.Load() > 0 {
				select {
				case j := <-b.jobs:
					add(j)
				case <-timer.C:
					break gather
				case <-b.stop:
					timer.Stop()
					b.fail(batch, carry)
					return
				}
			}
			timer.Stop()
		}
	wait:
		for {
			jobs := b.jobs
			if full() {
				jobs = nil
			}
			select {
			case b.slots <- struct{}{}:
				break wait
			case j := <-jobs:
				add(j)
			case <-b.stop:
				b.fail(batch, carry)
				return
			}
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer func() { <-b.slots }()
			b.run(batch)
		}()
	}
}

func (b *batcher) fail(batch []*sampleJob, carry *sampleJob) {
	if carry != nil {
		batch = append(batch, carry)
	}
	for _, j := range batch {
		j.done <- sampleResult{err: errClosed}
	}
}

// run makes one policy.Sample call for the live jobs of batch. If the call
// fails as a whole with several jobs in it, each job is retried alone.
func (b *batcher) run(batch []*sampleJob) {
	live := batch[:0:0]
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.done <- sampleResult{err: err}
			continue
		}
		live = append(live, j)
	}
	if len(live) == 0 {
		return
	}
	err := b.call(live)
	if err == nil {
		return
	}
	if len(live) == 1 {
		live[0].done <- sampleResult{err: err}
		return
	}
	b.log.Warn("batched sample call failed; retrying its requests one by one", "requests", len(live), "err", err)
	for _, j := range live {
		if err := b.call([]*sampleJob{j}); err != nil {
			j.done <- sampleResult{err: err}
		}
	}
}

// call samples the jobs' requests in one policy.Sample call and delivers
// the results; it returns the error of a failed call without delivering.
// The call's context ends when every job's context has ended.
func (b *batcher) call(jobs []*sampleJob) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(jobs)))
	var reqs []policy.Request
	for _, j := range jobs {
		stop := context.AfterFunc(j.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
		reqs = append(reqs, j.reqs...)
	}
	b.calls.Add(1)
	b.seqs.Add(int64(len(reqs)))
	start := time.Now()
	samples, err := b.p.Sample(ctx, reqs)
	b.log.Debug("sample call", "requests", len(jobs), "sequences", len(reqs), "duration", time.Since(start), "err", err)
	if err == nil && len(samples) != len(reqs) {
		err = fmt.Errorf("policy returned %d samples for %d requests", len(samples), len(reqs))
	}
	if err != nil {
		if ctx.Err() != nil {
			// Every client is gone.
			for _, j := range jobs {
				j.done <- sampleResult{err: j.ctx.Err()}
			}
			return nil
		}
		return err
	}
	k := 0
	for _, j := range jobs {
		j.done <- sampleResult{samples: samples[k : k+len(j.reqs) : k+len(j.reqs)]}
		k += len(j.reqs)
	}
	return nil
}
