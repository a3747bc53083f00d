package train

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentrl/agentrl/rollout"
)

// ahead samples the steps after the one in progress while it learns
// (rollout.staleness k ≥ 1). Step u samples exactly version u−1−k of the
// weights, as soon as that version is published, one step after another,
// each from the training seed the step before it left: what a step
// samples depends on its seeds and its version alone, never on timing,
// so a run with k ≥ 1 is as reproducible as one with k = 0. At most k+1
// steps are held ahead of the learner (step u waits for version u−1−k).
// Sampling goes on k steps past run.steps: the run's last checkpoint holds
// them, so that a run extended to more steps continues exactly.
type ahead struct {
	s *session
	// sampler holds the versions; collecting stops with cancel.
	sampler VersionedSampler
	cancel  context.CancelFunc
	stopped chan struct{}

	mu        sync.Mutex
	changed   *sync.Cond
	published int                // the newest version published
	results   map[int]*collected // sampled steps not yet taken, by step
	errs      map[int]error      // the failure of a step's sampling
	// next is the next step to sample and seed its first training seed.
	next int
	seed uint64
}

// startAhead starts sampling ahead of a session whose state is at step
// s.state.Step, with version s.state.Step published, and the steps
// sampled before the session began (a checkpoint's pending steps).
func startAhead(s *session, vs VersionedSampler, pending []collected) *ahead {
	a := &ahead{s: s, sampler: vs, stopped: make(chan struct{}), published: s.state.Step,
		results: map[int]*collected{}, errs: map[int]error{}, next: s.state.Step + 1, seed: s.state.NextTrainSeed}
	a.changed = sync.NewCond(&a.mu)
	for i := range pending {
		c := pending[i]
		a.results[c.step] = &c
		a.next, a.seed = c.step+1, c.nextSeed
	}
	// Sampling outlives an interrupt of the step in progress: the
	// checkpoint it leads to holds the steps sampled ahead.
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	go a.run(ctx)
	return a
}

// run samples step after step until the run's last step or stop.
func (a *ahead) run(ctx context.Context) {
	defer close(a.stopped)
	last := a.s.cfg.Run.Steps + a.s.cfg.Rollout.Staleness
	for {
		a.mu.Lock()
		u := a.next
		for ctx.Err() == nil && u <= last && a.s.version(u) > a.published {
			a.changed.Wait()
		}
		if ctx.Err() != nil || u > last {
			a.mu.Unlock()
			return
		}
		seed := a.seed
		a.mu.Unlock()

		v := a.s.version(u)
		c, err := a.collect(ctx, u, v, seed)
		a.mu.Lock()
		if err != nil {
			a.errs[u] = err
			a.changed.Broadcast()
			a.mu.Unlock()
			return
		}
		a.results[u] = &c
		a.next, a.seed = u+1, c.nextSeed
		a.changed.Broadcast()
		a.mu.Unlock()
	}
}

// collect samples step u with version v.
func (a *ahead) collect(ctx context.Context, u, v int, seed uint64) (collected, error) {
	p, err := a.sampler.PolicyAt(v)
	if err != nil {
		return collected{}, err
	}
	return a.s.sample(ctx, a.s.engine.WithPolicy(p), u, v, seed, nil)
}

// publishedVersion tells the sampling that version v is published.
func (a *ahead) publishedVersion(v int) {
	a.mu.Lock()
	a.published = max(a.published, v)
	a.changed.Broadcast()
	a.mu.Unlock()
}

// take waits for step u's sampling and hands it over; the version it
// sampled is retired once no later step samples it.
func (a *ahead) take(ctx context.Context, u int) (collected, error) {
	c, err := a.wait(ctx, u)
	if err != nil {
		return collected{}, err
	}
	a.mu.Lock()
	delete(a.results, u)
	a.mu.Unlock()
	if v := a.s.version(u); v < a.s.version(u+1) && v < a.s.state.Step {
		a.sampler.Retire(v)
	}
	return *c, nil
}

// wait waits until step u is sampled, its sampling failed, or ctx ends.
func (a *ahead) wait(ctx context.Context, u int) (*collected, error) {
	stop := context.AfterFunc(ctx, func() {
		a.mu.Lock()
		a.changed.Broadcast()
		a.mu.Unlock()
	})
	defer stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if c, ok := a.results[u]; ok {
			return c, nil
		}
		if err, ok := a.errs[u]; ok {
			return nil, err
		}
		if u < a.next || u > a.s.cfg.Run.Steps+a.s.cfg.Rollout.Staleness {
			return nil, fmt.Errorf("step %d is not sampled ahead (next to sample: %d)", u, a.next)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a.changed.Wait()
	}
}

// pending waits for the steps after step that the weights of step cannot
// sample (those up to step+k, which sample versions before it) and returns
// them: what a checkpoint of step adds to the learner's state so that the
// run resumes on the same rollouts.
func (a *ahead) pending(ctx context.Context, step int) ([]collected, error) {
	var out []collected
	for u := step + 1; u <= step+a.s.cfg.Rollout.Staleness; u++ {
		if a.s.version(u) >= step {
			break // sampled from the checkpoint's own weights on resume
		}
		c, err := a.wait(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("the rollouts of step %d, sampled ahead: %w", u, err)
		}
		out = append(out, *c)
	}
	return out, nil
}

// stop ends the sampling and waits for it.
func (a *ahead) stop() {
	a.cancel()
	a.mu.Lock()
	a.changed.Broadcast()
	a.mu.Unlock()
	<-a.stopped
}

// pendingTrajectories are the trajectories of steps sampled ahead, as a
// checkpoint stores them.
type pendingStep struct {
	Step, Version int
	Trajectories  []rollout.Trajectory
	Groups        [][]int
	Sampled       []rollout.Trajectory
	NextSeed      uint64
	Metrics       map[string]float64
}
