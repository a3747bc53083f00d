package train

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/agentrl/agentrl/policy"
)

// Sampler is where a run's rollouts sample: by default the learner's own
// policy, or a copy of its weights served elsewhere (train/served: a vLLM
// server that loads the learner's LoRA adapters). The loop samples every
// step's rollouts and validations from Policy, and after every step (with
// an update or without) calls Publish with the number of completed steps,
// so that the next step samples exactly that version of the weights;
// trajectories record it (rollout.Trajectory.PolicyVersion).
type Sampler interface {
	// Policy samples with the weights last published.
	Policy() policy.Policy
	// Publish makes the learner's current weights the sampled ones, as
	// version v. On failure the previous version stays sampled. The loop
	// does not cancel ctx during a Publish (an interrupt then saves the
	// published weights as the step's).
	Publish(ctx context.Context, v int) error
	// Describe names the sampler in errors and logs ("server URL").
	Describe() string
	// Close releases the sampler (it does not close the learner).
	Close() error
}

// A SamplerFactory builds the sampler of a run around its learner, with
// the learner's current weights published as version v.
type SamplerFactory func(ctx context.Context, start *Start, l Learner, v int) (Sampler, error)

// SamplerRegistration makes a sampler available by name.
type SamplerRegistration struct {
	// Description is one line for listings and errors.
	Description string
	// Check, if set, vets a configuration before the run directory is
	// touched (it may read the file system).
	Check func(Config) error
	// New builds the sampler.
	New SamplerFactory
}

// RegisterSampler makes a sampler available under name, for
// Config.SamplerName (train/served registers "served", chosen by
// server.url). It panics if name is empty, taken, or r has no New.
func RegisterSampler(name string, r SamplerRegistration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" || r.New == nil {
		panic("train: RegisterSampler needs a name and a New function")
	}
	if _, dup := samplers[name]; dup {
		panic(fmt.Sprintf("train: sampler %q registered twice", name))
	}
	samplers[name] = r
}

func lookupSampler(name string) (SamplerRegistration, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	r, ok := samplers[name]
	if !ok {
		if name == SamplerServed {
			return r, fmt.Errorf("sampler %q (server.url): not registered; import github.com/agentrl/agentrl/train/served (trainer does) to register it", name)
		}
		return r, fmt.Errorf("sampler %q: not registered (registered: %v)", name, slices.Sorted(maps.Keys(samplers)))
	}
	return r, nil
}

// ownSampler samples from the learner's own policy: every update shows in
// it at once, so there is nothing to publish.
type ownSampler struct{ l Learner }

func (s ownSampler) Policy() policy.Policy            { return s.l.Policy() }
func (ownSampler) Publish(context.Context, int) error { return nil }
func (ownSampler) Describe() string                   { return "the policy" }
func (ownSampler) Close() error                       { return nil }

// VersionedSampler keeps several versions of the weights sampleable at
// once: with rollout.staleness k, the rollouts of step t sample version
// t−1−k while the learner trains version t. Publish(v) adds version v
// (Policy then samples it); PolicyAt returns any version published and
// not yet retired.
type VersionedSampler interface {
	Sampler
	// PolicyAt samples with version v.
	PolicyAt(v int) (policy.Policy, error)
	// Retire frees version v: no rollout samples it again.
	Retire(v int)
}

// snapshotSampler samples from snapshots of the learner's weights
// (Snapshotter), one per version: the sampler of a run whose rollouts run
// ahead of its in-process learner.
type snapshotSampler struct {
	l        Snapshotter
	mu       sync.Mutex
	versions map[int]policy.Policy
	last     int
}

// newSnapshotSampler snapshots l's current weights as version v.
func newSnapshotSampler(ctx context.Context, l Learner, v int) (*snapshotSampler, error) {
	sn, ok := l.(Snapshotter)
	if !ok {
		return nil, fmt.Errorf("rollout.staleness: the learner (%s) cannot snapshot its weights (train.Snapshotter), which sampling ahead of it needs; set rollout.staleness to 0", l.Model().Kind)
	}
	s := &snapshotSampler{l: sn, versions: map[int]policy.Policy{}}
	return s, s.Publish(ctx, v)
}

func (s *snapshotSampler) Policy() policy.Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.versions[s.last]
}

func (s *snapshotSampler) Publish(ctx context.Context, v int) error {
	p, err := s.l.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot of version %d: %w", v, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions[v], s.last = p, v
	return nil
}

func (s *snapshotSampler) PolicyAt(v int) (policy.Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.versions[v]
	if !ok {
		return nil, fmt.Errorf("version %d of the weights is not held (held: %v)", v, slices.Sorted(maps.Keys(s.versions)))
	}
	return p, nil
}

func (s *snapshotSampler) Retire(v int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v != s.last {
		delete(s.versions, v)
	}
}

func (s *snapshotSampler) Describe() string { return "the policy" }
func (s *snapshotSampler) Close() error     { return nil }
