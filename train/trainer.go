// Package train is the agentrl training loop, importable so that programs
// can register their own environments and train on them:
//
//	cfg, err := train.Load("configs/sokoban.yaml", nil)
//	t, err := train.New(cfg, train.Options{})
//	err = t.Run(ctx)
//
// One step: collect N env groups × K samples with the rollout engine →
// template-collapse metrics on the unfiltered batch (every collapse.every
// steps) → SNR-aware filter on the per-group reward spread → advantages
// (algos preset) → Learner.Update (log-probs recomputed under the current
// weights) → metrics, validation, checkpoint. The Learner owns the models;
// the native in-process learner trains the embedded Go transformer (or a
// Hugging Face model). With server.url the rollouts sample on a served
// copy of the model instead, which loads the learner's LoRA adapters after
// every update (served.go).
//
// A run directory belongs to one run: its identity (the environment, every
// setting that changes what the run computes, the model) is checked before
// anything is written, and a resumed run cuts its files back to the
// checkpoint it continues from. Everything random derives from run.seed and
// the step number, and no budget depends on wall time, so a resumed run
// continues the same curve as an uninterrupted one, on any machine.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/agentrl/agentrl/algos"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/atomicdir"
	"github.com/agentrl/agentrl/internal/runlock"
	"github.com/agentrl/agentrl/internal/yamlpath"
	"github.com/agentrl/agentrl/model/local"
	"github.com/agentrl/agentrl/model/native"
	"github.com/agentrl/agentrl/policy"
	"github.com/agentrl/agentrl/rollout"
)

// Options are the trainer's I/O.
type Options struct {
	// Logger receives progress and warnings (default: text to stderr).
	Logger *slog.Logger
	// Console receives one progress line per step and the final summary
	// (default: stdout).
	Console io.Writer
	// ConfigPath is the file the configuration came from, quoted in the
	// commands the final summary suggests (default configs/<env>.yaml).
	ConfigPath string
}

// Trainer runs one training configuration.
type Trainer struct {
	cfg         Config
	log         *slog.Logger
	console     io.Writer
	configPath  string
	factory     *envs.Factory
	valFactory  *envs.Factory    // the validation environment (env.config with validation.env_config over it)
	demoFactory *envs.Factory    // the warm start's demonstrations (env.config with warm_start.env_config over it)
	now         func() time.Time // the clock; only logs and timings read it

	// valKeys are the layouts (initial observations) of the validation
	// levels; no warm-start or training level may share one.
	valSeeds []uint64
	valKeys  map[string]bool
}

// New checks the configuration and resolves the environment.
func New(cfg Config, opts Options) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	factory, err := envs.NewFactory(cfg.Env.Name, &cfg.Env.Config)
	if err != nil {
		return nil, err
	}
	if cfg.Algo.UsesCostToGo() {
		env, err := factory.New()
		if err != nil {
			return nil, err
		}
		if _, ok := env.(envs.Solver); !ok {
			return nil, fmt.Errorf("algo.credit: solver needs an environment with an exact solver (envs.Solver); %q has none", cfg.Env.Name)
		}
	}
	valNode, err := yamlpath.Merge(&cfg.Env.Config, &cfg.Validation.EnvConfig)
	if err != nil {
		return nil, fmt.Errorf("validation.env_config: %w", err)
	}
	valFactory, err := envs.NewFactory(cfg.Env.Name, valNode)
	if err != nil {
		return nil, fmt.Errorf("validation.env_config: %w", err)
	}
	demoNode, err := yamlpath.Merge(&cfg.Env.Config, &cfg.WarmStart.EnvConfig)
	if err != nil {
		return nil, fmt.Errorf("warm_start.env_config: %w", err)
	}
	demoFactory, err := envs.NewFactory(cfg.Env.Name, demoNode)
	if err != nil {
		return nil, fmt.Errorf("warm_start.env_config: %w", err)
	}
	if cfg.Server.Enabled() && !local.IsHFDir(cfg.Model.Init) {
		return nil, fmt.Errorf("server.url: model.init %s is not a Hugging Face model directory: the server serves a Hugging Face model and the learner trains the same one", cfg.Model.Init)
	}
	t := &Trainer{cfg: cfg, log: opts.Logger, console: opts.Console, configPath: opts.ConfigPath, factory: factory,
		valFactory: valFactory, demoFactory: demoFactory, now: time.Now}
	if t.log == nil {
		t.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if t.console == nil {
		t.console = os.Stdout
	}
	if t.configPath == "" {
		t.configPath = filepath.Join("configs", cfg.Env.Name+".yaml")
	}
	return t, nil
}

// session is a run in progress.
type session struct {
	*Trainer
	learner  Learner
	identity runIdentity
	engine   *rollout.Engine
	valEng   *rollout.Engine
	rec      *recorder
	lock     *runlock.Lock
	state    State
	sched    native.Schedule
	// sampler is the policy the rollouts sample from: the learner's, or
	// with server.url the served copy of its weights (served).
	sampler policy.Policy
	served  *servedPolicy
	// warmStartTime is the time the run spent building the warm start
	// (0 when it came from the cache), in this session or, resumed, the
	// first one.
	warmStartTime time.Duration
	// started is when this session began; priorElapsed the wall time of
	// the sessions before it (see State.ElapsedS).
	started      time.Time
	priorElapsed time.Duration
	// dirty: the learner has taken a step's optimizer steps and the step
	// has not completed (see step).
	dirty bool
}

// ErrStopped is returned by Run when a stopping rule ended the run early
// (empty batches, collapsed reward variance, repeated non-finite losses).
var ErrStopped = errors.New("training stopped early")

// Run trains until run.steps, a stopping rule, or ctx ends. When ctx ends
// it saves a checkpoint first and returns ctx.Err(). It ends with a summary
// on the console and in run.out/summary.json.
func (t *Trainer) Run(ctx context.Context) error {
	start := t.now()
	s, err := t.open(ctx)
	if err != nil {
		return err
	}
	s.started = start
	defer s.close()
	err = s.loop(ctx)
	if ctx.Err() != nil {
		if s.dirty {
			// The learner changed inside a step that then failed: its
			// weights are no step's, and the last checkpoint stays.
			t.log.Warn("interrupted inside a failed step: not saved; the same command resumes from the last checkpoint", "error", err)
			return errors.Join(ctx.Err(), err)
		}
		// Interrupted: save what the last completed step left.
		if serr := s.checkpoint(context.WithoutCancel(ctx)); serr != nil {
			return errors.Join(ctx.Err(), serr)
		}
		t.log.Info("interrupted: checkpoint saved; run the same command again to resume", "step", s.state.Step, "dir", t.cfg.Run.Out)
		s.summarize(s.elapsed(), "interrupted")
		return ctx.Err()
	}
	if err != nil && !errors.Is(err, ErrStopped) {
		return err
	}
	if serr := s.checkpoint(ctx); serr != nil {
		return serr
	}
	reason := "finished"
	if err != nil {
		reason = "stopped early: " + s.state.Stopped
	}
	s.summarize(s.elapsed(), reason)
	return err
}

// open prepares a session. In order: the run directory's identity is
// checked (reading only), the directory is locked, the starting point is
// built (a checkpoint to resume, or the warm start), and only then are the
// run's files written.
func (t *Trainer) open(ctx context.Context) (*session, error) {
	c := t.cfg
	id, err := t.identity()
	if err != nil {
		return nil, err
	}
	if err := atomicdir.Recover(filepath.Join(c.Run.Out, checkpointsDir, latestCheckpoint)); err != nil {
		return nil, err
	}
	if _, err := t.checkRunDir(id); err != nil {
		return nil, err
	}
	lock, err := runlock.Acquire(c.Run.Out)
	if err != nil {
		return nil, fmt.Errorf("%w; wait for it to finish or use -out DIR", err)
	}
	s := &session{Trainer: t, lock: lock, identity: id,
		sched: native.Schedule{Peak: c.Algo.LR, Min: c.Algo.LR, Warmup: c.Algo.WarmupSteps}}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	// Checked again under the lock: another process may have started here
	// between the first check and the lock.
	resumeFrom, err := t.checkRunDir(id)
	if err != nil {
		return nil, err
	}
	if err := t.buildValidationSet(); err != nil {
		return nil, err
	}
	keep := -1
	if resumeFrom != "" {
		var ws *warmStartResult
		if c.Model.LoRA.Enabled() || c.Tinker.Enabled() {
			// The adapters' base model, or the Tinker server's, rebuilt
			// as the run started it.
			if ws, err = t.warmStart(ctx); err != nil {
				return nil, err
			}
		}
		var l Learner
		if c.Tinker.Enabled() {
			var tl *tinkerLearner
			if tl, err = t.tinkerLearner(ctx, ws, resumeFrom); err == nil {
				l = tl
			}
		} else {
			var nl *nativeLearner
			if nl, err = loadNativeLearner(c, resumeFrom, ws); err == nil {
				l = nl
			}
		}
		if err != nil {
			return nil, fmt.Errorf("resume from %s: %w", resumeFrom, err)
		}
		if s.state, err = t.loadState(resumeFrom); err != nil {
			return nil, fmt.Errorf("resume from %s: %w", resumeFrom, err)
		}
		s.learner, keep = l, s.state.Step
		if !c.Tinker.Enabled() {
			t.checkArithmetic(s.state.Arithmetic)
		}
		if s.state.ElapsedS == 0 && s.state.Step > 0 {
			t.legacyElapsed(&s.state)
		}
		s.priorElapsed = time.Duration(s.state.ElapsedS * float64(time.Second))
		s.warmStartTime = time.Duration(s.state.WarmStartS * float64(time.Second))
		t.log.Info("resuming", "dir", resumeFrom, "step", s.state.Step)
	} else {
		began := t.now()
		ws, err := t.warmStart(ctx)
		if err != nil {
			return nil, err
		}
		if !ws.cached {
			s.warmStartTime = t.now().Sub(began)
		}
		// Assigned only on success: a nil *tinkerLearner in the interface
		// would not be nil to session.close.
		var l Learner
		if c.Tinker.Enabled() {
			l, err = t.tinkerLearner(ctx, ws, "")
		} else {
			l, err = newNativeLearner(c, ws.model, ws.tok, ws.hf, ws.dir)
		}
		if err != nil {
			return nil, err
		}
		s.learner = l
		s.state = t.newState()
		s.state.WarmStartS = s.warmStartTime.Seconds()
		if err := t.clearRunDir(); err != nil {
			return nil, err
		}
	}
	s.sampler = s.learner.Policy()
	if c.Server.Enabled() {
		// The current weights (the starting adapters, or a resumed
		// checkpoint's) are version state.Step, pushed under a fresh name.
		if s.served, err = openServed(ctx, c, s.learner, s.state.Step, t.log); err != nil {
			return nil, err
		}
		s.sampler = s.served.Policy()
	}
	model := s.learner.Model()
	s.identity.Model = &model
	if err := t.writeRunFiles(s.identity); err != nil {
		return nil, err
	}
	if s.rec, err = newRecorder(c.Run.Out, keep); err != nil {
		return nil, err
	}
	pol := s.sampler
	trainCfg := c.Rollout
	trainCfg.CostToGo, trainCfg.TurnStates = c.Algo.UsesCostToGo(), c.Algo.UsesTurnStates()
	if s.engine, err = rollout.New(ctx, trainCfg, pol, t.factory); err != nil {
		return nil, err
	}
	valCfg := c.Rollout
	valCfg.Sampling.Temperature = c.Validation.Temperature
	if s.valEng, err = rollout.New(ctx, valCfg, pol, t.valFactory); err != nil {
		return nil, err
	}
	t.log.Info("model", "kind", model.Kind, "params", model.Params, "max_context", pol.Info().MaxContext,
		"run_dir", c.Run.Out, "resumed_at_step", s.state.Step)
	ok = true
	return s, nil
}

// clearRunDir removes what an earlier run left in the run directory before
// a new run starts there (it holds no checkpoint of this run, or
// checkpoint.resume is off). The metrics, events and transcripts are
// truncated by newRecorder.
func (t *Trainer) clearRunDir() error {
	dir := t.cfg.Run.Out
	if exists(filepath.Join(dir, metricsFile)) || exists(filepath.Join(dir, checkpointsDir)) {
		t.log.Warn("starting a new run: replacing the files of the earlier run in the run directory", "dir", dir)
	}
	for _, name := range []string{checkpointsDir, summaryFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// writeRunFiles records the run's identity and resolved configuration.
func (t *Trainer) writeRunFiles(id runIdentity) error {
	y, err := t.cfg.YAML()
	if err != nil {
		return err
	}
	if err := atomicdir.WriteFile(filepath.Join(t.cfg.Run.Out, configFile), []byte(y), 0o644); err != nil {
		return err
	}
	return writeJSON(filepath.Join(t.cfg.Run.Out, identityFile), id)
}

func (s *session) close() {
	if c, ok := s.learner.(io.Closer); ok {
		if err := c.Close(); err != nil {
			s.log.Warn("closing the learner", "err", err)
		}
		s.learner = nil
	}
	if s.served != nil {
		s.served.close()
		s.served = nil
	}
	if s.rec != nil {
		if err := s.rec.close(); err != nil {
			s.log.Warn("closing the run's files", "err", err)
		}
		s.rec = nil
	}
	s.lock.Release()
}

// modelConfig is the native architecture for a vocabulary.
func (t *Trainer) modelConfig(vocab int) native.Config {
	m := t.cfg.Model
	return native.Config{Vocab: vocab, DModel: m.DModel, Layers: m.Layers, Heads: m.Heads, KVHeads: m.KVHeads,
		DFF: m.DFF, MaxSeq: m.MaxSeq, TieEmbeddings: true}
}

// layoutKey is a level's identity: its initial observation, which renders
// the whole layout for the grid environments (and the whole task for the
// others).
func (t *Trainer) layoutKey(env envs.Env, seed uint64) (string, error) {
	return env.Reset(seed)
}

// buildValidationSet picks validation.levels seeds from
// validation.seed_base upward with distinct layouts, in the validation
// environment.
func (t *Trainer) buildValidationSet() error {
	c := t.cfg.Validation
	t.valKeys = map[string]bool{}
	t.valSeeds = nil
	if c.Levels == 0 {
		return nil
	}
	env, err := t.valFactory.New()
	if err != nil {
		return err
	}
	for seed := c.SeedBase; len(t.valSeeds) < c.Levels; seed++ {
		if seed-c.SeedBase > uint64(100*c.Levels+1000) {
			return fmt.Errorf("validation.levels: the environment has only %d distinct layouts among %d seeds; "+
				"lower validation.levels and raise validation.samples to validate on each several times, "+
				"or validate on other levels with validation.env_config", len(t.valSeeds), seed-c.SeedBase)
		}
		key, err := t.layoutKey(env, seed)
		if err != nil {
			return err
		}
		if t.valKeys[key] {
			continue
		}
		t.valKeys[key] = true
		t.valSeeds = append(t.valSeeds, seed)
	}
	return nil
}

// nextSeeds returns n seeds from base upward whose layouts are not
// validation layouts, and the seed after the last one taken.
func (t *Trainer) nextSeeds(base uint64, n int) ([]uint64, uint64, error) {
	env, err := t.factory.New()
	if err != nil {
		return nil, 0, err
	}
	var seeds []uint64
	seed := base
	for ; len(seeds) < n; seed++ {
		if seed-base > uint64(100*n+1000) {
			return nil, 0, fmt.Errorf("only %d levels outside the validation set among %d seeds", len(seeds), seed-base)
		}
		if len(t.valKeys) > 0 {
			key, err := t.layoutKey(env, seed)
			if err != nil {
				return nil, 0, err
			}
			if t.valKeys[key] {
				continue
			}
		}
		seeds = append(seeds, seed)
	}
	return seeds, seed, nil
}

// stepSeed derives the seed of one random stream of one step.
func stepSeed(runSeed uint64, step int, stream uint64) uint64 {
	r := rand.New(rand.NewPCG(runSeed, uint64(step)<<8|stream))
	return r.Uint64()
}

// loop runs validation and training steps.
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
		step := s.state.Step
		// The step is complete, and what follows it (its validation, its
		// metrics, its checkpoint) is not interrupted: an interrupt takes
		// effect between steps, so that the run resumes on the bits of an
		// uninterrupted one. A second interrupt quits at once
		// (trainer/main.go); the run then resumes from its last checkpoint.
		after := context.WithoutCancel(ctx)
		if c.Validation.Every > 0 && step%c.Validation.Every == 0 {
			vm, err := s.validate(after)
			if err != nil {
				return err
			}
			for k, v := range vm {
				m[k] = v
			}
		}
		m["timing_s/step"] = s.now().Sub(stepStart).Seconds()
		if err := s.rec.record(step, m); err != nil {
			return err
		}
		if testHookRecorded != nil {
			testHookRecorded(step)
		}
		done++
		fmt.Fprintln(s.console, progressLine(step, c.Run.Steps, s.now().Sub(stepStart), s.now().Sub(start)/time.Duration(done), m))
		if c.Checkpoint.Every > 0 && step%c.Checkpoint.Every == 0 {
			if err := s.checkpoint(after); err != nil {
				return err
			}
		}
		if s.state.Stopped != "" {
			s.log.Warn("stopping early", "reason", s.state.Stopped, "step", step)
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

// step runs one RL step and returns its metrics. The state advances only
// when the step completes, so an interrupted step is redone on resume:
// a step that fails before its update leaves the trainer state as it
// found it (its rollouts have fed the collapse EMA, the regime tracker
// and the early stops by then, and the redone step feeds them again),
// and the update itself is not interrupted.
func (s *session) step(ctx context.Context) (map[string]float64, error) {
	before, err := encodeState(s.state)
	if err != nil {
		return nil, err
	}
	m, err := s.runStep(ctx)
	if err != nil && !s.dirty {
		st, derr := s.decodeState(before)
		if derr != nil {
			return nil, errors.Join(err, derr)
		}
		s.state = st
	}
	return m, err
}

func (s *session) runStep(ctx context.Context) (map[string]float64, error) {
	c := s.cfg
	step := s.state.Step + 1
	m := metrics{}

	batch, next, err := s.collect(ctx, step, m)
	if err != nil {
		return nil, err
	}
	ok, failed := batch.WithoutFailedGroups()
	m["rollout/failed_groups"] = float64(failed)
	if every := c.Analysis.GradientEvery; every > 0 && step%every == 0 {
		if err := s.gradientAnalysis(ctx, ok, m); err != nil {
			return nil, fmt.Errorf("gradient analysis: %w", err)
		}
	}
	kept, err := s.filter(ok, m)
	if err != nil {
		return nil, err
	}
	if len(kept.Trajectories) > 0 {
		t1 := s.now()
		if err := s.update(ctx, step, kept, m); err != nil {
			return nil, err
		}
		m["timing_s/update"] = s.now().Sub(t1).Seconds()
	}
	if s.served != nil {
		// The server samples from version step from now on. The push is
		// not interrupted: an interrupt then saves the updated weights as
		// this step's.
		t2 := s.now()
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		err := s.served.push(pctx, step)
		cancel()
		if err != nil {
			return nil, err
		}
		m["timing_s/push_adapter"] = s.now().Sub(t2).Seconds()
	}
	if c.Run.TranscriptsEvery > 0 && step%c.Run.TranscriptsEvery == 0 {
		if err := s.rec.transcripts(step, "train", batch.Trajectories, 4); err != nil {
			return nil, err
		}
	}
	s.state.Step, s.state.NextTrainSeed = step, next
	s.dirty = false
	return m, nil
}

// collect samples the step's groups, computes the collapse metrics on
// them, and with dynamic sampling refills the batch. It returns the batch
// and the next training seed.
func (s *session) collect(ctx context.Context, step int, m metrics) (Batch, uint64, error) {
	c := s.cfg
	t0 := s.now()
	seeds, next, err := s.nextSeeds(s.state.NextTrainSeed, c.Run.Groups)
	if err != nil {
		return Batch{}, 0, err
	}
	trajs, err := s.engine.Run(ctx, seeds, c.Run.GroupSize, stepSeed(c.Run.Seed, step, 1))
	if err != nil {
		return Batch{}, 0, err
	}
	if err := s.sampled(trajs); err != nil {
		return Batch{}, 0, err
	}
	if testHookTrajectories != nil {
		testHookTrajectories("train", step, trajs)
	}
	m["timing_s/rollout"] = s.now().Sub(t0).Seconds()
	m["rollout/policy_version"] = float64(s.state.Step)
	m.add(rollout.Metrics("train", trajs, c.Run.GroupSize))
	batch := newBatch(trajs)
	if c.Collapse.Every > 0 && (step == 1 || step%c.Collapse.Every == 0) {
		cm, err := collapseMetrics(ctx, s.learner.Policy(), trajs, c.Collapse, s.state.CollapseEMA, rand.New(rand.NewPCG(stepSeed(c.Run.Seed, step, 3), 0)))
		if err != nil {
			return Batch{}, 0, fmt.Errorf("collapse metrics: %w", err)
		}
		m.add(cm)
		s.collapseAlarm(step, cm, trajs, m)
	}
	if c.Filter.DynamicSampling {
		if batch, next, err = s.dynamicSampling(ctx, step, batch, next, m); err != nil {
			return Batch{}, 0, err
		}
	}
	return batch, next, nil
}

// filter applies the SNR-aware filter to the groups of b, feeds the early
// stops, and returns the kept groups.
func (s *session) filter(b Batch, m metrics) (Batch, error) {
	filt := algos.FilterResult{Empty: true}
	if len(b.Groups) > 0 {
		var err error
		if filt, err = algos.FilterGroups(s.cfg.Filter.FilterConfig, b.Scores(), b.Groups); err != nil {
			return Batch{}, fmt.Errorf("filter: %w", err)
		}
		m.add(filt.Metrics())
	}
	reason, err := s.state.EarlyStop.Observe(filt.Empty, meanStd(filt))
	if err != nil {
		return Batch{}, err
	}
	if reason != "" {
		s.state.Stopped = reason
	}
	m.add(s.state.EarlyStop.Metrics())
	kept := b.Select(filt.Kept)
	if s.cfg.Filter.Strategy == algos.StrategyWithinGroup && len(kept.Groups) > 0 {
		members, err := algos.WithinGroupSelect(s.cfg.Filter.Value, kept.Scores(), kept.Groups)
		if err != nil {
			return Batch{}, fmt.Errorf("filter: %w", err)
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
	return kept, nil
}

// dynamicSampling is DAPO's dynamic sampling: it drops the groups whose
// samples all scored the same and samples fresh groups (new levels) to
// refill the batch to run.groups, for at most filter.max_sample_rounds
// rounds.
func (s *session) dynamicSampling(ctx context.Context, step int, b Batch, next uint64, m metrics) (Batch, uint64, error) {
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
		trajs, err := s.engine.Run(ctx, seeds, c.Run.GroupSize, stepSeed(c.Run.Seed, step, 16+uint64(rounds)))
		if err != nil {
			return Batch{}, 0, err
		}
		if err := s.sampled(trajs); err != nil {
			return Batch{}, 0, err
		}
		b = newBatch(trajs)
	}
	m["rollout/dynamic_sampling_rounds"] = float64(rounds)
	m["rollout/dynamic_sampling_dropped"] = float64(dropped)
	m["rollout/dynamic_sampling_groups"] = float64(len(out.Groups))
	return out, next, nil
}

// update trains the learner on the kept groups: values and reference
// log-probs, advantages, then the optimizer steps.
func (s *session) update(ctx context.Context, step int, kept Batch, m metrics) error {
	c := s.cfg
	if testHookUpdate != nil {
		testHookUpdate(step)
	}
	seqs := kept.Sequences()
	if err := s.learner.Prepare(ctx, seqs); err != nil {
		return err
	}
	if seqs.SamplerLogProb != nil {
		mm, err := algos.LogProbMismatch(seqs.OldLogProb, seqs.SamplerLogProb, seqs.Mask)
		if err != nil {
			return err
		}
		m.add(mm.Metrics())
	}
	credit, err := s.advantages(kept, seqs)
	if err != nil {
		return err
	}
	m.add(credit)
	// The optimizer steps run to the end whatever ctx does: stopped
	// between two mini-batches, the weights would be no step's. (A remote
	// learner bounds each call by its own timeouts.)
	s.dirty = true
	st, err := s.learner.Update(context.WithoutCancel(ctx), seqs, UpdateOptions{LR: s.sched.LR(step - 1), CriticLR: c.Algo.CriticLR, Seed: stepSeed(c.Run.Seed, step, 2)})
	if err != nil {
		return err
	}
	if st.Skipped > 0 {
		s.state.NaNStreak++
		s.log.Warn("non-finite loss or gradient: updates skipped", "step", step, "skipped", st.Skipped, "of", st.MiniBatches)
		if s.state.NaNStreak >= c.Run.NaNStopStreak {
			s.state.Stopped = fmt.Sprintf("%d consecutive steps with non-finite losses", s.state.NaNStreak)
		}
	} else {
		s.state.NaNStreak = 0
	}
	m.add(st.Metrics)
	m["actor/kept_trajectories"] = float64(len(kept.Trajectories))
	return nil
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

// validate plays every validation level validation.samples times.
func (s *session) validate(ctx context.Context) (map[string]float64, error) {
	t0 := s.now()
	trajs, err := s.valEng.Run(ctx, s.valSeeds, s.cfg.Validation.Samples, stepSeed(s.cfg.Run.Seed, s.state.Step, 4))
	if err != nil {
		return nil, err
	}
	if err := s.sampled(trajs); err != nil {
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
	if err := s.rec.transcripts(s.state.Step, "val", trajs, 4); err != nil {
		return nil, err
	}
	return m, nil
}

// randomBaseline is the validation success of a uniformly random
// valid-action policy (rollout.RunRandom) on the validation levels, or NaN
// when the environment has no random policy.
func (s *session) randomBaseline(ctx context.Context) (float64, error) {
	// As many episodes per level as validation plays, each with its own
	// random stream, so that both rates have the same resolution.
	var all []rollout.Trajectory
	for k := range s.cfg.Validation.Samples {
		trajs, err := rollout.RunRandom(ctx, s.cfg.Rollout, s.valFactory, s.valSeeds, stepSeed(s.cfg.Run.Seed, k, 5))
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

// sampled records on trajectories just played the version of the weights
// that sampled them: the number of completed steps (the sampler always
// serves the learner's current weights). With a server, a call in which
// every episode failed is an error: the server is gone or broken, and
// the run stops with its last checkpoint rather than train on nothing.
func (s *session) sampled(trajs []rollout.Trajectory) error {
	for i := range trajs {
		trajs[i].PolicyVersion = s.state.Step
	}
	if s.served == nil || len(trajs) == 0 || slices.ContainsFunc(trajs, func(tr rollout.Trajectory) bool { return tr.Err == "" }) {
		return nil
	}
	return fmt.Errorf("server %s: all %d episodes failed (the first: %s)", s.cfg.Server.URL, len(trajs), trajs[0].Err)
}

// meanStd is the filter's mean in-group reward std, 0 for an empty result.
func meanStd(f algos.FilterResult) float64 {
	if len(f.Stats) == 0 {
		return 0
	}
	return f.MeanInGroupStd()
}
