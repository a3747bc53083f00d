package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/rollout"
)

// loop measures the baselines, then runs steps until run.steps or a
// stopping rule.
func (s *session) loop(ctx context.Context) error {
	c := s.cfg
	if math.IsNaN(s.state.RandomValSuccess) && c.Validation.Every > 0 && len(s.valSeeds) > 0 {
		r, err := s.randomBaseline(ctx)
		if err != nil {
			return err
		}
		s.state.RandomValSuccess = r
		if math.IsNaN(r) {
			s.log.Info("validation: no random-policy baseline for this environment (free-form actions)")
		} else {
			s.log.Info("validation: random policy", "success", r, "levels", len(s.valSeeds), "samples", c.Validation.Samples)
		}
	}
	// Step 0 is validated once: a run resumed from a checkpoint at step 0
	// (interrupted during step 1) has its row already.
	if s.state.Step == 0 && c.Validation.Every > 0 && math.IsNaN(s.state.WarmStartValSuccess) {
		m, err := s.validate(ctx)
		if err != nil {
			return err
		}
		s.state.WarmStartValSuccess = m["val-env/success"]
		if err := s.rec.record(0, m); err != nil {
			return err
		}
		fmt.Fprintln(s.console, progressLine(0, c.Run.Steps, 0, 0, m))
	}
	// A run a stopping rule ended stays ended: resuming it ends at once
	// with the same status, as a finished run does.
	if s.state.Stopped != "" {
		return fmt.Errorf("%w: %s", ErrStopped, s.state.Stopped)
	}
	start := s.now()
	done := 0
	for s.state.Step < c.Run.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		stepStart := s.now()
		m, err := s.step(ctx)
		if err != nil {
			return err
		}
		done++
		fmt.Fprintln(s.console, progressLine(s.state.Step, c.Run.Steps, s.now().Sub(stepStart), s.now().Sub(start)/time.Duration(done), m))
		if s.state.Stopped != "" {
			s.log.Warn("stopping early", "reason", s.state.Stopped, "step", s.state.Step)
			return fmt.Errorf("%w: %s", ErrStopped, s.state.Stopped)
		}
	}
	return nil
}

// testHookRecorded, when set by a test, runs after each step's metrics are
// written and before its checkpoint (a test kills the process there).
var testHookRecorded func(step int)

// testHookUpdate, when set by a test, runs at the start of each step's
// update, before its forward passes (a test interrupts the run there).
var testHookUpdate func(step int)

// testHookTrajectories, when set by a test, sees the trajectories of each
// step's first rollout ("train", the step being trained) and of each
// validation ("val", the steps completed).
var testHookTrajectories func(label string, step int, trajs []rollout.Trajectory)

// metrics is one step's metrics.
type metrics map[string]float64

func (m metrics) add(more map[string]float64) {
	for k, v := range more {
		m[k] = v
	}
}

// errLearnerChanged wraps the error of a step that failed after its update
// began: the learner's weights are then no step's, and the run must not
// checkpoint them.
type errLearnerChanged struct{ err error }

func (e errLearnerChanged) Error() string { return e.err.Error() }
func (e errLearnerChanged) Unwrap() error { return e.err }

// learnerChanged reports whether err came from a step whose update began.
func learnerChanged(err error) bool {
	var lc errLearnerChanged
	return errors.As(err, &lc)
}

// step runs one RL step and returns its metrics. It works on a copy of the
// run's state, which becomes the run's state only when the step's learning
// is done (commit), with the step's metrics row.
//
// Observing — the rollouts, the diagnostics, the filter and the update's
// inputs (values, reference log-probs, advantages) — changes nothing
// outside the copy, so an interrupt or an error there leaves the run as
// the last completed step left it, and the step is redone from the same
// seeds on resume. From the first optimizer step on — the update,
// publishing the new weights to the sampler, the transcripts, then the
// commit with the validation, the metrics row and the checkpoint due —
// the step runs to its end whatever ctx does: stopped between two
// optimizer steps, the weights would be no step's. An error before the
// commit is then errLearnerChanged, and the run does not checkpoint.
func (s *session) step(ctx context.Context) (metrics, error) {
	stepStart := s.now()
	o, err := s.observe(ctx)
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.learn(ctx, &o); err != nil {
		return nil, errLearnerChanged{err}
	}
	return o.m, s.commit(ctx, o.next, o.m, stepStart)
}

// observation is what a step's observing phase leaves for its learning.
type observation struct {
	next State   // the run's state after the step, so far
	m    metrics // the step's metrics, so far
	// batch is the step's batch before filtering, kept the kept groups in
	// the learner's form (nil when the filter kept none) and keptTrajs
	// their number of trajectories.
	batch     Batch
	seqs      *Sequences
	keptTrajs int
	// prepared is when the update's preparation began.
	prepared time.Time
	// matrices are the step's collapse matrices, for the run directory.
	matrices []collapseMatrix
	// kept are the groups the filter kept (seqs' trajectories).
	kept Batch
}

// observe is the step's observing phase (see step).
func (s *session) observe(ctx context.Context) (observation, error) {
	c := s.cfg
	o := observation{next: s.state.clone(), m: metrics{}}
	o.next.Step++
	step, next, m := o.next.Step, &o.next, o.m
	var col collected
	var err error
	if s.ahead == nil {
		col, err = s.collect(ctx, step, next.NextTrainSeed)
	} else {
		col, err = s.ahead.take(ctx, step)
		if err == nil && s.collapseDue(step) {
			// Read now, with the weights after step−1, as in line.
			var cr collapseReading
			if cr, err = readCollapse(ctx, s.learner.Policy(), col.sampled, s.cfg.Collapse, s.seed(step, streamCollapse, 0)); err != nil {
				err = fmt.Errorf("collapse metrics: %w", err)
			}
			col.collapse = &cr
		}
	}
	if err != nil {
		return o, err
	}
	m.add(col.m)
	o.batch = col.batch
	if col.collapse != nil {
		o.matrices = col.collapse.matrices
	}
	next.NextTrainSeed = col.nextSeed
	if col.collapse != nil {
		cm := col.collapse.fold(next.CollapseEMA)
		m.add(cm)
		if reason := s.collapseAlarm(step, cm, col.sampled, next.Regime, m); reason != "" {
			next.Stopped = reason
		}
	}
	ok, failed := col.batch.WithoutFailedGroups()
	m["rollout/failed_groups"] = float64(failed)
	if every := c.Analysis.GradientEvery; every > 0 && step%every == 0 {
		if err := s.gradientAnalysis(ctx, ok, m); err != nil {
			return o, fmt.Errorf("gradient analysis: %w", err)
		}
	}
	kept, filt, err := s.filter(ok, m)
	if err != nil {
		return o, err
	}
	reason, err := next.EarlyStop.Observe(filt.Empty, meanStd(filt))
	if err != nil {
		return o, err
	}
	if reason != "" {
		next.Stopped = reason
	}
	m.add(next.EarlyStop.Metrics())
	o.prepared, o.keptTrajs, o.kept = s.now(), len(kept.Trajectories), kept
	if len(kept.Trajectories) > 0 {
		if o.seqs, err = s.prepare(ctx, step, kept, m); err != nil {
			return o, err
		}
	}
	return o, nil
}

// learn is the step's learning phase (see step): the update, publishing
// its weights to the sampler, and the step's transcripts.
func (s *session) learn(ctx context.Context, o *observation) error {
	c := s.cfg
	step, m := o.next.Step, o.m
	if o.seqs != nil {
		st, err := s.learner.Update(ctx, o.seqs, s.updateOptions(step))
		if err != nil {
			return err
		}
		m.add(st.Metrics)
		m["actor/kept_trajectories"] = float64(o.keptTrajs)
		m["timing_s/update"] = s.now().Sub(o.prepared).Seconds()
		if o.next.observeUpdate(st, c.Run.NaNStopStreak) {
			s.log.Warn("non-finite loss or gradient: updates skipped", "step", step, "skipped", st.Skipped, "of", st.MiniBatches)
		}
	}
	if _, own := s.sampler.(ownSampler); !own {
		// The sampler samples from version step from now on.
		t := s.now()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		err := s.sampler.Publish(pctx, step)
		cancel()
		if err != nil {
			return err
		}
		m["timing_s/publish"] = s.now().Sub(t).Seconds()
		if s.ahead != nil {
			s.ahead.publishedVersion(step)
		}
	}
	if err := s.rec.collapse(step, o.matrices); err != nil {
		return err
	}
	if c.Run.TranscriptsEvery > 0 && step%c.Run.TranscriptsEvery == 0 {
		return s.rec.transcripts(step, "train", o.batch.Trajectories, 4, tokenValues(o.kept, o.seqs))
	}
	return nil
}

// commit makes next the run's state and completes its step: the
// validation due after it, its metrics row, and the checkpoint due.
func (s *session) commit(ctx context.Context, next State, m metrics, stepStart time.Time) error {
	c := s.cfg
	s.state = next
	step := next.Step
	if c.Validation.Every > 0 && step%c.Validation.Every == 0 {
		vm, err := s.validate(ctx)
		if err != nil {
			return err
		}
		m.add(vm)
	}
	m["timing_s/step"] = s.now().Sub(stepStart).Seconds()
	if err := s.rec.record(step, m); err != nil {
		return err
	}
	if testHookRecorded != nil {
		testHookRecorded(step)
	}
	if c.Checkpoint.Every > 0 && step%c.Checkpoint.Every == 0 {
		return s.checkpoint(ctx)
	}
	return nil
}

// collected is what the sampling of one step observed.
type collected struct {
	// step is the step sampled, version the weights' version that
	// sampled it.
	step, version int
	// batch is the step's groups (refilled, with dynamic sampling).
	batch Batch
	// sampled are the trajectories of the step's first rollout call.
	sampled []rollout.Trajectory
	// nextSeed is the training seed after the levels taken.
	nextSeed uint64
	// m are the sampling's metrics.
	m metrics
	// collapse holds the collapse reading of a step sampled in line
	// (rollout.staleness 0), taken right after its first rollout call;
	// nil off schedule, and when sampled ahead (observe reads it then).
	collapse *collapseReading
}

// version is the version of the weights step samples: the weights after
// step−1−k completed steps (rollout.staleness k).
func (s *session) version(step int) int {
	return max(0, step-1-s.cfg.Rollout.Staleness)
}

// collapseDue reports whether step reads the collapse metrics.
func (s *session) collapseDue(step int) bool {
	e := s.cfg.Collapse.Every
	return e > 0 && (step == 1 || step%e == 0)
}

// collect samples the step's groups in line, from the training levels at
// seed upward, reads the collapse metrics on them, and with dynamic
// sampling refills the batch (rollout.staleness 0).
func (s *session) collect(ctx context.Context, step int, seed uint64) (collected, error) {
	return s.sample(ctx, s.engine, step, s.state.Step, seed, func(trajs []rollout.Trajectory) (*collapseReading, error) {
		if !s.collapseDue(step) {
			return nil, nil
		}
		cr, err := readCollapse(ctx, s.learner.Policy(), trajs, s.cfg.Collapse, s.seed(step, streamCollapse, 0))
		if err != nil {
			return nil, fmt.Errorf("collapse metrics: %w", err)
		}
		return &cr, nil
	})
}

// sample plays step's groups with eng, whose policy holds version of the
// weights: the training levels from seed upward, then with dynamic
// sampling the refills. afterFirst, when set, reads the first rollout
// call's trajectories before any refill.
func (s *session) sample(ctx context.Context, eng *rollout.Engine, step, version int, seed uint64,
	afterFirst func([]rollout.Trajectory) (*collapseReading, error)) (collected, error) {
	c := s.cfg
	out := collected{step: step, version: version, m: metrics{}}
	t0 := s.now()
	seeds, next, err := s.nextSeeds(seed, c.Run.Groups)
	if err != nil {
		return out, err
	}
	trajs, err := eng.Run(ctx, seeds, c.Run.GroupSize, s.seed(step, streamRollout, 0))
	if err != nil {
		return out, err
	}
	if err := s.sampled(trajs, version); err != nil {
		return out, err
	}
	if testHookTrajectories != nil {
		testHookTrajectories("train", step, trajs)
	}
	out.m["timing_s/rollout"] = s.now().Sub(t0).Seconds()
	out.m["rollout/policy_version"] = float64(version)
	if c.Rollout.Staleness > 0 {
		out.m["rollout/staleness"] = float64(step - 1 - version)
	}
	out.m.add(rollout.Metrics("train", trajs, c.Run.GroupSize))
	out.batch, out.sampled, out.nextSeed = newBatch(trajs), trajs, next
	if afterFirst != nil {
		if out.collapse, err = afterFirst(trajs); err != nil {
			return out, err
		}
	}
	if c.Filter.DynamicSampling {
		if out.batch, out.nextSeed, err = s.dynamicSampling(ctx, eng, step, version, out.batch, out.nextSeed, out.m); err != nil {
			return out, err
		}
	}
	return out, nil
}

// filter applies the SNR-aware filter to the groups of b and returns the
// kept groups and the filter's result.
func (s *session) filter(b Batch, m metrics) (Batch, algos.FilterResult, error) {
	filt := algos.FilterResult{Empty: true}
	if len(b.Groups) > 0 {
		var err error
		if filt, err = algos.FilterGroups(s.cfg.Filter.FilterConfig, b.Scores(), b.Groups); err != nil {
			return Batch{}, filt, fmt.Errorf("filter: %w", err)
		}
		m.add(filt.Metrics())
	}
	kept := b.Select(filt.Kept)
	if s.cfg.Filter.Strategy == algos.StrategyWithinGroup && len(kept.Groups) > 0 {
		members, err := algos.WithinGroupSelect(s.cfg.Filter.Value, kept.Scores(), kept.Groups)
		if err != nil {
			return Batch{}, filt, fmt.Errorf("filter: %w", err)
		}
		var within Batch
		n := 0
		for _, g := range members {
			group := make([]rollout.Trajectory, len(g))
			for i, j := range g {
				group[i] = kept.Trajectories[j]
			}
			within.addGroup(group)
			n += len(g)
		}
		m["rollout/within_group_kept_ratio"] = float64(n) / float64(len(kept.Trajectories))
		kept = within
	}
	return kept, filt, nil
}

// dynamicSampling is DAPO's dynamic sampling: it drops the groups whose
// samples all scored the same and samples fresh groups (new levels) to
// refill the batch to run.groups, for at most filter.max_sample_rounds
// rounds.
func (s *session) dynamicSampling(ctx context.Context, eng *rollout.Engine, step, version int, b Batch, next uint64, m metrics) (Batch, uint64, error) {
	c := s.cfg
	var out Batch
	dropped, rounds := 0, 0
	for {
		r, err := algos.DynamicSampling(b.Scores(), b.Groups, len(out.Groups), c.Run.Groups)
		if err != nil {
			return Batch{}, 0, err
		}
		dropped += r.ZeroVarianceCount
		for _, g := range r.Kept {
			if len(out.Groups) == c.Run.Groups {
				break
			}
			out.addGroup(b.group(g))
		}
		rounds++
		if r.NeedGroups == 0 || rounds >= c.Filter.MaxSampleRounds {
			break
		}
		seeds, n, err := s.nextSeeds(next, r.NeedGroups)
		if err != nil {
			return Batch{}, 0, err
		}
		next = n
		trajs, err := eng.Run(ctx, seeds, c.Run.GroupSize, s.seed(step, streamRefill, rounds))
		if err != nil {
			return Batch{}, 0, err
		}
		if err := s.sampled(trajs, version); err != nil {
			return Batch{}, 0, err
		}
		b = newBatch(trajs)
	}
	m["rollout/dynamic_sampling_rounds"] = float64(rounds)
	m["rollout/dynamic_sampling_dropped"] = float64(dropped)
	m["rollout/dynamic_sampling_groups"] = float64(len(out.Groups))
	return out, next, nil
}

// prepare turns the kept groups into the learner's sequences, ready for
// its update: values and reference log-probs (Learner.Prepare), the
// train–inference mismatch, and the advantages. The weights do not change.
func (s *session) prepare(ctx context.Context, step int, kept Batch, m metrics) (*Sequences, error) {
	if testHookUpdate != nil {
		testHookUpdate(step)
	}
	seqs := kept.Sequences()
	if err := s.learner.Prepare(ctx, seqs); err != nil {
		return nil, err
	}
	if seqs.SamplerLogProb != nil {
		mm, err := algos.LogProbMismatch(seqs.OldLogProb, seqs.SamplerLogProb, seqs.Mask)
		if err != nil {
			return nil, err
		}
		m.add(mm.Metrics())
	}
	credit, err := s.advantages(kept, seqs)
	if err != nil {
		return nil, err
	}
	m.add(credit)
	return seqs, nil
}

// updateOptions are step's learning rates and mini-batch seed: the
// schedule's rate after step−1 completed steps.
func (s *session) updateOptions(step int) UpdateOptions {
	return UpdateOptions{LR: s.sched.LR(step - 1), CriticLR: s.cfg.Algo.CriticLR, Seed: s.seed(step, streamUpdate, 0)}
}

// advantages fills seqs.Advantages and seqs.Returns for the batch b they
// come from and returns the turn-level credit metrics.
func (s *session) advantages(b Batch, seqs *Sequences) (map[string]float64, error) {
	c := s.cfg
	in := algos.AdvantageInput{Scores: b.Scores(), Groups: b.Groups, Mask: seqs.Mask,
		OldLogProb: seqs.OldLogProb, RefLogProb: seqs.RefLogProb, Values: seqs.OldValues}
	if seqs.Len() != len(b.Trajectories) {
		in.Episode = seqs.Episode // a history window: one sequence per turn
	}
	if c.Algo.UsesTurns() {
		in.Turns = seqs.Turns
	}
	var err error
	var credit map[string]float64
	if seqs.Advantages, seqs.Returns, credit, err = c.Algo.AdvantagesWithMetrics(in); err != nil {
		return nil, fmt.Errorf("advantages: %w", err)
	}
	return credit, nil
}

// gradientAnalysis is RAGEN-2's gradient analysis on the batch before
// filtering: the groups ranked by in-group reward std into equal-count
// buckets q1 (lowest) … qB, and in each, the norms of the actor
// gradient's task, entropy and KL terms (grad/{task,entropy,kl}_norm/qK)
// with the bucket's mean std (grad/reward_std/qK). The weights do not
// change.
func (s *session) gradientAnalysis(ctx context.Context, b Batch, m metrics) error {
	ga, ok := s.learner.(GradientAnalyzer)
	if !ok || len(b.Groups) == 0 {
		return nil
	}
	seqs := b.Sequences()
	if err := s.learner.Prepare(ctx, seqs); err != nil {
		return err
	}
	if _, err := s.advantages(b, seqs); err != nil {
		return err
	}
	st, err := algos.ComputeGroupStats(b.Scores(), b.Groups)
	if err != nil {
		return err
	}
	order := make([]int, len(b.Groups))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return st[order[i]].Std < st[order[j]].Std })
	buckets := min(s.cfg.Analysis.GradientBuckets, len(order))
	for k := range buckets {
		lo, hi := k*len(order)/buckets, (k+1)*len(order)/buckets
		inBucket := map[int]bool{}
		std := 0.0
		for _, g := range order[lo:hi] {
			std += st[g].Std / float64(hi-lo)
			for _, t := range b.Groups[g] {
				inBucket[t] = true
			}
		}
		var idx []int
		for i, e := range seqs.Episode {
			if inBucket[e] {
				idx = append(idx, i)
			}
		}
		g, err := ga.GradientNorms(ctx, seqs.Subset(idx))
		if err != nil {
			return err
		}
		q := fmt.Sprintf("q%d", k+1)
		m["grad/task_norm/"+q], m["grad/entropy_norm/"+q], m["grad/kl_norm/"+q] = g.Task, g.Entropy, g.KL
		m["grad/reward_std/"+q] = std
	}
	return nil
}

// validate plays every validation level validation.samples times with
// the weights of the run's current step.
func (s *session) validate(ctx context.Context) (map[string]float64, error) {
	t0 := s.now()
	eng := s.valEng
	if vs, ok := s.sampler.(VersionedSampler); ok && s.ahead != nil {
		p, err := vs.PolicyAt(s.state.Step)
		if err != nil {
			return nil, err
		}
		eng = eng.WithPolicy(p)
	}
	trajs, err := eng.Run(ctx, s.valSeeds, s.cfg.Validation.Samples, s.seed(s.state.Step, streamValidation, 0))
	if err != nil {
		return nil, err
	}
	if err := s.sampled(trajs, s.state.Step); err != nil {
		return nil, err
	}
	if testHookTrajectories != nil {
		testHookTrajectories("val", s.state.Step, trajs)
	}
	m := rollout.Metrics("val-env", trajs, s.cfg.Validation.Samples)
	if !math.IsNaN(s.state.RandomValSuccess) {
		m["val-env/random_success"] = s.state.RandomValSuccess
	}
	m["timing_s/validation"] = s.now().Sub(t0).Seconds()
	if err := s.rec.transcripts(s.state.Step, "val", trajs, 4, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// randomBaseline is the validation success of a uniformly random
// valid-action policy (rollout.RunRandom) on the validation levels, or NaN
// when the environment has no random policy.
func (s *session) randomBaseline(ctx context.Context) (float64, error) {
	// As many episodes per level as validation plays, each round with its
	// own random stream, so that both rates have the same resolution.
	var all []rollout.Trajectory
	for k := range s.cfg.Validation.Samples {
		trajs, err := rollout.RunRandom(ctx, s.cfg.Rollout, s.valFactory, s.valSeeds, s.seed(k, streamRandomBaseline, 0))
		if errors.Is(err, rollout.ErrNoRandomPolicy) {
			return math.NaN(), nil
		}
		if err != nil {
			return 0, err
		}
		all = append(all, trajs...)
	}
	return rollout.Metrics("random", all, 1)["random/success"], nil
}

// seed is the seed of one of the run's random streams (seeds.go).
func (s *session) seed(step int, st stream, round int) uint64 {
	return seed(s.cfg.Run.Seed, step, st, round)
}

// sampled records on trajectories just played the version of the weights
// that sampled them (the number of steps completed before it). A call in
// which every episode failed is an error: the policy or its server is
// broken, and the run stops with its last checkpoint rather than train on
// nothing.
func (s *session) sampled(trajs []rollout.Trajectory, version int) error {
	for i := range trajs {
		trajs[i].PolicyVersion = version
	}
	if len(trajs) == 0 || slices.ContainsFunc(trajs, func(tr rollout.Trajectory) bool { return tr.Err == "" }) {
		return nil
	}
	return fmt.Errorf("%s: all %d episodes failed (the first: %s)", s.sampler.Describe(), len(trajs), trajs[0].Err)
}

// meanStd is the filter's mean in-group reward std, 0 for an empty result.
func meanStd(f algos.FilterResult) float64 {
	if len(f.Stats) == 0 {
		return 0
	}
	return f.MeanInGroupStd()
}
